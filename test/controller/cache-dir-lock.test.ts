// One controller per cache directory; the next one takes over from a dead one and repairs the git
// lock files a kill left in its clones.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CacheDirBusyError, claimCacheDir } from '../../src/controller/runtime/cache-dir-lock.js';
import { GitSandbox } from '../support/git-repos.js';

describe('claimCacheDir', () => {
  const git = new GitSandbox();
  const dirs: string[] = [];
  afterAll(async () => {
    git.cleanup();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('refuses a directory a live controller owns, and takes over from a dead one, removing its git locks', async () => {
    const cache = await mkdtemp(path.join(os.tmpdir(), 'csk-cache-lock-'));
    dirs.push(cache);
    expect(await claimCacheDir(cache, { pid: 100, hostname: 'pod-a', isAlive: () => true })).toEqual([]);
    expect(JSON.parse(await readFile(path.join(cache, 'controller.pid'), 'utf8'))).toEqual({
      pid: 100,
      hostname: 'pod-a',
    });
    await expect(
      claimCacheDir(cache, { pid: 200, hostname: 'pod-a', isAlive: (pid) => pid === 100 }),
    ).rejects.toBeInstanceOf(CacheDirBusyError);

    // A clone with the locks a git killed mid-command leaves, and a bare mirror with a ref lock.
    const clone = path.join(cache, 'git', 'abc');
    await mkdir(clone, { recursive: true });
    git.git(clone, 'init', '--quiet');
    await writeFile(path.join(clone, '.git', 'index.lock'), '');
    await mkdir(path.join(clone, '.git', 'refs', 'heads'), { recursive: true });
    await writeFile(path.join(clone, '.git', 'refs', 'heads', 'main.lock'), '');
    const mirror = path.join(cache, 'git-history', 'def');
    git.git(cache, 'init', '--quiet', '--bare', mirror);
    await writeFile(path.join(mirror, 'HEAD.lock'), '');
    // The process is gone: the next one (here with the same pid, as in a restarted container) takes over.
    const removed = await claimCacheDir(cache, { pid: 100, hostname: 'pod-a', isAlive: () => true });
    expect(removed.map((file) => path.relative(cache, file)).sort()).toEqual([
      'git-history/def/HEAD.lock',
      'git/abc/.git/index.lock',
      'git/abc/.git/refs/heads/main.lock',
    ]);
    git.git(clone, 'status', '--short');
  });
});
