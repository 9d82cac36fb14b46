import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { treeDigest } from '../src/release/content-digest.js';
import { ReleaseCache } from '../src/sources/release-cache.js';

const SOURCE = 'github:example/stacks@https://api.github.com';
const TAG = 'docker-ferrol-1-30-v1';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'release-cache-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function writeRelease(dir: string): Promise<void> {
  await writeFile(path.join(dir, 'metadata.yaml'), 'apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\n');
  await writeFile(path.join(dir, 'chart.tgz'), Buffer.from([1, 2, 3, 4, 5]));
}

/** Everything under the cache's `releases/` directory: what a reader could ever see. */
async function visibleEntries(): Promise<string[]> {
  try {
    return await readdir(path.join(root, 'releases'));
  } catch {
    return [];
  }
}

describe('ReleaseCache', () => {
  it('stores a release and returns it verified, with the digest treeDigest computes', async () => {
    const cache = new ReleaseCache(root, { clock: () => new Date('2025-01-02T03:04:05Z') });
    const stored = await cache.put(SOURCE, TAG, writeRelease);
    expect(stored.tag).toBe(TAG);
    expect(stored.digest).toBe(await treeDigest(stored.dir));
    expect(await readFile(path.join(stored.dir, 'metadata.yaml'), 'utf8')).toContain('metadata.clusterstack');

    const again = await new ReleaseCache(root).get(SOURCE, TAG);
    expect(again).toEqual(stored);
    expect(await cache.get(SOURCE, 'docker-ferrol-1-30-v2')).toBeUndefined();
    expect(await cache.get('github:other/repo@https://api.github.com', TAG)).toBeUndefined();

    const manifest = JSON.parse(await readFile(path.join(path.dirname(stored.dir), 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({
      sourceKey: SOURCE,
      tag: TAG,
      digest: stored.digest,
      storedAt: '2025-01-02T03:04:05.000Z',
    });
    expect(manifest.files).toEqual([
      { path: 'chart.tgz', sha256: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), size: 5 },
      { path: 'metadata.yaml', sha256: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), size: 52 },
    ]);
  });

  it('keeps files in sub-directories', async () => {
    const cache = new ReleaseCache(root);
    const stored = await cache.put(SOURCE, TAG, async (dir) => {
      await mkdir(path.join(dir, 'nested'));
      await writeFile(path.join(dir, 'nested', 'file.txt'), 'x');
    });
    expect(stored.digest).toBe(await treeDigest(stored.dir));
    expect(await cache.get(SOURCE, TAG)).toEqual(stored);
  });

  it('detects a modified file on get and removes the entry', async () => {
    const cache = new ReleaseCache(root);
    const stored = await cache.put(SOURCE, TAG, writeRelease);
    await writeFile(path.join(stored.dir, 'chart.tgz'), Buffer.from([1, 2, 3, 4, 6]));
    expect(await cache.get(SOURCE, TAG)).toBeUndefined();
    expect(await visibleEntries()).toEqual([]);
  });

  it('detects a missing, an added and a truncated file, and a damaged manifest', async () => {
    const cache = new ReleaseCache(root);
    const damage: ((dir: string) => Promise<void>)[] = [
      (dir) => rm(path.join(dir, 'chart.tgz')),
      (dir) => writeFile(path.join(dir, 'extra.txt'), 'surprise'),
      (dir) => writeFile(path.join(dir, 'chart.tgz'), Buffer.from([1, 2])),
      (dir) => writeFile(path.join(path.dirname(dir), 'manifest.json'), '{"sourceKey":'),
      (dir) => symlink('/etc/passwd', path.join(dir, 'link')),
    ];
    for (const harm of damage) {
      const stored = await cache.put(SOURCE, TAG, writeRelease);
      await harm(stored.dir);
      expect(await cache.get(SOURCE, TAG)).toBeUndefined();
      expect(await visibleEntries()).toEqual([]);
    }
  });

  it('leaves nothing when the write fails midway, and the next put succeeds', async () => {
    const cache = new ReleaseCache(root);
    await expect(
      cache.put(SOURCE, TAG, async (dir) => {
        await writeFile(path.join(dir, 'metadata.yaml'), 'partial');
        throw new Error('connection reset');
      }),
    ).rejects.toThrow('connection reset');
    expect(await visibleEntries()).toEqual([]);
    expect(await readdir(path.join(root, 'tmp'))).toEqual([]);
    expect(await cache.get(SOURCE, TAG)).toBeUndefined();
    expect(await cache.size()).toEqual({ entries: 0, bytes: 0 });

    const stored = await cache.put(SOURCE, TAG, writeRelease);
    expect(await cache.get(SOURCE, TAG)).toEqual(stored);
  });

  it('treats an entry without a manifest (an interrupted process) as absent', async () => {
    const cache = new ReleaseCache(root);
    const stored = await cache.put(SOURCE, TAG, writeRelease);
    await rm(path.join(path.dirname(stored.dir), 'manifest.json'));
    expect(await cache.entries()).toEqual([]);
    expect(await cache.get(SOURCE, TAG)).toBeUndefined();
    expect(await cache.put(SOURCE, TAG, writeRelease)).toEqual(stored);
  });

  it('refuses symlinks written into an entry', async () => {
    const cache = new ReleaseCache(root);
    await expect(
      cache.put(SOURCE, TAG, (dir) => symlink('/etc/passwd', path.join(dir, 'metadata.yaml'))),
    ).rejects.toThrow(/metadata.yaml is not a regular file/);
    expect(await visibleEntries()).toEqual([]);
  });

  it('lets concurrent puts of the same release both succeed with one entry', async () => {
    const cache = new ReleaseCache(root);
    const other = new ReleaseCache(root);
    const results = await Promise.all([
      cache.put(SOURCE, TAG, writeRelease),
      other.put(SOURCE, TAG, writeRelease),
      cache.put(SOURCE, TAG, writeRelease),
    ]);
    expect(new Set(results.map((result) => result.digest)).size).toBe(1);
    expect(new Set(results.map((result) => result.dir)).size).toBe(1);
    expect(await visibleEntries()).toHaveLength(1);
    expect(await readdir(path.join(root, 'tmp'))).toEqual([]);
    expect(await cache.get(SOURCE, TAG)).toEqual(results[0]);
  });

  it('reports entries and their size', async () => {
    const cache = new ReleaseCache(root, { clock: () => new Date('2025-01-01T00:00:00Z') });
    await cache.put(SOURCE, 'docker-ferrol-1-30-v2', writeRelease);
    await cache.put(SOURCE, TAG, writeRelease);
    await cache.put('oci://registry.example/stacks', TAG, async (dir) =>
      writeFile(path.join(dir, 'metadata.yaml'), 'abc'),
    );
    const entries = await cache.entries();
    expect(entries.map((entry) => `${entry.sourceKey} ${entry.tag} ${entry.bytes}`)).toEqual([
      `${SOURCE} docker-ferrol-1-30-v1 57`,
      `${SOURCE} docker-ferrol-1-30-v2 57`,
      'oci://registry.example/stacks docker-ferrol-1-30-v1 3',
    ]);
    expect(entries[0]!.storedAt).toBe('2025-01-01T00:00:00.000Z');
    expect(await cache.size()).toEqual({ entries: 3, bytes: 117 });
  });

  it('prunes the entries keep() rejects and returns them', async () => {
    const cache = new ReleaseCache(root);
    await cache.put(SOURCE, TAG, writeRelease);
    await cache.put(SOURCE, 'docker-ferrol-1-30-v2', writeRelease);
    const keep = new Set([`${SOURCE} ${TAG}`]);
    const removed = await cache.prune((entry) => keep.has(`${entry.sourceKey} ${entry.tag}`));
    expect(removed.map((entry) => entry.tag)).toEqual(['docker-ferrol-1-30-v2']);
    expect((await cache.entries()).map((entry) => entry.tag)).toEqual([TAG]);
    expect(await cache.get(SOURCE, 'docker-ferrol-1-30-v2')).toBeUndefined();
    expect(await cache.get(SOURCE, TAG)).toBeDefined();
    expect(await cache.prune(() => true)).toEqual([]);
  });

  it('prune clears leftovers of crashed puts older than an hour', async () => {
    let now = new Date();
    const cache = new ReleaseCache(root, { clock: () => now });
    await mkdir(path.join(root, 'tmp', 'abandoned-123', 'files'), { recursive: true });
    await cache.prune(() => true);
    expect(await readdir(path.join(root, 'tmp'))).toEqual(['abandoned-123']);
    now = new Date(now.getTime() + 2 * 60 * 60 * 1000);
    await cache.prune(() => true);
    expect(await readdir(path.join(root, 'tmp'))).toEqual([]);
  });
});
