// `--git <GitHub URL> --pull-request`: the rendered tree goes to its own branch, one stable name per
// target, and a pull request proposes it for the base branch. What is merged is what the cluster
// runs, so the base branch is "previous"; the branch always holds base + the desired tree.
//
// One render:
// 1. check the token against the repository (GET /repos/:o/:r) before anything is pushed;
// 2. stage the tree under the path on top of the base head; when the base holds it already, the
//    change is unnecessary: no push, and the open pull request is closed with a comment (or left);
// 3. when the branch holds this tree under the path already, nothing is pushed and the pull request
//    is not touched (it is only opened when none is);
// 4. otherwise commit on top of the base head and replace the branch with --force-with-lease, so the
//    pull request shows base -> desired and nothing else. Commits on the branch that are not ours
//    (another author or committer, or no Clusterstack-Input-Digest trailer) are never force-pushed
//    over: while a pull request is open, the tree is committed on top of the branch head and
//    pushed as a fast-forward, so a reviewer's commits stay (the path again holds exactly the
//    rendered tree, files outside it keep their edits); with no open pull request the branch is a
//    leftover, and we stop with a 'conflict' naming it, for a person to delete;
// 5. find the open pull request by head `owner:branch` and update its title and body, or open one
//    (a 422 "already exists" means another run opened it meanwhile: find it and update it).
import { readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ENVIRONMENT } from '../src/config.js';
import { createGitHubClient, type GitHubClient, GITHUB_API_URL, isRequestError } from '../src/github/github-client.js';
import { sha256Hex } from '../src/release/content-digest.js';
import { compileCommitMessage, type CommitMessageRenderer } from './commit-message.js';
import { GitCommand, type GitIdentity } from './git-command.js';
import type { Logger } from '../src/core/logger.js';
import { parseGitRemote, type GitRemote } from './git-remote.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { LockRequest, Publisher, PublishResult } from './publisher.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { PublishError } from './publish-error.js';
import { checkTreePaths, normalizeSubdir } from './tree-paths.js';
import { readTreeAtCommit } from './read-git-tree.js';
import { syncWorkTree } from './sync-work-tree.js';
import { acquirePublishLock, type PublishLock } from './publish-lock.js';
import { inNewDirectory } from './new-directory.js';
import { removeStaleGitLocks } from './stale-git-locks.js';
import { crashPoint } from './crash-point.js';
import { isValidBranchName } from './branch-name.js';
import { plainOriginUrl, storedRef } from './clone-git-files.js';
import { CloneHousekeeping } from './clone-housekeeping.js';

/** The trailer that marks a commit as made by a render (with our identity): such commits may be replaced. */
const INPUT_DIGEST_TRAILER = 'Clusterstack-Input-Digest';

interface PullRequestGitOptions {
  /** The repository to push the branch to: an https GitHub URL (any URL git can push to works). */
  repository: string;
  /** The branch the pull request targets. */
  baseBranch: string;
  /** The subdirectory the tree goes to; '' is the repository root. */
  path: string;
  /** Where the clone lives between runs; used by this publisher only. */
  workDir: string;
  author: GitIdentity;
  /** For HTTP(S) pushes; default: the GitHub token. Sent as a header, never stored. */
  token?: string;
  /** Handlebars source of the commit message template; the bundled default when undefined. */
  messageTemplate?: string;
  /** The environment git runs with (HOME, proxies, CA bundles); see GitPublisherOptions.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Pushes tried before giving up on a branch others keep moving (default 5). */
  maxPushAttempts?: number;
}

interface PullRequestGitHubOptions {
  /** Default: read from `git.repository` (https://github.com/<owner>/<repo>(.git), or the GitHub Enterprise host of `baseUrl`). */
  owner?: string;
  repo?: string;
  /** API base URL; GitHub Enterprise: `https://host/api/v3`. Default https://api.github.com. */
  baseUrl?: string;
  /** Needs contents: write and pull requests: write. Never logged. */
  token?: string;
  fetch?: typeof fetch;
}

export interface PullRequestPublisherOptions {
  git: PullRequestGitOptions;
  github: PullRequestGitHubOptions;
  /** The branch the change goes to; default `clusterstack/render-<base>-<8 hex of sha256(path)>`. */
  branch?: string;
  /** What happens to the open pull request when the base already holds the tree (default close). */
  whenUnnecessary?: 'close' | 'leave';
  logger?: Logger;
}

