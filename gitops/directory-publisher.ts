// `--output <dir>`: the rendered tree, published into a directory that is ours alone.
//
// Layout (everything happens inside <dir>, which is never renamed: it may be a mount point):
//   <dir>/current -> .clusterstack/trees/<id>   the tree; readers use <dir>/current/...
//   <dir>/.clusterstack/output.json              marker: this directory is clusterstack's
//   <dir>/.clusterstack/lock                     held by the run publishing (publish-lock.ts)
//   <dir>/.clusterstack/settled-run.json         the last settled run and the stat of its tree's
//                                                files (settled-run-record.ts)
//   <dir>/.clusterstack/trees/<id>/              complete trees: the current one, and the one it
//                                                replaced until the next publish reworks it
//   <dir>/.clusterstack/staging-*, current-*     a run in progress (or a crashed run's leftovers)
//
// A new tree is written in full under staging-* (the units a render finishes early while it still
// runs: prestage), renamed to trees/<id>, and made current by
// renaming a new symbolic link over `current`: one atomic step, so a reader that resolves
// `current` sees the whole old tree or the whole new one, and a crash at any point leaves
// `current` pointing at a complete tree. Leftovers are removed by the next run holding the lock.
//
// The directory must be empty, absent, or ours (our marker, or the provenance.json of an earlier
// version that wrote the tree at the top); anything else is refused unless adopted explicitly.
import { createHash, randomBytes } from 'node:crypto';
import { linkSync, lstatSync, mkdirSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import {
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  realpath,
  rename,
  rm,
  rmdir,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { inFileBatches, textFileReader } from './file-concurrency.js';
import { acquirePublishLock, type PublishLock } from './publish-lock.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { LockRequest, Publisher, PublishResult } from './publisher.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { diffTrees } from '../src/output/rendered-tree.js';
import { PublishError } from './publish-error.js';
import { sameTree } from '../src/output/rendered-tree.js';
import { assertOutsideProtected, type ProtectedPath } from './protected-paths.js';
import {
  readRecordFile,
  removeRecordFile,
  type SettledRun,
  type SettledRunStore,
  type StatEvidence,
  statEvidenceHolds,
  takeStatEvidence,
  writeRecordFile,
} from './settled-run-record.js';
import { checkTreePaths } from './tree-paths.js';
import { crashPoint } from './crash-point.js';

/** `<dir>/current`: the link to the published tree, what readers of the directory use. */
export const CURRENT_LINK = 'current';
const STATE_DIR = '.clusterstack';
const MARKER_FILE = 'output.json';
const TREES_DIR = 'trees';
const LOCK_FILE = 'lock';
const SETTLED_FILE = 'settled-run.json';
const MARKER = { generator: 'clusterstack-gitops', layout: 'current-link' } as const;
// What an earlier version wrote at the top of the directory, with the tree itself.
const LEGACY_PROVENANCE = 'provenance.json';

export interface DirectoryPublisherOptions {
  /** Take over a directory holding files we did not write: they stay where they are, untouched. */
  adopt?: boolean;
  /** Inputs and release sources: the directory may be neither of them nor hold them. */
  protectedPaths?: readonly ProtectedPath[];
  /**
   * Runs after a publish that changed the tree, still under the lock (a controller shard rewrites
   * the shards' index beside its directory, shard-directory-index.ts). Its failure fails the
   * publish, and it runs again with the next publish, even one that changes nothing.
   */
  afterChange?: () => Promise<void>;
}

/** Whose the directory is, as far as its entries tell. */
type Ownership =
  | { kind: 'absent' }
  | { kind: 'empty' }
  | { kind: 'ours' }
  /** A tree an earlier version wrote straight into the directory (provenance.json at the top). */
  | { kind: 'legacy' }
  | { kind: 'foreign'; entries: string[] };

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

async function scanFiles(root: string): Promise<RenderedTree> {
  const paths: string[] = [];
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(path.join(root, relative), { withFileTypes: true });
    const directories: string[] = [];
    for (const entry of entries) {
      if (relative === '' && (entry.name === STATE_DIR || entry.name === CURRENT_LINK)) continue;
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) directories.push(child);
      else if (entry.isFile()) paths.push(child);
    }
    await Promise.all(directories.map(walk));
  };
  await walk('');
  paths.sort();
  // Read synchronously, a batch at a time (file-concurrency.ts).
  const tree: RenderedTree = new Map();
  const read = textFileReader();
  await inFileBatches(paths, (file) => tree.set(file, read(`${root}/${file}`)));
  return tree;
}

