// `--git <path or URL> --branch <b> --path <subdir>`: the subdirectory of the branch ends up holding
// exactly the rendered tree, in one commit, or in none when it already did.
//
// Two ways of working, chosen from what `--git` names:
// - a local path that is missing, an empty directory, or a work tree with the branch checked out:
//   commit straight into it (no push), so people can look at the files (the quick start's
//   ./out/gitops-repo). Only files tracked under --path are ours: untracked files are left alone
//   (never deleted, never committed), and one where the render would write is refused. A journal in
//   the git directory lets the next run undo what a killed run left half-written in the work tree;
// - anything else (a bare repository, a work tree on another branch, file://, http(s)://, ssh):
//   a clone in `workDir` kept in step with the remote (fetch + hard reset), commit, push; when the
//   push loses a race (non-fast-forward), start again from the new remote head. When the remote
//   branch is still at a commit whose tree this publisher knows (it read it or pushed it), the
//   commit is made from the files that differ alone (git-fast-commit.ts: no reset, no work tree,
//   no index) and pushed only if the branch is still there (--force-with-lease).
// Runs on one work tree, or one clone, take turns through a lock (lock(), publish-lock.ts).
// The last settled run is recorded in the git directory (in place) or the clone's (settled-run-record.ts):
// in place it holds while the branch is checked out, the tree under the path at HEAD is the one that
// run left and nothing under the path differs from HEAD (nothing staged anywhere); against a remote,
// while the remote branch still points at the commit that run pushed or found.
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, realpath, rm, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pLimit from 'p-limit';
import { FILE_CONCURRENCY } from './file-concurrency.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { Publisher, PublishResult } from './publisher.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { PublishError } from './publish-error.js';
import { checkTreePaths, normalizeSubdir } from './tree-paths.js';
import { readTreeAtCommit } from './read-git-tree.js';
import { syncWorkTree } from './sync-work-tree.js';
import { acquirePublishLock, type PublishLock } from './publish-lock.js';
import type { LockRequest } from './publisher.js';
import { compileCommitMessage, type CommitMessageRenderer } from './commit-message.js';
import { GitCommand, type GitTargetOptions } from './git-command.js';
import { fastCommit } from './git-fast-commit.js';
import { parseGitRemote, type GitRemote } from './git-remote.js';
import { assertOutsideProtected, type ProtectedPath } from './protected-paths.js';
import { removeStaleGitLocks } from './stale-git-locks.js';
import { readRecordFile, removeRecordFile, type SettledRun, type SettledRunStore, writeRecordFile } from './settled-run-record.js';
import type { Logger } from '../src/core/logger.js';


/**
 * `repository` may also be a local work tree (committed in place, `workDir` unused) or a missing
 * path (a repository is created there).
 */
export interface GitPublisherOptions extends GitTargetOptions {
  /** Handlebars source of the commit message template; the bundled default when undefined. */
  messageTemplate?: string;
  /** Pushes tried before giving up on a branch others keep moving (default 5). */
  maxPushAttempts?: number;
  logger?: Logger;
  /** Inputs and release sources: an in-place work tree's --path may be neither of them nor hold them. */
  protectedPaths?: readonly ProtectedPath[];
}

type Workspace =
  | { mode: 'in-place'; dir: string; git: GitCommand; gitDir: string }
  | { mode: 'clone'; dir: string; git: GitCommand; url: string };

/** What `--git` names, decided without writing anything. */
type Decision = { mode: 'in-place'; dir: string; setup: 'init' | 'set-head' | 'none' } | { mode: 'clone'; url: string; http: boolean };

/** In the git directory of an in-place work tree: what a run is about to create, until it has committed. */
const JOURNAL_FILE = 'clusterstack-publish.json';
const LOCK_FILE = 'clusterstack.lock';
/** Inside a directory a run is turning into a repository, while it does. */
const INIT_LOCK_FILE = '.clusterstack-init.lock';

/** What proves the target still holds a settled run's tree: the tree id under the path (in place), or the remote branch's head. */
interface GitProof {
  tree?: string;
  head?: string;
}

interface StagedChanges {
  written: string[];
  removed: string[];
}

