// kill -9 at random points while the CLI publishes, 20 times per target: an --output directory, an
// in-place --git work tree and a bare repository (through the clone in the cache). After every
// kill the target holds wholly the old or wholly the new render and git fsck finds nothing wrong;
// afterwards a normal run converges and the run after it changes nothing.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, readTree, runClusterstack, tempDir } from '../support/cli.js';
import { removeCliBundle, startCli } from '../support/cli-process.js';
import { GitSandbox } from '../support/git-repos.js';

const KILLS = 20;
const sandbox = new GitSandbox();
afterAll(async () => {
  sandbox.cleanup();
  await removeCliBundle();
});

type Tree = Record<string, string>;


/**
 * The two renders the runs alternate between: the quick start, and the quick start with Flux wiring
 * (a few dozen files more). Switching costs no helm process (the units are reused), so the rounds
 * spend their time publishing, not rendering.
 */
const RENDERS = { a: [] as string[], b: ['--gitops', 'flux', '--gitops-url', 'https://git.example.com/fleet.git'] };
let trees: { a: Tree; b: Tree };

beforeAll(async () => {
  const reference = async (flags: string[]): Promise<Tree> => {
    const out = path.join(await tempDir('csk-kill-ref-'), 'out');
    expect((await runClusterstack(['render', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--output', out, ...flags])).code).toBe(0);
    return readTree(path.join(out, 'current'));
  };
  trees = { a: await reference(RENDERS.a), b: await reference(RENDERS.b) };
  expect(Object.keys(trees.b).length - Object.keys(trees.a).length).toBeGreaterThan(10);
});

interface Target {
  /** Flags naming the target. */
  flags: string[];
  /** The lock file a run holds while it reads and publishes (its appearance starts the kill clock). */
  lockFile(): string | undefined;
  /** True while the run writes the target itself (staging a tree, writing the work tree, committing). */
  writing(): boolean;
  /** What a reader or Flux would see now. */
  published(): Promise<Tree | undefined>;
  /** Everything that must hold after every kill besides the published tree. */
  consistent(): void;
}

function fsckClean(repo: string): void {
  // fsck reports dangling objects of interrupted commits as information, not as damage.
  const report = sandbox.git(repo, 'fsck', '--no-progress', '--no-dangling');
  expect(report).not.toMatch(/error|missing|broken|corrupt/i);
}

function gitTree(repo: string): Tree | undefined {
  return sandbox.head(repo, 'main') === '' ? undefined : sandbox.files(repo, 'main');
}

/** The clone's branch main points at a commit the remote's does not (a commit not pushed yet). */
function aheadOf(gitDir: string, remote: string): boolean {
  const ref = (dir: string): string => {
    try {
      return readFileSync(path.join(dir, 'refs', 'heads', 'main'), 'utf8').trim();
    } catch {
      return '';
    }
  };
  const local = ref(gitDir);
  return local !== '' && local !== ref(remote);
}

async function killRepeatedly(target: Target, cache: string): Promise<{ killed: number; publishedWhileKilled: number }> {
  let killed = 0;
  let spanMs = 1500;
  let changes = 0;
  // Until KILLS runs were killed: a run with nothing to publish, or one that finished before its
  // kill time, is not counted (but must have succeeded).
  // A fast publish often ends before its kill time: up to six rounds per kill.
  for (let round = 0; killed < KILLS && round < KILLS * 6; round++) {
    // Always the render the target does not hold, so every run has something to publish.
    const before = await target.published();
    const flags = JSON.stringify(before) === JSON.stringify(trees.a) ? RENDERS.b : RENDERS.a;
    const run = await startCli(['render', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, ...target.flags, ...flags, '--cache-dir', cache]);
    let exited = false;
    void run.done.then(() => (exited = true));
    // Wait for the run to take the target's lock, then kill it at a random point of what follows;
    // every other round, aim at the few milliseconds in which it writes the target itself.
    const started = Date.now();
    const until = async (condition: () => boolean): Promise<void> => {
      while (!exited && !condition() && Date.now() - started < 30_000) await new Promise((resolve) => setTimeout(resolve, 2));
    };
    await until(() => target.lockFile() !== undefined);
    const lockedAt = Date.now();
    if (round % 2 === 1) {
      // Writing a tree of the quick start takes a few milliseconds: kill within them.
      await until(() => target.writing());
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
    } else {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * spanMs));
    }
    if (!exited) {
      run.child.kill('SIGKILL');
      killed += 1;
    }
    const result = await run.done;
    // A run that was not killed must have succeeded, whatever the killed ones before it left.
    if (result.signal === null) expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    // A run that finished on its own tells how long the rest takes: aim the next kills inside it.
    if (result.signal === null) spanMs = Math.max(100, Date.now() - lockedAt);
    const now = await target.published();
    expect([trees.a, trees.b]).toContainEqual(now);
    if (JSON.stringify(now) !== JSON.stringify(before)) changes += 1;
    target.consistent();
  }
  expect(killed).toBe(KILLS);
  return { killed, publishedWhileKilled: changes };
}

async function converge(target: Target, cache: string): Promise<void> {
  const first = await runClusterstack(['render', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, ...target.flags, '--cache-dir', cache, '--json']);
  expect(first.stderr).toBe('');
  expect(first.code).toBe(0);
  expect(await target.published()).toEqual(trees.a);
  const again = await runClusterstack(['render', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, ...target.flags, '--cache-dir', cache, '--json']);
  expect(JSON.parse(again.stdout)).toMatchObject({ changed: false });
  target.consistent();
}

describe.concurrent('kill -9 while publishing', { timeout: 240_000 }, () => {
  it(`to --output, ${KILLS} times`, async () => {
    const out = path.join(await tempDir('csk-kill-out-'), 'out');
    const cache = await tempDir('csk-kill-cache-');
    const target: Target = {
      flags: ['--output', out],
      lockFile: () => (existsSync(path.join(out, '.clusterstack', 'lock')) ? path.join(out, '.clusterstack', 'lock') : undefined),
      writing: () => readdirSync(path.join(out, '.clusterstack')).some((entry) => entry.startsWith('staging-') || entry.startsWith('current-')),
      published: async () => (existsSync(path.join(out, 'current')) ? readTree(path.join(out, 'current')) : undefined),
      consistent: () => expect(readdirSync(out).filter((entry) => entry !== '.clusterstack')).toEqual(['current']),
    };
    expect((await runClusterstack(['render', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, ...target.flags, '--cache-dir', cache])).code).toBe(0);
    const { publishedWhileKilled } = await killRepeatedly(target, cache);
    console.info(`--output: ${KILLS} runs killed; ${publishedWhileKilled} times the target changed meanwhile`);
    await converge(target, cache);
    // What crashed runs left behind is gone; the tree before last stays for slow readers.
    const state = readdirSync(path.join(out, '.clusterstack')).sort();
    expect(state).toEqual(['output.json', 'trees']);
    expect(readdirSync(path.join(out, '.clusterstack', 'trees')).length).toBeLessThanOrEqual(2);
  });

  it(`to an in-place --git work tree, ${KILLS} times`, async () => {
    const repo = path.join(await tempDir('csk-kill-repo-'), 'repo');
    const cache = await tempDir('csk-kill-cache-');
    const target: Target = {
      flags: ['--git', repo],
      lockFile: () => (existsSync(path.join(repo, '.git', 'clusterstack.lock')) ? 'held' : undefined),
      writing: () => existsSync(path.join(repo, '.git', 'clusterstack-publish.json')),
      published: async () => gitTree(repo),
      consistent: () => fsckClean(repo),
    };
    expect((await runClusterstack(['render', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, ...target.flags, '--cache-dir', cache])).code).toBe(0);
    const { publishedWhileKilled } = await killRepeatedly(target, cache);
    console.info(`in-place --git: ${KILLS} runs killed; ${publishedWhileKilled} times the target changed meanwhile`);
    await converge(target, cache);
    expect(sandbox.git(repo, 'status', '--porcelain', '--untracked-files=all')).toBe('');
    expect(existsSync(path.join(repo, '.git', 'clusterstack-publish.json'))).toBe(false);
  });

  it(`to a bare repository, ${KILLS} times`, async () => {
    const remote = sandbox.bareRepo(`kill-${Date.now()}`);
    const cache = await tempDir('csk-kill-cache-');
    const clones = path.join(cache, 'git');
    const target: Target = {
      flags: ['--git', remote],
      lockFile: () => (existsSync(clones) && readdirSync(clones).some((entry) => entry.endsWith('.lock')) ? 'held' : undefined),
      // From just before the commit (the message file of `git commit`) until the push has landed
      // (the clone's branch is ahead of the remote's; a commit from the known tree is made by
      // fast-import, with no message file).
      writing: () => readdirSync(clones).some((entry) => existsSync(path.join(clones, entry, '.git', 'CLUSTERSTACK_COMMIT_MSG')) || aheadOf(path.join(clones, entry, '.git'), remote)),
      published: async () => gitTree(remote),
      consistent: () => fsckClean(remote),
    };
    expect((await runClusterstack(['render', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, ...target.flags, '--cache-dir', cache])).code).toBe(0);
    const { publishedWhileKilled } = await killRepeatedly(target, cache);
    console.info(`bare --git: ${KILLS} runs killed; ${publishedWhileKilled} times the target changed meanwhile`);
    await converge(target, cache);
  });
});