/**
 * Makes `staging` (new and empty, or a whole tree of an earlier run renamed out of trees/) hold
 * `tree`, and returns the files the caller still has to write. A file the current tree holds with
 * the wanted content is hard-linked from it, and kept without being read when it is that very file
 * already (same inode): the trees share unchanged files as hard links, so a one-cluster change to a
 * large fleet writes that cluster's files and leaves the rest alone. Every other file is unlinked
 * first, never written through, since it may be such a shared link; what is left over is removed.
 * Files written ahead (`writtenAhead`, by prestage) are kept when they hold the wanted content.
 * Paths are plain concatenations: path.join costs more than a link at 20,000 files, and every path
 * here is one checkTreePaths passed (relative, no `.` or `..` segments) or one just listed.
 */
function reworkTree(
  staging: string,
  tree: RenderedTree,
  current?: { root: string; files: RenderedTree },
  writtenAhead?: ReadonlyMap<string, string>,
): string[] {
  // What staging holds, from one walk: entries that are not directories, and whether each is a regular file.
  const present = { files: new Map<string, boolean>(), directories: [] as string[] };
  const walk = (relative: string): void => {
    for (const entry of readdirSync(relative === '' ? staging : `${staging}/${relative}`, { withFileTypes: true })) {
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        present.directories.push(child);
        walk(child);
      } else present.files.set(child, entry.isFile());
    }
  };
  walk('');
  const wantedDirectories = new Set<string>();
  for (const file of tree.keys())
    for (let slash = file.indexOf('/'); slash >= 0; slash = file.indexOf('/', slash + 1))
      wantedDirectories.add(file.slice(0, slash));
  for (const file of present.files.keys()) if (!tree.has(file)) unlinkSync(`${staging}/${file}`);
  // Deepest first, so a directory is empty of what is unwanted by the time it is removed.
  const kept = new Set<string>();
  for (const directory of present.directories.reverse())
    if (!wantedDirectories.has(directory)) rmSync(`${staging}/${directory}`, { recursive: true, force: true });
    else kept.add(directory);
  for (const directory of [...wantedDirectories].sort())
    if (!kept.has(directory)) mkdirSync(`${staging}/${directory}`, { recursive: true });
  const toWrite: string[] = [];
  for (const [file, content] of tree) {
    const target = `${staging}/${file}`;
    // Only this run writes in staging (it holds the lock): the walk tells what is there without a
    // stat per file. A directory was removed only when no file of the tree lies below it, so no
    // entry the walk saw there is one of the tree's files.
    const heldKind = present.files.get(file);
    // Written ahead with this content, into this staging directory, while the render ran (prestage).
    if (heldKind === true && writtenAhead?.get(file) === content) continue;
    if (current && current.files.get(file) === content) {
      const source = lstatSync(`${current.root}/${file}`, { throwIfNoEntry: false });
      const held = heldKind === undefined ? undefined : lstatSync(target, { throwIfNoEntry: false });
      if (held && source && held.isFile() && held.ino === source.ino && held.dev === source.dev) continue;
      if (held) unlinkSync(target);
      if (source?.isFile()) {
        try {
          linkSync(`${current.root}/${file}`, target);
          continue;
        } catch {
          // No hard links here: written below.
        }
      }
    } else if (heldKind !== undefined) unlinkSync(target);
    toWrite.push(file);
  }
  return toWrite;
}

