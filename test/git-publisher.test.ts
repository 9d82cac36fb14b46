import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkGitAvailable, GitCommand } from '../gitops/git-command.js';
import { GitPublisher, type GitPublisherOptions } from '../gitops/git-publisher.js';
import { PublishError } from '../gitops/publish-error.js';
import { PullRequestPublisher } from '../gitops/pull-request-publisher.js';
import { createOutputPublisher } from '../src/cli/output-publisher.js';
import { ENVIRONMENT, resolveConfig } from '../src/config.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { startGitHttpServer, type GitHttpServer } from './support/git-http-server.js';
import { GitSandbox } from './support/git-repos.js';
import { recordingLogger } from './support/test-logger.js';

const AUTHOR = { name: 'Clusterstack Bot', email: 'bot@example.com' };
const DIGEST = 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef';

function change(title = 'Render stack v1'): ChangeSummary {
  return {
    title,
    body: 'Clusters:\n- default/alpha: addons v1',
    trailers: { 'Clusterstack-Input-Digest': DIGEST, 'Clusterstack-Stack': 'docker-ferrol-1-29' },
  };
}

function tree(files: Record<string, string>): RenderedTree {
  return new Map(Object.entries(files));
}

async function rejection(promise: Promise<unknown>): Promise<PublishError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(PublishError);
  return error as PublishError;
}

let sandbox: GitSandbox;
let counter = 0;

function publisher(repository: string, overrides: Partial<GitPublisherOptions> = {}): GitPublisher {
  counter += 1;
  return new GitPublisher({
    repository,
    branch: 'main',
    path: 'clusters',
    workDir: path.join(sandbox.root, `work-${counter}`),
    author: AUTHOR,
    env: { PATH: process.env.PATH, HOME: path.join(sandbox.root, 'home') },
    ...overrides,
  });
}

beforeAll(() => {
  sandbox = new GitSandbox();
});

afterAll(() => {
  sandbox.cleanup();
});

