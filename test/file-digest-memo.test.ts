// The file digests kept across runs (src/release/file-digest-memo.ts): a second run digests a local
// release without reading its files, gets the same digest, reads again any file whose stat changed,
// and never trusts a memo file that does not verify. Each "run" is a fresh copy of the modules (the
// digests are a per-process memo).
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { EXAMPLE_RELEASES, tempDir } from './support/cli.js';

// Files checked out long enough ago not to be "racy" (changed within the last seconds).
const RELEASE = path.join(EXAMPLE_RELEASES, 'docker-ferrol-1-30-v1');

/** One process's view: fresh modules, the memo of `cacheRoot` loaded. */
async function freshRun(
  cacheRoot: string,
): Promise<{ digest: () => Promise<string>; computed: () => number; save: () => Promise<void> }> {
  vi.resetModules();
  const content = await import('../src/release/content-digest.js');
  const memo = await import('../src/release/file-digest-memo.js');
  await memo.loadFileDigestMemo(cacheRoot);
  return {
    digest: () => content.treeDigest(RELEASE),
    computed: () => content.computedFileDigests(),
    save: () => memo.saveFileDigestMemo(cacheRoot),
  };
}

describe('file digest memo', () => {
  it('lets the next run digest a release without reading it, to the same digest', async () => {
    const cache = await tempDir('csk-digest-memo-');
    const first = await freshRun(cache);
    const digest = await first.digest();
    expect(first.computed()).toBeGreaterThan(1);
    await first.save();

    const second = await freshRun(cache);
    expect(await second.digest()).toBe(digest);
    expect(second.computed()).toBe(0);
    // Nothing new: nothing written again.
    const before = await readFile(path.join(cache, 'file-digests.json'), 'utf8');
    await second.save();
    expect(await readFile(path.join(cache, 'file-digests.json'), 'utf8')).toBe(before);
  });

  it('reads a file again when its stat no longer matches, and ignores a memo file that does not verify', async () => {
    const cache = await tempDir('csk-digest-memo-');
    const first = await freshRun(cache);
    const digest = await first.digest();
    await first.save();
    const file = path.join(cache, 'file-digests.json');
    const memo = JSON.parse(await readFile(file, 'utf8')) as {
      schema: 1;
      entries: [string, string, string][];
      digest: string;
    };

    // A wrong digest for one file, with the file's own checksum left as it was: the whole file is ignored.
    const tampered = {
      ...memo,
      entries: memo.entries.map(([name, stamp, value], index): [string, string, string] => [
        name,
        stamp,
        index === 0 ? `sha256:${'0'.repeat(64)}` : value,
      ]),
    };
    await writeFile(file, JSON.stringify(tampered));
    const second = await freshRun(cache);
    expect(await second.digest()).toBe(digest);
    expect(second.computed()).toBeGreaterThan(1);

    // A stale stamp, checksum recomputed (as a memo written before the file changed would have it):
    // that one file is read again, the rest are not.
    const { sha256Digest } = await import('../src/release/content-digest.js');
    const stale = memo.entries.map(([name, stamp, value], index): [string, string, string] => [
      name,
      index === 0 ? `${stamp}-older` : stamp,
      index === 0 ? `sha256:${'0'.repeat(64)}` : value,
    ]);
    await writeFile(
      file,
      JSON.stringify({
        schema: 1,
        entries: stale,
        digest: sha256Digest(JSON.stringify({ schema: 1, entries: stale })),
      }),
    );
    const third = await freshRun(cache);
    expect(await third.digest()).toBe(digest);
    expect(third.computed()).toBe(1);

    // Not JSON at all: ignored, and replaced by the next save.
    await writeFile(file, '{ torn');
    const fourth = await freshRun(cache);
    expect(await fourth.digest()).toBe(digest);
    await fourth.save();
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ schema: 1 });
  });
});