/** A stable name for a tree: the same content always lands in the same directory. */
function treeId(tree: RenderedTree): string {
  const hash = createHash('sha256');
  for (const file of [...tree.keys()].sort()) hash.update(`${file}\0${tree.get(file)}\0`);
  return hash.digest('hex').slice(0, 16);
}

function listed(entries: string[]): string {
  const shown = entries.slice(0, 5).join(', ');
  return entries.length > 5 ? `${shown} and ${entries.length - 5} more` : shown;
}

/** What proves a directory still holds a settled run's tree: the tree `current` names, and the stat of its files. */
interface DirectoryProof {
  tree: string;
  evidence: StatEvidence;
}

/**
 * The next tree's staging directory, filled while the render still runs (prestage): the spare tree
 * renamed there (or a new directory), and the files written into it since, with their content.
 */
interface StagedAhead {
  staging: string;
  written: Map<string, string>;
  /** Directories made under staging so far. */
  dirs: Set<string>;
  /** The writes so far, in order; never rejects. */
  work: Promise<void>;
  /** A write failed: nothing more is written ahead, and publish writes what is missing. */
  stopped: boolean;
}

/** Publishes to a local directory; `revision` is always null. */
export class DirectoryPublisher implements Publisher, SettledRunStore {
  readonly target: string;
  private readonly dir: string;
  private readonly adopt: boolean;
  private readonly protectedPaths: readonly ProtectedPath[];
  private readonly afterChange: (() => Promise<void>) | undefined;
  /** afterChange failed (or never finished) after the tree it follows was published. */
  private afterChangeOwed = false;
  private lastScan: RenderedTree | undefined;
  private held: PublishLock | undefined;
  private ahead: StagedAhead | undefined;

  constructor(dir: string, options: DirectoryPublisherOptions = {}) {
    this.dir = path.resolve(dir);
    this.adopt = options.adopt ?? false;
    this.protectedPaths = options.protectedPaths ?? [];
    this.afterChange = options.afterChange;
    this.target = this.dir;
  }

  /** The directory readers look in: `<dir>/current`. */
  get currentDir(): string {
    return path.join(this.dir, CURRENT_LINK);
  }

  /**
   * Checks the directory is ours to write (refusing before anything is created), then takes its
   * lock. A run that publishes nothing removes what it created for the lock again.
   */
  async lock(request: LockRequest): Promise<PublishLock> {
    const before = await this.ownership();
    this.refuseForeign(before);
    const dir = await this.ensureDirectory();
    const stateDir = path.join(dir, STATE_DIR);
    const createdState = !(await exists(stateDir));
    await mkdir(stateDir, { recursive: true });
    const lock = await acquirePublishLock(path.join(stateDir, LOCK_FILE), {
      timeoutMs: request.timeoutMs,
      target: `--output ${this.dir}`,
      command: request.command,
    });
    this.held = lock;
    try {
      // Another run may have published between our check and the lock: look again.
      this.refuseForeign(await this.ownership());
    } catch (error) {
      this.held = undefined;
      await lock.release();
      throw error;
    }
    return {
      file: lock.file,
      release: async () => {
        // Files written ahead for a tree that was never published go before the lock does.
        await this.dropAhead();
        this.held = undefined;
        await lock.release();
        // A failed first render leaves nothing behind: not the lock, not the directory it created.
        if (createdState && !(await exists(path.join(stateDir, MARKER_FILE)))) {
          await rmdir(stateDir).catch(() => {});
          if (before.kind === 'absent') await rmdir(dir).catch(() => {});
        }
      },
    };
  }

