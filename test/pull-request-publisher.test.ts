// Pull-request mode against a real Git remote (git http-backend with token auth, standing in for
// github.com's Git side) and the fake GitHub API over HTTP for the pull requests.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PublishError } from '../gitops/publish-error.js';
import { createConnectingFetch } from '../src/http/remote-fetch.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import {
  defaultPullRequestBranch,
  parseGitHubRepository,
  PullRequestPublisher,
  type PullRequestPublisherOptions,
} from '../gitops/pull-request-publisher.js';
import { startFakeGitHub, type FakeGitHub } from './support/fake-github/index.js';
import { startGitHttpServer, type GitHttpServer } from './support/git-http-server.js';
import { GitSandbox } from './support/git-repos.js';

const TOKEN = 'ghp_pull-request-token';
const READ_ONLY_TOKEN = 'ghp_read-only-token';
const OWNER = 'fleet-org';
const AUTHOR = { name: 'Clusterstack Bot', email: 'bot@example.com' };
const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;
const BRANCH = defaultPullRequestBranch('main', 'clusters');

function change(title = 'Render stack v1', body = 'Clusters:\n- default/alpha: addons v1'): ChangeSummary {
  return {
    title,
    body,
    trailers: { 'Clusterstack-Input-Digest': DIGEST },
    pullRequest: { title: `PR: ${title}`, body: `## What changes\n\n${body}` },
  };
}

function tree(files: Record<string, string>): RenderedTree {
  return new Map(Object.entries(files));
}

const FIRST = tree({
  'default/alpha/cni/cilium.yaml': 'cilium v1\n',
  'default/alpha/kustomization.yaml': 'resources: []\n',
});
const SECOND = tree({
  'default/alpha/cni/cilium.yaml': 'cilium v2\n',
  'default/beta/kustomization.yaml': 'resources: []\n',
});

async function rejection(promise: Promise<unknown>): Promise<PublishError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(PublishError);
  return error as PublishError;
}

let sandbox: GitSandbox;
let server: GitHttpServer;
let github: FakeGitHub;
let repos = 0;
let workDirs = 0;

beforeAll(async () => {
  sandbox = new GitSandbox();
  server = await startGitHttpServer({ projectRoot: sandbox.root, token: TOKEN });
  github = await startFakeGitHub({ tokens: [TOKEN], readOnlyTokens: [READ_ONLY_TOKEN] });
});

afterAll(async () => {
  await server?.close();
  await github?.close();
  sandbox?.cleanup();
});

beforeEach(() => {
  github.clearFaults();
});

/** A repository on both sides: a bare Git remote served over HTTP, and its GitHub API twin. */
function newRepository(files: Record<string, string> = { 'README.md': 'fleet\n' }): { name: string; bare: string } {
  repos += 1;
  const name = `fleet-${repos}`;
  const bare = sandbox.bareRepo(name, { branch: 'main', files });
  sandbox.git(bare, 'config', 'http.receivepack', 'true');
  github.addRepo(OWNER, name);
  return { name, bare };
}

/** `githubToken` null: none given. */
// The file's own connection pool, as the CLI and controller give the publisher one: the global
// fetch's would outlive this file in a worker it shares with others.
const githubFetch = createConnectingFetch(10_000);

function publisher(
  name: string,
  overrides: Partial<PullRequestPublisherOptions> = {},
  githubToken: string | null = TOKEN,
): PullRequestPublisher {
  workDirs += 1;
  return new PullRequestPublisher({
    git: {
      repository: `${server.url}/${name}.git`,
      baseBranch: 'main',
      path: 'clusters',
      workDir: path.join(sandbox.root, `pr-work-${workDirs}`),
      author: AUTHOR,
      token: TOKEN,
      env: { PATH: process.env.PATH, HOME: path.join(sandbox.root, 'home') },
    },
    github: {
      owner: OWNER,
      repo: name,
      baseUrl: github.apiUrl,
      fetch: githubFetch,
      ...(githubToken === null ? {} : { token: githubToken }),
    },
    ...overrides,
  });
}

function pushes(name: string): number {
  return server.requests.filter((request) => request.startsWith(`POST /${name}.git/git-receive-pack`)).length;
}

function apiWrites(): string[] {
  return github.requests
    .filter((request) => request.server === 'api' && request.method !== 'GET')
    .map((request) => `${request.method} ${request.path} -> ${request.status}`);
}

function underPath(files: Record<string, string>, prefix: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(files)
      .filter(([file]) => file.startsWith(`${prefix}/`))
      .map(([file, content]) => [file.slice(prefix.length + 1), content]),
  );
}

