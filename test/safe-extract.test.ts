import { mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as tar from 'tar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { extractArchive, UnsafeArchiveError } from '../src/release/safe-extract.js';

/** One tar entry, written as a raw ustar header so archives can say things `tar` would refuse to. */
interface RawEntry {
  name: string;
  /** ustar type flag: 0 file, 1 hard link, 2 symlink, 3 char device, 5 directory, 6 FIFO. */
  type?: '0' | '1' | '2' | '3' | '5' | '6';
  content?: string | Buffer;
  linkname?: string;
  /** Declared size, when it should differ from the content. */
  size?: number;
  mode?: number;
}

function octal(buffer: Buffer, offset: number, length: number, value: number): void {
  buffer.write(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length, 'ascii');
}

function rawTar(entries: RawEntry[], options: { end?: boolean } = {}): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const content = Buffer.from(entry.content ?? '');
    const header = Buffer.alloc(512);
    header.write(entry.name, 0, 100, 'utf8');
    octal(header, 100, 8, entry.mode ?? (entry.type === '5' ? 0o755 : 0o644));
    octal(header, 108, 8, 0);
    octal(header, 116, 8, 0);
    octal(header, 124, 12, entry.size ?? content.length);
    octal(header, 136, 12, 1_700_000_000);
    header.fill(' ', 148, 156);
    header.write(entry.type ?? '0', 156, 1, 'ascii');
    header.write(entry.linkname ?? '', 157, 100, 'utf8');
    header.write('ustar\0', 257, 6, 'ascii');
    header.write('00', 263, 2, 'ascii');
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
    blocks.push(header, content, Buffer.alloc((512 - (content.length % 512)) % 512));
  }
  if (options.end !== false) blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

let work: string;
let archive: string;
let destinationParent: string;
let destination: string;

beforeEach(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'safe-extract-'));
  archive = path.join(work, 'archive.tgz');
  destinationParent = path.join(work, 'charts');
  destination = path.join(destinationParent, 'chart');
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

async function writeArchive(data: Buffer): Promise<void> {
  await writeFile(archive, data);
}

/** Extraction fails with UnsafeArchiveError naming `entry`, and nothing is left where it would have gone. */
async function expectRefused(entry: string | undefined, reason: RegExp): Promise<UnsafeArchiveError> {
  const error = await extractArchive(archive, destination, 'release-x/chart.tgz').then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UnsafeArchiveError);
  const unsafe = error as UnsafeArchiveError;
  expect(unsafe.entry).toBe(entry);
  expect(unsafe.message).toMatch(/^archive release-x\/chart\.tgz: /);
  if (entry !== undefined) expect(unsafe.message).toContain(`entry "${entry}"`);
  expect(unsafe.message).toMatch(reason);
  expect(await readdir(destinationParent).catch(() => [])).toEqual([]);
  return unsafe;
}