interface PullRequest {
  number: number;
  title: string;
  body: string | null;
  html_url: string;
}

interface BranchCommit {
  sha: string;
  ours: boolean;
}

/** The branch a target's pull requests come from: stable for the same base and path. */
export function defaultPullRequestBranch(baseBranch: string, subdir: string): string {
  return `clusterstack/render-${baseBranch}-${sha256Hex(normalizeSubdir(subdir)).slice(0, 8)}`;
}

/**
 * Reads `owner` and `repo` from a GitHub repository URL: https://github.com/<owner>/<repo>(.git), or
 * the same path on the host of a GitHub Enterprise API URL (`https://host/api/v3`).
 */
export function parseGitHubRepository(
  repository: string,
  apiBaseUrl: string = GITHUB_API_URL,
): { owner: string; repo: string } {
  const help = `--pull-request needs a GitHub repository URL such as https://github.com/<owner>/<repo>.git (GitHub Enterprise: its https URL, with ${ENVIRONMENT.githubApiUrl} set to https://<host>/api/v3)`;
  let url: URL;
  let api: URL;
  try {
    url = new URL(repository);
    api = new URL(apiBaseUrl);
  } catch {
    throw new PublishError('invalid-target', `--git ${repository} is not a URL; ${help}`);
  }
  // The API of github.com (and of GHE.com tenants) lives on api.<host>; Enterprise Server's on the host itself.
  const webHost = api.host.startsWith('api.') ? api.host.slice('api.'.length) : api.host;
  const segments = url.pathname
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .split('/')
    .filter((segment) => segment !== '');
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.host !== webHost || segments.length !== 2) {
    throw new PublishError(
      'invalid-target',
      `--git ${url.protocol}//${url.host}${url.pathname} is not a repository on ${webHost}; ${help}`,
    );
  }
  return { owner: decodeURIComponent(segments[0]!), repo: decodeURIComponent(segments[1]!) };
}

/** Publishes through a pull request on GitHub; `revision` is the branch commit (the base head when unnecessary). */
export class PullRequestPublisher implements Publisher {
  readonly target: string;
  private readonly remote: GitRemote;
  private readonly url: string;
  private readonly http: boolean;
  private readonly base: string;
  private readonly branch: string;
  private readonly subdir: string;
  private readonly workDir: string;
  private held = false;
  private readonly owner: string;
  private readonly repo: string;
  private readonly gitToken: string;
  private readonly whenUnnecessary: 'close' | 'leave';
  private readonly maxPushAttempts: number;
  private readonly renderMessage: CommitMessageRenderer;
  private readonly octokit: GitHubClient;
  private workspace: Promise<GitCommand> | undefined;
  /** Asks git to pack the clone's objects now and then (fetches add them). */
  private readonly housekeeping = new CloneHousekeeping((error) =>
    this.options.logger?.warn(
      { target: this.target, error },
      'git gc --auto failed in the clone; the publish itself is done',
    ),
  );