/** Publishes to a branch of a Git repository; `revision` is the commit holding the tree. */
export class GitPublisher implements Publisher, SettledRunStore {
  readonly target: string;
  private readonly remote: GitRemote;
  private readonly branch: string;
  private readonly subdir: string;
  private readonly workDir: string;
  private readonly maxPushAttempts: number;
  private readonly renderMessage: CommitMessageRenderer;
  private workspace: Promise<Workspace> | undefined;
  private decision: Promise<Decision> | undefined;
  private held: PublishLock | undefined;
  /**
   * A commit of the remote branch (the one we last pushed, or the head readPrevious read; null:
   * the branch did not exist) and the tree under the path in it, which holds regular files only.
   * After a reset to that commit the clone's files under the path are exactly this tree.
   */
  private committed: { revision: string | null; tree: RenderedTree } | undefined;

  constructor(private readonly options: GitPublisherOptions) {
    this.remote = parseGitRemote(options.repository);
    this.branch = options.branch;
    if (!isValidBranchName(this.branch)) throw new PublishError('invalid-input', `--branch "${this.branch}" is not a valid Git branch name`);
    this.subdir = normalizeSubdir(options.path);
    this.workDir = path.resolve(options.workDir);
    this.maxPushAttempts = options.maxPushAttempts ?? 5;
    if (!Number.isInteger(this.maxPushAttempts) || this.maxPushAttempts < 1) {
      throw new PublishError('invalid-input', `maxPushAttempts must be a whole number of at least 1, got ${options.maxPushAttempts}`);
    }
    this.renderMessage = compileCommitMessage(options.messageTemplate);
    this.target = `${this.remote.display} (branch ${this.branch}${this.subdir === '' ? '' : `, path ${this.subdir}`})`;
  }

  /**
   * Takes the lock of the work tree (in its git directory) or of the clone (beside it in the
   * cache), so two runs never interleave their reads, writes and commits.
   */
  async lock(request: LockRequest): Promise<PublishLock> {
    const decision = await this.decide();
    // In place, a repository that does not exist yet is created first (initRepository serializes
    // that): the lock lives in its git directory.
    const file = decision.mode === 'in-place' ? path.join(await this.gitDirOf(await this.open()), LOCK_FILE) : `${this.workDir}.lock`;
    const lock = await acquirePublishLock(file, { timeoutMs: request.timeoutMs, target: `--git ${this.remote.display}`, command: request.command });
    this.held = lock;
    return {
      file,
      release: async () => {
        this.held = undefined;
        await lock.release();
      },
    };
  }

  /** The files under the path at the branch head (empty when the branch does not exist yet). */
  async readPrevious(): Promise<RenderedTree> {
    const workspace = await this.open();
    if (workspace.mode === 'in-place') await this.repairInPlace(workspace);
    else if (this.held) await removeStaleGitLocks(path.join(workspace.dir, '.git'));
    const head = workspace.mode === 'clone' ? await this.resetToRemote(workspace) : await this.localHead(workspace);
    if (workspace.mode === 'in-place') return head === null ? new Map() : this.readCommit(workspace, head);
    const irregular: string[] = [];
    const tree = head === null ? new Map<string, string>() : await readTreeAtCommit(workspace.git, head, this.subdir, irregular);
    // A symbolic link or submodule under the path is not in the tree read (only a full publish
    // removes it), an executable file keeps its mode only through the work tree.
    this.committed = irregular.length === 0 ? { revision: head, tree } : undefined;
    return tree;
  }

  /** Commits (and pushes) `tree` under the path; no commit and no push when nothing changed. */
  async publish(tree: RenderedTree, change: ChangeSummary): Promise<PublishResult> {
    checkTreePaths(tree);
    const message = this.renderMessage(change);
    const workspace = await this.open();
    if (workspace.mode === 'in-place') return this.commitInPlace(workspace, tree, message);
    return this.commitAndPush(workspace, tree, message);
  }

  /**
   * The last settled run, when the target provably still holds what it left: in place, the branch
   * is checked out, HEAD's tree under the path is that run's and `git status` shows nothing staged
   * and nothing changed under the path (no interrupted run to repair either); against a remote, its
   * branch head is the commit that run pushed or found. Undefined otherwise: the run renders.
   */
  async readSettledRun(fingerprint: string): Promise<SettledRun | undefined> {
    const workspace = await this.open();
    const record = await readRecordFile<GitProof>(await this.settledFile(workspace));
    if (!record || record.fingerprint !== fingerprint) return undefined;
    try {
      if (workspace.mode === 'in-place') {
        if (typeof record.proof.tree !== 'string' || (await exists(path.join(workspace.gitDir, JOURNAL_FILE)))) return undefined;
        const { git } = workspace;
        if ((await git.run(['symbolic-ref', '--quiet', 'HEAD'], 'git symbolic-ref')).trim() !== `refs/heads/${this.branch}`) return undefined;
        if ((await this.treeUnderPath(workspace, 'HEAD')) !== record.proof.tree) return undefined;
        return (await this.pathIsClean(workspace)) ? { fingerprint: record.fingerprint, report: record.report } : undefined;
      }
      if (typeof record.proof.head !== 'string') return undefined;
      return (await this.remoteHead(workspace)) === record.proof.head ? { fingerprint: record.fingerprint, report: record.report } : undefined;
    } catch {
      // Whatever stops the proof (a remote out of reach) is for the render to meet and report.
      return undefined;
    }
  }

