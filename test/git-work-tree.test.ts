// An in-place --git work tree is the user's: a run that cannot commit (someone else's index.lock, a
// pre-commit hook that refuses, commit.gpgsign without a usable key) leaves the work tree and the
// index exactly as it found them, never removes a lock it did not create, refuses to overwrite
// uncommitted edits unless asked to, and says what is wrong when git itself is missing. Real git.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkGitAvailable, GitCommand } from '../gitops/git-command.js';
import { GitPublisher, type GitPublisherOptions } from '../gitops/git-publisher.js';
import { PublishError } from '../gitops/publish-error.js';
import { PullRequestPublisher } from '../gitops/pull-request-publisher.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { GitSandbox } from './support/git-repos.js';

const AUTHOR = { name: 'Clusterstack Bot', email: 'bot@example.com' };
const CHANGE: ChangeSummary = { title: 'Render', body: '', trailers: { 'Clusterstack-Input-Digest': 'sha256:00' } };
const FIRST = { 'clusters/a.yaml': 'a: 1\n', 'clusters/b.yaml': 'b: 1\n' };
// Changes a, removes b, adds a file in a directory that does not exist yet.
const SECOND = { 'clusters/a.yaml': 'a: 2\n', 'clusters/new/c.yaml': 'c: 1\n' };

let sandbox: GitSandbox;
let counter = 0;

beforeAll(() => {
  sandbox = new GitSandbox();
});
afterAll(() => sandbox.cleanup());

function tree(files: Record<string, string>): RenderedTree {
  return new Map(Object.entries(files));
}

function publisher(repository: string, overrides: Partial<GitPublisherOptions> = {}): GitPublisher {
  counter += 1;
  return new GitPublisher({
    repository,
    branch: 'main',
    path: '',
    workDir: path.join(sandbox.root, `work-${counter}`),
    author: AUTHOR,
    env: { PATH: process.env.PATH, HOME: path.join(sandbox.root, 'home') },
    ...overrides,
  });
}

async function rejection(promise: Promise<unknown>): Promise<PublishError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(PublishError);
  return error as PublishError;
}

