import { existsSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitPublisher, type GitPublisherOptions } from '../gitops/git-publisher.js';
import { PublishError } from '../gitops/publish-error.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { startGitHttpServer, type GitHttpServer } from './support/git-http-server.js';
import { GitSandbox } from './support/git-repos.js';
import { recordingLogger } from './support/test-logger.js';

const AUTHOR = { name: 'Clusterstack Bot', email: 'bot@example.com' };
const DIGEST = 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef';

function change(title = 'Render stack v1'): ChangeSummary {
  return { title, body: 'Clusters:\n- default/alpha: addons v1', trailers: { 'Clusterstack-Input-Digest': DIGEST, 'Clusterstack-Stack': 'docker-ferrol-1-29' } };
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
    expect(sandbox.files(bare, 'main')).toEqual({ 'README.md': 'hand-written\n', 'clusters/a.yaml': 'one\n', 'clusters/b/two.yaml': 'two\n' });
    expect(sandbox.git(bare, 'log', '-1', '--format=%an <%ae>|%cn <%ce>')).toBe('Clusterstack Bot <bot@example.com>|Clusterstack Bot <bot@example.com>');
    expect(sandbox.git(bare, 'log', '-1', '--format=%s')).toBe('Render stack v1');
    expect(sandbox.git(bare, 'log', '-1', '--format=%(trailers:key=Clusterstack-Input-Digest,valueonly)')).toBe(DIGEST);
    const message = sandbox.git(bare, 'log', '-1', '--format=%B');
    expect(message).toContain('- default/alpha: addons v1');

    const again = await git.publish(tree({ 'a.yaml': 'one\n', 'b/two.yaml': 'two\n' }), change('Render again'));
    expect(again).toEqual({ changed: false, written: [], removed: [], revision: first.revision });
    expect(sandbox.head(bare, 'main')).toBe(first.revision);
    expect(sandbox.commitCount(bare, 'main')).toBe(2);
    expect(await git.readPrevious()).toEqual(tree({ 'a.yaml': 'one\n', 'b/two.yaml': 'two\n' }));
  });

  it('replaces the tree under the path: stale files removed, files outside the path untouched', async () => {
    const bare = sandbox.bareRepo('replace', { branch: 'main', files: { 'README.md': 'keep\n', 'clusters/old.yaml': 'old\n', 'clusters/same.yaml': 'same\n', 'management/x.yaml': 'x\n' } });
    const before = sandbox.commitCount(bare, 'main');
    const git = publisher(bare);
    expect(await git.readPrevious()).toEqual(tree({ 'old.yaml': 'old\n', 'same.yaml': 'same\n' }));
    const result = await git.publish(tree({ 'same.yaml': 'same\n', 'new/ü.yaml': 'ünïcode\n' }), change());
    expect(result).toMatchObject({ changed: true, written: ['new/ü.yaml'], removed: ['old.yaml'] });
    expect(sandbox.commitCount(bare, 'main')).toBe(before + 1);
    expect(sandbox.files(bare, 'main')).toEqual({ 'README.md': 'keep\n', 'clusters/new/ü.yaml': 'ünïcode\n', 'clusters/same.yaml': 'same\n', 'management/x.yaml': 'x\n' });
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
    expect(entries.filter((entry) => entry.level === 'warn').map((entry) => entry.message)).toEqual(['Push lost a race with another writer, rebuilding on the new remote head']);
    expect(result.changed).toBe(true);
    expect(result.revision).toBe(sandbox.head(bare, 'main'));
    expect(sandbox.files(bare, 'main')).toEqual({ 'README.md': 'v0\nforeign 1\n', 'clusters/a.yaml': '2\n' });
    expect(sandbox.git(bare, 'log', '--format=%s', 'main').split('\n')).toEqual(['Render v2', 'Foreign commit', 'Render stack v1', 'Seed']);
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
    const bare = sandbox.bareRepo('known', { branch: 'main', files: { 'README.md': 'keep\n', 'management/x.yaml': 'x\n' } });
    const workDir = path.join(sandbox.root, 'known-work');
    const git = publisher(bare, { workDir, messageTemplate: '  {{title}}   \n\n\n\n{{body}}\t\n\n\n' });
    const first = await git.publish(tree({ 'a.yaml': '1\n', 'b/b.yaml': 'b\n', 'c.yaml': 'c\n' }), change('First'));
    const firstMessage = sandbox.git(bare, 'log', '-1', '--format=%B');

    const second = await git.publish(tree({ 'a.yaml': '2\n', 'b/b.yaml': 'b\n', 'd/"odd" name.yaml': 'd\n' }), change('First'));
    expect(second).toMatchObject({ changed: true, written: ['a.yaml', 'd/"odd" name.yaml'], removed: ['c.yaml'] });
    expect(second.revision).toBe(sandbox.head(bare, 'main'));
    expect(sandbox.git(bare, 'rev-parse', 'main^')).toBe(first.revision);
    expect(sandbox.files(bare, 'main')).toEqual({ 'README.md': 'keep\n', 'management/x.yaml': 'x\n', 'clusters/a.yaml': '2\n', 'clusters/b/b.yaml': 'b\n', 'clusters/d/"odd" name.yaml': 'd\n' });
    // The same message text the first commit got from git commit --cleanup=whitespace.
    expect(sandbox.git(bare, 'log', '-1', '--format=%B')).toBe(firstMessage);
    expect(sandbox.git(bare, 'log', '-1', '--format=%an <%ae>|%cn <%ce>')).toBe('Clusterstack Bot <bot@example.com>|Clusterstack Bot <bot@example.com>');
    // Neither the clone's files nor its index were involved.
    expect(readFileSync(path.join(workDir, 'clusters', 'a.yaml'), 'utf8')).toBe('1\n');
    expect(sandbox.git(workDir, 'diff', '--cached', '--name-only', 'HEAD^')).toBe('');

    // The same tree again: nothing to commit, the branch is where it was.
    expect(await git.publish(tree({ 'a.yaml': '2\n', 'b/b.yaml': 'b\n', 'd/"odd" name.yaml': 'd\n' }), change())).toEqual({ changed: false, written: [], removed: [], revision: second.revision });
    expect(sandbox.commitCount(bare, 'main')).toBe(3);
  });

  it('builds on a commit another writer pushed since, and on a clone someone left dirty', async () => {
    const bare = sandbox.bareRepo('known-moved', { branch: 'main', files: { 'README.md': 'v0\n' } });
    const workDir = path.join(sandbox.root, 'known-moved-work');
    const { logger, entries } = recordingLogger();
    const git = publisher(bare, { workDir, logger });
    await git.publish(tree({ 'a.yaml': '1\n', 'b.yaml': 'b\n' }), change());
    const foreign = sandbox.commitFiles(bare, 'main', { 'README.md': 'v1\n', 'clusters/b.yaml': 'changed by a person\n' }, 'Foreign commit');
    sandbox.git(workDir, 'rm', '--quiet', '--cached', 'clusters/a.yaml');
    await writeFile(path.join(workDir, 'clusters', 'stray.yaml'), 'stray\n');

    const result = await git.publish(tree({ 'a.yaml': '2\n', 'b.yaml': 'b\n' }), change('Render v2'));
    expect(result).toMatchObject({ changed: true, written: ['a.yaml', 'b.yaml'], removed: [] });
    expect(sandbox.git(bare, 'rev-parse', 'main^')).toBe(foreign);
    expect(sandbox.files(bare, 'main')).toEqual({ 'README.md': 'v1\n', 'clusters/a.yaml': '2\n', 'clusters/b.yaml': 'b\n' });
    expect(entries.filter((entry) => entry.level === 'warn').map((entry) => entry.message)).toEqual(['Push lost a race with another writer, rebuilding on the new remote head']);
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
    const again = await publisher(repo, { path: '' }).publish(tree({ 'clusters/a.yaml': 'a\n', 'README.md': 'generated\n' }), change());
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
    expect(server.requests.some((request) => request.startsWith('POST /http-ok.git/git-receive-pack') && request.endsWith('200'))).toBe(true);

    expect(server.authorizations).toContain(`Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`);
    const config = readFileSync(path.join(workDir, '.git', 'config'), 'utf8');
    expect(config).not.toContain(TOKEN);
    expect(config).not.toContain(Buffer.from(`x-access-token:${TOKEN}`).toString('base64'));
    expect(config).toContain(`${server.url}/http-ok.git`);
  });

  it.each([
    ['no token', undefined],
    ['a wrong token', 'ghp_wrongTokenValue9876'],
  ])('fails with a clear error and no secret in it given %s', async (_label, token) => {
    const bare = sandbox.bareRepo(`http-denied-${token === undefined ? 'none' : 'wrong'}`, { branch: 'main', files: { 'README.md': 'v0\n' } });
    const head = sandbox.head(bare, 'main');
    const git = publisher(`${server.url}/${path.basename(bare)}`, { token });
    const error = await rejection(git.publish(tree({ 'a.yaml': '1\n' }), change()));
    expect(error.kind).toBe('auth');
    expect(error.message).toContain(`${server.url}/${path.basename(bare)}`);
    expect(error.message).toMatch(/CLUSTERSTACK_GIT_TOKEN/);
    for (const secret of [TOKEN, token ?? TOKEN, Buffer.from(`x-access-token:${token}`).toString('base64')]) expect(error.message).not.toContain(secret);
    expect(sandbox.head(bare, 'main')).toBe(head);
  });
});