  /** Records `run` against `revision`, the commit now holding the tree (publish's result). */
  async recordSettledRun(run: SettledRun, revision: string | null): Promise<void> {
    if (!revision) return;
    const workspace = await this.open();
    const proof: GitProof = workspace.mode === 'in-place' ? { tree: await this.treeUnderPath(workspace, revision) } : { head: revision };
    if (proof.tree === '') return;
    await writeRecordFile(await this.settledFile(workspace), run, proof);
  }

  async forgetSettledRun(): Promise<void> {
    await removeRecordFile(await this.settledFile(await this.open()));
  }

  /** One record per branch and path: a repository may hold several rendered trees. */
  private async settledFile(workspace: Workspace): Promise<string> {
    return this.settledFileIn(await this.gitDirOf(workspace));
  }

  private settledFileIn(gitDir: string): string {
    const key = createHash('sha256').update(`${this.branch}\n${this.subdir}`).digest('hex').slice(0, 16);
    return path.join(gitDir, `clusterstack-settled-${key}.json`);
  }

  /**
   * Whether a settled run is recorded at all, known without cloning, fetching or taking a proof:
   * false when there is no clone yet, no repository yet, or no record in its git directory (a
   * work tree's own `.git`); true whenever it cannot tell cheaply (a linked work tree, an error).
   */
  async hasSettledRun(): Promise<boolean> {
    try {
      const decision = await this.decide();
      const gitDir = decision.mode === 'clone' ? path.join(this.workDir, '.git') : path.join(decision.dir, '.git');
      const info = await stat(gitDir).catch(() => undefined);
      // No clone yet, or no repository yet: nothing recorded.
      if (info === undefined) return decision.mode === 'clone' || decision.setup === 'init' ? false : true;
      if (!info.isDirectory()) return true;
      return await exists(this.settledFileIn(gitDir));
    } catch {
      // Whatever is wrong with the target is for the run to meet and report; nothing is ruled out.
      return true;
    }
  }

  /** The id of the tree under the path in `revision` ('' when there is none). */
  private async treeUnderPath(workspace: Workspace, revision: string): Promise<string> {
    return (await workspace.git.run(['rev-parse', '--verify', '--quiet', this.subdir === '' ? `${revision}^{tree}` : `${revision}:${this.subdir}`], 'git rev-parse')).trim();
  }

  /** Nothing staged anywhere (a render would refuse to commit over it) and nothing under the path differing from the index. */
  private async pathIsClean(workspace: Workspace): Promise<boolean> {
    const status = await workspace.git.run(['status', '--porcelain=v1', '-z', '--untracked-files=no', '--ignore-submodules=none'], 'git status');
    const prefix = this.subdir === '' ? '' : `${this.subdir}/`;
    for (const entry of status.split('\0')) {
      if (entry.length < 4) continue;
      const [staged, unstaged, file] = [entry[0], entry[1], entry.slice(3)];
      if (staged !== ' ' && staged !== '?') return false;
      if (unstaged !== ' ' && (prefix === '' || file.startsWith(prefix))) return false;
    }
    return true;
  }

  /** The remote branch's head commit ('' when the branch does not exist). */
  private async remoteHead(workspace: Workspace): Promise<string> {
    const branchRef = `refs/heads/${this.branch}`;
    const listing = await workspace.git.run(['ls-remote', 'origin', branchRef], `git ls-remote ${this.remote.display}`);
    return listing.split('\n').find((line) => line.split('\t')[1] === branchRef)?.split('\t')[0] ?? '';
  }

  private open(): Promise<Workspace> {
    this.workspace ??= this.prepare().catch((error: unknown) => {
      this.workspace = undefined;
      throw error;
    });
    return this.workspace;
  }

