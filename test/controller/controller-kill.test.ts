// The controller killed while it publishes: to a Git remote over HTTP, and through pull requests on
// the fake GitHub. Each controller dies at one named write step of its publisher in turn
// (CLUSTERSTACK_CRASH_AT, gitops/crash-point.ts: it SIGKILLs itself there; its process group goes
// after it, as when a pod dies), and a few more are killed at random points (timed by the
// controller itself, test/support/kill-timer.ts) as a check on what the steps miss. The remote
// stays `git fsck`-clean after every kill, no second pull request ever appears, and a controller
// started afterwards (with the same cache directory, as a restarted container has) converges: the
// last change is published and reported, and it shuts down cleanly.
// Chains of starts that do not depend on each other (the Git steps, the Git random kills, three
// thirds of the pull-request steps) each use their own namespace (--namespace), remote and cache,
// and run side by side, on a real API server as deploy/'s ServiceAccount.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Condition } from '../../src/api/types.js';
import { copyExampleReleases } from '../support/cli.js';
import { aStack, MERGE } from '../support/controller-fixture.js';
import { cliEntry, removeCliBundle } from '../support/cli-process.js';
import { spawnController, type ControllerProcess } from '../support/controller-process.js';
import { CONTROLLER_CRASH_STEPS } from '../support/crash-steps.js';
import type { KillTimerReport } from '../support/kill-timer.js';
import { startFakeGitHub, type FakeGitHub } from '../support/fake-github/index.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GitSandbox } from '../support/git-repos.js';
import {
  aCluster,
  CAPI_V1BETA2,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';

const TOKEN = 'ghp_controller-kill-token';
const OWNER = 'fleet-org';

/** The steps a controller's first publish passes (it reads the branch first, so it commits with fast-import). */
const { git: GIT_STEPS, pullRequest: PR_STEPS } = CONTROLLER_CRASH_STEPS;
/** Random kills besides the steps: the first while starting (clone, fetch, first listing), the others around the publish. */
const GIT_RANDOM_KILLS = 3;
const PR_RANDOM_KILLS = 1;
/**
 * The pull-request steps in three chains that run side by side, two steps each, in order: up to
 * staging, writing the commit, pushing and opening. Each a chain of its own (namespace, remote,
 * repository, cache): a chain's starts wait on one another, the chains on nothing.
 */
const PR_CHAINS = [
  { namespace: 'pr-stacks', repo: 'fleet-pr', steps: PR_STEPS.slice(0, 2), randomKills: PR_RANDOM_KILLS },
  { namespace: 'pr-mid-stacks', repo: 'fleet-pr-mid', steps: PR_STEPS.slice(2, 4), randomKills: 0 },
  { namespace: 'pr-late-stacks', repo: 'fleet-pr-late', steps: PR_STEPS.slice(4), randomKills: 0 },
] as const;
/** The Git steps and the Git random kills: two chains that run side by side. */
const GIT_NAMESPACES = ['git-stacks', 'git-random-stacks'] as const;
/** Generous: under load a controller start and its first publish take many seconds. */
const CONVERGE_MS = 120_000;

/** A deterministic pseudo-random sequence, so that a failing run can be repeated (the seed is printed). */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

// Real controller starts, each to a crash: far longer than a unit test, so its own time limit (at
// load 25 the pull-request half took over 240 s).
describe('controller killed while publishing', { timeout: 600_000 }, () => {
  let fx: RealControllerFixture;
  let git: GitSandbox;
  let server: GitHttpServer;
  let github: FakeGitHub;
  let bundle: string;
  let kubeconfig: string;
  let releases: string;
  const running: ControllerProcess[] = [];
  const seed = Number(process.env.CSK_KILL_SEED ?? Date.now() % 100_000);

  beforeAll(async () => {
    git = new GitSandbox();
    // How long each part of the setup took (printed: at load the API server's can be most of the file's time).
    const began = performance.now();
    const setup: string[] = [];
    const timed = <T>(what: string, started: Promise<T>): Promise<T> =>
      started.then((value) => {
        setup.push(`${what} ${Math.round(performance.now() - began)} ms`);
        return value;
      });
    // Independent of each other: started together, each assigned as it is up so that afterAll stops it.
    await Promise.all([
      timed('bundle', cliEntry()).then((entry) => (bundle = entry)),
      timed('API server', startRealControllerFixture()).then((started) => (fx = started)),
      startGitHttpServer({ projectRoot: git.root, token: TOKEN }).then((started) => (server = started)),
      startFakeGitHub({ tokens: [TOKEN] }).then((started) => (github = started)),
      copyExampleReleases().then((copied) => (releases = copied)),
    ]);
    // The controllers run as deploy/'s ServiceAccount.
    kubeconfig = fx.lease.controller.kubeconfigFile;
    await Promise.all(
      [...GIT_NAMESPACES, ...PR_CHAINS.map((chain) => chain.namespace)].map(async (namespace) => {
        await fx.createNamespace(namespace);
        await fx.create(aStack('ferrol', namespace));
        await fx.create(aCluster('alpha', namespace, 'docker-ferrol-1-30-v2'));
      }),
    );
    console.info(`kill test setup: ${setup.join(', ')}, namespaces ${Math.round(performance.now() - began)} ms`);
  });

  afterAll(async () => {
    for (const process of running) await process.killHard();
    await server?.close();
    await github?.close();
    await fx?.cleanup();
    git?.cleanup();
    await removeCliBundle();
  });

  function environment(cacheDir: string, extra: Record<string, string> = {}): Record<string, string> {
    return {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: path.join(git.root, 'home'),
      KUBECONFIG: kubeconfig,
      CLUSTERSTACK_CACHE_DIR: cacheDir,
      CLUSTERSTACK_RELEASE_SOURCE: releases,
      CLUSTERSTACK_GIT_TOKEN: TOKEN,
      CLUSTERSTACK_METRICS_ADDR: '0',
      CLUSTERSTACK_BATCH_WINDOW: '50ms',
      CLUSTERSTACK_LOG_LEVEL: 'debug',
      ...extra,
    };
  }

  const moveAlpha = (namespace: string, host: string) =>
    fx.custom.patchNamespacedCustomObject(
      {
        ...CAPI_V1BETA2,
        plural: 'clusters',
        namespace,
        name: 'alpha',
        body: { spec: { controlPlaneEndpoint: { host } } },
      },
      MERGE(),
    );
  const alphaPublished = (namespace: string) =>
    (
      (fx.get('ClusterAddon', namespace, 'alpha') as { status?: { conditions?: Condition[] } } | undefined)?.status
        ?.conditions ?? []
    ).find((c) => c.type === 'ManifestsPublished');
  // Under load every kill may land before the first push: then the branch does not exist yet.
  const onBranch = (bare: string, branch: string, namespace: string) =>
    Object.entries(git.head(bare, branch) === '' ? {} : git.files(bare, branch))
      .filter(([file]) => file.startsWith(`clusters/${namespace}/alpha/`))
      .map(([, content]) => content)
      .join('\n');

  /** Where the last log line said the controller was. */
  const lastPhase = (controller: ControllerProcess): string => {
    const last = controller.lines
      .filter((line) => typeof line['phase'] === 'string' || typeof line['msg'] === 'string')
      .at(-1);
    return String(last?.['phase'] ?? last?.['msg'] ?? 'start');
  };

  /** The controller's exit code once it is gone, or 'running' if it is still there after CONVERGE_MS. */
  async function exitedWithin(controller: ControllerProcess): Promise<number | null | 'running'> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<'running'>((resolve) => (timer = setTimeout(() => resolve('running'), CONVERGE_MS)));
    try {
      return await Promise.race([controller.exited, limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kills the controller's process group (its git and helm children too), then checks the remote's objects and refs. */
  async function afterKill(controller: ControllerProcess, bare: string): Promise<void> {
    await controller.killHard();
    running.splice(running.indexOf(controller), 1);
    git.git(bare, 'fsck', '--full', '--strict', '--no-progress');
  }

  /**
   * How far a killed controller got with the change it started for, from its own log (pino writes
   * each line before going on, so what a kill cut off is not there): not yet rendered ('starting':
   * informers, clone, plan, helm), rendered and not yet published ('publishing'), or published
   * ('published': the kill came too late to test anything).
   */
  type Landing = 'starting' | 'publishing' | 'published';
  const landingOf = (controller: ControllerProcess): Landing =>
    controller.lines.some((line) => line['msg'] === 'Published rendered manifests')
      ? 'published'
      : controller.lines.some((line) => line['phase'] === 'render')
        ? 'publishing'
        : 'starting';

  /** When a controller took its cache directory, on its own clock (the pid file's mtime; read before the next start). */
  const claimedAt = (cacheDir: string): number => statSync(path.join(cacheDir, 'controller.pid')).mtimeMs;
  /** A logged phase's line: its time (epoch ms, the controller's clock) and its duration. */
  const phaseLine = (controller: ControllerProcess, phase: string) => {
    const line = controller.lines.find((candidate) => candidate['phase'] === phase);
    return line && typeof line['time'] === 'number' && typeof line['ms'] === 'number'
      ? { time: line['time'], ms: line['ms'] }
      : undefined;
  };

  /**
   * How long a start takes from taking its cache directory to its render's end, as the last start
   * that rendered measured it on its own clock; shared by the chains (they render the same stack).
   * About an unloaded start's until one says.
   */
  let renderedMs = 3000;
  /** Where a controller's time went, and what it says about the next start's pace. */
  const measure = (controller: ControllerProcess, cacheDir: string, spawned: number): string => {
    const claimed = claimedAt(cacheDir);
    const render = phaseLine(controller, 'render');
    if (render) renderedMs = Math.max(50, render.time - claimed);
    return `up ${Math.round(claimed - spawned)} ms, rendered +${render ? Math.round(render.time - claimed) : '-'} ms, gone +${Math.round(Date.now() - claimed)} ms`;
  };

  /**
   * One controller per step, each publishing a change made before it started and crashing at that
   * step (a step it never reaches fails the test); then `randomKills` more, each timed by the
   * controller itself (kill-timer.ts: a thread of its own, from its taking the cache directory, so
   * a busy test worker cannot make it late). The first is aimed before its render's end (while
   * starting), the others around its publish, from how long the last start that rendered took. A
   * kill that came after the publish tested nothing: it is counted and repeated, up to three times
   * per kill, and every random kill must land before its change was published. Each late one
   * halves the aim of those after it (a start at load may be quicker than the last, and the next
   * quicker still), so that lateness alone cannot use up the rounds: after a few, the kill comes
   * within a small part of a start's render, long before its publish.
   */
  async function killRepeatedly(
    steps: readonly string[],
    randomKills: number,
    namespace: string,
    args: string[],
    env: Record<string, string>,
    bare: string,
    random: () => number,
  ): Promise<string[]> {
    const points: string[] = [];
    const cacheDir = env['CLUSTERSTACK_CACHE_DIR']!;
    for (const [i, step] of steps.entries()) {
      await moveAlpha(namespace, `crash-${i}.test`);
      const spawned = Date.now();
      const controller = spawnController(bundle, args, { ...env, CLUSTERSTACK_CRASH_AT: step });
      running.push(controller);
      // The crash is the event waited for; the deadline only stops a controller that never gets there.
      const code = await exitedWithin(controller);
      expect({ step, code, stderr: controller.stderr.join('') }).toEqual({ step, code: null, stderr: '' });
      points.push(`${step} (after ${lastPhase(controller)}; ${measure(controller, cacheDir, spawned)})`);
      await afterKill(controller, bare);
    }
    const reports = mkdtempSync(path.join(git.root, 'kill-reports-'));
    const landings: Record<Landing, number> = { starting: 0, publishing: 0, published: 0 };
    // How long a publish takes once rendered (a pull request's takes longer): a guess until one finishes.
    let publishMs = args.includes('--pull-request') ? 1000 : 300;
    // The kill timer watches it from the start.
    mkdirSync(cacheDir, { recursive: true });
    for (let round = 0; landings.starting + landings.publishing < randomKills && round < randomKills * 4; round++) {
      const aim = landings.starting + landings.publishing;
      await moveAlpha(namespace, `kill-${round}.test`);
      // The first within the first half of the way to the render's end (while starting); the others
      // from 80 % of it to the publish's end (a start may be slower or quicker than the last one).
      const afterMs = Math.floor(
        (aim === 0 ? random() * 0.5 * renderedMs : 0.8 * renderedMs + random() * (0.2 * renderedMs + publishMs)) *
          0.5 ** landings.published,
      );
      const report = path.join(reports, `${round}.json`);
      const spawned = Date.now();
      const controller = spawnController(bundle, args, env, {
        killTimer: { lockDir: cacheDir, lockName: '^controller\\.pid$', afterMs, report },
      });
      running.push(controller);
      // The kill is the event waited for; the deadline only stops a controller whose timer never fires.
      const code = await exitedWithin(controller);
      const timer = existsSync(report) ? (JSON.parse(readFileSync(report, 'utf8')) as KillTimerReport) : 'no report';
      // Killed by its own timer, while it held its cache directory (it never exits by itself).
      expect({ round, code, timer, stderr: controller.stderr.join('') }).toEqual({
        round,
        code: null,
        // Its children go with its process group (afterKill), before the next start.
        timer: expect.objectContaining({ landed: 'mid-publish' }),
        stderr: '',
      });
      const landed = landingOf(controller);
      landings[landed] += 1;
      publishMs = phaseLine(controller, 'publish')?.ms ?? publishMs;
      points.push(
        `${afterMs} ms after its claim: ${landed} (after ${lastPhase(controller)}; ${measure(controller, cacheDir, spawned)})`,
      );
      await afterKill(controller, bare);
    }
    // The minimum: every random kill lands before its change was published, within four rounds
    // each; a regression that makes every kill late fails here.
    expect(landings.starting + landings.publishing).toBe(randomKills);
    if (randomKills > 0)
      points.push(
        `random kills: ${Object.entries(landings)
          .map(([where, count]) => `${count} ${where}`)
          .join(', ')}`,
      );
    return points;
  }

  /**
   * Git mode, through a crash at each of `steps` and `randomKills` random kills, then a start that
   * converges: the last change published and reported in the status. The steps and the random kills
   * are separate chains (each its namespace, remote and cache), side by side.
   */
  async function gitChain(
    namespace: string,
    repo: string,
    steps: readonly string[],
    randomKills: number,
    random: () => number,
  ): Promise<void> {
    const bare = git.bareRepo(repo);
    git.git(bare, 'config', 'http.receivepack', 'true');
    const cacheDir = path.join(git.root, `cache-${repo}`);
    const args = ['--git', `${server.url}/${repo}.git`, '--namespace', namespace];
    const points = await killRepeatedly(steps, randomKills, namespace, args, environment(cacheDir), bare, random);
    console.info(`kill test, commits to ${repo} (seed ${seed}): killed at ${points.join('; ')}`);

    await moveAlpha(namespace, 'converged.test');
    const controller = spawnController(bundle, args, environment(cacheDir));
    running.push(controller);
    await fx.waitFor(
      () =>
        onBranch(bare, 'main', namespace).includes('converged.test') &&
        alphaPublished(namespace)?.message?.includes(git.head(bare, 'main')) === true,
      'the restarted controller to publish and report the last change',
      CONVERGE_MS,
    );
    expect(alphaPublished(namespace)).toMatchObject({ status: 'True', reason: 'ManifestsPublished' });
    expect(await controller.terminate()).toBe(0);
    running.splice(running.indexOf(controller), 1);
    git.git(bare, 'fsck', '--full', '--strict', '--no-progress');
  }

  it.concurrent(
    `keeps the remote fsck-clean through a crash at each of ${GIT_STEPS.length} write steps, and converges afterwards`,
    () => gitChain(GIT_NAMESPACES[0], 'fleet', GIT_STEPS, 0, randomFrom(seed)),
  );

  it.concurrent(`keeps the remote fsck-clean through ${GIT_RANDOM_KILLS} random kills, and converges afterwards`, () =>
    gitChain(GIT_NAMESPACES[1], 'fleet-random', [], GIT_RANDOM_KILLS, randomFrom(seed + 3)),
  );

  /**
   * Pull-request mode, through a crash at each of `steps` and `randomKills` random kills, then a
   * start that converges: one pull request, never two (PR_CHAINS: a third of the steps each).
   */
  async function pullRequestChain(
    namespace: string,
    repo: string,
    steps: readonly string[],
    randomKills: number,
    random: () => number,
  ): Promise<void> {
    const bare = git.bareRepo(repo, { branch: 'main', files: { 'README.md': 'fleet\n' } });
    git.git(bare, 'config', 'http.receivepack', 'true');
    github.addRepo(OWNER, repo);
    const cacheDir = path.join(git.root, `cache-${repo}`);
    const args = [
      '--git',
      `${server.url}/${repo}.git`,
      '--pull-request',
      '--github-repo',
      `${OWNER}/${repo}`,
      '--namespace',
      namespace,
    ];
    const env = environment(cacheDir, { GITHUB_TOKEN: TOKEN, GITHUB_API_URL: github.apiUrl });
    const points = await killRepeatedly(steps, randomKills, namespace, args, env, bare, random);
    console.info(`kill test, pull requests to ${repo} (seed ${seed}): killed at ${points.join('; ')}`);
    const open = () => github.pulls(OWNER, repo).filter((pull) => pull.state === 'open');
    expect(open().length).toBeLessThanOrEqual(1);

    await moveAlpha(namespace, 'converged-pr.test');
    const controller = spawnController(bundle, args, env);
    running.push(controller);
    await fx.waitFor(
      () => open().length === 1 && onBranch(bare, open()[0]!.headRef, namespace).includes('converged-pr.test'),
      'the pull request to carry the last change',
      CONVERGE_MS,
    );
    expect(await controller.terminate()).toBe(0);
    running.splice(running.indexOf(controller), 1);
    // One pull request per head branch, ever: a duplicate would show as a second (open or closed) one.
    const heads = github.pulls(OWNER, repo).map((pull) => pull.headRef);
    expect(new Set(heads).size).toBe(heads.length);
    git.git(bare, 'fsck', '--full', '--strict', '--no-progress');
  }

  for (const [index, { namespace, repo, steps, randomKills }] of PR_CHAINS.entries()) {
    it.concurrent(
      `opens one pull request, never two, through a crash at ${steps.join(' and ')}${randomKills > 0 ? ` and ${randomKills} random kill` : ''}`,
      () => pullRequestChain(namespace, repo, steps, randomKills, randomFrom(seed + 1 + index)),
    );
  }
});