/** A work tree holding FIRST as its one commit, plus a user's untracked notes and an edit outside the render's files. */
async function repository(): Promise<string> {
  counter += 1;
  const repo = path.join(sandbox.root, `repo-${counter}`);
  await publisher(repo).publish(tree(FIRST), CHANGE);
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
    const git = publisher(repo);
    const held = await git.lock({ timeoutMs: 200, command: 'test' });
    try {
      const error = await rejection(git.publish(tree(SECOND), CHANGE));
      expect(error.kind).toBe('unavailable');
      expect(error.retryable).toBe(true);
      expect(error.message).toContain(`${lock} exists: another git process is running in this repository; wait for it, or remove ${lock} if none is`);
      expect(error.message).toContain('Nothing was written');
    } finally {
      await held.release();
    }
    expect(state(repo)).toEqual(before);
    expect(existsSync(lock)).toBe(true);

    // A journal of a killed run does not make the next run take the lock for its own.
    writeFileSync(path.join(repo, '.git', 'clusterstack-publish.json'), JSON.stringify({ pid: 1, head: sandbox.head(repo, 'main'), created: [], directories: [], edited: {} }));
    const next = publisher(repo);
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
    const last = publisher(repo);
    const lastHeld = await last.lock({ timeoutMs: 0, command: 'test' });
    try {
      await last.readPrevious();
      expect((await last.publish(tree(SECOND), CHANGE)).changed).toBe(true);
    } finally {
      await lastHeld.release();
    }
    expect(sandbox.files(repo, 'main')).toEqual(SECOND);
  });

  it('a lock that appears while git runs is reported by name as one to retry', async () => {
    const repo = await repository();
    writeFileSync(path.join(repo, '.git', 'index.lock'), '');
    const error = await rejection(new GitCommand(repo, { author: AUTHOR, env: { PATH: process.env.PATH } }).run(['add', '--all'], 'git add'));
    expect(error.kind).toBe('unavailable');
    expect(error.message).toBe(`git add failed: ${path.join(repo, '.git', 'index.lock')} exists: another git process is running in this repository; wait for it, or remove ${path.join(repo, '.git', 'index.lock')} if none is (a crashed git process leaves it behind)`);
  });

  it('a pre-commit hook refuses: the render is unstaged and its files gone, the hook named with what it said (fix input)', async () => {
    const repo = await repository();
    const hook = path.join(repo, '.git', 'hooks', 'pre-commit');
    writeFileSync(hook, '#!/bin/sh\necho "yamllint: clusters/a.yaml: wrong indentation" >&2\nexit 1\n');
    chmodSync(hook, 0o755);
    const before = state(repo);
    const error = await rejection(publisher(repo).publish(tree(SECOND), CHANGE));
    expect(error.kind).toBe('invalid-target');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(`--git ${repo}: a commit hook refused the commit (pre-commit in ${path.join(repo, '.git', 'hooks')}): yamllint: clusters/a.yaml: wrong indentation. Fix what it reports`);
    expect(error.message).toContain(`Nothing was committed; --git ${repo} is as it was before the run`);
    expect(state(repo)).toEqual(before);
  });

  it('commit.gpgsign without a usable key: reported as signing, with how to turn it off (fix input)', async () => {
    const repo = await repository();
    sandbox.git(repo, 'config', 'commit.gpgsign', 'true');
    sandbox.git(repo, 'config', 'gpg.program', path.join(sandbox.root, 'no-gpg-here'));
    const before = state(repo);
    const error = await rejection(publisher(repo).publish(tree(SECOND), CHANGE));
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
    const error = await rejection(publisher(repo, { path: 'rendered/fleet' }).publish(tree(SECOND), CHANGE));
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
    const error = await rejection(publisher(repo).publish(tree(SECOND), CHANGE));
    expect(error.kind).toBe('invalid-target');
    expect(error.message).toBe(`--git ${repo} has uncommitted edits to files the render writes (clusters/a.yaml, clusters/b.yaml); commit, stash or discard them, or pass --force to overwrite them. Then run again. Nothing was written`);
    expect(state(repo)).toEqual(before);
  });

  it('are reported together with staged changes and untracked files in the way, in one message', async () => {
    const repo = await repository();
    writeFileSync(path.join(repo, 'clusters', 'a.yaml'), 'a: edited\n');
    sandbox.git(repo, 'add', 'NOTES.md');
    mkdirSync(path.join(repo, 'clusters', 'new'));
    writeFileSync(path.join(repo, 'clusters', 'new', 'c.yaml'), 'mine\n');
    const error = await rejection(publisher(repo).publish(tree(SECOND), CHANGE));
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
    const error = await rejection(publisher(repo, { overwriteEdits: true }).publish(tree(SECOND), CHANGE));
    expect(error.message).toContain('a commit hook refused the commit (commit-msg in');
    expect(error.message).toContain('exited with status 1, printing nothing');
    expect(state(repo)).toEqual(before);
    expect(readFileSync(path.join(repo, 'clusters', 'a.yaml'), 'utf8')).toBe('a: edited by hand\n');
    expect(statSync(path.join(repo, 'clusters', 'a.yaml')).mode & 0o777).toBe(0o600);

    rmSync(hook);
    const result = await publisher(repo, { overwriteEdits: true }).publish(tree(SECOND), CHANGE);
    expect(result).toMatchObject({ changed: true, written: ['clusters/a.yaml', 'clusters/new/c.yaml'], removed: ['clusters/b.yaml'] });
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
    const inPlace = await rejection(publisher(path.join(parent, 'repo'), { env: NO_GIT }).lock({ timeoutMs: 0, command: 'test' }));
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
      git: { repository: 'https://github.com/example/fleet.git', baseBranch: 'main', path: '', workDir, author: AUTHOR, env: NO_GIT },
      github: { token: 'test-token' },
    });
    expect((await rejection(pullRequest.readPrevious())).message).toContain(message);
    expect(existsSync(parent)).toBe(false);

    await expect(checkGitAvailable(NO_GIT, '--git https://example.com/fleet.git')).rejects.toThrow(`git not found: --git https://example.com/fleet.git ${message}`);
    await expect(checkGitAvailable({ PATH: process.env.PATH }, '--git x')).resolves.toBeUndefined();
  });
});
