// The controller killed with SIGKILL (its whole process group, as when a pod dies) at random points
// while it publishes, 20 times in all: to a Git remote over HTTP, and through pull requests on the
// fake GitHub. The remote stays `git fsck`-clean after every kill, no second pull request ever
// appears, and a controller started afterwards (with the same cache directory, as a restarted
// container has) converges: the last change is published and reported, and it shuts down cleanly.
// The two runs use their own namespace (--namespace) and remote, and run side by side.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Condition } from '../../src/api/types.js';
import { copyExampleReleases } from '../support/cli.js';
import { aCluster, aStack, CAPI, GROUP, MERGE, waitFor } from '../support/controller-fixture.js';
import { bundleCli, spawnController, type ControllerProcess } from '../support/controller-process.js';
import { startFakeGitHub, type FakeGitHub } from '../support/fake-github/index.js';
import { startFakeKubeApi, type FakeKubeApi } from '../support/fake-kube-api/index.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GitSandbox } from '../support/git-repos.js';

const TOKEN = 'ghp_controller-kill-token';
const OWNER = 'fleet-org';
const GIT_KILLS = 14;
const PR_KILLS = 6;

/** A deterministic pseudo-random sequence, so that a failing run can be repeated (the seed is printed). */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

// Tens of real process starts and kills: far longer than a unit test, so its own time limit.
describe('controller killed while publishing', { timeout: 240_000 }, () => {
  let api: FakeKubeApi;
  let git: GitSandbox;
  let server: GitHttpServer;
  let github: FakeGitHub;
  let bundle: string;
  let kubeconfig: string;
  let releases: string;
  let custom: CustomObjectsApi;
  const running: ControllerProcess[] = [];
  const seed = Number(process.env.CSK_KILL_SEED ?? Date.now() % 100_000);

  beforeAll(async () => {
    bundle = bundleCli();
    api = await startFakeKubeApi();
    git = new GitSandbox();
    server = await startGitHttpServer({ projectRoot: git.root, token: TOKEN });
    github = await startFakeGitHub({ tokens: [TOKEN] });
    releases = await copyExampleReleases();
    kubeconfig = path.join(git.root, 'kubeconfig.yaml');
    await writeFile(kubeconfig, api.kubeConfigYaml());
    const kc = api.kubeConfig();
    custom = kc.makeApiClient(CustomObjectsApi);
    for (const namespace of ['git-stacks', 'pr-stacks']) {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
      await custom.createNamespacedCustomObject({ ...GROUP, plural: 'clusterstacks', namespace, body: aStack('ferrol', namespace) });
      await custom.createNamespacedCustomObject({ ...CAPI, plural: 'clusters', namespace, body: aCluster('alpha', namespace, 'docker-ferrol-1-30-v2') });
    }
  });

  afterAll(async () => {
    for (const process of running) await process.killHard();
    await server?.close();
    await github?.close();
    await api?.close();
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

  const moveAlpha = (namespace: string, host: string) => custom.patchNamespacedCustomObject({ ...CAPI, plural: 'clusters', namespace, name: 'alpha', body: { spec: { controlPlaneEndpoint: { host } } } }, MERGE());
  const alphaPublished = (namespace: string) => ((api.get('clusterstack.x-k8s.io/v1alpha1', 'ClusterAddon', namespace, 'alpha') as { status?: { conditions?: Condition[] } } | undefined)?.status?.conditions ?? []).find((c) => c.type === 'ManifestsPublished');
  // Under load every kill may land before the first push: then the branch does not exist yet.
  const onBranch = (bare: string, branch: string, namespace: string) => Object.entries(git.head(bare, branch) === '' ? {} : git.files(bare, branch)).filter(([file]) => file.startsWith(`clusters/${namespace}/alpha/`)).map(([, content]) => content).join('\n');

  /**
   * Kills `count` controllers, each at a random point: a quarter of them while starting (clone,
   * fetch, first listing), the others in the reconcile that publishes the change made before it started.
   */
  async function killRepeatedly(count: number, namespace: string, args: string[], env: Record<string, string>, bare: string, random: () => number): Promise<string[]> {
    const points: string[] = [];
    for (let i = 0; i < count; i++) {
      await moveAlpha(namespace, `kill-${i}.test`);
      const started = Date.now();
      const controller = spawnController(bundle, args, env);
      running.push(controller);
      if (i % 4 === 0) {
        await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 1500)));
      } else {
        await controller.waitForLine((line) => line['phase'] === 'render');
        await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 700)));
      }
      const last = controller.lines.filter((line) => typeof line['phase'] === 'string' || typeof line['msg'] === 'string').at(-1);
      await controller.killHard();
      running.splice(running.indexOf(controller), 1);
      points.push(`${Date.now() - started}ms after ${String(last?.['phase'] ?? last?.['msg'] ?? 'start')}`);
      // After every kill: the remote's objects and refs are intact.
      git.git(bare, 'fsck', '--full', '--strict', '--no-progress');
    }
    return points;
  }

  it.concurrent(`keeps the remote fsck-clean through ${GIT_KILLS} kills and converges afterwards`, async () => {
    const namespace = 'git-stacks';
    const bare = git.bareRepo('fleet');
    git.git(bare, 'config', 'http.receivepack', 'true');
    const cacheDir = path.join(git.root, 'cache-git');
    const args = ['--git', `${server.url}/fleet.git`, '--namespace', namespace];
    const points = await killRepeatedly(GIT_KILLS, namespace, args, environment(cacheDir), bare, randomFrom(seed));
    console.info(`kill test (seed ${seed}): killed at ${points.join('; ')}`);

    await moveAlpha(namespace, 'converged.test');
    const controller = spawnController(bundle, args, environment(cacheDir));
    running.push(controller);
    await waitFor(() => onBranch(bare, 'main', namespace).includes('converged.test') && alphaPublished(namespace)?.message?.includes(git.head(bare, 'main')) === true, 'the restarted controller to publish and report the last change', 30_000);
    expect(alphaPublished(namespace)).toMatchObject({ status: 'True', reason: 'ManifestsPublished' });
    expect(await controller.terminate()).toBe(0);
    running.splice(running.indexOf(controller), 1);
    git.git(bare, 'fsck', '--full', '--strict', '--no-progress');
  });

  it.concurrent(`opens one pull request, never two, through ${PR_KILLS} kills in pull-request mode`, async () => {
    const namespace = 'pr-stacks';
    const bare = git.bareRepo('fleet-pr', { branch: 'main', files: { 'README.md': 'fleet\n' } });
    git.git(bare, 'config', 'http.receivepack', 'true');
    github.addRepo(OWNER, 'fleet-pr');
    const cacheDir = path.join(git.root, 'cache-pr');
    const args = ['--git', `${server.url}/fleet-pr.git`, '--pull-request', '--github-repo', `${OWNER}/fleet-pr`, '--namespace', namespace];
    const env = environment(cacheDir, { GITHUB_TOKEN: TOKEN, GITHUB_API_URL: github.apiUrl });
    const points = await killRepeatedly(PR_KILLS, namespace, args, env, bare, randomFrom(seed + 1));
    console.info(`kill test, pull requests (seed ${seed}): killed at ${points.join('; ')}`);
    const open = () => github.pulls(OWNER, 'fleet-pr').filter((pull) => pull.state === 'open');
    expect(open().length).toBeLessThanOrEqual(1);

    await moveAlpha(namespace, 'converged-pr.test');
    const controller = spawnController(bundle, args, env);
    running.push(controller);
    await waitFor(() => open().length === 1 && onBranch(bare, open()[0]!.headRef, namespace).includes('converged-pr.test'), 'the pull request to carry the last change', 30_000);
    expect(await controller.terminate()).toBe(0);
    running.splice(running.indexOf(controller), 1);
    // One pull request per head branch, ever: a duplicate would show as a second (open or closed) one.
    const heads = github.pulls(OWNER, 'fleet-pr').map((pull) => pull.headRef);
    expect(new Set(heads).size).toBe(heads.length);
    git.git(bare, 'fsck', '--full', '--strict', '--no-progress');
  });
});
