// The --output swap: readers see a whole tree, the directory itself is never renamed (so a mount
// point works), and a work tree left mixed by kill -9 is repaired before the next run reads it.
import { execFile } from 'node:child_process';
import { watch } from 'node:fs';
import { mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DirectoryPublisher } from '../../gitops/directory-publisher.js';
import type { RenderedTree } from '../../src/output/rendered-tree.js';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, readTree, runClusterstack, tempDir } from '../support/cli.js';
import { cliCommand, cliEnvironment, REPO_ROOT, removeCliBundle, startCli } from '../support/cli-process.js';
import { GitSandbox } from '../support/git-repos.js';

const sandbox = new GitSandbox();
afterAll(async () => {
  sandbox.cleanup();
  await removeCliBundle();
});

function aTree(label: string, files: number): RenderedTree {
  return new Map(Array.from({ length: files }, (_, index) => [`clusters/c${index}/cm.yaml`, `${label} ${index}\n`]));
}

describe('readers of --output', () => {
  it('see wholly the old or wholly the new tree while trees are swapped under them', async () => {
    const out = path.join(await tempDir('csk-readers-'), 'out');
    const publisher = new DirectoryPublisher(out);
    const trees = [aTree('old', 40), aTree('new', 25)];
    await publisher.publish(trees[0]!, { title: '', body: '', trailers: {} });
    const expected = trees.map((tree) => Object.fromEntries(tree));
    let publishing = true;
    const writer = (async () => {
      for (let round = 1; round <= 30; round++) {
        await publisher.readPrevious();
        await publisher.publish(trees[round % 2]!, { title: '', body: '', trailers: {} });
      }
      publishing = false;
    })();
    let reads = 0;
    while (publishing) {
      // A reader resolves `current` once and reads from what it resolved.
      const tree = await readTree(await realpath(path.join(out, 'current')));
      expect(expected).toContainEqual(tree);
      reads += 1;
    }
    await writer;
    expect(reads).toBeGreaterThan(3);
  });
});

describe('--output on a mount point', () => {
  it('publishes and replaces the tree without renaming the directory (tmpfs in a mount namespace)', async () => {
    const root = await tempDir('csk-mount-');
    const out = path.join(root, 'volume');
    await mkdir(out);
    const cache = await tempDir('csk-cache-');
    const render = async (inputs: string): Promise<string[]> => {
      const { command, args } = await cliCommand([
        'render',
        inputs,
        '--release-source',
        EXAMPLE_RELEASES,
        '--output',
        out,
        '--cache-dir',
        cache,
        '--json',
      ]);
      return [command, ...args];
    };
    const oneStack = await tempDir('csk-one-');
    await writeFile(
      path.join(oneStack, 'clusterstack.yaml'),
      await readFile(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8'),
    );
    await writeFile(
      path.join(oneStack, 'clusters.yaml'),
      (await readFile(path.join(EXAMPLE_MANIFESTS, 'clusters.yaml'), 'utf8'))
        .split(/^---$/m)
        .filter((doc) => !/name: charlie\n/.test(doc))
        .join('---'),
    );
    const quote = (argv: string[]): string => argv.map((arg) => `'${arg.replaceAll("'", "'\\''")}'`).join(' ');
    // Everything happens inside one mount namespace: the tmpfs (and its files) vanish with it.
    const script = [
      'set -e',
      `mount -t tmpfs tmpfs ${quote([out])}`,
      `${quote(await render(EXAMPLE_MANIFESTS))} > ${quote([path.join(root, 'first.json')])}`,
      `${quote(await render(oneStack))} > ${quote([path.join(root, 'second.json')])}`,
      `grep -c ' ${out} tmpfs ' /proc/self/mounts`,
      `ls -A ${quote([out])}`,
      `ls ${quote([path.join(out, 'current', 'clusters', 'cluster-stacks')])}`,
    ].join('\n');
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      execFile(
        'unshare',
        ['--user', '--map-root-user', '--mount', 'sh', '-c', script],
        { env: cliEnvironment(), cwd: REPO_ROOT },
        (error, stdout, stderr) => {
          if (error && typeof error.code !== 'number') reject(error);
          else resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
        },
      );
    });
    expect(result.stderr).not.toMatch(/EBUSY|error/i);
    expect(result.code).toBe(0);
    const [mounted, ...lines] = result.stdout.trim().split('\n');
    expect(mounted).toBe('1');
    expect(lines).toEqual(['.clusterstack', 'current', 'alpha', 'bravo']);
    expect(JSON.parse(await readFile(path.join(root, 'first.json'), 'utf8'))).toMatchObject({ changed: true });
    expect(JSON.parse(await readFile(path.join(root, 'second.json'), 'utf8'))).toMatchObject({
      changed: true,
      files: { removed: expect.arrayContaining(['clusters/cluster-stacks/charlie/cni/daemonset-kindnet.yaml']) },
    });
  });
});