  /** The files of the current tree (empty when there is none yet). */
  async readPrevious(): Promise<RenderedTree> {
    const ownership = await this.ownership();
    this.refuseForeign(ownership);
    if (ownership.kind === 'absent' || ownership.kind === 'empty') {
      this.lastScan = new Map();
      return this.lastScan;
    }
    const dir = await this.resolvedDir();
    // Leftovers of a crashed run are cleared only under the lock: another run may be writing them.
    if (this.held) {
      // One tree besides the current one stays: the next publish reworks it (reworkTree).
      const current = await this.currentTreeId(dir);
      await this.removeLeftovers(dir, {
        keep: current === undefined ? [] : [await this.spareTree(path.join(dir, STATE_DIR, TREES_DIR), current)],
      });
      await this.removeSiblingLeftovers();
    }
    if (ownership.kind === 'legacy') this.lastScan = await scanFiles(dir);
    else
      this.lastScan =
        (await this.currentTreeId(dir)) === undefined ? new Map() : await scanFiles(path.join(dir, CURRENT_LINK));
    return this.lastScan;
  }

  /**
   * Writes files the next published tree will probably hold (a unit's, as it is rendered) into that
   * tree's staging directory now, so that publishing has less left to write at the end of a render.
   * Only under the lock, after readPrevious, into a directory that is ours (or new). Best effort:
   * publish keeps a file written ahead only when the tree holds it with that content, removes what
   * the tree does not hold, and writes whatever could not be written ahead. Files the current tree
   * holds with the same content are left to publish, which links them. Nothing is visible to
   * readers before publish; a run that does not publish removes it when it releases the lock.
   */
  prestage(files: Iterable<readonly [string, string]>): void {
    const previous = this.lastScan;
    if (!this.held || previous === undefined || this.ahead?.stopped) return;
    const wanted = [...files].filter(([file, content]) => previous.get(file) !== content);
    if (wanted.length === 0) return;
    const ahead = (this.ahead ??= this.startAhead());
    ahead.work = ahead.work.then(async () => {
      if (ahead.stopped) return;
      try {
        checkTreePaths(new Map(wanted));
        await inFileBatches(wanted, ([file, content]) => this.writeAhead(ahead, file, content));
      } catch {
        // A full disk, a path the tree will refuse, a directory where a file goes: publish decides.
        ahead.stopped = true;
      }
    });
  }

  /** Renames the spare tree to a new staging directory (or makes one) for prestage. */
  private startAhead(): StagedAhead {
    const ahead: StagedAhead = {
      staging: '',
      written: new Map(),
      dirs: new Set(),
      work: Promise.resolve(),
      stopped: false,
    };
    ahead.work = (async () => {
      try {
        // The lock made the directory ours (or found it so); an earlier version's layout is published as before.
        if ((await this.ownership()).kind !== 'ours') throw new Error('not a directory of ours');
        const dir = await this.resolvedDir();
        const trees = path.join(dir, STATE_DIR, TREES_DIR);
        const replaced = await this.currentTreeId(dir);
        const staging = path.join(dir, STATE_DIR, `staging-${randomBytes(6).toString('hex')}`);
        await this.makeStaging(staging, trees, replaced);
        ahead.staging = staging;
      } catch {
        ahead.stopped = true;
      }
    })();
    return ahead;
  }

  /**
   * One file into the staging directory: never written through (a spare tree's file may be a link
   * shared with the current tree). Created exclusively (`wx`) without looking first: in a new
   * staging directory nothing is there, and only when something is (EEXIST, a spare tree's file or
   * directory) is it removed and the file created again. One open, write and close per file.
   */
  private writeAhead(ahead: StagedAhead, file: string, content: string): void {
    const target = `${ahead.staging}/${file}`;
    for (let slash = file.indexOf('/'); slash >= 0; slash = file.indexOf('/', slash + 1)) {
      const parent = file.slice(0, slash);
      if (ahead.dirs.has(parent)) continue;
      mkdirSync(`${ahead.staging}/${parent}`, { recursive: true });
      ahead.dirs.add(parent);
    }
    ahead.written.delete(file);
    try {
      writeFileSync(target, content, { encoding: 'utf8', flag: 'wx' });
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
      if (lstatSync(target).isDirectory()) rmSync(target, { recursive: true, force: true });
      else unlinkSync(target);
      writeFileSync(target, content, { encoding: 'utf8', flag: 'wx' });
    }
    ahead.written.set(file, content);
  }

