// The controller killed while it publishes: to a Git remote over HTTP, and through pull requests on
// the fake GitHub. Each controller dies at one named write step of its publisher in turn
// (CLUSTERSTACK_CRASH_AT, gitops/crash-point.ts: it SIGKILLs itself there; its process group goes
// after it, as when a pod dies), and a few more are killed at random points as a check on what the
// steps miss. The remote stays `git fsck`-clean after every kill, no second pull request ever
// appears, and a controller started afterwards (with the same cache directory, as a restarted
// container has) converges: the last change is published and reported, and it shuts down cleanly.
// The Git run and the two halves of the pull-request steps each use their own namespace (--namespace)
// and remote, and run side by side, on a real API server as deploy/'s ServiceAccount.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Condition } from '../../src/api/types.js';
import { copyExampleReleases } from '../support/cli.js';
import { aStack, MERGE } from '../support/controller-fixture.js';
import { bundleCli, spawnController, type ControllerProcess } from '../support/controller-process.js';
import { CONTROLLER_CRASH_STEPS } from '../support/crash-steps.js';
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
/** Random kills besides the steps: the first while starting (clone, fetch, first listing), the others while rendering. */
const GIT_RANDOM_KILLS = 3;
const PR_RANDOM_KILLS = 1;
/** The pull-request steps in two chains that run side by side: the first writes up to the commit, the second pushes and opens. */
const PR_FIRST_HALF = PR_STEPS.slice(0, Math.ceil(PR_STEPS.length / 2));
const PR_SECOND_HALF = PR_STEPS.slice(PR_FIRST_HALF.length);
const PR_NAMESPACES = ['pr-stacks', 'pr-late-stacks'] as const;
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
    bundle = bundleCli();
    git = new GitSandbox();
    // Independent of each other: started together, each assigned as it is up so that afterAll stops it.
    await Promise.all([
      startRealControllerFixture().then((started) => (fx = started)),
      startGitHttpServer({ projectRoot: git.root, token: TOKEN }).then((started) => (server = started)),
      startFakeGitHub({ tokens: [TOKEN] }).then((started) => (github = started)),
      copyExampleReleases().then((copied) => (releases = copied)),
    ]);
    // The controllers run as deploy/'s ServiceAccount.
    kubeconfig = fx.lease.controller.kubeconfigFile;
    await Promise.all(
      ['git-stacks', ...PR_NAMESPACES].map(async (namespace) => {
        await fx.createNamespace(namespace);
        await fx.create(aStack('ferrol', namespace));
        await fx.create(aCluster('alpha', namespace, 'docker-ferrol-1-30-v2'));
      }),
    );
  });

  afterAll(async () => {
    for (const process of running) await process.killHard();
    await server?.close();
    await github?.close();
    await fx?.cleanup();
    git?.cleanup();
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

  /** Kills the controller's process group (its git and helm children too), then checks the remote's objects and refs. */
  async function afterKill(controller: ControllerProcess, bare: string): Promise<void> {
    await controller.killHard();
    running.splice(running.indexOf(controller), 1);
    git.git(bare, 'fsck', '--full', '--strict', '--no-progress');
  }

  /**
   * One controller per step, each publishing a change made before it started and crashing at that
   * step (a step it never reaches fails the test); then `randomKills` more, killed at random
   * points: the first while starting, the others in the reconcile that publishes.
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
    for (const [i, step] of steps.entries()) {
      await moveAlpha(namespace, `crash-${i}.test`);
      const controller = spawnController(bundle, args, { ...env, CLUSTERSTACK_CRASH_AT: step });
      running.push(controller);
      // The crash is the event waited for; the deadline only stops a controller that never gets there.
      const code = await Promise.race([
        controller.exited,
        new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), CONVERGE_MS)),
      ]);
      expect({ step, code, stderr: controller.stderr.join('') }).toEqual({ step, code: null, stderr: '' });
      points.push(`${step} (after ${lastPhase(controller)})`);
      await afterKill(controller, bare);
    }
    for (let i = 0; i < randomKills; i++) {
      await moveAlpha(namespace, `kill-${i}.test`);
      const started = Date.now();
      const controller = spawnController(bundle, args, env);
      running.push(controller);
      if (i === 0) {
        await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 1500)));
      } else {
        await controller.waitForLine((line) => line['phase'] === 'render', CONVERGE_MS);
        await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 700)));
      }
      points.push(`${Date.now() - started}ms after ${lastPhase(controller)}`);
      await afterKill(controller, bare);
    }
    return points;
  }

  it.concurrent(
    `keeps the remote fsck-clean through a crash at each of ${GIT_STEPS.length} write steps and ${GIT_RANDOM_KILLS} random kills, and converges afterwards`,
    async () => {
      const namespace = 'git-stacks';
      const bare = git.bareRepo('fleet');
      git.git(bare, 'config', 'http.receivepack', 'true');
      const cacheDir = path.join(git.root, 'cache-git');
      const args = ['--git', `${server.url}/fleet.git`, '--namespace', namespace];
      const points = await killRepeatedly(
        GIT_STEPS,
        GIT_RANDOM_KILLS,
        namespace,
        args,
        environment(cacheDir),
        bare,
        randomFrom(seed),
      );
      console.info(`kill test (seed ${seed}): killed at ${points.join('; ')}`);

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
    },
  );

  /**
   * Pull-request mode, through a crash at each of `steps` and `randomKills` random kills, then a
   * start that converges: one pull request, never two. Each half of the steps runs as its own chain
   * (its namespace, remote and repository), side by side: a chain's starts wait on one another,
   * the two chains on nothing.
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

  it.concurrent(
    `opens one pull request, never two, through a crash at each of the first ${PR_FIRST_HALF.length} pull-request write steps`,
    () => pullRequestChain(PR_NAMESPACES[0], 'fleet-pr', PR_FIRST_HALF, 0, randomFrom(seed + 1)),
  );

  it.concurrent(
    `opens one pull request, never two, through a crash at each of the last ${PR_SECOND_HALF.length} pull-request write steps and ${PR_RANDOM_KILLS} random kills`,
    () => pullRequestChain(PR_NAMESPACES[1], 'fleet-pr-late', PR_SECOND_HALF, PR_RANDOM_KILLS, randomFrom(seed + 2)),
  );
});
