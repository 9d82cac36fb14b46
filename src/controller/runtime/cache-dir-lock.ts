// The controller's cache directory (release cache, Git clones, helm's home) belongs to one
// controller process at a time. A pid file says which; a new process takes the directory over
// when that process is gone (killed, crashed, its container restarted), and only then repairs what
// a kill can leave behind (git lock files). A live owner is a clear error instead: two controllers
// working in one clone would corrupt each other's commits.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { removeStaleGitLocksUnder } from '../../../gitops/recover-clone.js';
import { Failure } from '../../core/failure.js';

const CACHE_LOCK_FILE = 'controller.pid';
/** Where the controller keeps clones: the Git publisher's, the pull-request publisher's, the history mirror's. */
const CLONE_PARENTS = ['git', 'git-pr', 'git-history'];

export class CacheDirBusyError extends Failure {
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super(
      'fix-input',
      `the cache directory ${dir} is in use by another controller (pid ${pid} on this host); give each controller its own --cache-dir (CLUSTERSTACK_CACHE_DIR)`,
    );
    this.name = 'CacheDirBusyError';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, it is just not ours to signal.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes this process the owner of `cacheDir`; when it took over from a process that is gone,
 * removes the git lock files that process may have left in its clones. Returns the files removed.
 * Throws CacheDirBusyError while another live process on this host owns the directory.
 */
export async function claimCacheDir(
  cacheDir: string,
  options: { pid?: number; hostname?: string; isAlive?: (pid: number) => boolean } = {},
): Promise<string[]> {
  const pid = options.pid ?? process.pid;
  const hostname = options.hostname ?? os.hostname();
  const isAlive = options.isAlive ?? alive;
  await mkdir(cacheDir, { recursive: true });
  const file = path.join(cacheDir, CACHE_LOCK_FILE);
  const previous = await readFile(file, 'utf8').then(
    (text) => JSON.parse(text) as { pid?: unknown; hostname?: unknown },
    () => undefined,
  );
  // In a restarted container the new process often gets the old pid: the same pid is the old us.
  if (
    previous &&
    typeof previous.pid === 'number' &&
    previous.hostname === hostname &&
    previous.pid !== pid &&
    isAlive(previous.pid)
  ) {
    throw new CacheDirBusyError(cacheDir, previous.pid);
  }
  const temporary = `${file}.${pid}.tmp`;
  await writeFile(temporary, JSON.stringify({ pid, hostname }));
  await rename(temporary, file);
  return previous ? removeStaleGitLocksUnder(CLONE_PARENTS.map((parent) => path.join(cacheDir, parent))) : [];
}
