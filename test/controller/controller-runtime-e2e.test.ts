// The controller driven by its runtime: informers enqueue, the queue batches, and of two replicas
// started at once only the one holding the Lease reconciles, publishes and writes. On a leased real
// kube-apiserver, both replicas as deploy/'s ServiceAccount; the server is restarted for real (on
// the same port and etcd), which ends every watch and expires their resourceVersions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterAddon } from '../../src/api/types.js';
import type { ControllerRuntime, ControllerRuntimeOptions } from '../../src/controller/run-controller.js';
import { aStack, GROUP, MERGE } from '../support/controller-fixture.js';
import {
  aCluster,
  CAPI_V1BETA2,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';

const NS = 'cluster-stacks';

// Long enough for the leader to keep its Lease through a real API server restart (seconds under load).
const election = (identity: string): Partial<ControllerRuntimeOptions> => ({
  batchWindowMs: 1000,
  leaderElection: {
    namespace: 'clusterstack-system',
    name: 'clusterstack-gitops-controller',
    identity,
    leaseDurationMs: 120_000,
    renewDeadlineMs: 90_000,
    retryPeriodMs: 500,
  },
  health: { port: 0, host: '127.0.0.1' },
});

describe('controller runtime', () => {
  let fx: RealControllerFixture;

  beforeAll(async () => {
    fx = await startRealControllerFixture();
    await fx.createNamespace(NS);
  }, 180_000);

  afterAll(async () => {
    await fx?.cleanup();
  }, 120_000);

  it('reconciles from watch events with one replica leading, and publishes a burst in one commit', async () => {
    const started = new Date();
    const replicas = await Promise.all([
      fx.start('replica-a', election('replica-a')),
      fx.start('replica-b', election('replica-b')),
    ]);
    await fx.waitFor(() => replicas.some((replica) => replica.isLeader()), 'a leader');

    // A burst: the stack and two Clusters within the batch window.
    await Promise.all([
      fx.custom.createNamespacedCustomObject({
        ...GROUP,
        plural: 'clusterstacks',
        namespace: NS,
        body: aStack('ferrol', NS),
      }),
      ...[
        ['alpha', 'docker-ferrol-1-30-v2'],
        ['bravo', 'docker-ferrol-1-30-v3'],
      ].map(([name, className]) =>
        fx.custom.createNamespacedCustomObject({
          ...CAPI_V1BETA2,
          plural: 'clusters',
          namespace: NS,
          body: aCluster(name!, NS, className!),
        }),
      ),
    ]);

    const addon = (name: string) => fx.get('ClusterAddon', NS, name) as ClusterAddon | undefined;
    await fx.waitFor(
      () =>
        addon('alpha')?.status?.conditions?.some((c) => c.type === 'ManifestsPublished' && c.status === 'True') ===
          true && addon('bravo')?.status !== undefined,
      'both ClusterAddons published',
    );
    expect(
      fx.objects('clusterstack.x-k8s.io/v1alpha1', 'ClusterStackRelease', NS).map((release) => release.metadata.name),
    ).toEqual(['docker-ferrol-1-30-v2', 'docker-ferrol-1-30-v3']);
    expect(fx.git.commitCount(fx.remote, 'main')).toBe(1);
    // It never conflicted with its own writes (finalizer, then status, then the next reconcile on a lagging cache).
    expect(
      fx
        .controllerRequests(started)
        .filter((event) => event.responseStatus?.code === 409 && event.objectRef?.resource !== 'leases')
        .map((event) => `${event.verb} ${event.requestURI}`),
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

    // A deleted object it owns comes back (a new one: the old one's finalizer let go first).
    const bravoUid = addon('bravo')!.metadata.uid;
    await fx.custom.deleteNamespacedCustomObject({
      ...GROUP,
      plural: 'clusteraddons',
      namespace: NS,
      name: 'bravo',
    });
    await fx.waitFor(
      () => addon('bravo')?.metadata.uid !== bravoUid && addon('bravo')?.status?.conditions !== undefined,
      'the ClusterAddon recreated',
    );
    expect(fx.git.commitCount(fx.remote, 'main')).toBe(1);

    // The API server is killed and started again on the same port and etcd: every watch ends, and
    // one resumed from before the restart is older than the new server's watch cache (410 Gone).
    // The informers resume, and the next change is still published.
    const before = addon('alpha')!.metadata.resourceVersion!;
    await fx.restartApiServer();
    const resumed = await fx.admin.request(
      'GET',
      `/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/${NS}/clusteraddons`,
      {
        query: { watch: '1', resourceVersion: before, timeoutSeconds: '1' },
      },
    );
    expect(resumed.text).toContain('"code":410');
    await fx.custom.patchNamespacedCustomObject(
      {
        ...CAPI_V1BETA2,
        plural: 'clusters',
        namespace: NS,
        name: 'alpha',
        body: { spec: { controlPlaneEndpoint: { host: 'alpha-moved.test' } } },
      },
      MERGE(),
    );
    await fx.waitFor(() => fx.git.commitCount(fx.remote, 'main') === 2, 'the change after the API server came back');
    expect(leader.isLeader()).toBe(true);
  }, 300_000);
});