describe('extractArchive', () => {
  it('extracts a packaged Helm chart', async () => {
    const source = path.join(work, 'source');
    await mkdir(path.join(source, 'mychart', 'templates'), { recursive: true });
    await writeFile(path.join(source, 'mychart', 'Chart.yaml'), 'apiVersion: v2\nname: mychart\nversion: 0.1.0\n');
    await writeFile(path.join(source, 'mychart', 'values.yaml'), 'replicas: 1\n');
    await writeFile(path.join(source, 'mychart', 'templates', 'configmap.yaml'), 'kind: ConfigMap\n');
    await tar.c({ gzip: true, file: archive, cwd: source, portable: true }, ['mychart']);

    await extractArchive(archive, destination, 'chart.tgz');
    expect(await readFile(path.join(destination, 'mychart', 'Chart.yaml'), 'utf8')).toContain('name: mychart');
    expect(await readFile(path.join(destination, 'mychart', 'templates', 'configmap.yaml'), 'utf8')).toBe(
      'kind: ConfigMap\n',
    );
    expect(await readdir(destinationParent)).toEqual(['chart']);
  });

  it('keeps symlinks and hard links that stay inside the archive, and normalizes modes', async () => {
    await writeArchive(
      rawTar([
        { name: 'chart/', type: '5', mode: 0o777 },
        { name: 'chart/Chart.yaml', content: 'name: chart\n', mode: 0o4777 },
        { name: 'chart/values.yaml', content: 'a: 1\n', mode: 0o000 },
        { name: 'chart/alias.yaml', type: '2', linkname: 'Chart.yaml' },
        { name: 'chart/copy.yaml', type: '1', linkname: 'chart/values.yaml' },
      ]),
    );
    await extractArchive(archive, destination, 'chart.tgz');
    expect(await readlink(path.join(destination, 'chart', 'alias.yaml'))).toBe('Chart.yaml');
    expect(await readFile(path.join(destination, 'chart', 'copy.yaml'), 'utf8')).toBe('a: 1\n');
    // This user's alone, as everything in the cache (private-cache-file.ts).
    expect((await stat(path.join(destination, 'chart', 'Chart.yaml'))).mode & 0o7777).toBe(0o600);
    expect((await stat(path.join(destination, 'chart', 'values.yaml'))).mode & 0o7777).toBe(0o600);
    expect((await stat(path.join(destination, 'chart'))).mode & 0o7777).toBe(0o700);
    expect((await stat(destination)).mode & 0o7777).toBe(0o700);
  });

  it('lets concurrent extractions of the same archive to the same destination both succeed', async () => {
    await writeArchive(gzipSync(rawTar([{ name: 'chart/Chart.yaml', content: 'name: chart\n' }])));
    await Promise.all([
      extractArchive(archive, destination, 'chart.tgz'),
      extractArchive(archive, destination, 'chart.tgz'),
      extractArchive(archive, destination, 'chart.tgz'),
    ]);
    expect(await readdir(destinationParent)).toEqual(['chart']);
    expect(await readFile(path.join(destination, 'chart', 'Chart.yaml'), 'utf8')).toBe('name: chart\n');
  });

  describe('refuses, naming the entry and writing nothing', () => {
    it('a path with ".."', async () => {
      await writeArchive(
        gzipSync(
          rawTar([
            { name: 'chart/Chart.yaml', content: 'x' },
            { name: '../x', content: 'owned' },
          ]),
        ),
      );
      await expectRefused('../x', /points outside the archive directory/);
    });

    it('a ".." hidden in the middle of a path', async () => {
      await writeArchive(rawTar([{ name: 'chart/../../x', content: 'owned' }]));
      await expectRefused('chart/../../x', /points outside the archive directory/);
    });

    it('an absolute path', async () => {
      await writeArchive(gzipSync(rawTar([{ name: '/etc/x', content: 'owned' }])));
      await expectRefused('/etc/x', /has an absolute path/);
    });

    it('a symlink out of the archive', async () => {
      await writeArchive(gzipSync(rawTar([{ name: 'chart/etc', type: '2', linkname: '../../etc' }])));
      await expectRefused('chart/etc', /is a symlink to \.\.\/\.\.\/etc, outside the archive directory/);
    });

    it('a symlink to an absolute path', async () => {
      await writeArchive(rawTar([{ name: 'passwd', type: '2', linkname: '/etc/passwd' }]));
      await expectRefused('passwd', /is a symlink to the absolute path \/etc\/passwd/);
    });

    it('a chain of symlinks that only escapes once the first one exists', async () => {
      await writeArchive(
        rawTar([
          { name: 'd/', type: '5' },
          { name: 'here', type: '2', linkname: '.' },
          { name: 'd/up', type: '2', linkname: '../here/..' },
        ]),
      );
      await expectRefused('d/up', /outside the archive directory/);
    });

    it('a file written through a symlinked directory', async () => {
      await writeArchive(
        rawTar([
          { name: 'sub/', type: '5' },
          { name: 'link', type: '2', linkname: 'sub' },
          { name: 'link/x', content: 'x' },
        ]),
      );
      await expectRefused('link/x', /lies inside the symlink link/);
    });

    it('a hard link out of the archive', async () => {
      await writeArchive(gzipSync(rawTar([{ name: 'chart/passwd', type: '1', linkname: '../../etc/passwd' }])));
      await expectRefused('chart/passwd', /is a hard link to \.\.\/\.\.\/etc\/passwd, outside the archive directory/);
    });

    it('a hard link to a symlink, whose relative target would resolve from the new place', async () => {
      await writeArchive(
        rawTar([
          { name: 'a/b/', type: '5' },
          { name: 'a/b/s', type: '2', linkname: '../../x' },
          { name: 'h', type: '1', linkname: 'a/b/s' },
        ]),
      );
      await expectRefused('h', /is a hard link to the symlink a\/b\/s/);
    });

    it('a device file', async () => {
      await writeArchive(rawTar([{ name: 'dev/null', type: '3' }]));
      await expectRefused('dev/null', /is a CharacterDevice/);
    });

    it('an entry declaring a huge size', async () => {
      await writeArchive(
        gzipSync(rawTar([{ name: 'chart/big.bin', content: 'tiny', size: 0o77777777777 }], { end: false })),
      );
      await expectRefused('chart/big.bin', /is 8589934591 bytes, over the per-file limit of 67108864/);
    });

    it('archives over the total size and entry count limits', async () => {
      await writeArchive(
        rawTar([
          { name: 'a', content: 'x'.repeat(600) },
          { name: 'b', content: 'x'.repeat(600) },
          { name: 'c', content: 'x' },
        ]),
      );
      await expect(
        extractArchive(archive, destination, 'chart.tgz', { maxFileBytes: 1000, maxTotalBytes: 1000, maxEntries: 10 }),
      ).rejects.toThrow('entry "b" takes the archive over its total size limit of 1000 bytes');
      await expect(
        extractArchive(archive, destination, 'chart.tgz', { maxFileBytes: 1000, maxTotalBytes: 10_000, maxEntries: 2 }),
      ).rejects.toThrow('entry "c" is one entry too many (limit 2)');
      expect(await readdir(destinationParent).catch(() => [])).toEqual([]);
    });

    it('a truncated gzip', async () => {
      const whole = gzipSync(rawTar([{ name: 'chart/Chart.yaml', content: 'name: chart\n'.repeat(2000) }]));
      await writeArchive(whole.subarray(0, Math.floor(whole.length / 2)));
      await expectRefused(undefined, /cannot be read as a tar archive .*truncated or not a \.tgz/);
    });

    it('a tar cut off in the middle of an entry', async () => {
      const whole = rawTar([{ name: 'chart/Chart.yaml', content: 'x'.repeat(5000) }]);
      await writeArchive(whole.subarray(0, 2048));
      await expectRefused(undefined, /cannot be read as a tar archive/);
    });

    it('a file that is not a tar archive', async () => {
      await writeArchive(Buffer.from('this is a README, not a chart\n'.repeat(40)));
      await expectRefused(undefined, /cannot be read as a tar archive|is empty or not a tar archive/);
    });

    it('a gzip of something that is not a tar archive', async () => {
      await writeArchive(gzipSync(Buffer.from('{"not": "a tar"}\n'.repeat(100))));
      await expectRefused(undefined, /cannot be read as a tar archive|is empty or not a tar archive/);
    });

    it('an empty file', async () => {
      await writeArchive(Buffer.alloc(0));
      await expectRefused(undefined, /cannot be read as a tar archive|is empty or not a tar archive/);
    });
  });

  it('never writes through a symlink sitting at the destination', async () => {
    // The destination is ours: even a symlink sitting at the destination is not followed into.
    await mkdir(destinationParent, { recursive: true });
    await symlink('/tmp', destination);
    await writeArchive(rawTar([{ name: 'chart/Chart.yaml', content: 'x' }]));
    await expect(extractArchive(archive, destination, 'chart.tgz')).rejects.toBeInstanceOf(UnsafeArchiveError);
    expect(await readlink(destination)).toBe('/tmp');
    expect(await readdir(destinationParent)).toEqual(['chart']);
  });
});