  constructor(private readonly options: PullRequestPublisherOptions) {
    const { git, github } = options;
    const token = github.token?.trim() ?? '';
    if (token === '') {
      throw new PublishError(
        'auth',
        `pull-request mode needs a GitHub token: set ${ENVIRONMENT.githubToken} to a token that may push to the repository and open pull requests`,
      );
    }
    this.remote = parseGitRemote(git.repository);
    this.url = this.remote.kind === 'url' ? this.remote.url : this.remote.path;
    this.http = this.remote.kind === 'url' && this.remote.http;
    this.base = git.baseBranch;
    this.subdir = normalizeSubdir(git.path);
    this.branch = options.branch ?? defaultPullRequestBranch(this.base, this.subdir);
    if (this.branch === this.base)
      throw new PublishError(
        'invalid-input',
        `the pull request branch and the base branch are both "${this.base}"; choose another branch`,
      );
    this.workDir = path.resolve(git.workDir);
    const baseUrl = (github.baseUrl ?? GITHUB_API_URL).replace(/\/+$/, '');
    const parsed =
      github.owner !== undefined && github.repo !== undefined
        ? { owner: github.owner, repo: github.repo }
        : parseGitHubRepository(git.repository, baseUrl);
    this.owner = parsed.owner;
    this.repo = parsed.repo;
    this.gitToken = git.token ?? token;
    this.whenUnnecessary = options.whenUnnecessary ?? 'close';
    this.maxPushAttempts = git.maxPushAttempts ?? 5;
    if (!Number.isInteger(this.maxPushAttempts) || this.maxPushAttempts < 1) {
      throw new PublishError(
        'invalid-input',
        `maxPushAttempts must be a whole number of at least 1, got ${git.maxPushAttempts}`,
      );
    }
    this.renderMessage = compileCommitMessage(git.messageTemplate);
    // Failures surface at once as classified errors (apiFailure); the caller decides about retrying.
    this.octokit = createGitHubClient({
      baseUrl,
      token,
      ...(github.fetch !== undefined ? { fetch: github.fetch } : {}),
    }).octokit;
    this.target = `${this.remote.display} (pull request ${this.branch} -> ${this.base}${this.subdir === '' ? '' : `, path ${this.subdir}`})`;
  }

  /** Takes the lock of the clone in the cache: runs for one target take turns. */
  async lock(request: LockRequest): Promise<PublishLock> {
    const lock = await acquirePublishLock(`${this.workDir}.lock`, {
      timeoutMs: request.timeoutMs,
      target: this.target,
      command: request.command,
    });
    this.held = true;
    return {
      file: lock.file,
      release: async () => {
        this.held = false;
        await lock.release();
      },
    };
  }

  /** The files under the path on the base branch (empty when the base branch does not exist). */
  async readPrevious(): Promise<RenderedTree> {
    // Under the lock nobody else uses the clone: git lock files in it are a killed run's.
    if (this.held) await removeStaleGitLocks(path.join(this.workDir, '.git'));
    const git = await this.open();
    const heads = await this.remoteHeads(git);
    if (heads.base === undefined) return new Map();
    await this.fetch(git, heads);
    return this.readCommit(git, heads.base);
  }

  /** Proposes `tree` through the pull request; pushes nothing and touches no pull request when nothing changed. */
  async publish(tree: RenderedTree, change: ChangeSummary): Promise<PublishResult> {
    checkTreePaths(tree);
    if (change.trailers[INPUT_DIGEST_TRAILER] === undefined) {
      throw new PublishError(
        'invalid-input',
        `pull-request mode needs the ${INPUT_DIGEST_TRAILER} trailer on its commits: it tells the publisher's own commits from other people's`,
      );
    }
    const message = this.renderMessage(change);
    await this.checkAccess();
    const git = await this.open();
    this.checkBranchName();
    for (let attempt = 1; attempt <= this.maxPushAttempts; attempt++) {
      const result = await this.proposeOnce(git, tree, change, message, attempt);
      if (result !== 'moved') return result;
    }
    throw new PublishError(
      'conflict',
      `git push to ${this.remote.display}: branch ${this.branch} moved on during each of ${this.maxPushAttempts} attempts; try again later`,
    );
  }