  private command(dir: string, withToken: boolean): GitCommand {
    const { author, env, token } = this.options;
    return new GitCommand(dir, { author, env, token: withToken ? token : undefined });
  }

  private decide(): Promise<Decision> {
    this.decision ??= this.decideOnce().catch((error: unknown) => {
      this.decision = undefined;
      throw error;
    });
    return this.decision;
  }

  private async decideOnce(): Promise<Decision> {
    if (this.remote.kind === 'url') return { mode: 'clone', url: this.remote.url, http: this.remote.http };
    const dir = this.remote.path;
    const kind = await localRepositoryKind(dir);
    if (kind === 'missing' || kind === 'empty') return { mode: 'in-place', dir, setup: 'init' };
    if (kind === 'work-tree') {
      const git = this.command(dir, false);
      const toplevel = (await git.run(['rev-parse', '--show-toplevel'], `git rev-parse in ${dir}`)).trim();
      if ((await realpath(toplevel)) !== (await realpath(dir))) {
        throw new PublishError('invalid-target', `--git ${dir} is a directory inside the repository ${toplevel}; give the repository's top directory`);
      }
      const current = (await git.run(['symbolic-ref', '--quiet', 'HEAD'], `git symbolic-ref in ${dir}`)).trim();
      const hasCommits = (await git.run(['rev-parse', '--verify', '--quiet', 'HEAD'], `git rev-parse in ${dir}`)).trim() !== '';
      if (current === `refs/heads/${this.branch}`) return { mode: 'in-place', dir, setup: 'none' };
      if (!hasCommits) return { mode: 'in-place', dir, setup: 'set-head' };
      // The branch is not checked out there, so pushing to it is allowed.
      return { mode: 'clone', url: dir, http: false };
    }
    if (kind === 'bare') return { mode: 'clone', url: dir, http: false };
    throw new PublishError('invalid-target', `--git ${dir} is not a Git repository; give a repository, an empty directory or a path that does not exist yet`);
  }

  private async prepare(): Promise<Workspace> {
    const decision = await this.decide();
    if (decision.mode === 'clone') return this.prepareClone(decision.url, decision.http);
    const { dir } = decision;
    // In place, the path is ours to replace: it must not hold what the render is made from.
    await assertOutsideProtected(
      `--git ${dir}${this.subdir === '' ? '' : ` --path ${this.subdir}`}`,
      path.join(dir, this.subdir),
      this.options.protectedPaths ?? [],
      'Give a --path inside the repository that holds neither, or another repository',
    );
    if (decision.setup === 'init') await this.initRepository(dir);
    const git = this.command(dir, false);
    if (decision.setup === 'set-head') await git.run(['symbolic-ref', 'HEAD', `refs/heads/${this.branch}`], `git symbolic-ref in ${dir}`);
    const gitDir = (await git.run(['rev-parse', '--absolute-git-dir'], `git rev-parse in ${dir}`)).trim();
    return { mode: 'in-place', dir, git, gitDir };
  }

  /**
   * Creates the repository for a path that does not hold one yet. Two runs doing so at once would
   * trip over each other's `git init`, and one would find the other's half-made `.git`; a
   * short-lived lock inside the directory serializes them (localRepositoryKind reads a directory
   * holding it as not initialized yet).
   */
  private async initRepository(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    const lock = await acquirePublishLock(path.join(dir, INIT_LOCK_FILE), { timeoutMs: 60_000, target: `--git ${dir}`, command: 'clusterstack: git init' });
    try {
      if (await exists(path.join(dir, '.git'))) return;
      await this.command(dir, false).run(['init', '--quiet', `--initial-branch=${this.branch}`], `git init ${dir}`);
    } finally {
      await lock.release();
    }
  }

  private async gitDirOf(workspace: Workspace): Promise<string> {
    return workspace.mode === 'in-place' ? workspace.gitDir : path.join(workspace.dir, '.git');
  }

  private async prepareClone(url: string, http: boolean): Promise<Workspace> {
    try {
      return await this.setUpClone(url, http);
    } catch (error) {
      if (error instanceof PublishError && error.kind === 'invalid-target') throw error;
      // The clone is ours alone and holds nothing the remote does not: one damaged by a killed run
      // is started afresh.
      this.options.logger?.warn({ target: this.target, error: error instanceof Error ? error.message : String(error) }, 'The clone in the cache is damaged, starting it afresh');
      await rm(this.workDir, { recursive: true, force: true });
      return this.setUpClone(url, http);
    }
  }

