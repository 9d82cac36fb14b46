// The controller as a real process (the bundled CLI) that loses its lease in an API server outage
// (the API process stopped: connections accepted, nothing answered) longer than the renew deadline
// (10 s): /readyz answers 500 first, then it stops and the process exits with 3 so that Kubernetes
// restarts it, even though requests to the stopped API still hang. Every line it printed is JSON.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { copyExampleReleases } from '../support/cli.js';
import { aCluster, aStack, CAPI, GROUP, waitOnChanges } from '../support/controller-fixture.js';
import { bundleCli, spawnController, type ControllerProcess } from '../support/controller-process.js';
import { startFakeKubeApi, type FakeKubeApi } from '../support/fake-kube-api/index.js';
import { GitSandbox } from '../support/git-repos.js';

const NS = 'cluster-stacks';

describe('the controller process after losing its lease', { timeout: 120_000 }, () => {
  let api: FakeKubeApi | undefined;
  let git: GitSandbox | undefined;
  let controller: ControllerProcess | undefined;
  const dirs: string[] = [];

  afterAll(async () => {
    await controller?.killHard();
    api?.resume();
    await api?.close();
    git?.cleanup();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('reports not-ready, then exits 3; it never stays alive idle, and prints only JSON', async () => {
    const bundle = bundleCli();
    api = await startFakeKubeApi();
    git = new GitSandbox();
    const bare = git.bareRepo('fleet');
    const work = await mkdtemp(path.join(os.tmpdir(), 'csk-exit-'));
    const releases = await copyExampleReleases();
    dirs.push(work, releases);
    const kubeconfig = path.join(work, 'kubeconfig.yaml');
    await writeFile(kubeconfig, api.kubeConfigYaml());
    const kc = api.kubeConfig();
    for (const name of [NS, 'clusterstack-system'])
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    const custom = kc.makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      ...GROUP,
      plural: 'clusterstacks',
      namespace: NS,
      body: aStack('ferrol', NS),
    });
    await custom.createNamespacedCustomObject({
      ...CAPI,
      plural: 'clusters',
      namespace: NS,
      body: aCluster('alpha', NS, 'docker-ferrol-1-30-v2'),
    });

    controller = spawnController(
      bundle,
      [
        '--git',
        bare,
        '--namespace',
        NS,
        '--leader-elect',
        '--lease-namespace',
        'clusterstack-system',
        '--metrics-addr',
        '127.0.0.1:0',
      ],
      {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: work,
        KUBECONFIG: kubeconfig,
        CLUSTERSTACK_CACHE_DIR: path.join(work, 'cache'),
        CLUSTERSTACK_RELEASE_SOURCE: releases,
        CLUSTERSTACK_BATCH_WINDOW: '50ms',
      },
    );
    const started = await controller.waitForLine((line) => line['msg'] === 'Controller started');
    const healthUrl = String(started['health']);
    await controller.waitForLine((line) => line['msg'] === 'became leader');
    const readiness = async (): Promise<number | 'closed'> => {
      try {
        return (await fetch(`${healthUrl}/readyz`, { signal: AbortSignal.timeout(1000) })).status;
      } catch {
        return 'closed';
      }
    };
    await waitOnChanges(
      api.onChange,
      () =>
        (api!.get('clusterstack.x-k8s.io/v1alpha1', 'ClusterAddon', NS, 'alpha') as { status?: unknown } | undefined)
          ?.status !== undefined,
      'the leader to publish',
    );
    expect(await readiness()).toBe(200);

    api.pause();
    const seen: (number | 'closed')[] = [];
    let exitCode: number | null | undefined;
    void controller.exited.then((code) => {
      exitCode = code;
    });
    const deadline = Date.now() + 60_000;
    while (exitCode === undefined && Date.now() < deadline) {
      seen.push(await readiness());
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(exitCode).toBe(3);
    const firstNotReady = seen.indexOf(500);
    expect(firstNotReady).toBeGreaterThanOrEqual(0);
    expect(seen.slice(firstNotReady).every((status) => status !== 200)).toBe(true);
    expect(controller.lines.find((line) => line['msg'] === 'Controller stopped')).toMatchObject({
      reason: 'leadership ended',
      exitCode: 3,
    });
    expect(controller.unparsed).toEqual([]);
    expect(controller.stderr.join('')).toBe('');
  });
});