  /**
   * One attempt at proposing `tree` on the remote as it is now: nothing when the base already holds
   * it or the branch already proposes it, else a commit pushed to the branch and the pull request
   * opened or updated; 'moved' when the branch moved while pushing.
   */
  private async proposeOnce(
    git: GitCommand,
    tree: RenderedTree,
    change: ChangeSummary,
    message: string,
    attempt: number,
  ): Promise<PublishResult | 'moved'> {
    const heads = await this.remoteHeads(git);
    if (heads.base === undefined) {
      throw new PublishError(
        'invalid-target',
        `${this.remote.display} has no branch ${this.base} for the pull request to target; push an initial commit to it first`,
      );
    }
    await this.fetch(git, heads);
    const baseHead = heads.base;
    const desiredRoot = await this.stage(git, baseHead, tree);
    const baseRoot = await this.treeOf(git, `${baseHead}^{tree}`);
    if (desiredRoot === baseRoot) return this.unnecessary(baseHead);
    const changes = await this.diff(git, baseRoot, desiredRoot);
    const open = await this.findOpenPull();
    if (
      heads.branch !== undefined &&
      (await this.treeOf(git, this.subtree(heads.branch))) === (await this.treeOf(git, this.subtree(desiredRoot)))
    ) {
      if (open !== undefined)
        return { changed: false, written: [], removed: [], revision: heads.branch, pullRequest: open.html_url };
      // Pushed by an earlier run that could not open the pull request: open it now.
      const opened = await this.upsertPull(undefined, change);
      return { changed: true, ...changes, revision: heads.branch, pullRequest: opened.html_url };
    }
    const { commit, push } = await this.branchCommit(git, { base: baseHead, branch: heads.branch }, desiredRoot, {
      tree,
      message,
      open,
    });
    crashPoint('pull-request:committed');
    if (!(await this.pushBranch(git, push, attempt))) return 'moved';
    // The commit's objects (and the blobs `git add` wrote) stay in the clone: to pack some time.
    await this.housekeeping.afterObjectsAdded(git);
    const pull = await this.upsertPull(open, change);
    crashPoint('pull-request:opened');
    this.options.logger?.info(
      {
        target: this.target,
        revision: commit,
        pullRequest: pull.html_url,
        written: changes.written.length,
        removed: changes.removed.length,
      },
      'Pushed pull request branch',
    );
    return { changed: true, ...changes, revision: commit, pullRequest: pull.html_url };
  }

  /**
   * The commit to push and how: on a new branch or one holding only our commits, the desired root on
   * the base head, pushed with a lease on what the branch was; on a branch with other people's
   * commits and an open pull request, a commit on top of them, pushed as a fast-forward.
   */
  private async branchCommit(
    git: GitCommand,
    heads: { base: string; branch?: string },
    desiredRoot: string,
    proposal: { tree: RenderedTree; message: string; open: PullRequest | undefined },
  ): Promise<{ commit: string; push: string[] }> {
    const { tree, message, open } = proposal;
    const target = `refs/heads/${this.branch}`;
    if (heads.branch === undefined) {
      const commit = await this.commitTree(git, desiredRoot, heads.base, message);
      // An empty expectation: the branch must still not exist.
      return { commit, push: ['push', `--force-with-lease=${target}:`, 'origin', `${commit}:${target}`] };
    }
    const foreign = (await this.branchCommits(git, heads.branch, heads.base)).filter((entry) => !entry.ours);
    if (foreign.length === 0) {
      const commit = await this.commitTree(git, desiredRoot, heads.base, message);
      return {
        commit,
        push: ['push', `--force-with-lease=${target}:${heads.branch}`, 'origin', `${commit}:${target}`],
      };
    }
    if (open === undefined) {
      throw new PublishError(
        'conflict',
        `branch ${this.branch} of ${this.remote.display} has ${foreign.length} commit(s) not made by clusterstack (${foreign.map((entry) => entry.sha.slice(0, 12)).join(', ')}) and no open pull request; they are not overwritten: merge or delete the branch, or give another branch`,
      );
    }
    this.options.logger?.warn(
      { target: this.target, branch: this.branch, foreignCommits: foreign.map((entry) => entry.sha) },
      'Pull request branch has commits by others, committing on top of them',
    );
    const commit = await this.commitTree(git, await this.stage(git, heads.branch, tree), heads.branch, message);
    // A plain push: a fast-forward, or refused when the branch moved again.
    return { commit, push: ['push', 'origin', `${commit}:${target}`] };
  }

  /** Runs the push; false when the branch moved meanwhile (the lease or fast-forward was refused), so the attempt starts over. */
  private async pushBranch(git: GitCommand, push: string[], attempt: number): Promise<boolean> {
    try {
      await git.run(push, `git push to ${this.remote.display}`);
      crashPoint('pull-request:pushed');
      return true;
    } catch (error) {
      if (error instanceof PublishError && (error.kind === 'conflict' || /\(stale info\)/.test(error.message))) {
        this.options.logger?.warn(
          { target: this.target, attempt, maxAttempts: this.maxPushAttempts },
          'Pull request branch moved while pushing, rebuilding',
        );
        return false;
      }
      throw error;
    }
  }

