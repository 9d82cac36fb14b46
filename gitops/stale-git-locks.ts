// git's own lock files (index.lock, ref locks) left by a git process that was killed make every
// later git command in that repository fail. In a clone of clusterstack's own, where no git process
// of anyone else can be running, they are removed; in a person's work tree never (git-publisher.ts
// waits for them and reports them).
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * Removes `*.lock` files from a git directory and its refs (never our own lock `keep`): call it only
 * for a clone in the cache whose lock we hold, never for a work tree someone else may use.
 */
export async function removeStaleGitLocks(gitDir: string, keep = 'clusterstack.lock'): Promise<void> {
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (entry.isDirectory() && dir === gitDir && entry.name !== 'refs') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.name.endsWith('.lock') && entry.name !== keep) await rm(full, { force: true });
    }
  };
  await walk(gitDir);
}
