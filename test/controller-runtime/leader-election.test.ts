// The LeaderElector on a real API server, as deploy/'s ServiceAccount (its leader-election Role in
// clusterstack-system), each case on a Lease of its own. Lease timings are real time: where a case
// does not test an expiry or a lost renewal, they are long (a 30 s lease, a 20 s renew deadline), so
// that a loaded machine, whose round trips and event-loop stalls ran past a 400 ms renew deadline,
// cannot end a leadership the case relies on; the cases about expiry move a replica's clock (the
// elector's clock seam) instead of waiting it out. One case stays on the fake API server: a renewal
// answered 500 until the deadline passes, which a real server does not give on demand.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LeaderElector, type LeaderElectorOptions } from '../../src/controller/runtime/leader-election.js';
import { silentLogger } from '../support/test-logger.js';
import { systemClock, type Clock } from '../../src/controller/runtime/runtime-contract.js';
import { startFakeKubeApi, type FakeKubeApi } from '../support/fake-kube-api/index.js';
import { startRealControllerFixture, type RealControllerFixture } from '../support/real-controller-fixture.js';

const NS = 'clusterstack-system';

/**
 * Waits on the electors' own state (no API event shows it); the lease reads are async. The limit
 * only stops a stuck case: it ends as soon as the condition holds.
 */