  private async setUpClone(url: string, http: boolean): Promise<Workspace> {
    const dir = this.workDir;
    await mkdir(dir, { recursive: true });
    const git = this.command(dir, http);
    if (!(await exists(path.join(dir, '.git')))) {
      if ((await readdir(dir)).length > 0) {
        throw new PublishError('invalid-target', `work directory ${dir} is neither empty nor a clone made by clusterstack; remove it or choose another`);
      }
      await git.run(['init', '--quiet'], `git init ${dir}`);
      await git.run(['remote', 'add', 'origin', url], `git remote add in ${dir}`);
    } else {
      const current = (await git.run(['config', '--get', 'remote.origin.url'], `git config in ${dir}`).catch(() => '')).trim();
      if (current === '') await git.run(['remote', 'add', 'origin', url], `git remote add in ${dir}`);
      else if (current !== url) await git.run(['remote', 'set-url', 'origin', url], `git remote set-url in ${dir}`);
    }
    return { mode: 'clone', dir, git, url };
  }

  /** Makes the clone's branch, index and files equal the remote branch; returns its head (null: no branch yet). */
  private async resetToRemote(workspace: Workspace): Promise<string | null> {
    const { git } = workspace;
    const branchRef = `refs/heads/${this.branch}`;
    const listing = await git.run(['ls-remote', 'origin', branchRef], `git ls-remote ${this.remote.display}`);
    const exists = listing.split('\n').some((line) => line.split('\t')[1] === branchRef);
    const trackingRef = `refs/remotes/origin/${this.branch}`;
    await git.run(['symbolic-ref', 'HEAD', branchRef], 'git symbolic-ref');
    let head: string | null = null;
    if (exists) {
      await git.run(['fetch', '--quiet', '--no-tags', 'origin', `+${branchRef}:${trackingRef}`], `git fetch from ${this.remote.display}`);
      await git.run(['reset', '--quiet', '--hard', trackingRef], 'git reset');
      head = (await git.run(['rev-parse', trackingRef], 'git rev-parse')).trim();
    } else {
      // An empty remote or a new branch: start an orphan branch with nothing in it.
      await git.run(['update-ref', '-d', branchRef], 'git update-ref');
      await git.run(['read-tree', '--empty'], 'git read-tree');
    }
    await git.run(['clean', '-ffdxq'], 'git clean');
    return head;
  }

  private async localHead(workspace: Workspace): Promise<string | null> {
    const head = (await workspace.git.run(['rev-parse', '--verify', '--quiet', 'HEAD'], 'git rev-parse')).trim();
    return head === '' ? null : head;
  }

  private readCommit(workspace: Workspace, commit: string): Promise<RenderedTree> {
    return readTreeAtCommit(workspace.git, commit, this.subdir);
  }

  /** Replaces everything under the path with `tree` and stages it; returns what changed. */
  private async stageTree(workspace: Workspace, tree: RenderedTree, base?: string | null): Promise<StagedChanges> {
    // When the clone was reset to the commit we last pushed, its files are known: compare in memory.
    const known = base && this.committed?.revision === base ? this.committed.tree : undefined;
    await syncWorkTree(workspace.dir, this.subdir, tree, known);
    const pathspec = this.subdir === '' ? '.' : this.subdir;
    if (known) {
      // The work tree was the known tree: only the files that differ need staging, and git need not
      // look at every other file (tens of thousands at a large fleet).
      const prefix = this.subdir === '' ? '' : `${this.subdir}/`;
      const differing = [...new Set([...known.keys(), ...tree.keys()])].filter((file) => known.get(file) !== tree.get(file));
      await this.addPaths(workspace, differing.map((file) => `${prefix}${file}`));
    } else {
      // --force: a .gitignore in the repository must not silently keep a rendered file out.
      await workspace.git.run(['add', '--all', '--force', '--', pathspec], 'git add');
    }
    return this.stagedChanges(workspace, pathspec);
  }

  /** Stages exactly `paths` (written, changed or removed), ignoring any .gitignore. */
  private async addPaths(workspace: Workspace, paths: string[]): Promise<void> {
    if (paths.length === 0) return;
    const list = path.join(await this.gitDirOf(workspace), 'CLUSTERSTACK_PATHS');
    await writeFile(list, paths.join('\0'));
    try {
      // --force: a .gitignore in the repository must not silently keep a rendered file out.
      await workspace.git.run(['add', '--all', '--force', `--pathspec-from-file=${list}`, '--pathspec-file-nul'], 'git add');
    } finally {
      await rm(list, { force: true });
    }
  }