describe('--git in place after kill -9', () => {
  it('repairs a work tree left half-written before reading it, and commits the render cleanly', async () => {
    const repo = path.join(await tempDir('csk-killed-'), 'repo');
    const cache = await tempDir('csk-cache-');
    const oneStack = await tempDir('csk-one-');
    await writeFile(
      path.join(oneStack, 'clusterstack.yaml'),
      await readFile(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8'),
    );
    await writeFile(
      path.join(oneStack, 'clusters.yaml'),
      (await readFile(path.join(EXAMPLE_MANIFESTS, 'clusters.yaml'), 'utf8'))
        .split(/^---$/m)
        .filter((doc) => !/name: alpha\n/.test(doc))
        .join('---'),
    );
    expect(
      (
        await runClusterstack([
          'render',
          oneStack,
          '--release-source',
          EXAMPLE_RELEASES,
          '--git',
          repo,
          '--cache-dir',
          cache,
        ])
      ).code,
    ).toBe(0);
    const head = sandbox.head(repo, 'main');
    await writeFile(path.join(repo, 'NOTES.md'), 'mine, untracked\n');

    // Kill the next run the moment it starts writing the work tree (its journal appears).
    let killedWhileWriting = false;
    for (let attempt = 0; attempt < 5 && !killedWhileWriting; attempt++) {
      const run = await startCli([
        'render',
        EXAMPLE_MANIFESTS,
        '--release-source',
        EXAMPLE_RELEASES,
        '--git',
        repo,
        '--cache-dir',
        cache,
      ]);
      const watcher = watch(path.join(repo, '.git'), (_event, name) => {
        if (name === 'clusterstack-publish.json') run.child.kill('SIGKILL');
      });
      const result = await run.done;
      watcher.close();
      killedWhileWriting = result.signal === 'SIGKILL' && sandbox.head(repo, 'main') === head;
    }
    expect(killedWhileWriting).toBe(true);
    expect(sandbox.git(repo, 'fsck', '--no-progress')).not.toMatch(/error|missing|broken/i);

    const repaired = await runClusterstack([
      'render',
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--git',
      repo,
      '--cache-dir',
      cache,
      '--json',
    ]);
    expect(repaired.code).toBe(0);
    const report = JSON.parse(repaired.stdout) as { changed: boolean; commit: string };
    expect(report.changed).toBe(true);
    expect(sandbox.git(repo, 'rev-parse', `${report.commit}^`)).toBe(head);
    expect(sandbox.git(repo, 'status', '--porcelain')).toBe('?? NOTES.md');
    expect(sandbox.git(repo, 'ls-tree', '-r', '--name-only', 'HEAD')).toContain(
      'clusters/cluster-stacks/alpha/cluster-addon/daemonset-kindnet.yaml',
    );
    expect(await readFile(path.join(repo, 'NOTES.md'), 'utf8')).toBe('mine, untracked\n');
  });
});
