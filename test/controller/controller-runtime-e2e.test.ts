// The controller driven by its runtime: informers enqueue, the queue batches, and of two replicas
// started at once only the one holding the Lease reconciles, publishes and writes.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { GitPublisher } from '../../gitops/git-publisher.js';
import { createHelmDependencies } from '../../renderers/helm-dependencies.js';
import type { ClusterAddon, ClusterStackRelease } from '../../src/api/types.js';
import { runController, type ControllerRuntime } from '../../src/controller/run-controller.js';
import { createKubeClient } from '../../src/controller/runtime/kube-client.js';
import { createSourceOpener } from '../../src/sources/open-release-source.js';
import { copyExampleReleases } from '../support/cli.js';
import { startFakeKubeApi, type FakeKubeApi } from '../support/fake-kube-api/index.js';
import { GitSandbox } from '../support/git-repos.js';
import { waitOnChanges } from '../support/controller-fixture.js';

const NS = 'cluster-stacks';

describe('controller runtime', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('reconciles from watch events with one replica leading, and publishes a burst in one commit', async () => {
    const api: FakeKubeApi = await startFakeKubeApi();
    cleanups.push(() => api.close());
    const git = new GitSandbox();
    cleanups.push(() => git.cleanup());
    const remote = git.bareRepo('gitops');
    const work = await mkdtemp(path.join(os.tmpdir(), 'csk-runtime-'));
    cleanups.push(() => rm(work, { recursive: true, force: true }));
    const releases = await copyExampleReleases();
    const kubeConfig = api.kubeConfig();
    await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'clusterstack-system' } } });

    const start = (identity: string): Promise<ControllerRuntime> =>
      runController({
        kubeConfig,
        kube: createKubeClient({ kubeConfig, identity }),
        publisher: new GitPublisher({
          repository: remote,
          branch: 'main',
          path: '',
          workDir: path.join(work, identity, 'clone'),
          author: { name: 'clusterstack', email: 'clusterstack@example.test' },
          env: { PATH: process.env.PATH ?? '', HOME: work },
        }),
        revisionKind: 'commit',
        defaultSource: releases,
        openSource: createSourceOpener({ cacheDir: path.join(work, identity, 'cache') }),
        workDir: path.join(work, identity, 'cache'),
        helm: createHelmDependencies({ pathEnv: process.env.PATH ?? '', workDir: path.join(work, identity, 'helm') }),
        secrets: 'refuse',
        engine: 'none',
        outputPath: '',
        argocdNamespace: 'argocd',
        logger: pino({ level: 'silent' }),
        batchWindowMs: 300,
        leaderElection: {
          namespace: 'clusterstack-system',
          name: 'clusterstack-gitops-controller',
          identity,
          leaseDurationMs: 3000,
          renewDeadlineMs: 2000,
          retryPeriodMs: 200,
        },
        health: { port: 0, host: '127.0.0.1' },
      });
    const replicas = await Promise.all([start('replica-a'), start('replica-b')]);
    cleanups.push(async () => {
      for (const replica of replicas) await replica.stop();
    });
    await waitOnChanges(api.onChange, () => replicas.some((replica) => replica.isLeader()), 'a leader');

    // A burst: the stack and two Clusters within the batch window.
    const custom = kubeConfig.makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      group: 'clusterstack.x-k8s.io',
      version: 'v1alpha1',
      plural: 'clusterstacks',
      namespace: NS,
      body: {
        apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
        kind: 'ClusterStack',
        metadata: { name: 'ferrol' },
        spec: { provider: 'docker', name: 'ferrol', kubernetesVersion: '1.30', versions: ['v2'], noProvider: true },
      },
    });
    for (const [name, className] of [
      ['alpha', 'docker-ferrol-1-30-v2'],
      ['bravo', 'docker-ferrol-1-30-v3'],
    ]) {
      await custom.createNamespacedCustomObject({
        group: 'cluster.x-k8s.io',
        version: 'v1beta1',
        plural: 'clusters',
        namespace: NS,
        body: {
          apiVersion: 'cluster.x-k8s.io/v1beta1',
          kind: 'Cluster',
          metadata: { name },
          spec: {
            controlPlaneEndpoint: { host: `${name}.test`, port: 6443 },
            clusterNetwork: { pods: { cidrBlocks: ['10.0.0.0/16'] } },
            topology: { class: className, version: 'v1.30.4' },
          },
        },
      });
    }

    const addon = (name: string) =>
      api.get('clusterstack.x-k8s.io/v1alpha1', 'ClusterAddon', NS, name) as ClusterAddon | undefined;
    await waitOnChanges(
      api.onChange,
      () =>
        addon('alpha')?.status?.conditions?.some((c) => c.type === 'ManifestsPublished' && c.status === 'True') ===
          true && addon('bravo')?.status !== undefined,
      'both ClusterAddons published',
    );
    const releasesNow = api.list(
      'clusterstack.x-k8s.io/v1alpha1',
      'ClusterStackRelease',
      NS,
    ) as unknown as ClusterStackRelease[];
    expect(releasesNow.map((release) => release.metadata.name)).toEqual([
      'docker-ferrol-1-30-v2',
      'docker-ferrol-1-30-v3',
    ]);
    expect(git.commitCount(remote, 'main')).toBe(1);
    // It never conflicted with its own writes (finalizer, then status, then the next reconcile on a lagging cache).
    expect(
      api.requests
        .filter((request) => request.status === 409 && !request.path.includes('/leases'))
        .map((request) => `${request.method} ${request.path}`),
    ).toEqual([]);

    // Only the leader reconciled.
    const [leader, follower] = replicas[0]!.isLeader() ? [replicas[0]!, replicas[1]!] : [replicas[1]!, replicas[0]!];
    expect(follower.isLeader()).toBe(false);
    const reconciles = (replica: ControllerRuntime) =>
      (['success', 'error', 'requeue'] as const).reduce(
        (sum, result) => sum + replica.metrics.reconciles.value({ result }),
        0,
      );
    expect(reconciles(follower)).toBe(0);
    expect(reconciles(leader)).toBeGreaterThan(0);
    const metrics = await (await fetch(`${leader.healthUrl}/metrics`)).text();
    // A reconcile that did its work and only scheduled its resync counts as a success.
    expect(metrics).toMatch(/clusterstack_reconcile_total\{result="success"\} [1-9]/);
    expect(metrics).toMatch(/clusterstack_leader 1/);
    expect((await fetch(`${leader.healthUrl}/readyz`)).status).toBe(200);

    // A deleted object it owns comes back.
    await custom.deleteNamespacedCustomObject({
      group: 'clusterstack.x-k8s.io',
      version: 'v1alpha1',
      plural: 'clusteraddons',
      namespace: NS,
      name: 'bravo',
    });
    await waitOnChanges(
      api.onChange,
      () => addon('bravo')?.status?.conditions !== undefined,
      'the ClusterAddon recreated',
    );
    expect(git.commitCount(remote, 'main')).toBe(1);

    // The API server goes away and comes back, and watches expire: the informers resume, and the
    // next change is still published.
    await api.stop();
    await api.restart();
    api.expireWatches();
    await new Promise((resolve) => setTimeout(resolve, 100));
    await custom.patchNamespacedCustomObject(
      {
        group: 'cluster.x-k8s.io',
        version: 'v1beta1',
        plural: 'clusters',
        namespace: NS,
        name: 'alpha',
        body: { spec: { controlPlaneEndpoint: { host: 'alpha-moved.test' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitOnChanges(
      api.onChange,
      () => git.commitCount(remote, 'main') === 2,
      'the change after the API server came back',
    );
    expect(leader.isLeader()).toBe(true);
  });
});