describe('parseGitHubRepository', () => {
  it('reads owner and repository from github.com and GitHub Enterprise URLs', () => {
    expect(parseGitHubRepository('https://github.com/fleet-org/fleet.git')).toEqual({
      owner: 'fleet-org',
      repo: 'fleet',
    });
    expect(parseGitHubRepository('https://github.com/fleet-org/fleet')).toEqual({ owner: 'fleet-org', repo: 'fleet' });
    expect(parseGitHubRepository('https://ghe.example.com/ops/clusters.git', 'https://ghe.example.com/api/v3')).toEqual(
      { owner: 'ops', repo: 'clusters' },
    );
  });

  it.each([
    ['https://gitlab.com/fleet-org/fleet.git', undefined, 'is not a repository on github.com'],
    ['https://github.com/fleet-org', undefined, 'is not a repository on github.com'],
    ['https://github.com/fleet-org/fleet/tree/main', undefined, 'is not a repository on github.com'],
    ['git@github.com:fleet-org/fleet.git', undefined, 'is not a URL'],
    ['https://ghe.example.com/ops/clusters.git', undefined, 'GITHUB_API_URL'],
  ])('refuses %s', (url, api, message) => {
    expect(() => parseGitHubRepository(url, api)).toThrow(message);
  });
});

describe('PullRequestPublisher', () => {
  it('opens one pull request from a branch built on the base for the first render', async () => {
    const { name, bare } = newRepository();
    const mainHead = sandbox.head(bare, 'main');
    const pr = publisher(name);
    expect(pr.target).toContain(`pull request ${BRANCH} -> main, path clusters`);
    expect(await pr.readPrevious()).toEqual(new Map());

    const result = await pr.publish(FIRST, change());
    expect(result).toMatchObject({
      changed: true,
      written: ['default/alpha/cni/cilium.yaml', 'default/alpha/kustomization.yaml'],
      removed: [],
    });
    expect(result.revision).toBe(sandbox.head(bare, BRANCH));
    expect(sandbox.head(bare, 'main')).toBe(mainHead);
    expect(sandbox.git(bare, 'rev-parse', `${BRANCH}^`)).toBe(mainHead);
    expect(sandbox.files(bare, BRANCH)).toEqual({
      'README.md': 'fleet\n',
      'clusters/default/alpha/cni/cilium.yaml': 'cilium v1\n',
      'clusters/default/alpha/kustomization.yaml': 'resources: []\n',
    });
    expect(
      sandbox.logFields(
        bare,
        BRANCH,
        '%an <%ae>|%cn <%ce>',
        '%(trailers:key=Clusterstack-Input-Digest,valueonly)',
        '%s',
      ),
    ).toEqual(['Clusterstack Bot <bot@example.com>|Clusterstack Bot <bot@example.com>', DIGEST, 'Render stack v1']);

    const pulls = github.pulls(OWNER, name);
    expect(pulls).toHaveLength(1);
    expect(pulls[0]).toMatchObject({
      state: 'open',
      headLabel: `${OWNER}:${BRANCH}`,
      baseRef: 'main',
      title: 'PR: Render stack v1',
      body: '## What changes\n\nClusters:\n- default/alpha: addons v1',
    });
    expect(result.pullRequest).toBe(`https://github.example/${OWNER}/${name}/pull/1`);
    // What is merged is what runs: the base is still the previous state.
    expect(await pr.readPrevious()).toEqual(new Map());
  });

  it('updates the same branch and pull request for a changed tree, always based on the base head', async () => {
    const { name, bare } = newRepository({
      'README.md': 'fleet\n',
      'clusters/default/alpha/cni/cilium.yaml': 'cilium v0\n',
    });
    const first = await publisher(name).publish(FIRST, change());
    // The base moves on meanwhile.
    const mainHead = sandbox.commitFiles(bare, 'main', { 'docs/guide.md': 'guide\n' }, 'Docs');

    const pr = publisher(name);
    expect(await pr.readPrevious()).toEqual(tree({ 'default/alpha/cni/cilium.yaml': 'cilium v0\n' }));
    const second = await pr.publish(SECOND, change('Render stack v2', 'Clusters:\n- default/beta: new'));
    expect(second).toMatchObject({
      changed: true,
      written: ['default/alpha/cni/cilium.yaml', 'default/beta/kustomization.yaml'],
      removed: [],
      pullRequest: first.pullRequest,
    });
    expect(second.revision).toBe(sandbox.head(bare, BRANCH));
    // Our own earlier commit was replaced: one commit on top of the new base head.
    expect(sandbox.git(bare, 'rev-parse', `${BRANCH}^`)).toBe(mainHead);
    expect(sandbox.git(bare, 'rev-list', '--count', `main..${BRANCH}`)).toBe('1');
    expect(underPath(sandbox.files(bare, BRANCH), 'clusters')).toEqual(Object.fromEntries(SECOND));
    expect(sandbox.files(bare, BRANCH)['docs/guide.md']).toBe('guide\n');

    const pulls = github.pulls(OWNER, name);
    expect(pulls).toHaveLength(1);
    expect(pulls[0]).toMatchObject({
      state: 'open',
      title: 'PR: Render stack v2',
      body: '## What changes\n\nClusters:\n- default/beta: new',
    });
  });

  it('finds and updates a pull request someone opened already, through the 422 of a duplicate', async () => {
    const { name } = newRepository();
    github.addPull(OWNER, name, { title: 'Opened by hand', head: BRANCH, base: 'main', body: 'hand-written' });
    // GitHub's list lags behind: the first search misses the pull request, so creating it answers 422.
    github.addFault({
      method: 'GET',
      pathIncludes: `/repos/${OWNER}/${name}/pulls`,
      times: 1,
      fault: { status: 200, body: [] },
    });
    github.clearRequests();

    const result = await publisher(name).publish(FIRST, change());
    expect(result.pullRequest).toBe(`https://github.example/${OWNER}/${name}/pull/1`);
    expect(apiWrites()).toEqual([
      `POST /repos/${OWNER}/${name}/pulls -> 422`,
      `PATCH /repos/${OWNER}/${name}/pulls/1 -> 200`,
    ]);
    const pulls = github.pulls(OWNER, name);
    expect(pulls).toHaveLength(1);
    expect(pulls[0]).toMatchObject({ number: 1, state: 'open', title: 'PR: Render stack v1' });
  });

  it('touches no branch and no pull request when the render did not change', async () => {
    const { name, bare } = newRepository();
    const first = await publisher(name).publish(FIRST, change());
    const branchHead = sandbox.head(bare, BRANCH);
    const pushesBefore = pushes(name);
    github.clearRequests();

    for (const pr of [publisher(name), publisher(name)]) {
      const again = await pr.publish(new Map([...FIRST].reverse()), change('Render again', 'another body'));
      expect(again).toEqual({
        changed: false,
        written: [],
        removed: [],
        revision: branchHead,
        pullRequest: first.pullRequest,
      });
    }
    expect(pushes(name)).toBe(pushesBefore);
    expect(sandbox.head(bare, BRANCH)).toBe(branchHead);
    expect(apiWrites()).toEqual([]);
    expect(github.pulls(OWNER, name)[0]?.body).toBe('## What changes\n\nClusters:\n- default/alpha: addons v1');
  });

  it('closes the open pull request with a comment when the base already holds the tree', async () => {
    const { name, bare } = newRepository();
    await publisher(name).publish(FIRST, change());
    const mainHead = sandbox.commitFiles(
      bare,
      'main',
      Object.fromEntries([...FIRST].map(([file, content]) => [`clusters/${file}`, content])),
      'Merged by hand',
    );
    const branchHead = sandbox.head(bare, BRANCH);
    const pushesBefore = pushes(name);

    const result = await publisher(name).publish(FIRST, change());
    expect(result).toEqual({
      changed: false,
      written: [],
      removed: [],
      revision: mainHead,
      pullRequest: `https://github.example/${OWNER}/${name}/pull/1`,
    });
    const [pull] = github.pulls(OWNER, name);
    expect(pull?.state).toBe('closed');
    expect(pull?.comments).toHaveLength(1);
    expect(pull?.comments[0]).toContain('no longer needed');
    expect(pushes(name)).toBe(pushesBefore);
    expect(sandbox.head(bare, BRANCH)).toBe(branchHead);

    // Closed already: a further render finds nothing to close and writes nothing.
    github.clearRequests();
    expect((await publisher(name).publish(FIRST, change())).changed).toBe(false);
    expect(apiWrites()).toEqual([]);
  });

  it('leaves the open pull request alone when configured to', async () => {
    const { name, bare } = newRepository();
    await publisher(name).publish(FIRST, change());
    sandbox.commitFiles(
      bare,
      'main',
      Object.fromEntries([...FIRST].map(([file, content]) => [`clusters/${file}`, content])),
      'Merged by hand',
    );
    github.clearRequests();

    const result = await publisher(name, { whenUnnecessary: 'leave' }).publish(FIRST, change());
    expect(result.changed).toBe(false);
    expect(result.pullRequest).toBe(`https://github.example/${OWNER}/${name}/pull/1`);
    expect(github.pulls(OWNER, name)[0]).toMatchObject({ state: 'open', comments: [] });
    expect(apiWrites()).toEqual([]);
  });

  it('commits on top of a reviewer’s commits on an open pull request instead of force-pushing over them', async () => {
    const { name, bare } = newRepository();
    await publisher(name).publish(FIRST, change());
    const foreign = sandbox.commitFiles(
      bare,
      BRANCH,
      { 'clusters/default/alpha/reviewer.yaml': 'added by a reviewer\n', 'docs/notes.md': 'review notes\n' },
      'Reviewer tweak',
    );

    const result = await publisher(name).publish(SECOND, change('Render stack v2'));
    expect(result.changed).toBe(true);
    expect(result.revision).toBe(sandbox.head(bare, BRANCH));
    expect(sandbox.git(bare, 'rev-parse', `${BRANCH}^`)).toBe(foreign);
    // The reviewer's commit is still there; the path holds exactly the rendered tree again.
    const files = sandbox.files(bare, BRANCH);
    expect(files['docs/notes.md']).toBe('review notes\n');
    expect(underPath(files, 'clusters')).toEqual(Object.fromEntries(SECOND));
    const pulls = github.pulls(OWNER, name);
    expect(pulls).toHaveLength(1);
    expect(pulls[0]?.title).toBe('PR: Render stack v2');

    // And the next render, with the reviewer's commit still on the branch, again adds on top.
    const third = await publisher(name).publish(FIRST, change('Render stack v3'));
    expect(sandbox.git(bare, 'rev-parse', `${BRANCH}^`)).toBe(result.revision);
    expect(sandbox.git(bare, 'merge-base', '--is-ancestor', foreign, third.revision ?? '')).toBe('');
  });

  it('never force-pushes over a commit someone pushes while it renders: the lease fails, it rebuilds on top', async () => {
    const { name, bare } = newRepository();
    await publisher(name).publish(FIRST, change());
    let racer = '';
    // Between reading the branch and pushing, the publisher looks for the open pull request: a
    // reviewer pushes right then.
    const racingFetch: typeof fetch = (input, init) => {
      const url = typeof input === 'string' || input instanceof URL ? String(input) : input.url;
      if (racer === '' && (init?.method ?? 'GET') === 'GET' && url.includes('/pulls?')) {
        racer = sandbox.commitFiles(bare, BRANCH, { 'docs/racer.md': 'pushed meanwhile\n' }, 'Racing reviewer');
      }
      return githubFetch(input, init);
    };
    const pr = publisher(name, {
      github: { owner: OWNER, repo: name, baseUrl: github.apiUrl, token: TOKEN, fetch: racingFetch },
    });
    const result = await pr.publish(SECOND, change('Render stack v2'));
    expect(racer).not.toBe('');
    expect(result.changed).toBe(true);
    expect(sandbox.git(bare, 'rev-parse', `${BRANCH}^`)).toBe(racer);
    expect(sandbox.files(bare, BRANCH)['docs/racer.md']).toBe('pushed meanwhile\n');
    expect(underPath(sandbox.files(bare, BRANCH), 'clusters')).toEqual(Object.fromEntries(SECOND));
    expect(github.pulls(OWNER, name)).toHaveLength(1);
  });

  it('stops with a conflict, touching nothing, when a branch without an open pull request has foreign commits', async () => {
    const { name, bare } = newRepository();
    await publisher(name).publish(FIRST, change());
    const [pull] = github.pulls(OWNER, name);
    pull!.state = 'closed';
    const foreign = sandbox.commitFiles(
      bare,
      BRANCH,
      { 'clusters/default/alpha/manual.yaml': 'manual\n' },
      'Manual change',
    );
    const pushesBefore = pushes(name);

    const error = await rejection(publisher(name).publish(SECOND, change('Render stack v2')));
    expect(error.kind).toBe('conflict');
    expect(error.message).toContain(`branch ${BRANCH}`);
    expect(error.message).toContain('not made by clusterstack');
    expect(error.message).toContain(foreign.slice(0, 12));
    expect(sandbox.head(bare, BRANCH)).toBe(foreign);
    expect(pushes(name)).toBe(pushesBefore);
    expect(github.pulls(OWNER, name)).toHaveLength(1);
  });

  it('needs a GitHub token, and says so before anything happens', () => {
    const { name } = newRepository();
    const before = { git: server.requests.length, api: github.requests.length };
    for (const token of [null, '  ']) {
      let error: unknown;
      try {
        publisher(name, {}, token);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(PublishError);
      expect((error as PublishError).kind).toBe('auth');
      expect((error as PublishError).message).toContain('pull-request mode needs a GitHub token: set GITHUB_TOKEN');
    }
    expect({ git: server.requests.length, api: github.requests.length }).toEqual(before);
  });

  it('refuses a token without rights before pushing anything', async () => {
    const { name, bare } = newRepository();
    github.clearRequests();
    const readOnly = await rejection(publisher(name, {}, READ_ONLY_TOKEN).publish(FIRST, change()));
    expect(readOnly.kind).toBe('auth');
    expect(readOnly.message).toContain(`may read ${OWNER}/${name} but not push to it`);
    expect(readOnly.message).not.toContain(READ_ONLY_TOKEN);

    github.addFault({
      method: 'GET',
      pathIncludes: `/repos/${OWNER}/${name}`,
      fault: { status: 403, message: 'Resource not accessible by personal access token' },
    });
    const forbidden = await rejection(publisher(name).publish(FIRST, change()));
    expect(forbidden.kind).toBe('auth');
    expect(forbidden.message).toContain('403: Resource not accessible by personal access token');

    const unknown = await rejection(publisher(name, {}, 'ghp_unknown').publish(FIRST, change()));
    expect(unknown.kind).toBe('auth');
    expect(unknown.message).toContain('GitHub refused the token (401: Bad credentials)');
    expect(unknown.message).not.toContain('ghp_unknown');

    expect(pushes(name)).toBe(0);
    expect(sandbox.head(bare, BRANCH)).toBe('');
    expect(github.pulls(OWNER, name)).toEqual([]);
    expect(apiWrites()).toEqual([]);
  });

  it('reports a Git push the remote refuses, with no pull request opened', async () => {
    const { name, bare } = newRepository();
    sandbox.declinePushes(bare, 'branch creation is not allowed here');
    const error = await rejection(publisher(name).publish(FIRST, change()));
    expect(error.kind).toBe('rejected');
    expect(error.message).toContain('branch creation is not allowed here');
    expect(github.pulls(OWNER, name)).toEqual([]);
  });
});

// Each git process is a fork and exec (and a fetch or push over HTTP several more): a run starts
// only those that read or write something it needs.
describe('PullRequestPublisher git processes per run', () => {
  /** The git commands one CLI-like run (a fresh publisher with the clone in `workDir`: read, then publish `files`) starts. */
  async function commandsOfRun(name: string, workDir: string, files: RenderedTree): Promise<string[]> {
    const log = `${workDir}.log`;
    rmSync(log, { force: true });
    const env = { PATH: sandbox.loggingGitPath(), HOME: path.join(sandbox.root, 'home'), COMMAND_LOG: log };
    const run = new PullRequestPublisher({
      git: {
        repository: `${server.url}/${name}.git`,
        baseBranch: 'main',
        path: 'clusters',
        workDir,
        author: AUTHOR,
        token: TOKEN,
        env,
      },
      github: { owner: OWNER, repo: name, baseUrl: github.apiUrl, fetch: githubFetch, token: TOKEN },
    });
    await run.readPrevious();
    await run.publish(files, change());
    return readFileSync(log, 'utf8').trim().split('\n');
  }

  it('proposes, finds the branch already proposing the tree, then proposes a change: no fetch of heads the clone has', async () => {
    const { name, bare } = newRepository();
    const workDir = path.join(sandbox.root, 'pr-process-count');
    // Staged, compared and committed as before; read and fetched once (the fetch's objects checked by gc --auto once).
    const proposing = ['ls-remote', 'checkout', 'clean', 'add', 'write-tree', 'rev-parse', 'diff-tree'];
    expect(await commandsOfRun(name, workDir, FIRST)).toEqual([
      ...['init', 'remote', 'ls-remote', 'fetch', 'gc', 'ls-tree'],
      ...proposing,
      ...['commit-tree', 'push'],
    ]);
    // The base and the branch are where the clone has them: nothing fetched; the branch's path
    // tree is the desired one, so nothing is pushed.
    expect(await commandsOfRun(name, workDir, FIRST)).toEqual([
      ...['ls-remote', 'ls-tree'],
      ...proposing,
      ...['rev-parse', 'rev-parse'],
    ]);
    expect(await commandsOfRun(name, workDir, SECOND)).toEqual([
      ...['ls-remote', 'ls-tree'],
      ...proposing,
      ...['rev-parse', 'rev-parse', 'log', 'commit-tree', 'push', 'gc'],
    ]);
    expect(sandbox.files(bare, BRANCH)).toMatchObject({ 'clusters/default/alpha/cni/cilium.yaml': 'cilium v2\n' });
    expect(github.pulls(OWNER, name)).toHaveLength(1);
  });
});
