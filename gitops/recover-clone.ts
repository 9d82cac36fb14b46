// A process killed in the middle of a git command (kill -9, an OOM kill, a node going away) leaves
// git's lock files behind in its clone: `index.lock`, `HEAD.lock`, `refs/heads/<branch>.lock`, ...
// Every later git command in that clone then fails with "File exists", for good. The objects and
// refs themselves are safe (git writes them atomically), so removing the locks is the whole repair,
// provided no git process is still working there: callers make sure of that first.
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

const TOP_LEVEL_LOCKS = [
  'index.lock',
  'HEAD.lock',
  'ORIG_HEAD.lock',
  'FETCH_HEAD.lock',
  'config.lock',
  'packed-refs.lock',
  'shallow.lock',
];

async function isDirectory(file: string): Promise<boolean> {
  return stat(file).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

async function lockFilesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await lockFilesUnder(file)));
    else if (entry.name.endsWith('.lock')) found.push(file);
  }
  return found;
}

/** The git directory of a clone (`<dir>/.git`) or of a bare repository (`<dir>`), if it is one. */
async function gitDirOf(dir: string): Promise<string | undefined> {
  if (await isDirectory(path.join(dir, '.git'))) return path.join(dir, '.git');
  if ((await isDirectory(path.join(dir, 'refs'))) && (await isDirectory(path.join(dir, 'objects')))) return dir;
  return undefined;
}

/**
 * Removes the lock files a killed git process left in the repository at `dir` (a clone or a bare
 * mirror); returns the files removed, relative to `dir`. Only call it when no git process can be
 * running there.
 */
async function removeStaleGitLocks(dir: string): Promise<string[]> {
  const gitDir = await gitDirOf(dir);
  if (!gitDir) return [];
  const locks = [
    ...TOP_LEVEL_LOCKS.map((name) => path.join(gitDir, name)),
    ...(await lockFilesUnder(path.join(gitDir, 'refs'))),
  ];
  const removed: string[] = [];
  for (const lock of locks) {
    const exists = await stat(lock).then(
      () => true,
      () => false,
    );
    if (!exists) continue;
    await rm(lock, { force: true });
    removed.push(path.relative(dir, lock));
  }
  return removed;
}

/** `removeStaleGitLocks` for every repository directly under each of `parents` (e.g. the controller's clones). */
export async function removeStaleGitLocksUnder(parents: string[]): Promise<string[]> {
  const removed: string[] = [];
  for (const parent of parents) {
    for (const entry of await readdir(parent, { withFileTypes: true }).catch(() => [])) {
      if (!entry.isDirectory()) continue;
      const dir = path.join(parent, entry.name);
      removed.push(...(await removeStaleGitLocks(dir)).map((file) => path.join(dir, file)));
    }
  }
  return removed;
}