  private async commit(workspace: Workspace, message: string): Promise<string> {
    const { git } = workspace;
    const gitDir = (await git.run(['rev-parse', '--absolute-git-dir'], 'git rev-parse')).trim();
    const messageFile = path.join(gitDir, 'CLUSTERSTACK_COMMIT_MSG');
    await writeFile(messageFile, message, 'utf8');
    try {
      await git.run(['commit', '--quiet', '--cleanup=whitespace', '--file', messageFile], 'git commit');
    } finally {
      await rm(messageFile, { force: true });
    }
    return (await git.run(['rev-parse', 'HEAD'], 'git rev-parse')).trim();
  }

  private async commitInPlace(workspace: Extract<Workspace, { mode: 'in-place' }>, tree: RenderedTree, message: string): Promise<PublishResult> {
    const { git, dir } = workspace;
    const current = (await git.run(['symbolic-ref', '--quiet', 'HEAD'], 'git symbolic-ref')).trim();
    if (current !== `refs/heads/${this.branch}`) {
      throw new PublishError('invalid-target', `--git ${dir} has ${current === '' ? 'a detached HEAD' : current.replace('refs/heads/', 'branch ')} checked out, not ${this.branch}; check out ${this.branch} there`);
    }
    // Someone's staged work would otherwise end up in our commit.
    const staged = (await git.run(['diff', '--cached', '--name-only', '-z'], 'git diff')).split('\0').filter((file) => file !== '');
    if (staged.length > 0) {
      throw new PublishError('invalid-target', `--git ${dir} has staged changes (${staged.slice(0, 3).join(', ')}${staged.length > 3 ? ', ...' : ''}); commit or unstage them first`);
    }
    const prefix = this.subdir === '' ? '' : `${this.subdir}/`;
    const pathspec = this.subdir === '' ? '.' : this.subdir;
    // What is ours under the path: the files committed there, i.e. the previous render.
    const tracked = new Set(
      (await git.run(['ls-files', '-z', '--', pathspec], 'git ls-files'))
        .split('\0')
        .filter((file) => file !== '')
        .map((file) => file.slice(prefix.length)),
    );
    // A file the render would write over, that git does not know, is someone's: never overwrite it.
    const created = [...tree.keys()].filter((file) => !tracked.has(file));
    const occupied = (await pLimit(FILE_CONCURRENCY).map(created, async (file) => ((await exists(path.join(dir, prefix, file))) ? file : undefined))).filter((file): file is string => file !== undefined);
    if (occupied.length > 0) {
      throw new PublishError('invalid-target', `--git ${dir} has untracked files where the render writes (${occupied.slice(0, 5).map((file) => `${prefix}${file}`).join(', ')}${occupied.length > 5 ? ` and ${occupied.length - 5} more` : ''}); move them away or commit them elsewhere, then run again. Nothing was written`);
    }
    const journal = path.join(workspace.gitDir, JOURNAL_FILE);
    await writeFile(journal, `${JSON.stringify({ pid: process.pid, created: created.map((file) => `${prefix}${file}`) })}\n`);
    await syncWorkTree(dir, this.subdir, tree, undefined, tracked);
    const removed = [...tracked].filter((file) => !tree.has(file));
    // Exactly the render's paths: untracked files beside them are not ours to commit.
    await this.addPaths(workspace, [...tree.keys(), ...removed].map((file) => `${prefix}${file}`));
    const changes = await this.stagedChanges(workspace, pathspec);
    if (changes.written.length === 0 && changes.removed.length === 0) {
      await unlink(journal).catch(() => {});
      return { changed: false, written: [], removed: [], revision: await this.localHead(workspace) };
    }
    const revision = await this.commit(workspace, message);
    await unlink(journal).catch(() => {});
    this.options.logger?.info({ target: this.target, revision, written: changes.written.length, removed: changes.removed.length }, 'Committed rendered tree');
    return { changed: true, ...changes, revision };
  }

