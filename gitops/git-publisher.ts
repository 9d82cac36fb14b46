// `--git <path or URL> --branch <b> --path <subdir>`: the subdirectory of the branch ends up holding
// exactly the rendered tree, in one commit, or in none when it already did.
//
// Two ways of working, chosen from what `--git` names:
// - a local path that is missing, an empty directory, or a work tree with the branch checked out:
//   commit straight into it (no push), so people can look at the files (the quick start's
//   ./out/gitops-repo). Only files tracked under --path are ours: untracked files are left alone
//   (never deleted, never committed); one where the render would write, staged changes and (without
//   --force) uncommitted edits under the path are refused. A journal in the git directory says what
//   the run changes, so that a failed commit (a hook, signing, another git process's lock) puts the
//   work tree and index back as they were, and the next run undoes what a killed run left. Git's lock
//   files there are never removed: one held by another process is waited for, then reported;
// - anything else (a bare repository, a work tree on another branch, file://, http(s)://, ssh):
//   a clone in `workDir`: the branch is read from a fetch; the clone is put in step with it (hard
//   reset) to commit through its work tree, then pushed; when the push loses a race
//   (non-fast-forward), start again from the new remote head. When the remote
//   branch is still at a commit whose tree this publisher knows (it read it or pushed it), the
//   commit is made from the files that differ alone (git-fast-commit.ts: no reset, no work tree,
//   no index) and pushed only if the branch is still there (--force-with-lease).
// Runs on one work tree, or one clone, take turns through a lock (lock(), publish-lock.ts).
// The last settled run is recorded in the git directory (in place) or the clone's (settled-run-record.ts):
// in place it holds while the branch is checked out, the tree under the path at HEAD is the one that
// run left and nothing under the path differs from HEAD (nothing staged anywhere); against a remote,
// while the remote branch still points at the commit that run pushed or found.
import { fullJitterDelay } from '../src/core/backoff.js';
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import {
  access,
  chmod,
  lstat,
  mkdir,
  readdir,
  readFile,
  realpath,
  rm,
  rmdir,
  stat,
  unlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { RankedSlots } from '../src/core/ranked-slots.js';
import { FILE_CONCURRENCY } from './file-concurrency.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { KnownChange, Publisher, PublishResult } from './publisher.js';
import { diffTrees, type RenderedTree } from '../src/output/rendered-tree.js';
import { PublishError } from './publish-error.js';
import { checkTreePaths, normalizeSubdir } from './tree-paths.js';
import { readTreeAtCommit } from './read-git-tree.js';
import { syncWorkTree } from './sync-work-tree.js';
import { acquirePublishLock, type PublishLock } from './publish-lock.js';
import type { LockRequest } from './publisher.js';
import { compileCommitMessage, type CommitMessageRenderer } from './commit-message.js';
import { GitCommand, type GitTargetOptions, heldGitLockAdvice, isMissingRemoteRef } from './git-command.js';
import { inNewDirectory } from './new-directory.js';
import { fastCommit } from './git-fast-commit.js';
import { parseGitRemote, type GitRemote } from './git-remote.js';
import { assertOutsideProtected, type ProtectedPath } from './protected-paths.js';
import { removeStaleGitLocks } from './stale-git-locks.js';
import {
  readRecordFile,
  removeRecordFile,
  type SettledRun,
  type SettledRunStore,
  writeRecordFile,
} from './settled-run-record.js';
import type { Logger } from '../src/core/logger.js';
import { crashPoint } from './crash-point.js';
import { GitFleetIndex } from './shard-fleet-index.js';
import { fetchedHead, headIs, plainOriginUrl, storedRef } from './clone-git-files.js';
import { CloneHousekeeping } from './clone-housekeeping.js';
import { isValidBranchName } from './branch-name.js';

/**
 * `repository` may also be a local work tree (committed in place, `workDir` unused) or a missing
 * path (a repository is created there).
 */
export interface GitPublisherOptions extends GitTargetOptions {
  /** Handlebars source of the commit message template; the bundled default when undefined. */
  messageTemplate?: string;
  /**
   * Pushes tried before giving up on a branch others keep moving (default 8); between them a random
   * wait, so that writers racing on one branch (controller shards) fall out of step.
   */
  maxPushAttempts?: number;
  logger?: Logger;
  /** Inputs and release sources: an in-place work tree's --path may be neither of them nor hold them. */
  protectedPaths?: readonly ProtectedPath[];
  /** `--force`: in place, overwrite uncommitted edits to tracked files under the path (refused otherwise). */
  overwriteEdits?: boolean;
  /**
   * The path is one controller shard's subtree (`<path>/shards/<shard>`): every commit also carries
   * the shards' index beside it (`<path>/shards/README.md`, shard-fleet-index.ts), derived from the
   * subtrees that commit holds. It is the one file outside the path the publisher writes, and only
   * in a commit its own subtree needs: an unchanged subtree commits nothing.
   */
  fleetIndex?: boolean;
}

type Workspace =
  | ({ mode: 'in-place'; dir: string; git: GitCommand } & GitPaths)
  | { mode: 'clone'; dir: string; git: GitCommand; url: string };

/** Where an in-place work tree's git directory is, and the lock files a commit there needs (the index, HEAD, the branch). */
interface GitPaths {
  gitDir: string;
  locks: string[];
}

/** What `--git` names, decided without writing anything. */
type Decision =
  | { mode: 'in-place'; dir: string; setup: 'init' | 'set-head' }
  | { mode: 'in-place'; dir: string; setup: 'none'; paths: GitPaths }
  | { mode: 'clone'; url: string; http: boolean };

/** In the git directory of an in-place work tree: what a run is about to create, until it has committed. */
const JOURNAL_FILE = 'clusterstack-publish.json';
const LOCK_FILE = 'clusterstack.lock';
/** Inside a directory a run is turning into a repository, while it does. */
const INIT_LOCK_FILE = '.clusterstack-init.lock';
/** The longest a run waits for another git process's lock in a work tree to go (less when --lock-timeout is shorter). */
const GIT_LOCK_WAIT_MS = 10_000;
/** The hooks `git commit` runs before it writes the commit: any of them may refuse it. */
const COMMIT_HOOKS = ['pre-commit', 'prepare-commit-msg', 'commit-msg'];
/** What git prints when commit.gpgsign (or -S) is set and signing fails, with gpg or ssh keys. */
const SIGNING_FAILED =
  /gpg failed to sign|failed to write commit object|error: (?:gpg|ssh-keygen|cannot run gpg)|signing failed|Couldn't (?:load|find) (?:public )?key/i;

/**
 * Written to the git directory before a run writes the work tree, removed when it has committed:
 * what puts the work tree and index back as they were, when the run fails (by itself) or is killed
 * (by the next run).
 */
interface WorkTreeJournal {
  pid: number;
  /** The commit HEAD was at (null: no commit yet). */
  head: string | null;
  /** Repository paths of the files the run creates: none of them existed. */
  created: string[];
  /** Directories the run creates for them (none existed), parents first. */
  directories: string[];
  /**
   * With --force, the tracked files under the path whose uncommitted state the run overwrites: their
   * bytes (base64) and mode, or null for a file deleted in the work tree.
   */
  edited: Record<string, { data: string; mode: number } | null>;
}

/** What the path holds before an in-place write: what decides whether the write is refused, and what it journals. */
interface InPlaceState {
  /** The files committed under the path (the previous render), relative to it. */
  tracked: Set<string>;
  staged: string[];
  edited: string[];
  /** The render's files that are not tracked, relative to the path. */
  created: string[];
  /** Those of them that exist already: someone else's. */
  occupied: string[];
  /** With `fleetIndex`: whether HEAD tracks the shards' index, and whether an untracked file stands there (someone's). */
  index?: { tracked: boolean; occupied: boolean };
}

/** What git status shows that is not committed: staged changes anywhere, and edits of tracked files under the path. */
interface UncommittedChanges {
  staged: string[];
  edited: string[];
}

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
  /** How long a git lock file someone else holds in a work tree is waited for. */
  private gitLockWaitMs = GIT_LOCK_WAIT_MS;
  /**
   * A commit of the remote branch (the one we last pushed, or the head readPrevious read; null:
   * the branch did not exist) and the tree under the path in it, which holds regular files only.
   * After a reset to that commit the clone's files under the path are exactly this tree.
   */
  private committed: { revision: string | null; tree: RenderedTree; subtree?: string } | undefined;
  /** Asks git to pack the clone's objects now and then (fast commits and fetches add them). */
  private readonly housekeeping = new CloneHousekeeping((error) =>
    this.options.logger?.warn(
      { target: this.target, error },
      'git gc --auto failed in the clone; the publish itself is done',
    ),
  );
  /** With `fleetIndex`: the shards' index each commit carries. */
  private readonly fleetIndex: GitFleetIndex | undefined;

  constructor(private readonly options: GitPublisherOptions) {
    this.remote = parseGitRemote(options.repository);
    this.branch = options.branch;
    if (!isValidBranchName(this.branch))
      throw new PublishError('invalid-input', `--branch "${this.branch}" is not a valid Git branch name`);
    this.subdir = normalizeSubdir(options.path);
    this.workDir = path.resolve(options.workDir);
    this.maxPushAttempts = options.maxPushAttempts ?? 8;
    if (!Number.isInteger(this.maxPushAttempts) || this.maxPushAttempts < 1) {
      throw new PublishError(
        'invalid-input',
        `maxPushAttempts must be a whole number of at least 1, got ${options.maxPushAttempts}`,
      );
    }
    this.renderMessage = compileCommitMessage(options.messageTemplate);
    if (options.fleetIndex) {
      if (this.subdir === '')
        throw new PublishError(
          'invalid-input',
          'a shard publisher needs a path (<path>/shards/<shard>) for its subtree',
        );
      this.fleetIndex = new GitFleetIndex(this.subdir);
    }
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
    const file =
      decision.mode === 'in-place'
        ? path.join(await this.gitDirOf(await this.open()), LOCK_FILE)
        : `${this.workDir}.lock`;
    const lock = await acquirePublishLock(file, {
      timeoutMs: request.timeoutMs,
      target: `--git ${this.remote.display}`,
      command: request.command,
    });
    this.held = lock;
    this.gitLockWaitMs = Math.min(request.timeoutMs, GIT_LOCK_WAIT_MS);
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
    // Against a remote only the commit is read: the clone's work tree is put in step only by a
    // publish that goes through it (resetToRemote), as a fast commit and a no-op never do.
    const head = workspace.mode === 'clone' ? await this.fetchRemote(workspace) : await this.localHead(workspace);
    if (workspace.mode === 'in-place') return head === null ? new Map() : this.readCommit(workspace, head);
    const irregular: string[] = [];
    const tree =
      head === null ? new Map<string, string>() : await readTreeAtCommit(workspace.git, head, this.subdir, irregular);
    // A symbolic link or submodule under the path is not in the tree read (only a full publish
    // removes it), an executable file keeps its mode only through the work tree.
    this.committed = irregular.length === 0 ? { revision: head, tree } : undefined;
    return tree;
  }

  /** Commits (and pushes) `tree` under the path; no commit and no push when nothing changed. */
  async publish(tree: RenderedTree, change: ChangeSummary, known?: KnownChange): Promise<PublishResult> {
    checkTreePaths(tree);
    const message = this.renderMessage(change);
    const workspace = await this.open();
    if (workspace.mode === 'in-place') return this.commitInPlace(workspace, tree, message);
    return this.commitAndPush(workspace, tree, message, known);
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
        if (typeof record.proof.tree !== 'string' || (await exists(path.join(workspace.gitDir, JOURNAL_FILE))))
          return undefined;
        if ((await this.checkedOut(workspace)) !== `refs/heads/${this.branch}`) return undefined;
        if ((await this.treeUnderPath(workspace, 'HEAD')) !== record.proof.tree) return undefined;
        const changes = await this.uncommittedChanges(workspace);
        return changes.staged.length === 0 && changes.edited.length === 0
          ? { fingerprint: record.fingerprint, report: record.report }
          : undefined;
      }
      if (typeof record.proof.head !== 'string') return undefined;
      return (await this.remoteHead(workspace)) === record.proof.head
        ? { fingerprint: record.fingerprint, report: record.report }
        : undefined;
    } catch {
      // Whatever stops the proof (a remote out of reach) is for the render to meet and report.
      return undefined;
    }
  }

  /** Records `run` against `revision`, the commit now holding the tree (publish's result). */
  async recordSettledRun(run: SettledRun, revision: string | null): Promise<void> {
    if (!revision) return;
    const workspace = await this.open();
    const proof: GitProof =
      workspace.mode === 'in-place' ? { tree: await this.treeUnderPath(workspace, revision) } : { head: revision };
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
    return (
      await workspace.git.run(
        ['rev-parse', '--verify', '--quiet', this.subdir === '' ? `${revision}^{tree}` : `${revision}:${this.subdir}`],
        'git rev-parse',
      )
    ).trim();
  }

  /**
   * Staged changes anywhere (a commit would take them along) and tracked files under the path whose
   * work tree differs from the index (a render would overwrite them), as repository paths.
   */
  private async uncommittedChanges(workspace: Workspace): Promise<UncommittedChanges> {
    const status = await workspace.git.run(
      ['status', '--porcelain=v1', '-z', '--untracked-files=no', '--ignore-submodules=none', '--no-renames'],
      'git status',
    );
    const prefix = this.subdir === '' ? '' : `${this.subdir}/`;
    const changes: UncommittedChanges = { staged: [], edited: [] };
    for (const entry of status.split('\0')) {
      if (entry.length < 4) continue;
      const [staged, unstaged, file] = [entry[0], entry[1], entry.slice(3)];
      if (staged !== ' ' && staged !== '?') changes.staged.push(file);
      if (unstaged !== ' ' && (prefix === '' || file.startsWith(prefix) || file === this.fleetIndex?.file))
        changes.edited.push(file);
    }
    return changes;
  }

  /** The remote branch's head commit ('' when the branch does not exist). */
  private async remoteHead(workspace: Workspace): Promise<string> {
    const branchRef = `refs/heads/${this.branch}`;
    const listing = await workspace.git.run(['ls-remote', 'origin', branchRef], `git ls-remote ${this.remote.display}`);
    return (
      listing
        .split('\n')
        .find((line) => line.split('\t')[1] === branchRef)
        ?.split('\t')[0] ?? ''
    );
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
      const [toplevel = '', ...paths] = (
        await git.run(['rev-parse', '--show-toplevel', ...this.gitPathArgs()], `git rev-parse in ${dir}`)
      ).split('\n');
      if ((await realpath(toplevel)) !== (await realpath(dir))) {
        throw new PublishError(
          'invalid-target',
          `--git ${dir} is a directory inside the repository ${toplevel}; give the repository's top directory`,
        );
      }
      const gitPaths = this.gitPaths(dir, paths);
      // The usual case, read from HEAD itself: the branch is checked out.
      if (await headIs(gitPaths.gitDir, `refs/heads/${this.branch}`))
        return { mode: 'in-place', dir, setup: 'none', paths: gitPaths };
      const current = (await git.run(['symbolic-ref', '--quiet', 'HEAD'], `git symbolic-ref in ${dir}`)).trim();
      const hasCommits =
        (await git.run(['rev-parse', '--verify', '--quiet', 'HEAD'], `git rev-parse in ${dir}`)).trim() !== '';
      if (current === `refs/heads/${this.branch}`) return { mode: 'in-place', dir, setup: 'none', paths: gitPaths };
      if (!hasCommits) return { mode: 'in-place', dir, setup: 'set-head' };
      // The branch is not checked out there, so pushing to it is allowed.
      return { mode: 'clone', url: dir, http: false };
    }
    if (kind === 'bare') return { mode: 'clone', url: dir, http: false };
    throw new PublishError(
      'invalid-target',
      `--git ${dir} is not a Git repository; give a repository, an empty directory or a path that does not exist yet`,
    );
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
    if (decision.setup === 'set-head')
      await git.run(['symbolic-ref', 'HEAD', `refs/heads/${this.branch}`], `git symbolic-ref in ${dir}`);
    if (decision.setup === 'none') return { mode: 'in-place', dir, git, ...decision.paths };
    const paths = (await git.run(['rev-parse', ...this.gitPathArgs()], `git rev-parse in ${dir}`)).split('\n');
    return { mode: 'in-place', dir, git, ...this.gitPaths(dir, paths) };
  }

  /** `git rev-parse` options that print the absolute git directory, then the lock files of GitPaths, a line each. */
  private gitPathArgs(): string[] {
    return [
      '--absolute-git-dir',
      ...['index.lock', 'HEAD.lock', `refs/heads/${this.branch}.lock`].flatMap((file) => ['--git-path', file]),
    ];
  }

  /** GitPaths from the lines `gitPathArgs` printed in the work tree `dir`. */
  private gitPaths(dir: string, lines: string[]): GitPaths {
    const [gitDir = '', ...locks] = lines.filter((line) => line !== '');
    return { gitDir, locks: locks.map((line) => path.resolve(dir, line)) };
  }

  /** The ref HEAD names ('' when detached), from HEAD itself when it names the branch. */
  private async checkedOut(workspace: Workspace): Promise<string> {
    const branchRef = `refs/heads/${this.branch}`;
    if (await headIs(await this.gitDirOf(workspace), branchRef)) return branchRef;
    return (await workspace.git.run(['symbolic-ref', '--quiet', 'HEAD'], 'git symbolic-ref')).trim();
  }

  /**
   * Creates the repository for a path that does not hold one yet. Two runs doing so at once would
   * trip over each other's `git init`, and one would find the other's half-made `.git`; a
   * short-lived lock inside the directory serializes them (localRepositoryKind reads a directory
   * holding it as not initialized yet).
   */
  private async initRepository(dir: string): Promise<void> {
    // A git init that fails (no git on PATH) leaves no directory it made behind.
    await inNewDirectory(dir, async () => {
      const lock = await acquirePublishLock(path.join(dir, INIT_LOCK_FILE), {
        timeoutMs: 60_000,
        target: `--git ${dir}`,
        command: 'clusterstack: git init',
      });
      try {
        if (await exists(path.join(dir, '.git'))) return;
        await this.command(dir, false).run(['init', '--quiet', `--initial-branch=${this.branch}`], `git init ${dir}`);
      } finally {
        await lock.release();
      }
    });
  }

  private async gitDirOf(workspace: Workspace): Promise<string> {
    return workspace.mode === 'in-place' ? workspace.gitDir : path.join(workspace.dir, '.git');
  }

  private async prepareClone(url: string, http: boolean): Promise<Workspace> {
    try {
      return await this.setUpClone(url, http);
    } catch (error) {
      // Neither is the clone's fault: a fresh one would fail the same way.
      if (error instanceof PublishError && (error.kind === 'invalid-target' || error.kind === 'missing-tool'))
        throw error;
      // The clone is ours alone and holds nothing the remote does not: one damaged by a killed run
      // is started afresh.
      this.options.logger?.warn(
        { target: this.target, error: error instanceof Error ? error.message : String(error) },
        'The clone in the cache is damaged, starting it afresh',
      );
      await rm(this.workDir, { recursive: true, force: true });
      return this.setUpClone(url, http);
    }
  }

  private async setUpClone(url: string, http: boolean): Promise<Workspace> {
    const dir = this.workDir;
    if (!(await exists(path.join(dir, '.git')))) {
      return inNewDirectory(dir, async () => {
        if ((await readdir(dir)).length > 0) {
          throw new PublishError(
            'invalid-target',
            `work directory ${dir} is neither empty nor a clone made by clusterstack; remove it or choose another`,
          );
        }
        const git = this.command(dir, http);
        await git.run(['init', '--quiet'], `git init ${dir}`);
        await git.run(['remote', 'add', 'origin', url], `git remote add in ${dir}`);
        return { mode: 'clone', dir, git, url };
      });
    }
    const git = this.command(dir, http);
    const current = (
      (await plainOriginUrl(path.join(dir, '.git'))) ??
      (await git.run(['config', '--get', 'remote.origin.url'], `git config in ${dir}`).catch(() => ''))
    ).trim();
    if (current === '') await git.run(['remote', 'add', 'origin', url], `git remote add in ${dir}`);
    else if (current !== url) await git.run(['remote', 'set-url', 'origin', url], `git remote set-url in ${dir}`);
    return { mode: 'clone', dir, git, url };
  }

  /**
   * Fetches the remote branch into its tracking ref, FETCH_HEAD naming its head. No `git maintenance`
   * after it (one more process on every publish): clone-housekeeping.ts asks `git gc --auto` instead.
   */
  private async fetchBranch(git: GitCommand): Promise<void> {
    await git.run(
      [
        'fetch',
        '--quiet',
        '--no-tags',
        '--no-auto-maintenance',
        '--write-fetch-head',
        'origin',
        `+refs/heads/${this.branch}:refs/remotes/origin/${this.branch}`,
      ],
      `git fetch from ${this.remote.display}`,
    );
  }

  /**
   * Fetches the remote branch into its tracking ref and returns its head (null: the remote has no
   * such branch); the clone's branch, index and files stay as they were.
   */
  private async fetchRemote(workspace: Workspace): Promise<string | null> {
    const { git } = workspace;
    const branchRef = `refs/heads/${this.branch}`;
    const trackingRef = `refs/remotes/origin/${this.branch}`;
    const gitDir = await this.gitDirOf(workspace);
    const before = await storedRef(gitDir, trackingRef);
    try {
      // One connection: a branch the remote lacks fails the fetch with git's own words (no ls-remote first).
      await this.fetchBranch(git);
    } catch (error) {
      if (isMissingRemoteRef(error, branchRef)) return null;
      throw error;
    }
    const head =
      (await fetchedHead(await this.gitDirOf(workspace))) ??
      (await git.run(['rev-parse', trackingRef], 'git rev-parse')).trim();
    // The fetch brought commits the clone did not have (another writer's): objects to pack some time.
    if (head !== before) await this.housekeeping.afterObjectsAdded(workspace.git);
    return head;
  }

  /** Makes the clone's branch, index and files equal the remote branch; returns its head (null: no branch yet). */
  private async resetToRemote(workspace: Workspace): Promise<string | null> {
    const { git } = workspace;
    const branchRef = `refs/heads/${this.branch}`;
    const head = await this.fetchRemote(workspace);
    // HEAD names the branch after the first reset.
    if (!(await headIs(await this.gitDirOf(workspace), branchRef)))
      await git.run(['symbolic-ref', 'HEAD', branchRef], 'git symbolic-ref');
    if (head !== null) {
      await git.run(['reset', '--quiet', '--hard', head], 'git reset');
    } else {
      // An empty remote or a new branch: start an orphan branch with nothing in it.
      await git.run(['update-ref', '-d', branchRef], 'git update-ref');
      await git.run(['read-tree', '--empty'], 'git read-tree');
    }
    await git.run(['clean', '-ffdxq'], 'git clean');
    return head;
  }

  /** The commit HEAD is at (null: none yet); read from the git directory's files when HEAD names the branch and its ref is stored there. */
  private async localHead(workspace: Workspace): Promise<string | null> {
    const branchRef = `refs/heads/${this.branch}`;
    const gitDir = await this.gitDirOf(workspace);
    const stored = (await headIs(gitDir, branchRef)) ? await storedRef(gitDir, branchRef) : undefined;
    if (stored !== undefined) return stored;
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
      const differing = [...new Set([...known.keys(), ...tree.keys()])].filter(
        (file) => known.get(file) !== tree.get(file),
      );
      await this.addPaths(
        workspace,
        differing.map((file) => `${prefix}${file}`),
      );
    } else {
      // --force: a .gitignore in the repository must not silently keep a rendered file out.
      await workspace.git.run(['add', '--all', '--force', '--', pathspec], 'git add');
    }
    return this.stagedChanges(workspace, pathspec);
  }

  /**
   * With `fleetIndex`: writes and stages the shards' index of a commit on `parent` holding `tree`
   * as this subtree, unless `parent` has it already. Whatever stood at its path is replaced, never
   * written through (a symbolic link there would lead out of the work tree).
   */
  private async stageFleetIndex(workspace: Workspace, parent: string | null, tree: RenderedTree): Promise<void> {
    if (!this.fleetIndex) return;
    const text = await this.fleetIndex.changedAt(workspace.git, parent, tree);
    if (text === undefined) return;
    const file = path.join(workspace.dir, this.fleetIndex.file);
    await rm(file, { force: true });
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text);
    await this.addPaths(workspace, [this.fleetIndex.file]);
  }

  /** Stages exactly `paths` (written, changed or removed), ignoring any .gitignore. */
  private async addPaths(workspace: Workspace, paths: string[]): Promise<void> {
    if (paths.length === 0) return;
    const list = path.join(await this.gitDirOf(workspace), 'CLUSTERSTACK_PATHS');
    await writeFile(list, paths.join('\0'));
    try {
      // --force: a .gitignore in the repository must not silently keep a rendered file out.
      await workspace.git.run(
        ['add', '--all', '--force', `--pathspec-from-file=${list}`, '--pathspec-file-nul'],
        'git add',
      );
    } finally {
      await rm(list, { force: true });
    }
  }

  private async commit(workspace: Workspace, message: string): Promise<string> {
    const { git } = workspace;
    const messageFile = path.join(await this.gitDirOf(workspace), 'CLUSTERSTACK_COMMIT_MSG');
    await writeFile(messageFile, message, 'utf8');
    crashPoint('git:commit-message');
    try {
      // Strict: a hook that exits non-zero without a word must not pass for a commit.
      await git.runStrict(['commit', '--quiet', '--cleanup=whitespace', '--file', messageFile], 'git commit');
    } catch (error) {
      throw await this.commitFailure(workspace, error);
    } finally {
      await rm(messageFile, { force: true });
    }
    return (await this.localHead(workspace)) ?? (await git.run(['rev-parse', 'HEAD'], 'git rev-parse')).trim();
  }

  /**
   * Says why `git commit` refused, when the repository's configuration did: signing that fails
   * (commit.gpgsign without a usable key) or a hook that exits non-zero. Both need a person to act.
   */
  private async commitFailure(workspace: Workspace, error: unknown): Promise<unknown> {
    if (!(error instanceof PublishError) || error.kind !== 'rejected') return error;
    const where =
      workspace.mode === 'in-place'
        ? `--git ${workspace.dir}`
        : `the clone of ${this.remote.display} in ${workspace.dir}`;
    const output = error.message.replace(/^git commit failed: /, '');
    if (SIGNING_FAILED.test(output)) {
      return new PublishError(
        'invalid-target',
        `${where}: git commit could not sign the commit (commit.gpgsign is set in the repository's or your Git configuration): ${output}. Make the key git signs with usable (user.signingkey, gpg-agent), or turn signing off there: git -C ${workspace.dir} config commit.gpgsign false`,
        { cause: error },
      );
    }
    const hooksDir = path.resolve(
      workspace.dir,
      (await workspace.git.run(['rev-parse', '--git-path', 'hooks'], 'git rev-parse')).trim(),
    );
    const hooks = (
      await Promise.all(
        COMMIT_HOOKS.map(async (hook) =>
          (await access(path.join(hooksDir, hook), constants.X_OK).then(
            () => true,
            () => false,
          ))
            ? hook
            : undefined,
        ),
      )
    ).filter((hook) => hook !== undefined);
    if (hooks.length === 0) return error;
    return new PublishError(
      'invalid-target',
      `${where}: a commit hook refused the commit (${hooks.join(', ')} in ${hooksDir}): ${output}. Fix what it reports, or make the hook accept the rendered files`,
      { cause: error },
    );
  }

  /**
   * The in-place publish, as steps: on the right branch and unlocked, look at what the path holds,
   * refuse work that is not the render's, journal what the write changes, then write and commit
   * (or put the work tree back).
   */
  private async commitInPlace(
    workspace: Extract<Workspace, { mode: 'in-place' }>,
    tree: RenderedTree,
    message: string,
  ): Promise<PublishResult> {
    await this.requireBranchCheckedOut(workspace);
    await this.awaitGitLocks(workspace, 'Nothing was written');
    const state = await this.inPlaceState(workspace, tree);
    this.refuseOthersWork(workspace, state);
    const journal = await this.writeJournal(workspace, state);
    try {
      return await this.writeAndCommit(workspace, tree, message, state.tracked);
    } catch (error) {
      throw await this.putBack(workspace, journal, error);
    }
  }

  /** Throws unless --git has the publisher's branch checked out: the render commits on HEAD. */
  private async requireBranchCheckedOut(workspace: Extract<Workspace, { mode: 'in-place' }>): Promise<void> {
    const current = await this.checkedOut(workspace);
    if (current !== `refs/heads/${this.branch}`) {
      throw new PublishError(
        'invalid-target',
        `--git ${workspace.dir} has ${current === '' ? 'a detached HEAD' : current.replace('refs/heads/', 'branch ')} checked out, not ${this.branch}; check out ${this.branch} there`,
      );
    }
  }

  /** What the path holds before the write: the render's previous files, uncommitted work, and files the render would create. */
  private async inPlaceState(
    workspace: Extract<Workspace, { mode: 'in-place' }>,
    tree: RenderedTree,
  ): Promise<InPlaceState> {
    const { git, dir } = workspace;
    const prefix = this.subdir === '' ? '' : `${this.subdir}/`;
    const pathspec = this.subdir === '' ? '.' : this.subdir;
    // What is ours under the path: the files committed there, i.e. the previous render.
    const tracked = new Set(
      (await git.run(['ls-files', '-z', '--', pathspec], 'git ls-files'))
        .split('\0')
        .filter((file) => file !== '')
        .map((file) => file.slice(prefix.length)),
    );
    const { staged, edited } = await this.uncommittedChanges(workspace);
    // A file the render would write over, that git does not know, is someone's: never overwrite it.
    const created = [...tree.keys()].filter((file) => !tracked.has(file));
    const occupied = (
      await new RankedSlots(FILE_CONCURRENCY).map(created, async (file) =>
        (await exists(path.join(dir, prefix, file))) ? file : undefined,
      )
    ).filter((file): file is string => file !== undefined);
    if (!this.fleetIndex) return { tracked, staged, edited, created, occupied };
    const file = this.fleetIndex.file;
    const indexTracked = (await git.run(['ls-files', '-z', '--', file], 'git ls-files')) !== '';
    const index = { tracked: indexTracked, occupied: !indexTracked && (await exists(path.join(dir, file))) };
    return { tracked, staged, edited, created, occupied, index };
  }

  /** Throws, in one report, when work that is not the render's is where the render would commit or write. */
  private refuseOthersWork(workspace: Extract<Workspace, { mode: 'in-place' }>, state: InPlaceState): void {
    const { staged, edited, occupied } = state;
    const prefix = this.subdir === '' ? '' : `${this.subdir}/`;
    const refusals: { what: string; files: string[]; advice: string }[] = [];
    if (staged.length > 0)
      refusals.push({
        what: 'staged changes',
        files: staged,
        advice: "commit or unstage them; they would end up in the render's commit",
      });
    if (edited.length > 0 && !this.options.overwriteEdits) {
      refusals.push({
        what: 'uncommitted edits to files the render writes',
        files: edited,
        advice: 'commit, stash or discard them, or pass --force to overwrite them',
      });
    }
    if (occupied.length > 0 || state.index?.occupied)
      refusals.push({
        what: 'untracked files where the render writes',
        files: [
          ...occupied.map((file) => `${prefix}${file}`),
          ...(state.index?.occupied ? [this.fleetIndex!.file] : []),
        ],
        advice: 'move them away or commit them elsewhere',
      });
    if (refusals.length > 0) {
      const parts = refusals.map(
        ({ what, files, advice }) =>
          `${what} (${files.slice(0, 5).join(', ')}${files.length > 5 ? ` and ${files.length - 5} more` : ''}); ${advice}`,
      );
      throw new PublishError(
        'invalid-target',
        `--git ${workspace.dir} has ${parts.join('; it also has ')}. Then run again. Nothing was written`,
      );
    }
  }

  /** Writes the journal that puts the work tree back if this run fails or is killed, and returns it. */
  private async writeJournal(
    workspace: Extract<Workspace, { mode: 'in-place' }>,
    state: InPlaceState,
  ): Promise<WorkTreeJournal> {
    const { dir } = workspace;
    const prefix = this.subdir === '' ? '' : `${this.subdir}/`;
    // The shards' index is created too when HEAD does not have it yet.
    const created = [
      ...state.created.map((file) => `${prefix}${file}`),
      ...(state.index && !state.index.tracked ? [this.fleetIndex!.file] : []),
    ];
    const journal: WorkTreeJournal = {
      pid: process.pid,
      head: await this.localHead(workspace),
      created,
      directories: await missingDirectories(dir, created),
      edited: await snapshotFiles(dir, state.edited),
    };
    await writeFile(path.join(workspace.gitDir, JOURNAL_FILE), `${JSON.stringify(journal)}\n`);
    crashPoint('git:journal');
    return journal;
  }

  /** Writes the tree under the path, stages exactly its paths and commits them, then removes the journal. */
  private async writeAndCommit(
    workspace: Extract<Workspace, { mode: 'in-place' }>,
    tree: RenderedTree,
    message: string,
    tracked: Set<string>,
  ): Promise<PublishResult> {
    const prefix = this.subdir === '' ? '' : `${this.subdir}/`;
    const pathspec = this.subdir === '' ? '.' : this.subdir;
    const journalFile = path.join(workspace.gitDir, JOURNAL_FILE);
    await syncWorkTree(workspace.dir, this.subdir, tree, undefined, tracked);
    const removed = [...tracked].filter((file) => !tree.has(file));
    // Exactly the render's paths: untracked files beside them are not ours to commit.
    await this.addPaths(
      workspace,
      [...tree.keys(), ...removed].map((file) => `${prefix}${file}`),
    );
    const changes = await this.stagedChanges(workspace, pathspec);
    if (changes.written.length === 0 && changes.removed.length === 0) {
      await unlink(journalFile).catch(() => {});
      return { changed: false, written: [], removed: [], revision: await this.localHead(workspace) };
    }
    await this.stageFleetIndex(workspace, await this.localHead(workspace), tree);
    crashPoint('git:staged');
    const revision = await this.commit(workspace, message);
    crashPoint('git:committed');
    await unlink(journalFile).catch(() => {});
    this.options.logger?.info(
      { target: this.target, revision, written: changes.written.length, removed: changes.removed.length },
      'Committed rendered tree',
    );
    return { changed: true, ...changes, revision };
  }

  /** After a failed write or commit: the work tree and index as before the run, and `error` saying so (or that the next run will). */
  private async putBack(
    workspace: Extract<Workspace, { mode: 'in-place' }>,
    journal: WorkTreeJournal,
    error: unknown,
  ): Promise<unknown> {
    let outcome: string;
    try {
      await this.restoreWorkTree(workspace, journal);
      outcome = `Nothing was committed; --git ${workspace.dir} is as it was before the run`;
    } catch (restoreError) {
      outcome = `Nothing was committed, and putting --git ${workspace.dir} back failed too (${restoreError instanceof Error ? restoreError.message : String(restoreError)}); the next run puts it back before anything else`;
    }
    if (!(error instanceof PublishError)) return error;
    return new PublishError(error.kind, `${error.message.replace(/[.\s]+$/, '')}. ${outcome}`, { cause: error });
  }

  /**
   * A run killed while writing the work tree leaves files of a render that was never committed and
   * a half-staged index. Its journal says so: then the work tree is put back before anything is
   * read or written.
   */
  private async repairInPlace(workspace: Extract<Workspace, { mode: 'in-place' }>): Promise<void> {
    const text = await readFile(path.join(workspace.gitDir, JOURNAL_FILE), 'utf8').catch(() => undefined);
    if (text === undefined) return;
    // Another run may be at work right now; only an unlocked target or our own lock lets us repair.
    if (!this.held && (await exists(path.join(workspace.gitDir, LOCK_FILE)))) return;
    await this.restoreWorkTree(workspace, parseJournal(text));
    this.options.logger?.warn({ target: this.target }, 'Repaired the work tree after an interrupted run');
  }

  /**
   * Puts the path back to HEAD in the index and the work tree, removes the files and directories
   * the journal's run created, writes back the edits it overwrote (while HEAD is still where that
   * run found it), and removes the journal. Git's lock files are never removed: one someone else
   * holds is waited for, then reported.
   */
  private async restoreWorkTree(
    workspace: Extract<Workspace, { mode: 'in-place' }>,
    journal: WorkTreeJournal,
  ): Promise<void> {
    const { git, dir } = workspace;
    await this.awaitGitLocks(
      workspace,
      'The work tree is left as an interrupted run left it; the next run puts it back',
    );
    // The path, and the shards' index beside it when the publisher keeps one.
    const pathspecs = [this.subdir === '' ? '.' : this.subdir, ...(this.fleetIndex ? [this.fleetIndex.file] : [])];
    const head = await this.localHead(workspace);
    const atHead = new Set(
      head === null
        ? []
        : (await git.run(['ls-tree', '-r', '-z', '--name-only', head, '--', ...pathspecs], 'git ls-tree'))
            .split('\0')
            .filter((file) => file !== ''),
    );
    if (head !== null) {
      await git.run(['reset', '--quiet', head, '--', ...pathspecs], 'git reset');
      // Only what HEAD holds: checkout refuses a pathspec that matches nothing there.
      const present = pathspecs.filter((spec) =>
        spec === '.' ? atHead.size > 0 : atHead.has(spec) || [...atHead].some((file) => file.startsWith(`${spec}/`)),
      );
      if (present.length > 0) await git.run(['checkout', '--quiet', head, '--', ...present], 'git checkout');
    } else {
      await git.run(['rm', '-r', '--cached', '--quiet', '--ignore-unmatch', '--', ...pathspecs], 'git rm');
    }
    const inside = (file: string): boolean => !file.split('/').includes('..') && !path.isAbsolute(file);
    for (const file of journal.created) {
      if (!atHead.has(file) && inside(file)) await rm(path.join(dir, file), { force: true });
    }
    // Deepest first; one that holds something else now stays.
    for (const directory of [...journal.directories].reverse())
      if (inside(directory)) await rmdir(path.join(dir, directory)).catch(() => {});
    if (head === journal.head) {
      for (const [file, saved] of Object.entries(journal.edited)) {
        if (!inside(file)) continue;
        const target = path.join(dir, file);
        if (saved === null) {
          await rm(target, { force: true });
        } else {
          await mkdir(path.dirname(target), { recursive: true });
          await writeFile(target, Buffer.from(saved.data, 'base64'), { mode: saved.mode });
          await chmod(target, saved.mode);
        }
      }
    }
    await unlink(path.join(workspace.gitDir, JOURNAL_FILE)).catch(() => {});
  }

  /**
   * Waits for the lock files a commit in the work tree needs (the index, HEAD, the branch) to be
   * released, for at most the lock wait, and throws (unavailable: retrying may help) naming one that
   * stays. Never removes one: a live git process's lock cannot be told from a crashed one's.
   */
  private async awaitGitLocks(workspace: Extract<Workspace, { mode: 'in-place' }>, outcome: string): Promise<void> {
    const files = workspace.locks;
    const deadline = Date.now() + this.gitLockWaitMs;
    for (;;) {
      const held = (await Promise.all(files.map(async (file) => ((await exists(file)) ? file : undefined)))).find(
        (file) => file !== undefined,
      );
      if (held === undefined) return;
      if (Date.now() >= deadline)
        throw new PublishError('unavailable', `--git ${workspace.dir}: ${heldGitLockAdvice(held)}. ${outcome}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Files staged under `pathspec`, relative to the path: what a commit now would change. */
  private async stagedChanges(workspace: Workspace, pathspec: string): Promise<StagedChanges> {
    const status = await workspace.git.run(
      ['diff', '--cached', '--name-status', '--no-renames', '-z', '--', pathspec],
      'git diff',
    );
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

  private async commitAndPush(
    workspace: Workspace,
    tree: RenderedTree,
    message: string,
    known?: KnownChange,
  ): Promise<PublishResult> {
    const branchRef = `refs/heads/${this.branch}`;
    // The commit the fast path builds on: the one we pushed last, or after a lost race the new head
    // when the other writer left our path alone (controller shards); undefined: the work tree path.
    let fastParent: string | null | undefined = this.committed?.revision;
    // A shard's branch is moved by the other shards between its commits: most of the time the commit
    // it pushed last is no longer the head. Looking first (a fetch) spares the commit made on it,
    // the push the remote refuses and the pause a lost race costs; the race is still handled below.
    // When the head cannot be built on that way (our path is not in both yet, on a shard's first
    // publish), the commit we pushed last stays the parent, and a lost race is handled below.
    if (this.fleetIndex && this.committed && fastParent !== undefined && !this.sameAsKnown(tree, known))
      fastParent = (await this.headKeepingOurPath(workspace, this.committed.revision)) ?? fastParent;
    for (let attempt = 1; attempt <= this.maxPushAttempts; attempt++) {
      if (this.committed && fastParent !== undefined) {
        const fast = await this.commitFromKnown(workspace, this.committed, tree, message, fastParent, attempt, known);
        if (fast === 'lost-race') {
          this.options.logger?.warn(
            { target: this.target, attempt, maxAttempts: this.maxPushAttempts },
            'Push lost a race with another writer, rebuilding on the new remote head',
          );
          await lostRacePause(attempt);
          fastParent = await this.headKeepingOurPath(workspace, this.committed.revision);
          continue;
        }
        if (fast) return fast;
        fastParent = undefined;
      }
      const base = await this.resetToRemote(workspace);
      const changes = await this.stageTree(workspace, tree, base);
      if (changes.written.length === 0 && changes.removed.length === 0) {
        return { changed: false, written: [], removed: [], revision: base };
      }
      await this.stageFleetIndex(workspace, base, tree);
      crashPoint('git:staged');
      const revision = await this.commit(workspace, message);
      crashPoint('git:committed');
      try {
        await workspace.git.run(['push', 'origin', `${branchRef}:${branchRef}`], `git push to ${this.remote.display}`);
        crashPoint('git:pushed');
      } catch (error) {
        if (error instanceof PublishError && error.kind === 'conflict') {
          this.options.logger?.warn(
            { target: this.target, attempt, maxAttempts: this.maxPushAttempts },
            'Push lost a race with another writer, rebuilding on the new remote head',
          );
          await lostRacePause(attempt);
          continue;
        }
        await this.recover(workspace);
        throw error;
      }
      this.committed = { revision, tree };
      this.options.logger?.info(
        { target: this.target, revision, attempt, written: changes.written.length, removed: changes.removed.length },
        'Pushed rendered tree',
      );
      return { changed: true, ...changes, revision };
    }
    await this.recover(workspace);
    throw new PublishError(
      'conflict',
      `git push to ${this.remote.display}: branch ${this.branch} moved on during each of ${this.maxPushAttempts} attempts (non-fast-forward); try again later`,
    );
  }

  /** Whether `tree` is the tree we last committed (by the caller's comparison when it was made against it). */
  private sameAsKnown(tree: RenderedTree, change?: KnownChange): boolean {
    const committed = this.committed!.tree;
    if (change?.previous === committed) return change.written.length === 0 && change.removed.length === 0;
    const { written, removed } = diffTrees(committed, tree);
    return written.length === 0 && removed.length === 0;
  }

  /**
   * After a lost race: the new remote head, when our path there still holds the tree we pushed last
   * (the other writer changed only other paths, as controller shards do), so that the same file
   * changes apply on top of it; undefined otherwise (or for a target at the repository root).
   */
  private async headKeepingOurPath(workspace: Workspace, known: string | null): Promise<string | undefined> {
    if (this.subdir === '' || known === null) return undefined;
    const { git } = workspace;
    const trackingRef = `refs/remotes/origin/${this.branch}`;
    try {
      await this.fetchBranch(git);
      // A shard: the head is in FETCH_HEAD, our path's tree there comes with the listing its index
      // reads anyway, and the tree we pushed last with its fast-import. Each git process is a
      // step of the serial fetch-commit-push that shards racing on one branch wait for in turn.
      const pushed = this.committed?.revision === known ? this.committed.subtree : undefined;
      if (this.fleetIndex && pushed !== undefined) {
        const head = await fetchedHead(await this.gitDirOf(workspace));
        if (head !== undefined) return (await this.fleetIndex.subtreeAt(git, head)) === pushed ? head : undefined;
      }
      // One process for the head and both path trees (a missing path fails it: the full way then).
      const [head, theirs, ours] = (
        await git.run(
          ['rev-parse', trackingRef, `${trackingRef}:${this.subdir}`, `${known}:${this.subdir}`],
          'git rev-parse',
        )
      )
        .trim()
        .split('\n');
      // Known from now on: the next attempts and publishes on this commit need no rev-parse.
      if (ours && this.fleetIndex && this.committed?.revision === known) this.committed.subtree = ours;
      return head && ours && theirs === ours ? head : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The commit made from what differs from a known commit, pushed only while the remote branch is
   * still at that commit. 'lost-race' when it moved on; undefined when the full way must decide
   * (nothing differs but the branch moved, or fast-import failed). `change`, the caller's comparison, is
   * used when it was made against the known tree.
   */
  private async commitFromKnown(
    workspace: Workspace,
    known: NonNullable<GitPublisher['committed']>,
    tree: RenderedTree,
    message: string,
    parent: string | null = known.revision,
    attempt = 1,
    change?: KnownChange,
  ): Promise<PublishResult | 'lost-race' | undefined> {
    const prefix = this.subdir === '' ? '' : `${this.subdir}/`;
    // The caller's comparison when it was made against this very tree; else our own.
    const { written, removed } =
      change?.previous === known.tree
        ? { written: [...change.written], removed: [...change.removed] }
        : diffTrees(known.tree, tree);
    if (written.length === 0 && removed.length === 0) {
      // The tree is there; whether the branch still is, only the remote can say.
      return (await this.remoteHead(workspace)) === (parent ?? '')
        ? { changed: false, written: [], removed: [], revision: parent }
        : undefined;
    }
    const branchRef = `refs/heads/${this.branch}`;
    let revision: string;
    let subtree: string | undefined;
    try {
      // The shards' index as this commit's subtrees make it (recomputed on each attempt's parent).
      const index = this.fleetIndex && (await this.fleetIndex.changedAt(workspace.git, parent, tree));
      ({ commit: revision, tree: subtree } = await fastCommit(workspace.git, {
        ref: branchRef,
        parent,
        author: this.options.author,
        message,
        written: [
          ...written.map((file) => [`${prefix}${file}`, tree.get(file)!] as const),
          ...(index ? [[this.fleetIndex!.file, index] as const] : []),
        ],
        removed: removed.map((file) => `${prefix}${file}`),
        // A shard's next publish compares this with our path at the head it fetches.
        ...(this.fleetIndex ? { treeOf: this.subdir } : {}),
      }));
    } catch (error) {
      this.options.logger?.warn(
        { target: this.target, error: error instanceof Error ? error.message : String(error) },
        'Could not commit from the known tree, committing through the work tree',
      );
      return undefined;
    }
    crashPoint('git:fast-committed');
    try {
      // Only over the known commit: anything else there is another writer's, to build on.
      await workspace.git.run(
        ['push', `--force-with-lease=${branchRef}:${parent ?? ''}`, 'origin', `${branchRef}:${branchRef}`],
        `git push to ${this.remote.display}`,
      );
      crashPoint('git:pushed');
    } catch (error) {
      if (error instanceof PublishError && error.kind === 'conflict') return 'lost-race';
      await this.recover(workspace);
      throw error;
    }
    this.committed = subtree === undefined ? { revision, tree } : { revision, tree, subtree };
    await this.housekeeping.afterObjectsAdded(workspace.git);
    this.options.logger?.info(
      { target: this.target, revision, attempt, written: written.length, removed: removed.length },
      'Pushed rendered tree',
    );
    return { changed: true, written, removed, revision };
  }

  /** After a failed push the clone holds a commit the remote does not: drop it. */
  private async recover(workspace: Workspace): Promise<void> {
    try {
      await this.resetToRemote(workspace);
    } catch (error) {
      // Cannot even reach the remote: forget the clone; the next run fetches afresh.
      this.options.logger?.warn(
        { target: this.target, error: error instanceof Error ? error.message : String(error) },
        'Could not reset the clone after a failed push, removing it',
      );
      await rm(workspace.dir, { recursive: true, force: true });
      this.workspace = undefined;
    }
  }
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

/** The directories (repository paths) that must be made to hold `files` and do not exist yet, parents first. */
async function missingDirectories(dir: string, files: readonly string[]): Promise<string[]> {
  const known = new Set<string>();
  const missing: string[] = [];
  for (const file of files) {
    for (
      let directory = path.posix.dirname(file);
      directory !== '.' && !known.has(directory);
      directory = path.posix.dirname(directory)
    ) {
      known.add(directory);
      // An existing directory's parents exist too.
      if (await exists(path.join(dir, directory))) break;
      missing.push(directory);
    }
  }
  return missing.sort((a, b) => a.split('/').length - b.split('/').length);
}

/**
 * The bytes and mode of each of `files` (repository paths) as the work tree holds them, null for a
 * file that is gone. One that is no longer a regular file is left out: it is put back as HEAD has it.
 */
async function snapshotFiles(dir: string, files: readonly string[]): Promise<WorkTreeJournal['edited']> {
  const saved: WorkTreeJournal['edited'] = {};
  for (const file of files) {
    const info = await lstat(path.join(dir, file)).catch(() => undefined);
    if (info === undefined) saved[file] = null;
    else if (info.isFile())
      saved[file] = { data: (await readFile(path.join(dir, file))).toString('base64'), mode: info.mode & 0o777 };
  }
  return saved;
}

/** A journal as read back; an unreadable one still means: put the path back to HEAD (and no edits to write back). */
function parseJournal(text: string): WorkTreeJournal {
  let parsed: Record<string, unknown> = {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null) parsed = value as Record<string, unknown>;
  } catch {
    // Left as read: nothing but the restore to HEAD.
  }
  const strings = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === 'string') : [];
  const edited: WorkTreeJournal['edited'] = {};
  if (typeof parsed.edited === 'object' && parsed.edited !== null) {
    for (const [file, saved] of Object.entries(parsed.edited as Record<string, unknown>)) {
      if (saved === null) edited[file] = null;
      else if (
        typeof saved === 'object' &&
        typeof (saved as { data?: unknown }).data === 'string' &&
        typeof (saved as { mode?: unknown }).mode === 'number'
      )
        edited[file] = saved as { data: string; mode: number };
    }
  }
  return {
    pid: typeof parsed.pid === 'number' ? parsed.pid : 0,
    // '' is no commit id and not null: an unreadable journal writes no edits back.
    head: typeof parsed.head === 'string' || parsed.head === null ? parsed.head : '',
    created: strings(parsed.created),
    directories: strings(parsed.directories),
    edited,
  };
}

/**
 * A short random wait after the `attempt`th lost push race (full jitter from 50 ms, doubling, at
 * most 2 s), so that losers do not start again in lockstep. It is kept short on purpose: a lost race
 * means another writer's push has landed, and the next attempt can build on it at once. Two losers
 * that start together lose to each other again, but each round has a winner, so the last of k writers
 * that finish together is through after k attempts either way; a pause as long as an attempt (as
 * before) only added up to that long to each loser's wait (docs/sharding.md, measured).
 */
function lostRacePause(attempt: number): Promise<void> {
  return new Promise((resolve) =>
    setTimeout(resolve, fullJitterDelay(attempt - 1, { baseDelayMs: 50, maxDelayMs: 2000 })),
  );
}