  /** The staging directory written ahead, taken over by the caller (publish); undefined when there is none to use. */
  private async takeAhead(): Promise<StagedAhead | undefined> {
    const ahead = this.ahead;
    this.ahead = undefined;
    if (!ahead) return undefined;
    await ahead.work;
    if (ahead.staging === '') return undefined;
    return ahead;
  }

  /** Removes what was written ahead and not published. */
  private async dropAhead(): Promise<void> {
    const ahead = await this.takeAhead();
    if (ahead) await rm(ahead.staging, { recursive: true, force: true });
  }

  /** Makes `<dir>/current` hold exactly `tree`; writes nothing when it already does. */
  async publish(tree: RenderedTree, _change?: ChangeSummary): Promise<PublishResult> {
    checkTreePaths(tree);
    const ownership = await this.ownership();
    this.refuseForeign(ownership);
    // The scan readPrevious just took is reused: rendering sits between the two, and reading
    // thousands of files twice would double a no-op render. It is used once.
    const previous =
      this.lastScan ??
      (ownership.kind === 'absent' || ownership.kind === 'empty'
        ? new Map<string, string>()
        : await this.readPrevious());
    this.lastScan = undefined;
    const { written, removed } = diffTrees(previous, tree);
    if (
      ownership.kind === 'ours' &&
      sameTree(previous, tree) &&
      (await this.currentTreeId(await this.resolvedDir())) !== undefined
    ) {
      await this.dropAhead();
      if (this.afterChangeOwed) await this.runAfterChange();
      return { changed: false, written: [], removed: [], revision: null };
    }
    const dir = await this.ensureDirectory();
    await this.swapIn(
      dir,
      tree,
      ownership.kind === 'legacy' ? [...new Set([...previous.keys()].map((file) => file.split('/')[0]!))] : [],
      ownership.kind === 'legacy' ? new Map() : previous,
      await this.takeAhead(),
    );
    await this.runAfterChange();
    return { changed: true, written, removed, revision: null };
  }

  private async runAfterChange(): Promise<void> {
    if (!this.afterChange) return;
    this.afterChangeOwed = true;
    await this.afterChange();
    this.afterChangeOwed = false;
  }

  /**
   * The last settled run, when `current` still names the tree it left and no file of that tree was
   * written, added, removed or renamed since (statEvidence). A hand edit, a crashed or foreign
   * write, or an earlier version's layout: undefined, and the run renders.
   */
  async readSettledRun(fingerprint: string): Promise<SettledRun | undefined> {
    const ownership = await this.ownership();
    this.refuseForeign(ownership);
    if (ownership.kind !== 'ours') return undefined;
    const dir = await this.resolvedDir();
    const record = await readRecordFile<DirectoryProof>(path.join(dir, STATE_DIR, SETTLED_FILE));
    if (
      !record ||
      record.fingerprint !== fingerprint ||
      typeof record.proof.tree !== 'string' ||
      typeof record.proof.evidence !== 'object' ||
      record.proof.evidence === null
    )
      return undefined;
    const current = await this.currentTreeId(dir);
    if (current === undefined || current !== record.proof.tree) return undefined;
    return statEvidenceHolds(path.join(dir, STATE_DIR, TREES_DIR, current), record.proof.evidence)
      ? { fingerprint: record.fingerprint, report: record.report }
      : undefined;
  }

