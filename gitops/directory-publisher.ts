// `--output <dir>`: the directory ends up holding exactly the rendered tree. The new tree is written
// in full to a sibling directory and swapped in with renames, so readers (and a crash) see either
// the old tree or the new one, never a mix.
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChangeSummary, Publisher, PublishResult, RenderedTree } from './publisher.js';
import { diffTrees } from './publisher.js';
import { PublishError } from './publish-error.js';
import { checkTreePaths } from './tree-paths.js';
import { FILE_CONCURRENCY, mapBounded } from '../src/bounded-parallel.js';

interface DirectoryScan {
  files: RenderedTree;
  /** Something other than the files: empty directories, symbolic links, sockets. */
  hasOtherEntries: boolean;
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

async function scanDirectory(root: string): Promise<DirectoryScan> {
  const paths: string[] = [];
  let hasOtherEntries = false;
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(path.join(root, relative), { withFileTypes: true });
    if (entries.length === 0 && relative !== '') hasOtherEntries = true;
    const directories: string[] = [];
    for (const entry of entries) {
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) directories.push(child);
      else if (entry.isFile()) paths.push(child);
      else hasOtherEntries = true;
    }
    await Promise.all(directories.map(walk));
  };
  await walk('');
  paths.sort();
  const contents = await mapBounded(paths, FILE_CONCURRENCY, (file) => readFile(path.join(root, file), 'utf8'));
  return { files: new Map(paths.map((file, index) => [file, contents[index]!])), hasOtherEntries };
}

function sameTree(a: RenderedTree, b: RenderedTree): boolean {
  if (a.size !== b.size) return false;
  for (const [file, content] of a) if (b.get(file) !== content) return false;
  return true;
}

/** Publishes to a local directory; `revision` is always null. */
export class DirectoryPublisher implements Publisher {
  readonly target: string;
  private readonly dir: string;
  private lastScan: DirectoryScan | undefined;

  constructor(dir: string) {
    this.dir = path.resolve(dir);
    this.target = this.dir;
  }

  /** The files under the directory now (empty when it does not exist yet). */
  async readPrevious(): Promise<RenderedTree> {
    const dir = await this.existingDirectory();
    this.lastScan = dir === undefined ? undefined : await scanDirectory(dir);
    return this.lastScan?.files ?? new Map();
  }

  /** Swaps the directory for one holding exactly `tree`; writes nothing when it already does. */
  async publish(tree: RenderedTree, _change?: ChangeSummary): Promise<PublishResult> {
    checkTreePaths(tree);
    const dir = await this.existingDirectory();
    // The scan readPrevious just took is reused: rendering sits between the two, and reading
    // thousands of files twice would double a no-op render. It is used once.
    const scanned = this.lastScan;
    this.lastScan = undefined;
    const previous = dir === undefined ? { files: new Map<string, string>(), hasOtherEntries: false } : (scanned ?? (await scanDirectory(dir)));
    const { written, removed } = diffTrees(previous.files, tree);
    if (dir !== undefined && sameTree(previous.files, tree) && !previous.hasOtherEntries) {
      return { changed: false, written: [], removed: [], revision: null };
    }
    await this.swapIn(dir ?? this.dir, dir !== undefined, tree);
    return { changed: true, written, removed, revision: null };
  }

  /** The real directory path when the output exists (following a symbolic link), undefined when it does not. */
  private async existingDirectory(): Promise<string | undefined> {
    let info;
    try {
      info = await stat(this.dir);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      if (errorCode(error) === 'ENOTDIR') throw new PublishError('invalid-target', `cannot write --output ${this.dir}: a parent of it is a file, not a directory`);
      throw new PublishError('unavailable', `cannot read --output ${this.dir}: ${(error as Error).message}`, { cause: error });
    }
    if (!info.isDirectory()) throw new PublishError('invalid-target', `--output ${this.dir} is a file; give a directory`);
    return (await lstat(this.dir)).isSymbolicLink() ? realpath(this.dir) : this.dir;
  }

  private async swapIn(dir: string, exists: boolean, tree: RenderedTree): Promise<void> {
    const parent = path.dirname(dir);
    const base = path.basename(dir);
    const suffix = randomBytes(6).toString('hex');
    const staging = path.join(parent, `.${base}.new-${suffix}`);
    const retired = path.join(parent, `.${base}.old-${suffix}`);
    try {
      await mkdir(parent, { recursive: true });
      await mkdir(staging);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ENOTDIR' || code === 'EEXIST') {
        throw new PublishError('invalid-target', `cannot write --output ${dir}: a parent of it is a file, not a directory`, { cause: error });
      }
      if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
        throw new PublishError('invalid-target', `cannot write --output ${dir}: ${parent} is not writable (${code}); choose another directory or fix its permissions`, { cause: error });
      }
      throw new PublishError('unavailable', `cannot write --output ${dir}: ${(error as Error).message}`, { cause: error });
    }
    try {
      // mkdir applied the umask; keep the mode a user gave the existing directory.
      if (exists) await chmod(staging, (await stat(dir)).mode & 0o7777);
      const files = [...tree.keys()].sort();
      const directories = [...new Set(files.map((file) => path.dirname(path.join(staging, ...file.split('/')))))];
      for (const directory of directories) await mkdir(directory, { recursive: true });
      await mapBounded(files, FILE_CONCURRENCY, (file) => writeFile(path.join(staging, ...file.split('/')), tree.get(file) ?? '', 'utf8'));
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      throw new PublishError('unavailable', `cannot write --output ${dir}: ${(error as Error).message}; the previous contents are unchanged`, { cause: error });
    }
    if (exists) {
      try {
        await rename(dir, retired);
      } catch (error) {
        await rm(staging, { recursive: true, force: true });
        throw new PublishError('unavailable', `cannot replace --output ${dir}: ${(error as Error).message}; the previous contents are unchanged`, { cause: error });
      }
    }
    try {
      await rename(staging, dir);
    } catch (error) {
      if (exists) await rename(retired, dir);
      await rm(staging, { recursive: true, force: true });
      throw new PublishError('unavailable', `cannot replace --output ${dir}: ${(error as Error).message}; the previous contents are unchanged`, { cause: error });
    }
    if (exists) await rm(retired, { recursive: true, force: true });
  }
}
