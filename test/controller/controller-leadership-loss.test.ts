// An API server outage (the process stopped: connections accepted, nothing answered) longer than
// the renew deadline, with two replicas: the leader, unable to
// renew, reports not-ready, stops everything (informers, queues, health server) and ends its run
// (the CLI then exits 3: controller-exit.test.ts); the standby takes the lease over once
// the API answers again and publishes the next change. No replica is ever left alive but idle.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerRuntime, ControllerRuntimeOptions } from '../../src/controller/run-controller.js';
import {
  aCluster,
  aStack,
  CAPI,
  condition,
  MERGE,
  startControllerFixture,
  type ControllerFixture,
} from '../support/controller-fixture.js';

const NS = 'cluster-stacks';

const election = (identity: string): Partial<ControllerRuntimeOptions> => ({
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

/** /readyz as a probe sees it: the status code, or `closed` when nothing answers. */
async function readiness(runtime: ControllerRuntime): Promise<number | 'closed'> {
  try {
    return (await fetch(`${runtime.healthUrl}/readyz`, { signal: AbortSignal.timeout(1000) })).status;
  } catch {
    return 'closed';
  }
}

describe('a leader that loses its lease in an API outage', () => {
  let fx: ControllerFixture;

  beforeAll(async () => {
    fx = await startControllerFixture();
    await fx.createNamespace(NS);
    await fx.createNamespace('clusterstack-system');
    await fx.create(aStack('ferrol', NS));
    await fx.create(aCluster('alpha', NS, 'docker-ferrol-1-30-v2'));
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('stops and ends its run, not-ready first, while the standby takes over and publishes (an API that accepts and never answers)', async () => {
    const first = await fx.start('first', election('first'));
    await fx.waitFor(
      () => first.isLeader() && condition(fx.get('ClusterAddon', NS, 'alpha'), 'ManifestsPublished')?.status === 'True',
      'the first replica leading and publishing',
    );
    const second = await fx.start('second', election('second'));
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
    // As SIGSTOP does to the API server process: connections are accepted, nothing is answered.
    fx.api.pause();
    await fx.waitFor(() => ended !== undefined, 'the leader to stop by itself');
    probing = false;
    await probes;
    expect(ended).toBe('leadership ended');
    expect(first.isLeader()).toBe(false);
    // Ready until the loss, then not-ready, then gone: never ready again once it said not-ready.
    const firstNotReady = seen.indexOf(500);
    expect(firstNotReady).toBeGreaterThanOrEqual(0);
    expect(seen.slice(firstNotReady).every((status) => status !== 200)).toBe(true);
    // The last probe may have been answered just before the server closed; the next one finds it gone.
    expect(await readiness(first)).toBe('closed');
    // And the standby, which never led, still campaigns: it is not the one to exit.
    expect(second.isLeader()).toBe(false);

    // The API answers again: the standby leads and publishes the next change; the first stays stopped.
    fx.api.resume();
    await fx.waitFor(() => second.isLeader(), 'the standby to take the lease over');
    const commits = fx.git.commitCount(fx.remote, 'main');
    await fx.custom.patchNamespacedCustomObject(
      {
        ...CAPI,
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
    expect(
      fx.api.get('coordination.k8s.io/v1', 'Lease', 'clusterstack-system', 'clusterstack-gitops-controller')?.['spec'],
    ).toMatchObject({ holderIdentity: 'second' });
  }, 90_000);
});