  /** The base holds the tree: close (or leave) the open pull request; nothing is pushed. */
  private async unnecessary(baseHead: string): Promise<PublishResult> {
    const open = await this.findOpenPull();
    const result: PublishResult = { changed: false, written: [], removed: [], revision: baseHead };
    if (open === undefined) return result;
    if (this.whenUnnecessary === 'close') {
      const where = this.subdir === '' ? 'the repository root' : `\`${this.subdir}\``;
      const body = `Closed by clusterstack-gitops: \`${this.base}\` already holds exactly the rendered tree under ${where}, so this change is no longer needed.`;
      await this.api('comment on', () =>
        this.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
          owner: this.owner,
          repo: this.repo,
          issue_number: open.number,
          body,
        }),
      );
      await this.api('close', () =>
        this.octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
          owner: this.owner,
          repo: this.repo,
          pull_number: open.number,
          state: 'closed',
        }),
      );
      this.options.logger?.info(
        { target: this.target, pullRequest: open.html_url },
        'Closed pull request the base branch made unnecessary',
      );
    }
    return { ...result, pullRequest: open.html_url };
  }

  /** Fails before anything is pushed when the token cannot see the repository or may not push to it. */
  private async checkAccess(): Promise<void> {
    const response = await this.api('read', () =>
      this.octokit.request('GET /repos/{owner}/{repo}', { owner: this.owner, repo: this.repo }),
    );
    const permissions = (response.data as { permissions?: { push?: boolean } }).permissions;
    if (permissions?.push === false) {
      throw new PublishError(
        'auth',
        `the GitHub token (${ENVIRONMENT.githubToken}) may read ${this.owner}/${this.repo} but not push to it; pull-request mode needs contents: write and pull requests: write. Nothing was pushed`,
      );
    }
  }

  private async findOpenPull(): Promise<PullRequest | undefined> {
    const response = await this.api('list pull requests of', () =>
      this.octokit.request('GET /repos/{owner}/{repo}/pulls', {
        owner: this.owner,
        repo: this.repo,
        head: `${this.owner}:${this.branch}`,
        state: 'open',
        per_page: 100,
      }),
    );
    const pulls = response.data as PullRequest[];
    return pulls[0];
  }

  /** Updates the open pull request's title and body when they differ, or opens one; never a second one. */
  private async upsertPull(open: PullRequest | undefined, change: ChangeSummary): Promise<PullRequest> {
    const { title, body } = change.pullRequest ?? { title: change.title, body: change.body };
    const update = async (pull: PullRequest): Promise<PullRequest> => {
      if (pull.title === title && (pull.body ?? '') === body) return pull;
      const response = await this.api('update the pull request of', () =>
        this.octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
          owner: this.owner,
          repo: this.repo,
          pull_number: pull.number,
          title,
          body,
        }),
      );
      return response.data as PullRequest;
    };
    if (open !== undefined) return update(open);
    try {
      const response = await this.octokit.request('POST /repos/{owner}/{repo}/pulls', {
        owner: this.owner,
        repo: this.repo,
        title,
        body,
        head: `${this.owner}:${this.branch}`,
        base: this.base,
      });
      return response.data as PullRequest;
    } catch (error) {
      if (
        isRequestError(error) &&
        error.status === 422 &&
        /already exists/i.test(JSON.stringify(error.response?.data ?? ''))
      ) {
        const existing = await this.findOpenPull();
        if (existing !== undefined) return update(existing);
      }
      throw this.apiFailure(error, 'open a pull request on');
    }
  }

  private async api<T>(doing: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw this.apiFailure(error, doing);
    }
  }

  /** A GitHub API failure as a PublishError that says what to do; never contains the token. */
  private apiFailure(error: unknown, doing: string): PublishError {
    const name = `${this.owner}/${this.repo}`;
    if (!isRequestError(error))
      return new PublishError('unavailable', `GitHub: could not ${doing} ${name}: ${(error as Error).message}`, {
        cause: error,
      });
    const said = (error.response?.data as { message?: unknown } | undefined)?.message;
    const detail = typeof said === 'string' ? `: ${said}` : '';
    const status = error.status;
    if (error.response === undefined || status >= 500)
      return new PublishError(
        'unavailable',
        `GitHub could not be reached to ${doing} ${name} (${status}${detail}); try again later`,
        { cause: error },
      );
    if (status === 401)
      return new PublishError(
        'auth',
        `GitHub refused the token (401${detail}) trying to ${doing} ${name}; check ${ENVIRONMENT.githubToken}. Nothing was pushed`,
        { cause: error },
      );
    if (status === 403 && error.response.headers['x-ratelimit-remaining'] === '0') {
      return new PublishError(
        'unavailable',
        `GitHub's rate limit is used up (403${detail}); try again after it resets`,
        { cause: error },
      );
    }
    if (status === 403) {
      return new PublishError(
        'auth',
        `the GitHub token may not ${doing} ${name} (403${detail}); give ${ENVIRONMENT.githubToken} contents: write and pull requests: write`,
        { cause: error },
      );
    }
    if (status === 404) {
      return new PublishError(
        'auth',
        `GitHub answered 404 trying to ${doing} ${name}: the repository does not exist or the token (${ENVIRONMENT.githubToken}) cannot see it`,
        { cause: error },
      );
    }
    return new PublishError('rejected', `GitHub refused to ${doing} ${name} (${status}${detail})`, { cause: error });
  }

  private open(): Promise<GitCommand> {
    this.workspace ??= this.prepare().catch((error: unknown) => {
      this.workspace = undefined;
      throw error;
    });
    return this.workspace;
  }

  private async prepare(): Promise<GitCommand> {
    const dir = this.workDir;
    // A clone that cannot be set up (no git on PATH) leaves no directory it made behind.
    return inNewDirectory(dir, async () => {
      const git = new GitCommand(dir, {
        author: this.options.git.author,
        env: this.options.git.env,
        token: this.http ? this.gitToken : undefined,
      });
      const entries = await readdir(dir);
      if (!entries.includes('.git')) {
        if (entries.length > 0)
          throw new PublishError(
            'invalid-target',
            `work directory ${dir} is neither empty nor a clone made by clusterstack; remove it or choose another`,
          );
        await git.run(['init', '--quiet'], `git init ${dir}`);
        await git.run(['remote', 'add', 'origin', this.url], `git remote add in ${dir}`);
      } else {
        const current = (
          (await plainOriginUrl(path.join(dir, '.git'))) ??
          (await git.run(['config', '--get', 'remote.origin.url'], `git config in ${dir}`))
        ).trim();
        if (current === '') await git.run(['remote', 'add', 'origin', this.url], `git remote add in ${dir}`);
        else if (current !== this.url)
          await git.run(['remote', 'set-url', 'origin', this.url], `git remote set-url in ${dir}`);
      }
      return git;
    });
  }

  private checkBranchName(): void {
    if (!isValidBranchName(this.branch))
      throw new PublishError('invalid-input', `"${this.branch}" is not a valid Git branch name for the pull request`);
  }

  /** The heads of the base branch and of the pull request branch on the remote (undefined: missing). */
  private async remoteHeads(git: GitCommand): Promise<{ base?: string; branch?: string }> {
    const baseRef = `refs/heads/${this.base}`;
    const branchRef = `refs/heads/${this.branch}`;
    const listing = await git.run(['ls-remote', 'origin', baseRef, branchRef], `git ls-remote ${this.remote.display}`);
    const heads: { base?: string; branch?: string } = {};
    for (const line of listing.split('\n')) {
      const [sha, ref] = line.split('\t');
      if (sha === undefined || ref === undefined) continue;
      if (ref === baseRef) heads.base = sha;
      if (ref === branchRef) heads.branch = sha;
    }
    return heads;
  }

  /**
   * Fetches the base branch, and the pull request branch when it exists, unless the clone's
   * tracking refs hold those very heads already (an earlier fetch or our own push put them there,
   * and a ref is written only once its objects are).
   */
  private async fetch(git: GitCommand, heads: { base?: string; branch?: string }): Promise<void> {
    const gitDir = path.join(this.workDir, '.git');
    const tracking = (branch: string): string => `refs/remotes/origin/${branch}`;
    const base = await storedRef(gitDir, tracking(this.base));
    const branch = heads.branch === undefined ? undefined : await storedRef(gitDir, tracking(this.branch));
    if (base === heads.base && branch === heads.branch) return;
    const refspecs = [`+refs/heads/${this.base}:${tracking(this.base)}`];
    if (heads.branch !== undefined) refspecs.push(`+refs/heads/${this.branch}:${tracking(this.branch)}`);
    // No `git maintenance` after it (one process more on each fetch): see clone-housekeeping.ts.
    await git.run(
      ['fetch', '--quiet', '--no-tags', '--no-auto-maintenance', 'origin', ...refspecs],
      `git fetch from ${this.remote.display}`,
    );
    await this.housekeeping.afterObjectsAdded(git);
  }

  /** Checks out `commit`, replaces everything under the path with `tree`, stages it; returns the root tree. */
  private async stage(git: GitCommand, commit: string, tree: RenderedTree): Promise<string> {
    await git.run(['checkout', '--quiet', '--force', '--detach', commit], 'git checkout');
    await git.run(['clean', '-ffdxq'], 'git clean');
    await syncWorkTree(this.workDir, this.subdir, tree);
    // --force: a .gitignore in the repository must not silently keep a rendered file out.
    await git.run(['add', '--all', '--force', '--', this.subdir === '' ? '.' : this.subdir], 'git add');
    const root = (await git.run(['write-tree'], 'git write-tree')).trim();
    crashPoint('pull-request:staged');
    return root;
  }

  /** `<tree-ish>:<path>`, the object naming the path's content ('' when the path does not exist there). */
  private subtree(treeish: string): string {
    return this.subdir === '' ? `${treeish}^{tree}` : `${treeish}:${this.subdir}`;
  }

  private async treeOf(git: GitCommand, object: string): Promise<string> {
    return (await git.run(['rev-parse', '--verify', '--quiet', object], 'git rev-parse')).trim();
  }

  /** Files under the path written and removed between two root trees, relative to the path, sorted. */
  private async diff(git: GitCommand, from: string, to: string): Promise<{ written: string[]; removed: string[] }> {
    const output = await git.run(
      [
        'diff-tree',
        '-r',
        '-z',
        '--no-renames',
        '--name-status',
        from,
        to,
        '--',
        this.subdir === '' ? '.' : this.subdir,
      ],
      'git diff-tree',
    );
    const fields = output.split('\0');
    const written: string[] = [];
    const removed: string[] = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const status = fields[i]!;
      const file = fields[i + 1]!;
      const relative = this.subdir === '' ? file : file.slice(this.subdir.length + 1);
      (status.startsWith('D') ? removed : written).push(relative);
    }
    return { written: written.sort(), removed: removed.sort() };
  }

  /** The branch's commits that the base does not have, each marked ours or not. */
  private async branchCommits(git: GitCommand, branchHead: string, baseHead: string): Promise<BranchCommit[]> {
    const format = `%H%x1f%an%x1f%ae%x1f%cn%x1f%ce%x1f%(trailers:key=${INPUT_DIGEST_TRAILER},valueonly,separator=%x2c)%x1e`;
    const output = await git.run(['log', `--format=${format}`, branchHead, '--not', baseHead, '--'], 'git log');
    const { name, email } = this.options.git.author;
    return output
      .split('\x1e')
      .map((record) => record.replace(/^\n/, ''))
      .filter((record) => record !== '')
      .map((record) => {
        const [sha = '', authorName, authorEmail, committerName, committerEmail, digest = ''] = record.split('\x1f');
        const ours =
          authorName === name &&
          authorEmail === email &&
          committerName === name &&
          committerEmail === email &&
          digest.trim() !== '';
        return { sha, ours };
      });
  }

  private async commitTree(git: GitCommand, tree: string, parent: string, message: string): Promise<string> {
    const messageFile = path.join(this.workDir, '.git', 'CLUSTERSTACK_COMMIT_MSG');
    await writeFile(messageFile, message, 'utf8');
    crashPoint('pull-request:commit-message');
    try {
      return (await git.run(['commit-tree', tree, '-p', parent, '-F', messageFile], 'git commit-tree')).trim();
    } finally {
      await rm(messageFile, { force: true });
    }
  }

  private readCommit(git: GitCommand, commit: string): Promise<RenderedTree> {
    return readTreeAtCommit(git, commit, this.subdir);
  }
}