describe('GitPublisher input checks', () => {
  it('refuses a URL carrying a token, a bad branch, and a template with unknown variables before touching anything', () => {
    const workDir = path.join(sandbox.root, 'never-created');
    expect(() => publisher('https://user:ghp_abc@example.com/org/repo.git', { workDir })).toThrow(/carries a password or token; remove it from the URL/);
    expect(() => publisher('https://user:ghp_abc@example.com/org/repo.git', { workDir })).not.toThrow(/ghp_abc/);
    expect(() => publisher('/tmp/x', { branch: 'bad..name', workDir })).toThrow(/--branch "bad..name" is not a valid Git branch name/);
    expect(() => publisher('/tmp/x', { messageTemplate: '{{title}} {{clusterName}}', workDir })).toThrow(/commit message template: "clusterName" not defined/);
    expect(() => publisher('/tmp/x', { messageTemplate: '{{lookup this "constructor"}}', workDir })).toThrow(/unknown helper lookup/);
    expect(existsSync(workDir)).toBe(false);
  });

  it('renders a custom commit message template as plain text', async () => {
    const bare = sandbox.bareRepo('template', { branch: 'main', files: { 'README.md': 'v0\n' } });
    const git = publisher(bare, { messageTemplate: 'chore(gitops): {{title}}\n\n{{#each trailers}}- {{key}} <{{value}}>\n{{/each}}' });
    await git.publish(tree({ 'a.yaml': '1\n' }), change('render "stack" & <addons>'));
    expect(sandbox.git(bare, 'log', '-1', '--format=%s')).toBe('chore(gitops): render "stack" & <addons>');
    expect(sandbox.git(bare, 'log', '-1', '--format=%b')).toContain(`- Clusterstack-Input-Digest <${DIGEST}>`);
    expect(sandbox.git(bare, 'log', '-1', '--format=%(trailers:key=Clusterstack-Stack,valueonly)')).toBe('docker-ferrol-1-29');
  });

  it('refuses a tree path that would escape the path or write into .git, with nothing pushed', async () => {
    const bare = sandbox.bareRepo('escape', { branch: 'main', files: { 'README.md': 'v0\n' } });
    const head = sandbox.head(bare, 'main');
    const git = publisher(bare);
    expect((await rejection(git.publish(tree({ '../README.md': 'x' }), change()))).message).toMatch(/"\.\.\/README\.md" is not a normalized relative path/);
    expect((await rejection(git.publish(tree({ 'x/.git/config': 'x' }), change()))).message).toMatch(/inside a \.git directory/);
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