  /**
   * A run killed while writing the work tree leaves files of a render that was never committed, a
   * half-staged index and maybe git's own lock files. Its journal says so: then the path is put
   * back to HEAD (and the files it created removed) before anything is read or written.
   */
  private async repairInPlace(workspace: Extract<Workspace, { mode: 'in-place' }>): Promise<void> {
    const journal = path.join(workspace.gitDir, JOURNAL_FILE);
    const text = await readFile(journal, 'utf8').catch(() => undefined);
    if (text === undefined) return;
    // Another run may be at work right now; only an unlocked target or our own lock lets us repair.
    if (!this.held && (await exists(path.join(workspace.gitDir, LOCK_FILE)))) return;
    let created: string[] = [];
    try {
      const parsed = JSON.parse(text) as { created?: unknown };
      if (Array.isArray(parsed.created)) created = parsed.created.filter((file): file is string => typeof file === 'string');
    } catch {
      // An unreadable journal still means: restore the tracked files.
    }
    const { git, dir } = workspace;
    await removeStaleGitLocks(workspace.gitDir);
    const pathspec = this.subdir === '' ? '.' : this.subdir;
    const head = await this.localHead(workspace);
    const atHead = new Set(head === null ? [] : (await git.run(['ls-tree', '-r', '-z', '--name-only', head, '--', pathspec], 'git ls-tree')).split('\0').filter((file) => file !== ''));
    if (head !== null) {
      await git.run(['reset', '--quiet', head, '--', pathspec], 'git reset');
      if (atHead.size > 0) await git.run(['checkout', '--quiet', head, '--', pathspec], 'git checkout');
    } else {
      await git.run(['rm', '-r', '--cached', '--quiet', '--ignore-unmatch', '--', pathspec], 'git rm');
    }
    for (const file of created) {
      if (!atHead.has(file) && !file.split('/').includes('..') && !path.isAbsolute(file)) await rm(path.join(dir, file), { force: true });
    }
    await unlink(journal).catch(() => {});
    this.options.logger?.warn({ target: this.target }, 'Repaired the work tree after an interrupted run');
  }

  /** Files staged under `pathspec`, relative to the path: what a commit now would change. */
  private async stagedChanges(workspace: Workspace, pathspec: string): Promise<StagedChanges> {
    const status = await workspace.git.run(['diff', '--cached', '--name-status', '--no-renames', '-z', '--', pathspec], 'git diff');
    const fields = status.split('\0');
    const written: string[] = [];
    const removed: string[] = [];
    for (let index = 0; index + 1 < fields.length; index += 2) {
      const code = fields[index] ?? '';
      const file = fields[index + 1] ?? '';
      const relative = this.subdir === '' ? file : file.slice(this.subdir.length + 1);
      (code.startsWith('D') ? removed : written).push(relative);
    }
    return { written: written.sort(), removed: removed.sort() };
  }

  private async commitAndPush(workspace: Workspace, tree: RenderedTree, message: string): Promise<PublishResult> {
    const branchRef = `refs/heads/${this.branch}`;
    for (let attempt = 1; attempt <= this.maxPushAttempts; attempt++) {
      if (attempt === 1 && this.committed) {
        const fast = await this.commitFromKnown(workspace, this.committed, tree, message);
        if (fast === 'lost-race') {
          this.options.logger?.warn({ target: this.target, attempt, maxAttempts: this.maxPushAttempts }, 'Push lost a race with another writer, rebuilding on the new remote head');
          continue;
        }
        if (fast) return fast;
      }
      const base = await this.resetToRemote(workspace);
      const changes = await this.stageTree(workspace, tree, base);
      if (changes.written.length === 0 && changes.removed.length === 0) {
        return { changed: false, written: [], removed: [], revision: base };
      }
      const revision = await this.commit(workspace, message);
      try {
        await workspace.git.run(['push', 'origin', `${branchRef}:${branchRef}`], `git push to ${this.remote.display}`);
      } catch (error) {
        if (error instanceof PublishError && error.kind === 'conflict') {
          this.options.logger?.warn({ target: this.target, attempt, maxAttempts: this.maxPushAttempts }, 'Push lost a race with another writer, rebuilding on the new remote head');
          continue;
        }
        await this.recover(workspace);
        throw error;
      }
      this.committed = { revision, tree };
      this.options.logger?.info({ target: this.target, revision, attempt, written: changes.written.length, removed: changes.removed.length }, 'Pushed rendered tree');
      return { changed: true, ...changes, revision };
    }
    await this.recover(workspace);
    throw new PublishError('conflict', `git push to ${this.remote.display}: branch ${this.branch} moved on during each of ${this.maxPushAttempts} attempts (non-fast-forward); try again later`);
  }

