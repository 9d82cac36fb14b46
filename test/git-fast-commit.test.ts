import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitCommand } from '../gitops/git-command.js';
import { cleanupCommitMessage, fastCommit } from '../gitops/git-fast-commit.js';
import { GitSandbox } from './support/git-repos.js';

const AUTHOR = { name: 'Clusterstack Bot', email: 'bot@example.com' };
let sandbox: GitSandbox;

beforeAll(() => {
  sandbox = new GitSandbox();
});

afterAll(() => {
  sandbox.cleanup();
});

describe('cleanupCommitMessage', () => {
  it.each([
    ['plain', 'Title\n\nBody line\n'],
    ['no final newline', 'Title'],
    ['blank lines around and between', '\n\n  Title  \n\n\n\nBody\t \r\n\n\nTrailer: x\n\n\n'],
    ['characters git does not count as space', 'Title\v\n\nBody\f\n'],
    ['only blank lines', '\n \n\t\n'],
  ])('makes of a message (%s) what git commit --cleanup=whitespace makes', (_label, message) => {
    expect(cleanupCommitMessage(message)).toBe(
      execFileSync('git', ['stripspace'], { input: message, encoding: 'utf8' }),
    );
  });
});

describe('fastCommit', () => {
  it('writes one commit on a parent with exactly the files given, whatever their names hold', async () => {
    const bare = sandbox.bareRepo('fast', {
      branch: 'main',
      files: { 'keep.yaml': 'keep\n', 'dir/gone.yaml': 'gone\n', 'dir/old.yaml': 'old\n' },
    });
    const parent = sandbox.head(bare, 'main');
    const git = new GitCommand(bare, {
      author: { name: '<Bot>\n', email: 'bot@example.com' },
      env: { PATH: process.env.PATH ?? '' },
    });
    const names = ['dir/old.yaml', 'sp ace/"quoted" \\ back.yaml', 'ü/日本.yaml', 'tab\there.yaml'];
    const { commit } = await fastCommit(git, {
      ref: 'refs/heads/main',
      parent,
      author: { name: '<Bot>\n', email: 'bot@example.com' },
      message: 'Change\n\n\nBody  \n',
      written: names.map((name, index) => [name, `content ${index}\n`] as const),
      removed: ['dir/gone.yaml'],
    });
    expect(sandbox.head(bare, 'main')).toBe(commit);
    expect(sandbox.git(bare, 'rev-parse', 'main^')).toBe(parent);
    expect(sandbox.files(bare, 'main')).toEqual({
      'keep.yaml': 'keep\n',
      ...Object.fromEntries(names.map((name, index) => [name, `content ${index}\n`])),
    });
    expect(sandbox.git(bare, 'log', '-1', '--format=%B')).toBe('Change\n\nBody');
    expect(sandbox.git(bare, 'log', '-1', '--format=%an <%ae>')).toBe('Bot <bot@example.com>');
  });

  it('starts a branch with no parent, whatever the ref pointed at before', async () => {
    const bare = sandbox.bareRepo('fast-root', { branch: 'main', files: { 'old.yaml': 'old\n' } });
    const git = new GitCommand(bare, { author: AUTHOR, env: { PATH: process.env.PATH ?? '' } });
    const { commit } = await fastCommit(git, {
      ref: 'refs/heads/main',
      parent: null,
      author: AUTHOR,
      message: 'First',
      written: [['a.yaml', 'a\n']],
      removed: [],
    });
    expect(sandbox.head(bare, 'main')).toBe(commit);
    expect(sandbox.commitCount(bare, 'main')).toBe(1);
    expect(sandbox.files(bare, 'main')).toEqual({ 'a.yaml': 'a\n' });
  });

  it('names the tree of a directory in the new commit when asked (treeOf), and none for a missing one', async () => {
    const bare = sandbox.bareRepo('fast-tree', { branch: 'main', files: { 'shards/b/x.yaml': 'b\n' } });
    const git = new GitCommand(bare, { author: AUTHOR, env: { PATH: process.env.PATH ?? '' } });
    const write = (treeOf: string) =>
      fastCommit(git, {
        ref: 'refs/heads/main',
        parent: sandbox.head(bare, 'main'),
        author: AUTHOR,
        message: 'Shard a',
        written: [['shards/a dir/x.yaml', 'a\n']],
        removed: [],
        treeOf,
      });
    const { commit, tree } = await write('shards/a dir');
    expect(tree).toBe(sandbox.git(bare, 'rev-parse', `${commit}:shards/a dir`));
    expect(await write('shards/none')).toEqual({ commit: sandbox.head(bare, 'main') });
  });
});