  /** Whether a settled run is recorded at all (no proof is taken); false means the next run renders. */
  async hasSettledRun(): Promise<boolean> {
    try {
      if ((await this.ownership()).kind !== 'ours') return false;
      return (
        lstatSync(path.join(await this.resolvedDir(), STATE_DIR, SETTLED_FILE), { throwIfNoEntry: false }) !== undefined
      );
    } catch {
      // Whatever is wrong with the directory is for the run to meet and report; nothing is ruled out.
      return true;
    }
  }

  /** Records `run` with the stat of the current tree's files; nothing when there is no current tree. */
  async recordSettledRun(run: SettledRun, _revision?: string | null): Promise<void> {
    const dir = await this.resolvedDir();
    const current = await this.currentTreeId(dir);
    if (current === undefined) return;
    const proof: DirectoryProof = {
      tree: current,
      evidence: takeStatEvidence(path.join(dir, STATE_DIR, TREES_DIR, current)),
    };
    await writeRecordFile(path.join(dir, STATE_DIR, SETTLED_FILE), run, proof);
  }

  async forgetSettledRun(): Promise<void> {
    if ((await this.ownership()).kind !== 'ours') return;
    await removeRecordFile(path.join(await this.resolvedDir(), STATE_DIR, SETTLED_FILE));
  }

  private refuseForeign(ownership: Ownership): void {
    if (ownership.kind !== 'foreign' || this.adopt) return;
    throw new PublishError(
      'invalid-target',
      `--output ${this.dir} holds files clusterstack did not write (${listed(ownership.entries)}); nothing was written. ` +
        `Give an empty or new directory, or pass --adopt-output to publish into it anyway (its files stay untouched; the render goes to ${this.currentDir})`,
    );
  }

  private async ownership(): Promise<Ownership> {
    await assertOutsideProtected(
      `--output ${this.dir}`,
      this.dir,
      this.protectedPaths,
      'Give an output directory outside your inputs and release source',
    );
    let entries: string[];
    try {
      const info = await stat(this.dir);
      if (!info.isDirectory())
        throw new PublishError('invalid-target', `--output ${this.dir} is a file; give a directory`);
      entries = (await readdir(this.dir)).sort();
    } catch (error) {
      if (error instanceof PublishError) throw error;
      if (errorCode(error) === 'ENOENT') return { kind: 'absent' };
      if (errorCode(error) === 'ENOTDIR')
        throw new PublishError(
          'invalid-target',
          `cannot write --output ${this.dir}: a parent of it is a file, not a directory`,
        );
      throw new PublishError('unavailable', `cannot read --output ${this.dir}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    if (entries.length === 0) return { kind: 'empty' };
    const current = entries.includes(CURRENT_LINK) ? await lstat(path.join(this.dir, CURRENT_LINK)) : undefined;
    if (current && !current.isSymbolicLink()) {
      // Even an adopted directory cannot give us `current`: it would be replaced.
      throw new PublishError(
        'invalid-target',
        `--output ${this.dir} holds a "${CURRENT_LINK}" that is not clusterstack's link to the rendered tree; move it away (clusterstack publishes there)`,
      );
    }
    if (entries.includes(STATE_DIR)) {
      const marker = await readFile(path.join(this.dir, STATE_DIR, MARKER_FILE), 'utf8').catch(() => undefined);
      if (marker !== undefined && isMarker(marker)) return { kind: 'ours' };
      // A first run in progress (or one that died before its first publish) has only these.
      if (entries.every((entry) => entry === STATE_DIR || entry === CURRENT_LINK)) return { kind: 'ours' };
    }
    const provenance = entries.includes(LEGACY_PROVENANCE)
      ? await readFile(path.join(this.dir, LEGACY_PROVENANCE), 'utf8').catch(() => undefined)
      : undefined;
    if (provenance !== undefined && isMarker(provenance)) return { kind: 'legacy' };
    return { kind: 'foreign', entries: entries.filter((entry) => entry !== STATE_DIR) };
  }

  /** The real directory (following a symbolic link given as --output). */
  private async resolvedDir(): Promise<string> {
    return (await lstat(this.dir)).isSymbolicLink() ? realpath(this.dir) : this.dir;
  }