  /**
   * The commit made from what differs from a known commit, pushed only while the remote branch is
   * still at that commit. 'lost-race' when it moved on; undefined when the full way must decide
   * (nothing differs but the branch moved, or fast-import failed).
   */
  private async commitFromKnown(workspace: Workspace, known: NonNullable<GitPublisher['committed']>, tree: RenderedTree, message: string): Promise<PublishResult | 'lost-race' | undefined> {
    const prefix = this.subdir === '' ? '' : `${this.subdir}/`;
    const written = [...tree.keys()].filter((file) => known.tree.get(file) !== tree.get(file)).sort();
    const removed = [...known.tree.keys()].filter((file) => !tree.has(file)).sort();
    if (written.length === 0 && removed.length === 0) {
      // The tree is there; whether the branch still is, only the remote can say.
      return (await this.remoteHead(workspace)) === (known.revision ?? '') ? { changed: false, written: [], removed: [], revision: known.revision } : undefined;
    }
    const branchRef = `refs/heads/${this.branch}`;
    let revision: string;
    try {
      revision = await fastCommit(workspace.git, {
        ref: branchRef,
        parent: known.revision,
        author: this.options.author,
        message,
        written: written.map((file) => [`${prefix}${file}`, tree.get(file)!] as const),
        removed: removed.map((file) => `${prefix}${file}`),
      });
    } catch (error) {
      this.options.logger?.warn({ target: this.target, error: error instanceof Error ? error.message : String(error) }, 'Could not commit from the known tree, committing through the work tree');
      return undefined;
    }
    try {
      // Only over the known commit: anything else there is another writer's, to build on.
      await workspace.git.run(['push', `--force-with-lease=${branchRef}:${known.revision ?? ''}`, 'origin', `${branchRef}:${branchRef}`], `git push to ${this.remote.display}`);
    } catch (error) {
      if (error instanceof PublishError && error.kind === 'conflict') return 'lost-race';
      await this.recover(workspace);
      throw error;
    }
    this.committed = { revision, tree };
    // fast-import leaves one pack per commit: let git pack them together now and then (in the background).
    await workspace.git.run(['gc', '--auto', '--quiet'], 'git gc').catch((error: unknown) => {
      this.options.logger?.warn({ target: this.target, error: error instanceof Error ? error.message : String(error) }, 'git gc --auto failed in the clone; the publish itself is done');
    });
    this.options.logger?.info({ target: this.target, revision, attempt: 1, written: written.length, removed: removed.length }, 'Pushed rendered tree');
    return { changed: true, written, removed, revision };
  }

  /** After a failed push the clone holds a commit the remote does not: drop it. */
  private async recover(workspace: Workspace): Promise<void> {
    try {
      await this.resetToRemote(workspace);
    } catch (error) {
      // Cannot even reach the remote: forget the clone; the next run fetches afresh.
      this.options.logger?.warn({ target: this.target, error: error instanceof Error ? error.message : String(error) }, 'Could not reset the clone after a failed push, removing it');
      await rm(workspace.dir, { recursive: true, force: true });
      this.workspace = undefined;
    }
  }
}

/** git check-ref-format's rules for a branch name. */
function isValidBranchName(name: string): boolean {
  if (name === '' || name === '@' || name === 'HEAD' || name.startsWith('-') || name.startsWith('/') || name.endsWith('/') || name.endsWith('.')) return false;
  if (name.includes('..') || name.includes('//') || name.includes('@{') || /[\x00-\x20\x7f~^:?*[\\]/.test(name)) return false;
  return name.split('/').every((component) => !component.startsWith('.') && !component.endsWith('.lock'));
}

type LocalRepositoryKind = 'missing' | 'empty' | 'work-tree' | 'bare' | 'other';

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}

/** Looks at the files only: asking git inside a plain directory would find an enclosing repository. */
async function localRepositoryKind(dir: string): Promise<LocalRepositoryKind> {
  const info = await stat(dir).catch(() => undefined);
  if (info === undefined) return 'missing';
  if (!info.isDirectory()) return 'other';
  const entries = await readdir(dir);
  // Another run is creating the repository: it is not one yet (initRepository waits for that run).
  if (entries.length === 0 || entries.includes(INIT_LOCK_FILE)) return 'empty';
  if (entries.includes('.git')) return 'work-tree';
  if (entries.includes('HEAD') && entries.includes('objects') && entries.includes('refs')) return 'bare';
  return 'other';
}

