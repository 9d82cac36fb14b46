// Two runs against one target take turns through its lock, and neither reports a commit or
// "nothing changed" that is not true; a lock held by a live run is named, a dead run's is taken over.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, runClusterstack, tempDir } from '../support/cli.js';
import { GitSandbox } from '../support/git-repos.js';
import { copyOfSeed } from '../support/seed-copies.js';

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

interface Rendered {
  code: number;
  stderr: string;
  report: { changed: boolean; commit: string | null; summary: string; target: string };
}

async function render(inputs: string, target: string[], extra: string[] = []): Promise<Rendered> {
  const result = await runClusterstack([
    'render',
    inputs,
    '--release-source',
    EXAMPLE_RELEASES,
    ...target,
    '--json',
    ...extra,
  ]);
  return { code: result.code, stderr: result.stderr, report: result.stdout ? JSON.parse(result.stdout) : {} };
}

/** The quick start without the Cluster alpha: a second, different render. */
async function withoutAlpha(): Promise<string> {
  const dir = await tempDir('csk-b-');
  await cp(EXAMPLE_MANIFESTS, dir, { recursive: true });
  const clusters = readFileSync(path.join(dir, 'clusters.yaml'), 'utf8');
  writeFileSync(
    path.join(dir, 'clusters.yaml'),
    clusters
      .split(/^---$/m)
      .filter((doc) => !/name: alpha\n/.test(doc))
      .join('---'),
  );
  return dir;
}

/** An in-place work tree of its own holding the quick start as a first render commits it (rendered once: copyOfSeed). */
function renderedWorkTree(): Promise<string> {
  return copyOfSeed('quick start in place', 'repo', async (repo) => {
    expect((await render(EXAMPLE_MANIFESTS, ['--git', repo])).code).toBe(0);
  });
}

/** The input digest a commit's provenance records. */
function committedDigest(repo: string, commit: string): string {
  return JSON.parse(sandbox.git(repo, 'show', `${commit}:provenance.json`)).inputDigest as string;
}

/** A process that exists for a while (a live lock holder), or has exited (a dead one). */
async function processId(alive: boolean): Promise<{ pid: number; stop: () => void }> {
  const child = spawn('sleep', [alive ? '60' : '0']);
  if (!alive) await new Promise((resolve) => child.on('exit', resolve));
  return { pid: child.pid!, stop: () => child.kill('SIGKILL') };
}

function writeLock(file: string, pid: number): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(
    file,
    `${JSON.stringify({ pid, hostname: os.hostname(), since: '2026-11-23T10:00:00.000Z', command: 'clusterstack render', token: 'someone-else' })}\n`,
  );
}

describe('two renders into one in-place work tree', () => {
  it('with the same inputs: one commit; the other says nothing changed, which is true', async () => {
    const repo = path.join(await tempDir('csk-race-'), 'repo');
    const [first, second] = await Promise.all([
      render(EXAMPLE_MANIFESTS, ['--git', repo]),
      render(EXAMPLE_MANIFESTS, ['--git', repo]),
    ]);
    expect([first.code, second.code]).toEqual([0, 0]);
    expect(sandbox.commitCount(repo, 'main')).toBe(1);
    const [committed, unchanged] = first.report.changed ? [first, second] : [second, first];
    expect(committed.report.commit).toBe(sandbox.head(repo, 'main'));
    expect(unchanged.report).toMatchObject({ changed: false, commit: null, summary: 'nothing changed' });
    expect(sandbox.git(repo, 'status', '--porcelain')).toBe('');
  });

  it('with different inputs: two commits, each holding the render its run reports', async () => {
    const repo = path.join(await tempDir('csk-race-'), 'repo');
    const b = await withoutAlpha();
    const [a, other] = await Promise.all([render(EXAMPLE_MANIFESTS, ['--git', repo]), render(b, ['--git', repo])]);
    expect([a.code, other.code]).toEqual([0, 0]);
    expect(a.report.changed && other.report.changed).toBe(true);
    expect(sandbox.commitCount(repo, 'main')).toBe(2);
    const withAlpha = (commit: string): boolean =>
      sandbox.git(repo, 'ls-tree', '-r', '--name-only', commit).includes('clusters/cluster-stacks/alpha/');
    expect(withAlpha(a.report.commit!)).toBe(true);
    expect(withAlpha(other.report.commit!)).toBe(false);
    expect(committedDigest(repo, a.report.commit!)).not.toBe(committedDigest(repo, other.report.commit!));
    expect(sandbox.git(repo, 'status', '--porcelain')).toBe('');
  });
});

describe('two renders into one --output directory', () => {
  it('take turns: the directory ends up wholly one render, and the later run reports truly', async () => {
    const out = path.join(await tempDir('csk-race-'), 'out');
    const [first, second] = await Promise.all([
      render(EXAMPLE_MANIFESTS, ['--output', out]),
      render(EXAMPLE_MANIFESTS, ['--output', out]),
    ]);
    expect([first.code, second.code]).toEqual([0, 0]);
    expect([first.report.changed, second.report.changed].sort()).toEqual([false, true]);
    expect(readFileSync(path.join(out, 'current', 'README.md'), 'utf8')).toMatch(/cluster-stacks\/alpha/);
  });
});

describe('the lock', () => {
  it('held by a live run: fails at once with --lock-timeout 0, naming the holder (exit 3), and writes nothing', async () => {
    const repo = await renderedWorkTree();
    const head = sandbox.head(repo, 'main');
    const holder = await processId(true);
    try {
      writeLock(path.join(repo, '.git', 'clusterstack.lock'), holder.pid);
      const result = await render(await withoutAlpha(), ['--git', repo], ['--lock-timeout', '0']);
      expect(result.code).toBe(3);
      expect(result.stderr).toContain(
        `is in use by clusterstack render (pid ${holder.pid} on ${os.hostname()}, since 2026-11-23T10:00:00.000Z)`,
      );
      expect(result.stderr).toMatch(/--lock-timeout\. If no such run exists, remove .*\.git\/clusterstack\.lock/);
      expect(sandbox.head(repo, 'main')).toBe(head);
    } finally {
      holder.stop();
    }
  });

  it('waits a bounded time for a live run, then gives up', async () => {
    const out = path.join(await tempDir('csk-held-'), 'out');
    expect((await render(EXAMPLE_MANIFESTS, ['--output', out])).code).toBe(0);
    const holder = await processId(true);
    try {
      writeLock(path.join(out, '.clusterstack', 'lock'), holder.pid);
      const started = Date.now();
      const result = await render(await withoutAlpha(), ['--output', out], ['--lock-timeout', '1s']);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/is in use by clusterstack render .* waited 1 s/);
      expect(readFileSync(path.join(out, 'current', 'README.md'), 'utf8')).toMatch(/cluster-stacks\/alpha/);
    } finally {
      holder.stop();
    }
  });

  it('left by a run that died is taken over', async () => {
    const repo = await renderedWorkTree();
    const dead = await processId(false);
    writeLock(path.join(repo, '.git', 'clusterstack.lock'), dead.pid);
    const result = await render(await withoutAlpha(), ['--git', repo], ['--lock-timeout', '0']);
    expect(result.code).toBe(0);
    expect(result.report.changed).toBe(true);
    expect(sandbox.commitCount(repo, 'main')).toBe(2);
  });
});
