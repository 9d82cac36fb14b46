// An API server outage longer than the renew deadline, with two replicas: the leader, unable to
// renew, reports not-ready, stops everything (informers, queues, health server) and ends its run
// (the CLI then exits 3: controller-exit.test.ts); the standby takes the lease over once the API
// answers again and publishes the next change. No replica is ever left alive but idle. The outage
// is real: the leased kube-apiserver is SIGSTOPped (the kernel accepts connections, nothing answers
// them) and SIGCONTed afterwards; both replicas run as deploy/'s ServiceAccount.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerRuntime, ControllerRuntimeOptions } from '../../src/controller/run-controller.js';
import { aStack, condition, MERGE } from '../support/controller-fixture.js';
import {
  aCluster,
  CAPI_V1BETA2,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';

const NS = 'cluster-stacks';
const LEASE = '/apis/coordination.k8s.io/v1/namespaces/clusterstack-system/leases/clusterstack-gitops-controller';

// The outage must outlast the renew deadline, and the leader's stop waits it out twice (the
// renewals, then the release to a server that never answers): each second here is two of outage,
// and the standby's takeover waits out the lease. But before the outage the leader must keep its
// lease on a loaded machine, in this test's own process: a 2 s renew deadline ran out there (at
// load 30-45) before the first publish, and the replica that was to lose its lease in the outage
// had lost it already. Twice that; 6 s (and an 8 s lease) made the file 18 s longer.
const election = (identity: string): Partial<ControllerRuntimeOptions> => ({
  leaderElection: {
    namespace: 'clusterstack-system',
    name: 'clusterstack-gitops-controller',
    identity,
    leaseDurationMs: 5000,
    renewDeadlineMs: 4000,
    retryPeriodMs: 200,
  },
  health: { port: 0, host: '127.0.0.1' },
});

/**
 * /readyz as a probe sees it: the status code, or `closed` when nothing answers. The runtimes run
 * in this test's own process, so at load an answer can wait seconds for its event loop: a 1 s limit
 * read a healthy replica as `closed`. A stopped server refuses at once, so a long limit costs
 * nothing; and the not-ready window of a lost leadership lasts the renew deadline at least (the
 * release of the lease waits that long for the frozen server), so the probes still land in it.
 */
async function readiness(runtime: ControllerRuntime): Promise<number | 'closed'> {
  try {
    return (await fetch(`${runtime.healthUrl}/readyz`, { signal: AbortSignal.timeout(15_000) })).status;
  } catch {
    return 'closed';
  }
}

describe('a leader that loses its lease in an API outage', () => {
  let fx: RealControllerFixture;

  beforeAll(async () => {
    fx = await startRealControllerFixture();
    await fx.createNamespace(NS);
    await fx.create(aStack('ferrol', NS));
    await fx.create(aCluster('alpha', NS, 'docker-ferrol-1-30-v2'));
  }, 180_000);

  afterAll(async () => {
    // Thaws the server first (also when the test failed while it was frozen), then stops the replicas.
    await fx?.cleanup();
  }, 120_000);

  it('stops and ends its run, not-ready first, while the standby takes over and publishes (an API that accepts and never answers)', async () => {
    const first = await fx.start('first', election('first'));
    // The standby starts once the first leads (so it cannot take the lease), while the first publishes.
    await fx.waitFor(() => first.isLeader(), 'the first replica leading');
    const [second] = await Promise.all([
      fx.start('second', election('second')),
      fx.waitFor(
        () =>
          first.isLeader() && condition(fx.get('ClusterAddon', NS, 'alpha'), 'ManifestsPublished')?.status === 'True',
        'the first replica leading and publishing',
      ),
    ]);
    await fx.waitFor(() => second.cache.synced(), 'the standby synced');
    expect(await readiness(second)).toBe(200);
    expect(await readiness(first)).toBe(200);
    let ended: string | undefined;
    void first.done.then(({ reason }) => {
      ended = reason;
    });

    // Probe the leader as kubelet would, through the outage.
    const seen: (number | 'closed')[] = [];
    let probing = true;
    const probes = (async () => {
      while (probing) {
        seen.push(await readiness(first));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    // SIGSTOP to the API server process: connections are accepted, nothing is answered.
    await fx.freezeApiServer();
    await fx.waitFor(() => ended !== undefined, 'the leader to stop by itself');
    probing = false;
    await probes;
    expect(ended).toBe('leadership ended');
    expect(first.isLeader()).toBe(false);
    // It stopped while the server was still frozen: nothing it waited for had been answered.
    expect(await fx.apiServerAnswers(1000)).toBe(false);
    // Ready until the loss, then not-ready, then gone: never ready again once it said not-ready.
    const firstNotReady = seen.indexOf(500);
    expect(firstNotReady).toBeGreaterThanOrEqual(0);
    expect(seen.slice(firstNotReady).every((status) => status !== 200)).toBe(true);
    // The last probe may have been answered just before the server closed; the next one finds it gone.
    expect(await readiness(first)).toBe('closed');
    // And the standby, which never led, still campaigns: it is not the one to exit.
    expect(second.isLeader()).toBe(false);

    // The API answers again (SIGCONT): the standby leads and publishes the next change; the first stays stopped.
    await fx.thawApiServer();
    await fx.waitFor(() => second.isLeader(), 'the standby to take the lease over');
    const commits = fx.git.commitCount(fx.remote, 'main');
    await fx.custom.patchNamespacedCustomObject(
      {
        ...CAPI_V1BETA2,
        plural: 'clusters',
        namespace: NS,
        name: 'alpha',
        body: { spec: { controlPlaneEndpoint: { host: 'moved.test' } } },
      },
      MERGE(),
    );
    await fx.waitFor(() => fx.git.commitCount(fx.remote, 'main') > commits, 'the standby to publish the change');
    expect(first.isLeader()).toBe(false);
    expect(first.controller.completedReconciles).toBeGreaterThan(0);
    expect((await fx.admin.get(LEASE)).spec).toMatchObject({ holderIdentity: 'second' });
  }, 240_000);
});
