// Tree digests stay exact while this process remembers file digests by stat (content-digest.ts):
// a file edited since, even to the same size, is read again.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { treeDigest } from '../src/release/content-digest.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('treeDigest', () => {
  afterEach(() => vi.useRealTimers());

  it('gives the digest of the content now, also for a file edited to the same size after it was remembered', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'content-digest-'));
    try {
      await mkdir(path.join(root, 'templates'));
      await writeFile(path.join(root, 'Chart.yaml'), 'name: a\n');
      await writeFile(path.join(root, 'templates', 'cm.yaml'), 'value: 1\n');
      const fresh = await treeDigest(root);
      // Seen from later on, the files are old enough to be remembered.
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + 60_000);
      expect(await treeDigest(root)).toBe(fresh);
      expect(await treeDigest(root)).toBe(fresh);
      vi.useRealTimers();
      await sleep(20);
      await writeFile(path.join(root, 'templates', 'cm.yaml'), 'value: 2\n');
      const edited = await treeDigest(root);
      expect(edited).not.toBe(fresh);
      // The same tree written anew elsewhere digests alike: the digest is of paths and content only.
      const copy = await mkdtemp(path.join(os.tmpdir(), 'content-digest-'));
      await mkdir(path.join(copy, 'templates'));
      await writeFile(path.join(copy, 'Chart.yaml'), 'name: a\n');
      await writeFile(path.join(copy, 'templates', 'cm.yaml'), 'value: 2\n');
      expect(await treeDigest(copy)).toBe(edited);
      await rm(copy, { recursive: true, force: true });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