describe('GitPublisher with a bare repository', () => {
  it('commits the first tree with trailers, then makes no commit for the same tree', async () => {
    const bare = sandbox.bareRepo('first', { branch: 'main', files: { 'README.md': 'hand-written\n' } });
    const git = publisher(bare);
    const first = await git.publish(tree({ 'b/two.yaml': 'two\n', 'a.yaml': 'one\n' }), change());
    expect(first).toMatchObject({ changed: true, written: ['a.yaml', 'b/two.yaml'], removed: [] });
    expect(first.revision).toBe(sandbox.head(bare, 'main'));
    expect(sandbox.files(bare, 'main')).toEqual({
      'README.md': 'hand-written\n',
      'clusters/a.yaml': 'one\n',
      'clusters/b/two.yaml': 'two\n',
    });
    const [people, subject, digest, message] = sandbox.logFields(
      bare,
      'HEAD',
      '%an <%ae>|%cn <%ce>',
      '%s',
      '%(trailers:key=Clusterstack-Input-Digest,valueonly)',
      '%B',
    );
    expect(people).toBe('Clusterstack Bot <bot@example.com>|Clusterstack Bot <bot@example.com>');
    expect(subject).toBe('Render stack v1');
    expect(digest).toBe(DIGEST);
    expect(message).toContain('- default/alpha: addons v1');

    const again = await git.publish(tree({ 'a.yaml': 'one\n', 'b/two.yaml': 'two\n' }), change('Render again'));
    expect(again).toEqual({ changed: false, written: [], removed: [], revision: first.revision });
    expect(sandbox.head(bare, 'main')).toBe(first.revision);
    expect(sandbox.commitCount(bare, 'main')).toBe(2);
    expect(await git.readPrevious()).toEqual(tree({ 'a.yaml': 'one\n', 'b/two.yaml': 'two\n' }));
  });

  it('replaces the tree under the path: stale files removed, files outside the path untouched', async () => {
    const bare = sandbox.bareRepo('replace', {
      branch: 'main',
      files: {
        'README.md': 'keep\n',
        'clusters/old.yaml': 'old\n',
        'clusters/same.yaml': 'same\n',
        'management/x.yaml': 'x\n',
      },
    });
    const before = sandbox.commitCount(bare, 'main');
    const git = publisher(bare);
    expect(await git.readPrevious()).toEqual(tree({ 'old.yaml': 'old\n', 'same.yaml': 'same\n' }));
    const result = await git.publish(tree({ 'same.yaml': 'same\n', 'new/ü.yaml': 'ünïcode\n' }), change());
    expect(result).toMatchObject({ changed: true, written: ['new/ü.yaml'], removed: ['old.yaml'] });
    expect(sandbox.commitCount(bare, 'main')).toBe(before + 1);
    expect(sandbox.files(bare, 'main')).toEqual({
      'README.md': 'keep\n',
      'clusters/new/ü.yaml': 'ünïcode\n',
      'clusters/same.yaml': 'same\n',
      'management/x.yaml': 'x\n',
    });
    // The trailer block is the message's last paragraph, as git parses it.
    const trailers = sandbox.git(bare, 'log', '-1', '--format=%(trailers:only,unfold)');
    expect(trailers).toBe(`Clusterstack-Input-Digest: ${DIGEST}\nClusterstack-Stack: docker-ferrol-1-29`);
  });

  it('rebuilds on top of a commit another writer pushed in between, keeping it', async () => {
    const bare = sandbox.bareRepo('race', { branch: 'main', files: { 'README.md': 'v0\n' } });
    const workDir = path.join(sandbox.root, 'race-work');
    const { logger, entries } = recordingLogger();
    const git = publisher(bare, { workDir, logger });
    await git.publish(tree({ 'a.yaml': '1\n' }), change());
    sandbox.pushForeignCommitBeforePush(workDir, bare, 'main', 'README.md', 'once');

    const result = await git.publish(tree({ 'a.yaml': '2\n' }), change('Render v2'));
    expect(sandbox.foreignPushes(workDir)).toBe(1);
    expect(entries.filter((entry) => entry.level === 'warn').map((entry) => entry.message)).toEqual([
      'Push lost a race with another writer, rebuilding on the new remote head',
    ]);
    expect(result.changed).toBe(true);
    expect(result.revision).toBe(sandbox.head(bare, 'main'));
    expect(sandbox.files(bare, 'main')).toEqual({ 'README.md': 'v0\nforeign 1\n', 'clusters/a.yaml': '2\n' });
    expect(sandbox.git(bare, 'log', '--format=%s', 'main').split('\n')).toEqual([
      'Render v2',
      'Foreign commit',
      'Render stack v1',
      'Seed',
    ]);
  });

  it('gives up with a clear error when every push attempt is overtaken', async () => {
    const bare = sandbox.bareRepo('busy', { branch: 'main', files: { 'README.md': 'v0\n' } });
    const workDir = path.join(sandbox.root, 'busy-work');
    const git = publisher(bare, { workDir, maxPushAttempts: 2 });
    await git.publish(tree({ 'a.yaml': '1\n' }), change());
    sandbox.pushForeignCommitBeforePush(workDir, bare, 'main', 'README.md', 'always');

    const error = await rejection(git.publish(tree({ 'a.yaml': '2\n' }), change('Render v2')));
    expect(error.kind).toBe('conflict');
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/moved on during each of 2 attempts/);
    expect(sandbox.foreignPushes(workDir)).toBe(2);
    expect(sandbox.files(bare, 'main')['clusters/a.yaml']).toBe('1\n');
  });

  it('fails with the hook message on a permanent rejection and leaves the clone at the remote head', async () => {
    const bare = sandbox.bareRepo('declined', { branch: 'main', files: { 'README.md': 'v0\n' } });
    sandbox.declinePushes(bare, 'branch main is protected: open a pull request');
    const head = sandbox.head(bare, 'main');
    const workDir = path.join(sandbox.root, 'declined-work');
    const git = publisher(bare, { workDir });

    const error = await rejection(git.publish(tree({ 'a.yaml': '1\n' }), change()));
    expect(error.kind).toBe('rejected');
    expect(error.message).toContain('branch main is protected: open a pull request');
    expect(error.message).toContain(`git push to ${bare} failed`);
    expect(sandbox.head(bare, 'main')).toBe(head);
    expect(sandbox.git(workDir, 'rev-parse', 'HEAD')).toBe(head);
    expect(sandbox.git(workDir, 'status', '--porcelain')).toBe('');
  });

  it('starts the branch on an empty remote and publishes at the repository root', async () => {
    const bare = sandbox.bareRepo('empty');
    const git = publisher(`file://${bare}`, { branch: 'gitops/rendered', path: '' });
    expect(await git.readPrevious()).toEqual(new Map());
    const result = await git.publish(tree({ 'kustomization.yaml': 'resources: []\n' }), change());
    expect(result.changed).toBe(true);
    expect(sandbox.files(bare, 'gitops/rendered')).toEqual({ 'kustomization.yaml': 'resources: []\n' });
    expect(sandbox.commitCount(bare, 'gitops/rendered')).toBe(1);
  });
});