  private async ensureDirectory(): Promise<string> {
    try {
      await mkdir(this.dir, { recursive: true });
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ENOTDIR' || code === 'EEXIST')
        throw new PublishError(
          'invalid-target',
          `cannot write --output ${this.dir}: a parent of it is a file, not a directory`,
          { cause: error },
        );
      if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
        throw new PublishError(
          'invalid-target',
          `cannot write --output ${this.dir}: ${path.dirname(this.dir)} is not writable (${code}); choose another directory or fix its permissions`,
          { cause: error },
        );
      }
      throw new PublishError('unavailable', `cannot write --output ${this.dir}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    return this.resolvedDir();
  }

  /** The id of the tree `current` points at, when it points at one of ours that exists. */
  private async currentTreeId(dir: string): Promise<string | undefined> {
    let target: string;
    try {
      target = await readlink(path.join(dir, CURRENT_LINK));
    } catch {
      return undefined;
    }
    const segments = target.split('/');
    if (segments.length !== 3 || segments[0] !== STATE_DIR || segments[1] !== TREES_DIR) return undefined;
    return (await exists(path.join(dir, target))) ? segments[2] : undefined;
  }

  private async swapIn(
    dir: string,
    tree: RenderedTree,
    legacyEntries: string[],
    previous: RenderedTree,
    ahead?: StagedAhead,
  ): Promise<void> {
    const stateDir = path.join(dir, STATE_DIR);
    const trees = path.join(stateDir, TREES_DIR);
    const replaced = await this.currentTreeId(dir);
    const suffix = randomBytes(6).toString('hex');
    // A tree directory of this content may exist already: the tree before last (a render going back
    // to it), a crashed run's, or the current one when a hand edit is being undone. Its files may
    // have been written since, by hand or through a hard link they share, so it is reused (a reader
    // still in it keeps reading) only when it is not the current one and still holds exactly this
    // tree; otherwise this tree gets a directory of its own.
    const contentId = treeId(tree);
    const reusable =
      contentId !== replaced &&
      (await exists(path.join(trees, contentId))) &&
      sameTree(await scanFiles(path.join(trees, contentId)).catch(() => new Map<string, string>()), tree);
    const staging = ahead?.staging ?? path.join(stateDir, `staging-${suffix}`);
    const link = path.join(stateDir, `${CURRENT_LINK}-${suffix}`);
    let id = contentId;
    try {
      await mkdir(trees, { recursive: true });
      await this.writeMarker(stateDir);
      if (reusable && ahead) await rm(staging, { recursive: true, force: true });
      if (!reusable) {
        // Written ahead: the staging directory exists already, with the spare tree in it if there was one.
        if (!ahead) await this.makeStaging(staging, trees, replaced);
        crashPoint('directory:staging');
        const toWrite = reworkTree(
          staging,
          tree,
          replaced === undefined ? undefined : { root: path.join(trees, replaced), files: previous },
          ahead?.written,
        );
        await inFileBatches(toWrite, (file) => {
          writeFileSync(`${staging}/${file}`, tree.get(file) ?? '', { encoding: 'utf8', flag: 'wx' });
          crashPoint('directory:write-file');
        });
        if (await exists(path.join(trees, contentId))) id = `${contentId}-${suffix}`;
        await rename(staging, path.join(trees, id));
        crashPoint('directory:tree-renamed');
      }
      // The link's target is relative to <dir>, where it ends up.
      await symlink(`${STATE_DIR}/${TREES_DIR}/${id}`, link);
      crashPoint('directory:link-made');
      await rename(link, path.join(dir, CURRENT_LINK));
      crashPoint('directory:swapped');
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      await unlink(link).catch(() => {});
      const code = errorCode(error);
      const kind = code === 'EACCES' || code === 'EPERM' || code === 'EROFS' ? 'invalid-target' : 'unavailable';
      throw new PublishError(
        kind,
        `cannot write --output ${this.dir}: ${(error as Error).message}; the previous contents are unchanged`,
        { cause: error },
      );
    }
    // An earlier version's tree at the top goes once the new one is current.
    for (const entry of legacyEntries) {
      if (entry !== STATE_DIR && entry !== CURRENT_LINK)
        await rm(path.join(dir, entry), { recursive: true, force: true });
    }
    await this.removeLeftovers(dir, { keep: [replaced] });
  }

  /**
   * Makes `staging`: the spare tree renamed there when there is one, else a new directory. The tree
   * before the current one is reworked into the next (reworkTree) rather than deleted and linked
   * anew: at tens of thousands of files, removing a tree and hard-linking the next cost about a
   * second, and a one-cluster change leaves almost every file of it as it is.
   */
  private async makeStaging(staging: string, trees: string, replaced: string | undefined): Promise<void> {
    const spare = replaced === undefined ? undefined : await this.spareTree(trees, replaced);
    if (spare !== undefined) await rename(path.join(trees, spare), staging);
    else await mkdir(staging);
  }

  /** A tree other than the current one, to be reworked into the next (see reworkTree); undefined when there is none. */
  private async spareTree(trees: string, current: string): Promise<string | undefined> {
    const names = (await readdir(trees).catch(() => [] as string[])).filter((name) => name !== current).sort();
    return names[0];
  }

  /**
   * Earlier versions swapped by renaming the directory itself through `.<name>.new-<hex>` and
   * `.<name>.old-<hex>` beside it, and a crash left those behind for good. They are never complete
   * outputs of ours any more (the directory exists and is ours), so they go.
   */
  private async removeSiblingLeftovers(): Promise<void> {
    const parent = path.dirname(this.dir);
    const pattern = new RegExp(
      `^\\.${path.basename(this.dir).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.(new|old)-[0-9a-f]{12}$`,
    );
    const entries = await readdir(parent).catch(() => [] as string[]);
    for (const entry of entries.filter((name) => pattern.test(name)))
      await rm(path.join(parent, entry), { recursive: true, force: true }).catch(() => {});
  }

  private async writeMarker(stateDir: string): Promise<void> {
    const marker = path.join(stateDir, MARKER_FILE);
    if (await exists(marker)) return;
    const temp = `${marker}.${randomBytes(6).toString('hex')}`;
    await writeFile(temp, `${JSON.stringify(MARKER)}\n`);
    await rename(temp, marker);
  }

  /**
   * Removes staging directories, temporary links and trees other than the current one and those in
   * `keep` (the tree just replaced, for readers that resolved `current` before the swap, and later
   * for the next publish to rework).
   */
  private async removeLeftovers(dir: string, options: { keep: readonly (string | undefined)[] }): Promise<void> {
    const stateDir = path.join(dir, STATE_DIR);
    const current = await this.currentTreeId(dir);
    const entries = await readdir(stateDir).catch(() => [] as string[]);
    for (const entry of entries) {
      if (
        entry.startsWith('staging-') ||
        entry.startsWith(`${CURRENT_LINK}-`) ||
        entry.startsWith(`${MARKER_FILE}.`) ||
        entry.startsWith(`${SETTLED_FILE}.`)
      ) {
        await rm(path.join(stateDir, entry), { recursive: true, force: true });
      }
    }
    const trees = await readdir(path.join(stateDir, TREES_DIR)).catch(() => [] as string[]);
    for (const tree of trees) {
      if (tree === current || options.keep.includes(tree)) continue;
      await rm(path.join(stateDir, TREES_DIR, tree), { recursive: true, force: true });
    }
  }
}

/** Our marker, or the provenance record an earlier version wrote: both name us as generator. */
function isMarker(text: string): boolean {
  try {
    return (JSON.parse(text) as { generator?: unknown }).generator === MARKER.generator;
  } catch {
    return false;
  }
}

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}
