// Outputs are ours alone: --output never replaces a directory it did not write, the inputs or the
// release source; in-place --git never deletes or commits files it does not own.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, runClusterstack, tempDir } from '../support/cli.js';
import { GitSandbox } from '../support/git-repos.js';

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

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
    expect(result.stderr).toContain(`--output ${dir} holds files clusterstack did not write (notes.txt, photos); nothing was written`);
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
    const result = await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--output', dir, '--adopt-output']);
    expect(result.code).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['.clusterstack', 'current', 'lost+found']);
    expect(existsSync(path.join(dir, 'current', 'management', 'cluster-stacks', 'docker-ferrol-1-30-v3'))).toBe(true);
    // Ours from now on: no flag needed.
    expect((await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--output', dir])).code).toBe(0);
  });
});

describe('--git in place owns only what it tracks under --path', () => {
  it('leaves untracked files alone: never deleted, never committed', async () => {
    const repo = path.join(await tempDir('csk-inplace-'), 'repo');
    expect((await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--git', repo])).code).toBe(0);
    writeFileSync(path.join(repo, 'NOTES.md'), 'my notes\n');
    mkdirSync(path.join(repo, 'management', 'scratch'), { recursive: true });
    writeFileSync(path.join(repo, 'management', 'scratch', 'draft.yaml'), 'draft: true\n');
    const stack = await tempDir('csk-in-');
    await cp(EXAMPLE_MANIFESTS, stack, { recursive: true });
    // A change for the next render to commit: user values for alpha's (legacy) addons.
    writeFileSync(path.join(stack, 'clusterstack.yaml'), readFileSync(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8').replace('noProvider: true', 'noProvider: true\n  addonValues: {mtu: 1400}'));
    const result = await render([stack, '--release-source', EXAMPLE_RELEASES, '--git', repo, '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).changed).toBe(true);
    expect(readFileSync(path.join(repo, 'NOTES.md'), 'utf8')).toBe('my notes\n');
    expect(readFileSync(path.join(repo, 'management', 'scratch', 'draft.yaml'), 'utf8')).toBe('draft: true\n');
    const committed = sandbox.git(repo, 'ls-files');
    expect(committed).not.toMatch(/NOTES\.md|draft\.yaml/);
    expect(sandbox.git(repo, 'status', '--porcelain', '--untracked-files=all').split('\n').sort()).toEqual(['?? NOTES.md', '?? management/scratch/draft.yaml']);
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
    expect(result.stderr).toMatch(/--git .* contains the input .*manifests; publishing there would replace or delete it.*--path/);
    expect(sandbox.head(repo, 'main')).toBe(head);
    // With a --path of its own, the same repository works.
    expect((await render(['manifests', '--release-source', EXAMPLE_RELEASES, '--git', '.', '--path', 'rendered'], repo)).code).toBe(0);
    expect(sandbox.git(repo, 'ls-files', 'manifests').split('\n').sort()).toEqual(['manifests/clusters.yaml', 'manifests/clusterstack.yaml']);
  });
});