describe('GitPublisher committing from the tree it knows', () => {
  it('commits only what differs from its last push, without touching the clone, with the message git commit writes', async () => {
    const bare = sandbox.bareRepo('known', {
      branch: 'main',
      files: { 'README.md': 'keep\n', 'management/x.yaml': 'x\n' },
    });
    const workDir = path.join(sandbox.root, 'known-work');
    const git = publisher(bare, { workDir, messageTemplate: '  {{title}}   \n\n\n\n{{body}}\t\n\n\n' });
    const first = await git.publish(tree({ 'a.yaml': '1\n', 'b/b.yaml': 'b\n', 'c.yaml': 'c\n' }), change('First'));
    const firstMessage = sandbox.git(bare, 'log', '-1', '--format=%B');

    const second = await git.publish(
      tree({ 'a.yaml': '2\n', 'b/b.yaml': 'b\n', 'd/"odd" name.yaml': 'd\n' }),
      change('First'),
    );
    expect(second).toMatchObject({ changed: true, written: ['a.yaml', 'd/"odd" name.yaml'], removed: ['c.yaml'] });
    expect(second.revision).toBe(sandbox.head(bare, 'main'));
    expect(sandbox.git(bare, 'rev-parse', 'main^')).toBe(first.revision);
    expect(sandbox.files(bare, 'main')).toEqual({
      'README.md': 'keep\n',
      'management/x.yaml': 'x\n',
      'clusters/a.yaml': '2\n',
      'clusters/b/b.yaml': 'b\n',
      'clusters/d/"odd" name.yaml': 'd\n',
    });
    // The same message text the first commit got from git commit --cleanup=whitespace.
    expect(sandbox.logFields(bare, 'HEAD', '%B', '%an <%ae>|%cn <%ce>')).toEqual([
      firstMessage,
      'Clusterstack Bot <bot@example.com>|Clusterstack Bot <bot@example.com>',
    ]);
    // Neither the clone's files nor its index were involved.
    expect(readFileSync(path.join(workDir, 'clusters', 'a.yaml'), 'utf8')).toBe('1\n');
    expect(sandbox.git(workDir, 'diff', '--cached', '--name-only', 'HEAD^')).toBe('');

    // The same tree again: nothing to commit, the branch is where it was.
    expect(
      await git.publish(tree({ 'a.yaml': '2\n', 'b/b.yaml': 'b\n', 'd/"odd" name.yaml': 'd\n' }), change()),
    ).toEqual({ changed: false, written: [], removed: [], revision: second.revision });
    expect(sandbox.commitCount(bare, 'main')).toBe(3);
  });

  it("takes the caller's comparison against the tree it committed last, and ignores one made against another tree", async () => {
    const bare = sandbox.bareRepo('known-change');
    const git = publisher(bare, { workDir: path.join(sandbox.root, 'known-change-work') });
    const first = tree({ 'a.yaml': '1\n', 'b.yaml': 'b\n' });
    await git.publish(first, change('First'));

    // Against the tree it pushed: the files named are the commit (here a.yaml's change alone).
    const second = tree({ 'a.yaml': '2\n', 'b.yaml': 'b\n', 'c.yaml': 'c\n' });
    const taken = await git.publish(second, change('Second'), {
      previous: first,
      written: ['a.yaml', 'c.yaml'],
      removed: [],
    });
    expect(taken).toMatchObject({ changed: true, written: ['a.yaml', 'c.yaml'], removed: [] });
    expect(sandbox.files(bare, 'main')).toEqual({
      'clusters/a.yaml': '2\n',
      'clusters/b.yaml': 'b\n',
      'clusters/c.yaml': 'c\n',
    });

    // Made against another tree (wrong about b.yaml): the publisher compares for itself.
    const third = tree({ 'a.yaml': '2\n', 'c.yaml': 'c\n' });
    const ignored = await git.publish(third, change('Third'), { previous: first, written: [], removed: [] });
    expect(ignored).toMatchObject({ changed: true, written: [], removed: ['b.yaml'] });
    expect(sandbox.files(bare, 'main')).toEqual({ 'clusters/a.yaml': '2\n', 'clusters/c.yaml': 'c\n' });
  });

  it('builds on a commit another writer pushed since, and on a clone someone left dirty', async () => {
    const bare = sandbox.bareRepo('known-moved', { branch: 'main', files: { 'README.md': 'v0\n' } });
    const workDir = path.join(sandbox.root, 'known-moved-work');
    const { logger, entries } = recordingLogger();
    const git = publisher(bare, { workDir, logger });
    await git.publish(tree({ 'a.yaml': '1\n', 'b.yaml': 'b\n' }), change());
    const foreign = sandbox.commitFiles(
      bare,
      'main',
      { 'README.md': 'v1\n', 'clusters/b.yaml': 'changed by a person\n' },
      'Foreign commit',
    );
    sandbox.git(workDir, 'rm', '--quiet', '--cached', 'clusters/a.yaml');
    await writeFile(path.join(workDir, 'clusters', 'stray.yaml'), 'stray\n');

    const result = await git.publish(tree({ 'a.yaml': '2\n', 'b.yaml': 'b\n' }), change('Render v2'));
    expect(result).toMatchObject({ changed: true, written: ['a.yaml', 'b.yaml'], removed: [] });
    expect(sandbox.git(bare, 'rev-parse', 'main^')).toBe(foreign);
    expect(sandbox.files(bare, 'main')).toEqual({
      'README.md': 'v1\n',
      'clusters/a.yaml': '2\n',
      'clusters/b.yaml': 'b\n',
    });
    expect(entries.filter((entry) => entry.level === 'warn').map((entry) => entry.message)).toEqual([
      'Push lost a race with another writer, rebuilding on the new remote head',
    ]);
  });

  it('publishes the full way when the tree it read holds a symbolic link, which the render removes', async () => {
    const bare = sandbox.bareRepo('known-link', { branch: 'main', files: { 'clusters/a.yaml': '1\n' } });
    const writer = mkdtempSync(path.join(sandbox.root, 'link-writer-'));
    sandbox.git(sandbox.root, 'clone', '--quiet', bare, writer);
    symlinkSync('a.yaml', path.join(writer, 'clusters', 'link.yaml'));
    sandbox.git(writer, 'add', '--all');
    sandbox.git(writer, 'commit', '--quiet', '-m', 'A link');
    sandbox.git(writer, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');

    const git = publisher(bare);
    expect(await git.readPrevious()).toEqual(tree({ 'a.yaml': '1\n' }));
    const result = await git.publish(tree({ 'a.yaml': '2\n' }), change());
    expect(result.changed).toBe(true);
    expect(sandbox.git(bare, 'ls-tree', '-r', '--name-only', 'main')).toBe('clusters/a.yaml');
  });
});

// Each git process is a fork and exec, and its children (upload-pack, maintenance) more: a run
// against a remote starts only those that read or write something the run needs.
describe('GitPublisher git processes per run', () => {
  /** The git commands one CLI-like run (a fresh publisher: read the branch, then publish `files`) starts. */
  async function commandsOfRun(bare: string, workDir: string, files: Record<string, string>): Promise<string[]> {
    const log = `${workDir}.log`;
    rmSync(log, { force: true });
    const git = publisher(bare, {
      workDir,
      env: { PATH: sandbox.loggingGitPath(), HOME: path.join(sandbox.root, 'home'), COMMAND_LOG: log },
    });
    await git.readPrevious();
    await git.publish(tree(files), change());
    return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
  }

  it('a first publish, a no-op and a one-file change: one fetch to read, no reset or work tree unless the full way is needed', async () => {
    const bare = sandbox.bareRepo('process-count');
    const workDir = path.join(sandbox.root, 'process-count-work');
    // No branch yet: the failed fetch says so (no ls-remote before it).
    expect(await commandsOfRun(bare, workDir, { 'a.yaml': '1\n', 'b.yaml': 'b\n' })).toEqual([
      'init',
      'remote',
      'fetch',
      'fast-import',
      'push',
      'gc',
    ]);
    // The same tree: read it, and ask the remote whether the branch is still where it was read.
    expect(await commandsOfRun(bare, workDir, { 'a.yaml': '1\n', 'b.yaml': 'b\n' })).toEqual([
      'fetch',
      'ls-tree',
      'show',
      'ls-remote',
    ]);
    expect(await commandsOfRun(bare, workDir, { 'a.yaml': '2\n', 'b.yaml': 'b\n' })).toEqual([
      'fetch',
      'ls-tree',
      'show',
      'fast-import',
      'push',
      'gc',
    ]);
    expect(sandbox.files(bare, 'main')).toEqual({ 'clusters/a.yaml': '2\n', 'clusters/b.yaml': 'b\n' });
    expect(sandbox.commitCount(bare, 'main')).toBe(2);
  });

  it('in place: a no-op and a one-file change read HEAD and the branch from the git directory, and ask git once where it is', async () => {
    const repo = path.join(sandbox.root, 'process-count-in-place');
    // In place the publisher's work directory holds nothing; the log is written beside it.
    const unused = path.join(sandbox.root, 'process-count-in-place-unused');
    await commandsOfRun(repo, unused, { 'a.yaml': '1\n' });
    expect(await commandsOfRun(repo, unused, { 'a.yaml': '1\n' })).toEqual([
      'rev-parse',
      'ls-tree',
      'show',
      'ls-files',
      'status',
      'add',
      'diff',
    ]);
    expect(await commandsOfRun(repo, unused, { 'a.yaml': '2\n' })).toEqual([
      'rev-parse',
      'ls-tree',
      'show',
      'ls-files',
      'status',
      'add',
      'diff',
      'commit',
    ]);
    expect(sandbox.files(repo, 'main')).toEqual({ 'clusters/a.yaml': '2\n' });
    expect(sandbox.git(repo, 'status', '--porcelain=v1', '--untracked-files=all')).toBe('');
  });

  it('follows --git to another repository with the clone it has (its origin read from the clone, set anew)', async () => {
    const first = sandbox.bareRepo('origin-first', { branch: 'main', files: { 'clusters/a.yaml': 'first\n' } });
    const second = sandbox.bareRepo('origin-second', { branch: 'main', files: { 'clusters/a.yaml': 'second\n' } });
    const workDir = path.join(sandbox.root, 'origin-work');
    expect(await publisher(first, { workDir }).readPrevious()).toEqual(tree({ 'a.yaml': 'first\n' }));
    const moved = publisher(second, { workDir });
    expect(await moved.readPrevious()).toEqual(tree({ 'a.yaml': 'second\n' }));
    expect(sandbox.git(workDir, 'config', '--get', 'remote.origin.url')).toBe(second);
    expect(await moved.publish(tree({ 'a.yaml': 'third\n' }), change())).toMatchObject({ changed: true });
    expect(sandbox.files(second, 'main')).toEqual({ 'clusters/a.yaml': 'third\n' });
    expect(sandbox.files(first, 'main')).toEqual({ 'clusters/a.yaml': 'first\n' });
  });
});

describe('GitPublisher with a local path', () => {
  it('creates a missing repository and commits into its work tree without pushing', async () => {
    const repo = path.join(sandbox.root, 'out', 'gitops-repo');
    const git = publisher(repo, { path: '' });
    expect(await git.readPrevious()).toEqual(new Map());
    const first = await git.publish(tree({ 'clusters/a.yaml': 'a\n', 'README.md': 'generated\n' }), change());
    expect(first.changed).toBe(true);
    expect(readFileSync(path.join(repo, 'clusters', 'a.yaml'), 'utf8')).toBe('a\n');
    expect(sandbox.git(repo, 'symbolic-ref', 'HEAD')).toBe('refs/heads/main');
    expect(sandbox.git(repo, 'rev-parse', 'HEAD')).toBe(first.revision);
    expect(sandbox.git(repo, 'status', '--porcelain')).toBe('');

    // A second run (a new process) finds the repository and changes nothing.
    const again = await publisher(repo, { path: '' }).publish(
      tree({ 'clusters/a.yaml': 'a\n', 'README.md': 'generated\n' }),
      change(),
    );
    expect(again).toEqual({ changed: false, written: [], removed: [], revision: first.revision });
    expect(sandbox.commitCount(repo, 'main')).toBe(1);
  });
});

describe('GitPublisher over HTTP with a token', () => {
  const TOKEN = 'ghp_s3cretT0kenValue1234';
  let server: GitHttpServer;

  beforeAll(async () => {
    server = await startGitHttpServer({ projectRoot: sandbox.root, token: TOKEN });
  });

  afterAll(async () => {
    await server.close();
  });

  it('pushes with the token without ever writing it to .git/config', async () => {
    const bare = sandbox.bareRepo('http-ok', { branch: 'main', files: { 'README.md': 'v0\n' } });
    sandbox.git(bare, 'config', 'http.receivepack', 'true');
    const workDir = path.join(sandbox.root, 'http-work');
    const git = publisher(`${server.url}/http-ok.git`, { token: TOKEN, workDir });
    const result = await git.publish(tree({ 'a.yaml': 'over http\n' }), change());
    expect(result.changed).toBe(true);
    expect(sandbox.head(bare, 'main')).toBe(result.revision);
    expect(sandbox.files(bare, 'main')['clusters/a.yaml']).toBe('over http\n');
    expect(
      server.requests.some(
        (request) => request.startsWith('POST /http-ok.git/git-receive-pack') && request.endsWith('200'),
      ),
    ).toBe(true);

    expect(server.authorizations).toContain(`Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`);
    const config = readFileSync(path.join(workDir, '.git', 'config'), 'utf8');
    expect(config).not.toContain(TOKEN);
    expect(config).not.toContain(Buffer.from(`x-access-token:${TOKEN}`).toString('base64'));
    expect(config).toContain(`${server.url}/http-ok.git`);
  });

  it("logs a push that lost a race once, through the controller's logger given to createOutputPublisher, without the token", async () => {
    const bare = sandbox.bareRepo('http-race', { branch: 'main', files: { 'README.md': 'v0\n' } });
    sandbox.git(bare, 'config', 'http.receivepack', 'true');
    const cacheDir = path.join(sandbox.root, 'output-publisher-cache');
    const config = resolveConfig({
      PATH: process.env.PATH,
      HOME: path.join(sandbox.root, 'home'),
      [ENVIRONMENT.cacheDir]: cacheDir,
      [ENVIRONMENT.gitToken]: TOKEN,
    });
    const { logger, entries } = recordingLogger();
    const url = `${server.url}/http-race.git`;
    const git = createOutputPublisher({ git: url, branch: 'main', path: 'clusters' }, config, sandbox.root, undefined, {
      logger,
    });
    await git.publish(tree({ 'a.yaml': '1\n' }), change());
    // The clone createOutputPublisher chose under the cache directory: another writer pushes before its next push.
    const clone = path.join(cacheDir, 'git', readdirSync(path.join(cacheDir, 'git'))[0]!);
    sandbox.pushForeignCommitBeforePush(clone, bare, 'main', 'README.md', 'once');

    await git.publish(tree({ 'a.yaml': '2\n' }), change('Render v2'));
    expect(sandbox.foreignPushes(clone)).toBe(1);
    const lost = entries.filter((entry) => entry.message.startsWith('Push lost a race'));
    expect(lost).toEqual([
      {
        level: 'warn',
        message: 'Push lost a race with another writer, rebuilding on the new remote head',
        fields: { target: `${url} (branch main, path clusters)`, attempt: 1, maxAttempts: 8 },
      },
    ]);
    const logged = JSON.stringify(entries);
    expect(logged).not.toContain(TOKEN);
    expect(logged).not.toContain(Buffer.from(`x-access-token:${TOKEN}`).toString('base64'));
    expect(sandbox.files(bare, 'main')).toEqual({ 'README.md': 'v0\nforeign 1\n', 'clusters/a.yaml': '2\n' });
  });

  it.each([
    ['no token', undefined],
    ['a wrong token', 'ghp_wrongTokenValue9876'],
  ])('fails with a clear error and no secret in it given %s', async (_label, token) => {
    const bare = sandbox.bareRepo(`http-denied-${token === undefined ? 'none' : 'wrong'}`, {
      branch: 'main',
      files: { 'README.md': 'v0\n' },
    });
    const head = sandbox.head(bare, 'main');
    const git = publisher(`${server.url}/${path.basename(bare)}`, { token });
    const error = await rejection(git.publish(tree({ 'a.yaml': '1\n' }), change()));
    expect(error.kind).toBe('auth');
    expect(error.message).toContain(`${server.url}/${path.basename(bare)}`);
    expect(error.message).toMatch(/CLUSTERSTACK_GIT_TOKEN/);
    for (const secret of [TOKEN, token ?? TOKEN, Buffer.from(`x-access-token:${token}`).toString('base64')])
      expect(error.message).not.toContain(secret);
    expect(sandbox.head(bare, 'main')).toBe(head);
  });
});

describe('GitPublisher input checks', () => {
  it('refuses a URL carrying a token, a bad branch, and a template with unknown variables before touching anything', () => {
    const workDir = path.join(sandbox.root, 'never-created');
    expect(() => publisher('https://user:ghp_abc@example.com/org/repo.git', { workDir })).toThrow(
      /carries a password or token; remove it from the URL/,
    );
    expect(() => publisher('https://user:ghp_abc@example.com/org/repo.git', { workDir })).not.toThrow(/ghp_abc/);
    expect(() => publisher('/tmp/x', { branch: 'bad..name', workDir })).toThrow(
      /--branch "bad..name" is not a valid Git branch name/,
    );
    expect(() => publisher('/tmp/x', { messageTemplate: '{{title}} {{clusterName}}', workDir })).toThrow(
      /commit message template: "clusterName" not defined/,
    );
    expect(() => publisher('/tmp/x', { messageTemplate: '{{lookup this "constructor"}}', workDir })).toThrow(
      /unknown helper lookup/,
    );
    expect(existsSync(workDir)).toBe(false);
  });

  it('renders a custom commit message template as plain text', async () => {
    const bare = sandbox.bareRepo('template', { branch: 'main', files: { 'README.md': 'v0\n' } });
    const git = publisher(bare, {
      messageTemplate: 'chore(gitops): {{title}}\n\n{{#each trailers}}- {{key}} <{{value}}>\n{{/each}}',
    });
    await git.publish(tree({ 'a.yaml': '1\n' }), change('render "stack" & <addons>'));
    const [subject, body, stack] = sandbox.logFields(
      bare,
      'HEAD',
      '%s',
      '%b',
      '%(trailers:key=Clusterstack-Stack,valueonly)',
    );
    expect(subject).toBe('chore(gitops): render "stack" & <addons>');
    expect(body).toContain(`- Clusterstack-Input-Digest <${DIGEST}>`);
    expect(stack).toBe('docker-ferrol-1-29');
  });

  it('refuses a tree path that would escape the path or write into .git, with nothing pushed', async () => {
    const bare = sandbox.bareRepo('escape', { branch: 'main', files: { 'README.md': 'v0\n' } });
    const head = sandbox.head(bare, 'main');
    const git = publisher(bare);
    expect((await rejection(git.publish(tree({ '../README.md': 'x' }), change()))).message).toMatch(
      /"\.\.\/README\.md" is not a normalized relative path/,
    );
    expect((await rejection(git.publish(tree({ 'x/.git/config': 'x' }), change()))).message).toMatch(
      /inside a \.git directory/,
    );
    expect(sandbox.head(bare, 'main')).toBe(head);
  });
});

describe('GitPublisher.hasSettledRun', () => {
  it('is false until a settled run is recorded (in place and in a clone of a remote), without cloning or fetching anything', async () => {
    // In place: no repository yet, then one with a record.
    const repo = path.join(sandbox.root, 'has-settled-in-place');
    const inPlace = publisher(repo, { workDir: path.join(sandbox.root, 'has-settled-work-a') });
    expect(await inPlace.hasSettledRun()).toBe(false);
    expect(existsSync(repo)).toBe(false);
    const published = await inPlace.publish(tree({ 'a.yaml': 'a: 1\n' }), change());
    expect(await inPlace.hasSettledRun()).toBe(false);
    await inPlace.recordSettledRun({ fingerprint: 'sha256:one', report: {} }, published.revision);
    expect(await inPlace.hasSettledRun()).toBe(true);
    expect(await publisher(repo).hasSettledRun()).toBe(true);
    await inPlace.forgetSettledRun();
    expect(await publisher(repo).hasSettledRun()).toBe(false);

    // A remote: no clone yet means no record; asking clones nothing.
    const bare = sandbox.bareRepo('has-settled-remote', { branch: 'main', files: { 'README.md': 'hand-written\n' } });
    const workDir = path.join(sandbox.root, 'has-settled-work-b');
    const remote = publisher(bare, { workDir });
    expect(await remote.hasSettledRun()).toBe(false);
    expect(existsSync(workDir)).toBe(false);
    const pushed = await remote.publish(tree({ 'b.yaml': 'b: 1\n' }), change());
    await remote.recordSettledRun({ fingerprint: 'sha256:two', report: {} }, pushed.revision);
    expect(await publisher(bare, { workDir }).hasSettledRun()).toBe(true);
  });
});

// An in-place --git work tree is the user's: a run that cannot commit (someone else's index.lock, a
// pre-commit hook that refuses, commit.gpgsign without a usable key) leaves the work tree and the
// index exactly as it found them, never removes a lock it did not create, refuses to overwrite
// uncommitted edits unless asked to, and says what is wrong when git itself is missing.
const FIRST = { 'clusters/a.yaml': 'a: 1\n', 'clusters/b.yaml': 'b: 1\n' };
// Changes a, removes b, adds a file in a directory that does not exist yet.
const SECOND = { 'clusters/a.yaml': 'a: 2\n', 'clusters/new/c.yaml': 'c: 1\n' };

/** A work tree holding FIRST as its one commit, and a file of the user's git does not track. */
async function repository(): Promise<string> {
  counter += 1;
  const repo = path.join(sandbox.root, `repo-${counter}`);
  await publisher(repo, { path: '' }).publish(tree(FIRST), change());
  writeFileSync(path.join(repo, 'NOTES.md'), 'mine\n');
  return repo;
}

/** Everything a person could see of a work tree: HEAD, the index, git status, every file and directory outside .git. */
function state(repo: string): Record<string, unknown> {
  const files: Record<string, string> = {};
  const directories: string[] = [];
  for (const entry of readdirSync(repo, { recursive: true, withFileTypes: true })) {
    const relative = path.relative(repo, path.join(entry.parentPath, entry.name));
    if (relative === '.git' || relative.startsWith(`.git${path.sep}`)) continue;
    if (entry.isDirectory()) directories.push(relative);
    else files[relative] = readFileSync(path.join(repo, relative), 'utf8');
  }
  return {
    head: sandbox.head(repo, 'main'),
    index: sandbox.git(repo, 'ls-files', '--stage'),
    status: sandbox.git(repo, 'status', '--porcelain=v1', '--untracked-files=all'),
    files,
    directories: directories.sort(),
    journal: existsSync(path.join(repo, '.git', 'clusterstack-publish.json')),
  };
}

describe('a commit that fails leaves the work tree and index as they were', () => {
  it('someone else holds index.lock: waited for, reported by name (retry), never removed', async () => {
    const repo = await repository();
    const lock = path.join(repo, '.git', 'index.lock');
    writeFileSync(lock, '');
    const before = state(repo);
    const git = publisher(repo, { path: '' });
    const held = await git.lock({ timeoutMs: 200, command: 'test' });
    try {
      const error = await rejection(git.publish(tree(SECOND), change()));
      expect(error.kind).toBe('unavailable');
      expect(error.retryable).toBe(true);
      expect(error.message).toContain(
        `${lock} exists: another git process is running in this repository; wait for it, or remove ${lock} if none is`,
      );
      expect(error.message).toContain('Nothing was written');
    } finally {
      await held.release();
    }
    expect(state(repo)).toEqual(before);
    expect(existsSync(lock)).toBe(true);

    // A journal of a killed run does not make the next run take the lock for its own.
    writeFileSync(
      path.join(repo, '.git', 'clusterstack-publish.json'),
      JSON.stringify({ pid: 1, head: sandbox.head(repo, 'main'), created: [], directories: [], edited: {} }),
    );
    const next = publisher(repo, { path: '' });
    const nextHeld = await next.lock({ timeoutMs: 0, command: 'test' });
    try {
      expect((await rejection(next.readPrevious())).message).toContain(`${lock} exists`);
    } finally {
      await nextHeld.release();
    }
    expect(existsSync(lock)).toBe(true);
    expect(existsSync(path.join(repo, '.git', 'clusterstack-publish.json'))).toBe(true);

    // Released by its owner, the next run repairs and commits.
    rmSync(lock);
    const last = publisher(repo, { path: '' });
    const lastHeld = await last.lock({ timeoutMs: 0, command: 'test' });
    try {
      await last.readPrevious();
      expect((await last.publish(tree(SECOND), change())).changed).toBe(true);
    } finally {
      await lastHeld.release();
    }
    expect(sandbox.files(repo, 'main')).toEqual(SECOND);
  });

  it('a lock that appears while git runs is reported by name as one to retry', async () => {
    const repo = await repository();
    writeFileSync(path.join(repo, '.git', 'index.lock'), '');
    const error = await rejection(
      new GitCommand(repo, { author: AUTHOR, env: { PATH: process.env.PATH } }).run(['add', '--all'], 'git add'),
    );
    expect(error.kind).toBe('unavailable');
    expect(error.message).toBe(
      `git add failed: ${path.join(repo, '.git', 'index.lock')} exists: another git process is running in this repository; wait for it, or remove ${path.join(repo, '.git', 'index.lock')} if none is (a crashed git process leaves it behind)`,
    );
  });

  it('a pre-commit hook refuses: the render is unstaged and its files gone, the hook named with what it said (fix input)', async () => {
    const repo = await repository();
    const hook = path.join(repo, '.git', 'hooks', 'pre-commit');
    writeFileSync(hook, '#!/bin/sh\necho "yamllint: clusters/a.yaml: wrong indentation" >&2\nexit 1\n');
    chmodSync(hook, 0o755);
    const before = state(repo);
    const error = await rejection(publisher(repo, { path: '' }).publish(tree(SECOND), change()));
    expect(error.kind).toBe('invalid-target');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(
      `--git ${repo}: a commit hook refused the commit (pre-commit in ${path.join(repo, '.git', 'hooks')}): yamllint: clusters/a.yaml: wrong indentation. Fix what it reports`,
    );
    expect(error.message).toContain(`Nothing was committed; --git ${repo} is as it was before the run`);
    expect(state(repo)).toEqual(before);
  });

  it('commit.gpgsign without a usable key: reported as signing, with how to turn it off (fix input)', async () => {
    const repo = await repository();
    sandbox.git(repo, 'config', 'commit.gpgsign', 'true');
    sandbox.git(repo, 'config', 'gpg.program', path.join(sandbox.root, 'no-gpg-here'));
    const before = state(repo);
    const error = await rejection(publisher(repo, { path: '' }).publish(tree(SECOND), change()));
    expect(error.kind).toBe('invalid-target');
    expect(error.message).toContain(`--git ${repo}: git commit could not sign the commit (commit.gpgsign is set`);
    expect(error.message).toContain(`git -C ${repo} config commit.gpgsign false`);
    expect(error.message).toContain('is as it was before the run');
    expect(state(repo)).toEqual(before);
  });

  it('on the first commit of a new repository too: nothing staged, no file or directory of the render left', async () => {
    counter += 1;
    const repo = path.join(sandbox.root, `fresh-${counter}`);
    sandbox.git(sandbox.root, 'init', '--quiet', '--initial-branch=main', repo);
    sandbox.git(repo, 'config', 'commit.gpgsign', 'true');
    sandbox.git(repo, 'config', 'gpg.program', path.join(sandbox.root, 'no-gpg-here'));
    writeFileSync(path.join(repo, 'NOTES.md'), 'mine\n');
    const before = state(repo);
    const error = await rejection(publisher(repo, { path: 'rendered/fleet' }).publish(tree(SECOND), change()));
    expect(error.message).toContain('could not sign the commit');
    expect(state(repo)).toEqual(before);
  });
});

describe('uncommitted edits to rendered files', () => {
  it('are refused by name with what to do, and nothing is written', async () => {
    const repo = await repository();
    writeFileSync(path.join(repo, 'clusters', 'a.yaml'), 'a: edited by hand\n');
    rmSync(path.join(repo, 'clusters', 'b.yaml'));
    const before = state(repo);
    const error = await rejection(publisher(repo, { path: '' }).publish(tree(SECOND), change()));
    expect(error.kind).toBe('invalid-target');
    expect(error.message).toBe(
      `--git ${repo} has uncommitted edits to files the render writes (clusters/a.yaml, clusters/b.yaml); commit, stash or discard them, or pass --force to overwrite them. Then run again. Nothing was written`,
    );
    expect(state(repo)).toEqual(before);
  });

  it('are reported together with staged changes and untracked files in the way, in one message', async () => {
    const repo = await repository();
    writeFileSync(path.join(repo, 'clusters', 'a.yaml'), 'a: edited\n');
    sandbox.git(repo, 'add', 'NOTES.md');
    mkdirSync(path.join(repo, 'clusters', 'new'));
    writeFileSync(path.join(repo, 'clusters', 'new', 'c.yaml'), 'mine\n');
    const error = await rejection(publisher(repo, { path: '' }).publish(tree(SECOND), change()));
    expect(error.message).toBe(
      `--git ${repo} has staged changes (NOTES.md); commit or unstage them; they would end up in the render's commit; ` +
        'it also has uncommitted edits to files the render writes (clusters/a.yaml); commit, stash or discard them, or pass --force to overwrite them; ' +
        'it also has untracked files where the render writes (clusters/new/c.yaml); move them away or commit them elsewhere. Then run again. Nothing was written',
    );
  });

  it('are overwritten with --force, and put back when that commit then fails', async () => {
    const repo = await repository();
    writeFileSync(path.join(repo, 'clusters', 'a.yaml'), 'a: edited by hand\n');
    chmodSync(path.join(repo, 'clusters', 'a.yaml'), 0o600);
    rmSync(path.join(repo, 'clusters', 'b.yaml'));
    const hook = path.join(repo, '.git', 'hooks', 'commit-msg');
    writeFileSync(hook, '#!/bin/sh\nexit 1\n');
    chmodSync(hook, 0o755);
    const before = state(repo);
    const error = await rejection(publisher(repo, { path: '', overwriteEdits: true }).publish(tree(SECOND), change()));
    expect(error.message).toContain('a commit hook refused the commit (commit-msg in');
    expect(error.message).toContain('exited with status 1, printing nothing');
    expect(state(repo)).toEqual(before);
    expect(readFileSync(path.join(repo, 'clusters', 'a.yaml'), 'utf8')).toBe('a: edited by hand\n');
    expect(statSync(path.join(repo, 'clusters', 'a.yaml')).mode & 0o777).toBe(0o600);

    rmSync(hook);
    const result = await publisher(repo, { path: '', overwriteEdits: true }).publish(tree(SECOND), change());
    expect(result).toMatchObject({
      changed: true,
      written: ['clusters/a.yaml', 'clusters/new/c.yaml'],
      removed: ['clusters/b.yaml'],
    });
    expect(sandbox.files(repo, 'main')).toEqual(SECOND);
    expect(sandbox.git(repo, 'status', '--porcelain=v1', '--untracked-files=all')).toBe('?? NOTES.md');
  });
});

describe('--path', () => {
  it('refuses an absolute path and one that climbs out, naming the value', () => {
    for (const [value, reason] of [
      ['/abs/dir', 'is absolute'],
      ['/', 'is absolute'],
      ['../outside', 'climbs out'],
      ['rendered/../../x', 'climbs out'],
      ['rendered/.git/x', 'is inside .git'],
    ]) {
      expect(() => publisher(path.join(sandbox.root, 'never'), { path: value })).toThrow(`--path "${value}" ${reason}`);
    }
    expect(existsSync(path.join(sandbox.root, 'never'))).toBe(false);
  });
});

describe('no git on PATH', () => {
  const NO_GIT = { PATH: '/nonexistent-bin', HOME: '/nonexistent-home' };
  const message = 'needs the git command, and there is none on PATH (/nonexistent-bin); install git, or put it on PATH';

  it('says so (a setting of the machine) and leaves no directory behind, in place and for a clone', async () => {
    const parent = path.join(sandbox.root, `nogit-${++counter}`);
    const inPlace = await rejection(
      publisher(path.join(parent, 'repo'), { path: '', env: NO_GIT }).lock({ timeoutMs: 0, command: 'test' }),
    );
    expect(inPlace.kind).toBe('missing-tool');
    expect(inPlace.retryable).toBe(false);
    expect(inPlace.message).toBe(`git not found: git init ${path.join(parent, 'repo')} ${message}`);
    expect(existsSync(parent)).toBe(false);

    const bare = sandbox.bareRepo(`nogit-${counter}`);
    const workDir = path.join(parent, 'cache', 'clone');
    const clone = await rejection(publisher(bare, { env: NO_GIT, workDir }).readPrevious());
    expect(clone.kind).toBe('missing-tool');
    expect(clone.message).toContain(message);
    expect(existsSync(parent)).toBe(false);

    const pullRequest = new PullRequestPublisher({
      git: {
        repository: 'https://github.com/example/fleet.git',
        baseBranch: 'main',
        path: '',
        workDir,
        author: AUTHOR,
        env: NO_GIT,
      },
      github: { token: 'test-token' },
    });
    expect((await rejection(pullRequest.readPrevious())).message).toContain(message);
    expect(existsSync(parent)).toBe(false);

    await expect(checkGitAvailable(NO_GIT, '--git https://example.com/fleet.git')).rejects.toThrow(
      `git not found: --git https://example.com/fleet.git ${message}`,
    );
    await expect(checkGitAvailable({ PATH: process.env.PATH }, '--git x')).resolves.toBeUndefined();
  });
});
