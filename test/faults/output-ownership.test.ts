// Outputs are ours alone: --output never replaces a directory it did not write, the inputs or the
// release source; in-place --git never deletes or commits files it does not own.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, runClusterstack, tempDir } from '../support/cli.js';
import { GitSandbox } from '../support/git-repos.js';
import { copyOfSeed } from '../support/seed-copies.js';

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

/** An in-place work tree of its own holding the quick start as a first render commits it (rendered once: copyOfSeed). */
function renderedWorkTree(): Promise<string> {
  return copyOfSeed('quick start in place', 'repo', async (repo) => {
    expect((await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--git', repo])).code).toBe(0);
  });
}

function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(String).sort();
}

async function render(args: string[], cwd?: string): Promise<{ code: number; stderr: string; stdout: string }> {
  return runClusterstack(['render', ...args], cwd ? { cwd } : {});
}

describe('--output refuses what is not ours', () => {
  it('refuses a directory holding other files, naming it and --adopt-output, and changes nothing', async () => {
    const dir = await tempDir('csk-user-');
    writeFileSync(path.join(dir, 'notes.txt'), 'mine\n');
    mkdirSync(path.join(dir, 'photos'));
    const result = await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--output', dir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `--output ${dir} holds files clusterstack did not write (notes.txt, photos); nothing was written`,
    );
    expect(result.stderr).toContain('--adopt-output');
    expect(listing(dir)).toEqual(['notes.txt', 'photos']);
  });

  it('refuses "." inside a Git project: .git and src stay', async () => {
    const project = await tempDir('csk-project-');
    sandbox.git(project, 'init', '--quiet');
    mkdirSync(path.join(project, 'src'));
    writeFileSync(path.join(project, 'src', 'main.ts'), 'export {};\n');
    const before = listing(project);
    const result = await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--output', '.'], project);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/holds files clusterstack did not write \(\.git, src\)/);
    expect(listing(project)).toEqual(before);
  });

  it('refuses the input directory, the release-source directory and their ancestors, even with --adopt-output', async () => {
    const root = await tempDir('csk-fleet-');
    await cp(EXAMPLE_MANIFESTS, path.join(root, 'manifests'), { recursive: true });
    await cp(EXAMPLE_RELEASES, path.join(root, 'releases'), { recursive: true });
    const before = listing(root);
    const inputs = path.join(root, 'manifests');
    const releases = path.join(root, 'releases');
    const cases: [string, RegExp][] = [
      [inputs, /--output .*manifests is the input .*manifests; publishing there would replace or delete it/],
      [releases, /--output .*releases is the release source .*releases; publishing there would replace or delete it/],
      [root, /--output .* contains the input .*manifests/],
    ];
    for (const [output, message] of cases) {
      const result = await render([inputs, '--release-source', releases, '--output', output, '--adopt-output']);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(message);
    }
    expect(listing(root)).toEqual(before);
  });

  it('adopts a directory when asked, leaving its files in place, and renders into <dir>/current', async () => {
    const dir = await tempDir('csk-volume-');
    writeFileSync(path.join(dir, 'lost+found'), '');
    const result = await render([
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      dir,
      '--adopt-output',
    ]);
    expect(result.code).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['.clusterstack', 'current', 'lost+found']);
    expect(existsSync(path.join(dir, 'current', 'management', 'cluster-stacks', 'docker-ferrol-1-30-v3'))).toBe(true);
    // Ours from now on: no flag needed.
    expect((await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--output', dir])).code).toBe(0);
  });
});

describe('--git in place owns only what it tracks under --path', () => {
  it('leaves untracked files alone: never deleted, never committed', async () => {
    const repo = await renderedWorkTree();
    writeFileSync(path.join(repo, 'NOTES.md'), 'my notes\n');
    mkdirSync(path.join(repo, 'management', 'scratch'), { recursive: true });
    writeFileSync(path.join(repo, 'management', 'scratch', 'draft.yaml'), 'draft: true\n');
    const stack = await tempDir('csk-in-');
    await cp(EXAMPLE_MANIFESTS, stack, { recursive: true });
    // A change for the next render to commit: user values for alpha's (legacy) addons.
    writeFileSync(
      path.join(stack, 'clusterstack.yaml'),
      readFileSync(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8').replace(
        'noProvider: true',
        'noProvider: true\n  addonValues: {mtu: 1400}',
      ),
    );
    const result = await render([stack, '--release-source', EXAMPLE_RELEASES, '--git', repo, '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).changed).toBe(true);
    expect(readFileSync(path.join(repo, 'NOTES.md'), 'utf8')).toBe('my notes\n');
    expect(readFileSync(path.join(repo, 'management', 'scratch', 'draft.yaml'), 'utf8')).toBe('draft: true\n');
    const committed = sandbox.git(repo, 'ls-files');
    expect(committed).not.toMatch(/NOTES\.md|draft\.yaml/);
    expect(sandbox.git(repo, 'status', '--porcelain', '--untracked-files=all').split('\n').sort()).toEqual([
      '?? NOTES.md',
      '?? management/scratch/draft.yaml',
    ]);
  });

  it('refuses an untracked file where the render would write, naming it, and writes nothing', async () => {
    const repo = path.join(await tempDir('csk-inplace-'), 'repo');
    sandbox.git(path.dirname(repo), 'init', '--quiet', '--initial-branch=main', repo);
    writeFileSync(path.join(repo, 'README.md'), 'my readme\n');
    const result = await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--git', repo]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/has untracked files where the render writes \(README\.md\); move them away/);
    expect(readdirSync(repo).sort()).toEqual(['.git', 'README.md']);
    expect(readFileSync(path.join(repo, 'README.md'), 'utf8')).toBe('my readme\n');
    expect(sandbox.head(repo, 'main')).toBe('');
  });

  it('refuses a --path that holds the inputs', async () => {
    const repo = await tempDir('csk-mono-');
    sandbox.git(repo, 'init', '--quiet', '--initial-branch=main');
    await cp(EXAMPLE_MANIFESTS, path.join(repo, 'manifests'), { recursive: true });
    sandbox.git(repo, 'add', '--all');
    sandbox.git(repo, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '-m', 'specs');
    const head = sandbox.head(repo, 'main');
    const result = await render(['manifests', '--release-source', EXAMPLE_RELEASES, '--git', '.'], repo);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /--git .* contains the input .*manifests; publishing there would replace or delete it.*--path/,
    );
    expect(sandbox.head(repo, 'main')).toBe(head);
    // With a --path of its own, the same repository works.
    expect(
      (await render(['manifests', '--release-source', EXAMPLE_RELEASES, '--git', '.', '--path', 'rendered'], repo))
        .code,
    ).toBe(0);
    expect(sandbox.git(repo, 'ls-files', 'manifests').split('\n').sort()).toEqual([
      'manifests/clusters.yaml',
      'manifests/clusterstack.yaml',
    ]);
  });
});

describe('--git in place: what the command line says when the work tree cannot take the render', () => {
  const renderInto = (repo: string, ...flags: string[]) =>
    render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--git', repo, ...flags]);

  it('an edited rendered file: exit 1 naming it, nothing written; --force overwrites it', async () => {
    const repo = await renderedWorkTree();
    const head = sandbox.head(repo, 'main');
    writeFileSync(path.join(repo, 'README.md'), 'my notes on the fleet\n');
    const refused = await renderInto(repo);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `--git ${repo} has uncommitted edits to files the render writes (README.md); commit, stash or discard them, or pass --force to overwrite them`,
    );
    expect(readFileSync(path.join(repo, 'README.md'), 'utf8')).toBe('my notes on the fleet\n');
    expect(sandbox.head(repo, 'main')).toBe(head);
    const forced = await renderInto(repo, '--force');
    expect(forced.code).toBe(0);
    expect(sandbox.git(repo, 'status', '--porcelain')).toBe('');
    expect(sandbox.head(repo, 'main')).toBe(head);
    expect(
      (
        await render([
          EXAMPLE_MANIFESTS,
          '--release-source',
          EXAMPLE_RELEASES,
          '--output',
          path.join(repo, 'x'),
          '--force',
        ])
      ).code,
    ).toBe(2);
  });

  it('a failing pre-commit hook is exit 1, a foreign index.lock exit 3; both leave the work tree as it was', async () => {
    const repo = path.join(await tempDir('csk-inplace-'), 'repo');
    sandbox.git(path.dirname(repo), 'init', '--quiet', '--initial-branch=main', repo);
    writeFileSync(
      path.join(repo, '.git', 'hooks', 'pre-commit'),
      '#!/bin/sh\necho "no YAML without review" >&2\nexit 1\n',
      { mode: 0o755 },
    );
    const hooked = await renderInto(repo);
    expect(hooked.code).toBe(1);
    expect(hooked.stderr).toContain('a commit hook refused the commit (pre-commit in');
    expect(hooked.stderr).toContain('no YAML without review');
    expect(hooked.stderr).not.toMatch(/^\s+at /m);
    expect(readdirSync(repo)).toEqual(['.git']);
    expect(sandbox.git(repo, 'status', '--porcelain', '--untracked-files=all')).toBe('');

    writeFileSync(path.join(repo, '.git', 'index.lock'), '');
    const locked = await renderInto(repo, '--lock-timeout', '0');
    expect(locked.code).toBe(3);
    expect(locked.stderr).toContain(
      `${path.join(repo, '.git', 'index.lock')} exists: another git process is running in this repository`,
    );
    expect(existsSync(path.join(repo, '.git', 'index.lock'))).toBe(true);
    expect(readdirSync(repo)).toEqual(['.git']);
  });

  it('refuses an absolute --path and one that climbs out as a bad flag value (exit 2)', async () => {
    const parent = await tempDir('csk-inplace-');
    for (const value of ['/abs/dir', '../up']) {
      const result = await renderInto(path.join(parent, 'repo'), '--path', value);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`--path "${value}" ${value.startsWith('/') ? 'is absolute' : 'climbs out'}`);
    }
    expect(readdirSync(parent)).toEqual([]);
  });

  it('without git on PATH: says so (exit 1), no stack frames, no repository directory left', async () => {
    const parent = await tempDir('csk-nogit-');
    const result = await runClusterstack(
      ['render', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--git', path.join(parent, 'repo')],
      { env: { PATH: '/nonexistent-bin' } },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('git not found: git init');
    expect(result.stderr).toContain('install git, or put it on PATH');
    expect(result.stderr).not.toMatch(/node:internal|^\s+at /m);
    expect(readdirSync(parent)).toEqual([]);
  });
});