async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Real timers, with a wall clock the test can move ahead (as if this replica's time ran later).
 * `reads` counts the elector's looks at it: an attempt that reads the lease takes the time three
 * times, so a count grown by six shows a whole attempt made since.
 */
function skewedClock(): Clock & { skewMs: number; reads: number } {
  const clock = {
    ...systemClock,
    skewMs: 0,
    reads: 0,
    now: () => {
      clock.reads += 1;
      return Date.now() + clock.skewMs;
    },
  };
  return clock;
}

/** Far longer than any stall of a loaded machine: no leadership a case relies on ends by itself. */
const LONG = { leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 50 };

interface Candidate {
  elector: LeaderElector;
  log: string[];
  run: Promise<void>;
}

describe('LeaderElector', () => {
  let fx: RealControllerFixture;
  const electors: LeaderElector[] = [];
  let cases = 0;
  let LEASE = '';

  beforeAll(async () => {
    fx = await startRealControllerFixture();
  });
  afterAll(async () => {
    await fx?.cleanup();
  });
  beforeEach(() => {
    LEASE = `clusterstack-gitops-controller-${++cases}`;
  });
  afterEach(async () => {
    for (const elector of electors.splice(0)) await elector.stop();
  });

  const leases = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;
  const lease = async () => {
    const response = await fx.admin.request('GET', `${leases}/${LEASE}`);
    return response.status === 404 ? undefined : (response.body as { spec?: Record<string, unknown> });
  };
  const seedLease = (spec: Record<string, unknown>) =>
    fx.create({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: LEASE, namespace: NS }, spec });

  function candidate(identity: string, options: Partial<LeaderElectorOptions> = {}): Candidate {
    const elector = new LeaderElector({
      kubeConfig: fx.controllerKubeConfig,
      namespace: NS,
      name: LEASE,
      identity,
      ...LONG,
      logger: silentLogger,
      ...options,
    });
    electors.push(elector);
    const log: string[] = [];
    const run = elector.run({
      onStartedLeading: () => void log.push('started'),
      onStoppedLeading: () => void log.push('stopped'),
      onNewLeader: (holder) => void log.push(`leader:${holder ?? ''}`),
    });
    return { elector, log, run };
  }

  it('lets exactly one of two candidates lead, and hands over when the leader stops', async () => {
    const a = candidate('pod-a');
    const b = candidate('pod-b');
    await waitFor(() => a.elector.isLeader() || b.elector.isLeader(), 'a leader');
    const [leader, standby] = a.elector.isLeader() ? [a, b] : [b, a];
    const leaderName = leader === a ? 'pod-a' : 'pod-b';
    expect((await lease())?.spec).toMatchObject({
      holderIdentity: leaderName,
      leaseDurationSeconds: 30,
      leaseTransitions: 0,
    });
    // Both keep polling: the standby has read the lease and named the leader (one of its attempts
    // ended there), and the leader has renewed since. Still only one leader.
    await waitFor(() => standby.log.length > 0, 'the standby to see the leader');
    const renewed = String((await lease())?.spec?.['renewTime']);
    await waitFor(async () => String((await lease())?.spec?.['renewTime']) !== renewed, 'a renewal');
    expect([a.elector.isLeader(), b.elector.isLeader()].filter(Boolean)).toHaveLength(1);
    expect(standby.log).toEqual([`leader:${leaderName}`]);
    // renewTime is a MicroTime on the wire: six fractional digits, as a real API server demands.
    expect((await lease())?.spec?.['renewTime']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    const stopped = Date.now();
    await leader.elector.stop();
    await leader.run;
    expect(leader.log).toEqual([`leader:${leaderName}`, 'started', 'stopped']);
    expect(leader.elector.isLeader()).toBe(false);

    // Released, not expired: the standby takes over long before the 30 s lease could have run out
    // (within a retry period or two when the machine is quiet).
    await waitFor(() => standby.elector.isLeader(), 'the standby to take over', 25_000);
    expect(Date.now() - stopped).toBeLessThan(LONG.leaseDurationMs);
    const standbyName = leaderName === 'pod-a' ? 'pod-b' : 'pod-a';
    expect((await lease())?.spec).toMatchObject({ holderIdentity: standbyName, leaseTransitions: 1 });
    expect(standby.log).toEqual([`leader:${leaderName}`, 'leader:', `leader:${standbyName}`, 'started']);
  });

  it('keeps renewing while leading', async () => {
    const a = candidate('pod-a');
    await waitFor(() => a.elector.isLeader(), 'leadership');
    const first = String((await lease())?.spec?.['renewTime']);
    await waitFor(async () => String((await lease())?.spec?.['renewTime']) !== first, 'a renewal');
    expect((await lease())?.spec).toMatchObject({ holderIdentity: 'pod-a', leaseTransitions: 0 });
  });

  it('waits for a lease held by someone else to expire, then takes it over', async () => {
    const now = new Date().toISOString().replace('Z', '000Z');
    await seedLease({
      holderIdentity: 'crashed-pod',
      leaseDurationSeconds: 15,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: 4,
    });
    const clock = skewedClock();
    const b = candidate('pod-b', { clock });
    // It read the lease and named its holder: that attempt ended without taking it, and so do the
    // next ones (the lease runs 15 s; its clock is not moved yet).
    await waitFor(() => b.log.length > 0, 'pod-b to see the holder');
    const reads = clock.reads;
    await waitFor(() => clock.reads > reads + 5, 'pod-b to try again');
    expect(b.elector.isLeader()).toBe(false);
    expect(b.log).toEqual(['leader:crashed-pod']);
    expect((await lease())?.spec?.['holderIdentity']).toBe('crashed-pod');

    clock.skewMs = 16_000;
    await waitFor(() => b.elector.isLeader(), 'the takeover after expiry');
    expect((await lease())?.spec).toMatchObject({ holderIdentity: 'pod-b', leaseTransitions: 5 });
  });

  it('never takes over a live leader whose clock runs 30 s behind: expiry is judged on its own clock', async () => {
    const slow = skewedClock();
    slow.skewMs = -30_000;
    // pod-a leads with the long timings: it must stay live for the whole case (a 400 ms, then a
    // 2.5 s renew deadline was lost to a stalled event loop at load).
    const a = candidate('pod-a', { clock: slow });
    await waitFor(() => a.elector.isLeader(), 'pod-a leading');
    // Its renewTime is 30 s in the past for everyone else, on every renewal.
    expect(Date.parse(String((await lease())?.spec?.['renewTime']))).toBeLessThan(Date.now() - 25_000);
    // pod-b's clock is moved ahead 8 s each time pod-a has renewed, until it has run past the
    // lease's 30 s since pod-b's first look: more than a lease duration of polling on its clock,
    // and no real 30 s to wait. As each move follows a new record, pod-b keeps seeing the record
    // change (a stall of the machine cannot make it look unchanged for 30 s), so it waits. Judged
    // by renewTime, it would have taken over at its first poll.
    const fast = skewedClock();
    const b = candidate('pod-b', { clock: fast });
    await waitFor(() => b.log.length > 0, 'pod-b to see the leader');
    const STEP_MS = 8000;
    while (fast.skewMs <= LONG.leaseDurationMs) {
      const seen = String((await lease())?.spec?.['renewTime']);
      await waitFor(async () => String((await lease())?.spec?.['renewTime']) !== seen, 'a renewal by pod-a');
      fast.skewMs += STEP_MS;
      const reads = fast.reads;
      // pod-b has looked at the lease again on its moved clock.
      await waitFor(() => fast.reads > reads + 5, 'pod-b to try again');
      expect(b.elector.isLeader()).toBe(false);
    }
    expect(b.elector.isLeader()).toBe(false);
    expect(a.elector.isLeader()).toBe(true);
    expect((await lease())?.spec).toMatchObject({ holderIdentity: 'pod-a', leaseTransitions: 0 });
    expect(b.log).toEqual(['leader:pod-a']);
  });

  it('takes over a dead leader whose renewTime lies in the future once it saw no change for the lease duration', async () => {
    const future = new Date(Date.now() + 3_600_000).toISOString().replace('Z', '000Z');
    await seedLease({
      holderIdentity: 'crashed-pod',
      leaseDurationSeconds: 1,
      acquireTime: future,
      renewTime: future,
      leaseTransitions: 2,
    });
    const started = Date.now();
    const b = candidate('pod-b');
    // Not an hour later: the limit (far below an hour) only stops a stuck case.
    await waitFor(() => b.elector.isLeader(), 'the takeover of the dead leader');
    // Not before a whole lease duration of its own observation.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect((await lease())?.spec).toMatchObject({ holderIdentity: 'pod-b', leaseTransitions: 3 });
  });

  it('passes a signal that aborts when leadership ends, and ends leadership when onStartedLeading fails', async () => {
    const elector = new LeaderElector({
      kubeConfig: fx.controllerKubeConfig,
      namespace: NS,
      name: LEASE,
      identity: 'pod-a',
      // Long: the release on the way out is bounded by the renew deadline, and a 400 ms one ran out at load.
      ...LONG,
      logger: silentLogger,
    });
    electors.push(elector);
    let signal: AbortSignal | undefined;
    const stopped: string[] = [];
    const run = elector.run({
      onStartedLeading: async (s) => {
        signal = s;
        throw new Error('controller failed to start');
      },
      onStoppedLeading: () => void stopped.push('stopped'),
    });
    await expect(run).rejects.toThrow('controller failed to start');
    expect(signal?.aborted).toBe(true);
    expect(stopped).toEqual(['stopped']);
    // It released the lease on the way out.
    expect((await lease())?.spec?.['holderIdentity']).toBeUndefined();
  });

  it('refuses timings that cannot work', () => {
    const base = {
      kubeConfig: fx.controllerKubeConfig,
      namespace: NS,
      name: LEASE,
      identity: 'x',
      logger: silentLogger,
    };
    expect(
      () => new LeaderElector({ ...base, leaseDurationMs: 1000, renewDeadlineMs: 1000, retryPeriodMs: 100 }),
    ).toThrow(/leaseDurationMs must be greater/);
    expect(
      () => new LeaderElector({ ...base, leaseDurationMs: 1000, renewDeadlineMs: 100, retryPeriodMs: 100 }),
    ).toThrow(/renewDeadlineMs must be greater/);
  });
});

describe('LeaderElector on the fake API server', () => {
  let api: FakeKubeApi;
  const electors: LeaderElector[] = [];
  beforeEach(async () => {
    api = await startFakeKubeApi();
  });
  afterEach(async () => {
    for (const elector of electors.splice(0)) await elector.stop();
    await api.close();
  });

  it('gives up leadership when it cannot renew before the deadline', async () => {
    const elector = new LeaderElector({
      kubeConfig: api.kubeConfig(),
      namespace: 'kube-system',
      name: 'clusterstack-gitops-controller',
      identity: 'pod-a',
      leaseDurationMs: 1000,
      renewDeadlineMs: 400,
      retryPeriodMs: 50,
      logger: silentLogger,
    });
    electors.push(elector);
    const log: string[] = [];
    const run = elector.run({
      onStartedLeading: () => void log.push('started'),
      onStoppedLeading: () => void log.push('stopped'),
    });
    await waitFor(() => elector.isLeader(), 'leadership');
    // Every renewal answered 500 (the real server never fails a valid write on demand).
    api.failNext({ pathIncludes: '/leases/clusterstack-gitops-controller', status: 500, times: 1000 });
    await run;
    expect(elector.isLeader()).toBe(false);
    expect(log.slice(-2)).toEqual(['started', 'stopped']);
  });
});
