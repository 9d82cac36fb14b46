// The lifecycle hook handlers against a workload cluster that never answers: every call answers
// well within Cluster API's 10 s call timeout, the bounded wait runs from the first call whatever
// the reads do, and --hook-timeout lets the upgrade go (or holds, as configured), never a Failure.
// The hook clock is the handlers' `now` seam; only the read deadline is real time (kept short).
import { createServer, type Server, type Socket } from 'node:net';
import { rmSync } from 'node:fs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import type { WaitCondition } from '../../src/core/addon-wait-conditions.js';
import {
  LifecycleHooks,
  WORKLOAD_READ_DEADLINE_MS,
  type AddonSnapshot,
  type LifecycleHooksOptions,
  type WorkloadObjectReader,
} from '../../src/controller/reconcile/lifecycle-hooks.js';
import { workloadObjectReader } from '../../src/controller/reconcile/workload-objects.js';
import { startExtensionServer } from '../../src/controller/runtime/extension-server.js';
import type { EventIntent, ObjectCache } from '../../src/controller/runtime/runtime-contract.js';
import {
  afterControlPlaneInitializedRequest,
  beforeClusterUpgradeRequest,
  callExtension,
  hookPath,
} from '../support/fake-capi-caller.js';
import { makeSelfSignedCert, type SelfSignedCert } from '../support/self-signed-cert.js';

const TARGET = 'docker-ferrol-1-30-v3';
const MINUTE = 60_000;
const READ_DEADLINE_MS = 300;
const CLUSTER = {
  apiVersion: 'cluster.x-k8s.io/v1beta1',
  kind: 'Cluster',
  metadata: { name: 'alpha', namespace: 'team', uid: 'u-1' },
  spec: { topology: { class: TARGET, version: 'v1.30.4' } },
};
const KINDNET: WaitCondition = {
  objects: [{ key: 'kindnet', apiVersion: 'apps/v1', kind: 'DaemonSet', namespace: 'kube-system', name: 'kindnet' }],
  conditions: 'kindnet.status.numberReady > 0',
};

const emptyCache: ObjectCache = { list: () => [], get: () => undefined, synced: () => true };

/** What the last reconcile published for team/alpha: one stage, whose postcondition reads the workload cluster for every hook. */
function snapshot(): AddonSnapshot {
  const stage = [{ stage: 'cni', postcondition: KINDNET }];
  return {
    clusters: new Map([
      [
        'team/alpha',
        {
          release: TARGET,
          stages: [{ dir: 'clusters/team/alpha/cni', stage: 'cni', release: TARGET }],
          unpublished: [],
          conditions: { BeforeClusterUpgrade: stage, AfterControlPlaneInitialized: stage, AfterClusterUpgrade: stage },
        },
      ],
    ]),
    order: { history: [], unitRevisions: new Map() },
  };
}

/** Handlers whose clock is `clock.now`, recording events; engine none, so only the condition is awaited. */
function hooksWith(readWorkloadObjects: WorkloadObjectReader, overrides: Partial<LifecycleHooksOptions> = {}) {
  const clock = { now: 10 * MINUTE };
  const events: EventIntent[] = [];
  const hooks = new LifecycleHooks({
    cache: emptyCache,
    engine: 'none',
    snapshot,
    readWorkloadObjects,
    recordEvents: async (intents) => void events.push(...intents),
    onProgress: () => undefined,
    logger: pino({ level: 'silent' }),
    timeoutMs: 30 * MINUTE,
    retryAfterSeconds: 5,
    workloadReadTimeoutMs: READ_DEADLINE_MS,
    now: () => clock.now,
    ...overrides,
  });
  return { hooks, clock, events };
}

/** A reader that never answers, recording each signal it was given (as a real one would close its connection on abort). */
function hangingReader() {
  const signals: AbortSignal[] = [];
  const reader: WorkloadObjectReader = (_cluster, _objects, signal) => {
    signals.push(signal);
    return new Promise(() => undefined);
  };
  return { reader, signals };
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

describe('lifecycle hooks against a workload cluster that never answers', () => {
  it("keeps every read well under Cluster API's 10s call timeout, by a named deadline", () => {
    expect(WORKLOAD_READ_DEADLINE_MS).toBeGreaterThanOrEqual(2000);
    expect(WORKLOAD_READ_DEADLINE_MS).toBeLessThanOrEqual(3000);
  });

  it('answers BeforeClusterUpgrade within the read deadline, holding and saying the workload cluster did not answer, and aborts the read', async () => {
    const { reader, signals } = hangingReader();
    const { hooks } = hooksWith(reader);
    const { value: answer, ms } = await timed(
      hooks.handle('BeforeClusterUpgrade', beforeClusterUpgradeRequest(CLUSTER, 'v1.30.2', 'v1.30.4')),
    );
    expect(ms).toBeGreaterThanOrEqual(READ_DEADLINE_MS - 20);
    expect(ms).toBeLessThan(READ_DEADLINE_MS + 1000);
    expect(answer).toEqual({
      status: 'Success',
      retryAfterSeconds: 5,
      message:
        'waiting 0s of 30m for stage cni postcondition: the workload cluster cannot be read: it did not answer within 0.3s (a hook must answer Cluster API within its 10s call timeout, so reads are cut off then)',
    });
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(true);
  });

  it('records the wait before any read, so --hook-timeout passes even though every read hangs: the upgrade goes, with a Warning event and the progress naming what was not confirmed', async () => {
    const { reader } = hangingReader();
    const { hooks, clock, events } = hooksWith(reader);
    const request = beforeClusterUpgradeRequest(CLUSTER, 'v1.30.2', 'v1.30.4');
    const first = hooks.handle('BeforeClusterUpgrade', request);
    // The wait started at the call, not after the read.
    expect(hooks.progressOf('team', 'alpha')).toEqual([]);
    clock.now += MINUTE; // while the read hangs
    await first;
    expect(hooks.progressOf('team', 'alpha')).toEqual([
      expect.objectContaining({
        hook: 'BeforeClusterUpgrade',
        outcome: 'waiting',
        since: new Date(10 * MINUTE).toISOString(),
      }),
    ]);

    clock.now = 10 * MINUTE + 30 * MINUTE;
    const late = await hooks.handle('BeforeClusterUpgrade', request);
    expect(late).toEqual({
      status: 'Success',
      retryAfterSeconds: 0,
      message:
        'letting the upgrade go after 30m (the hook timeout is 30m) without confirming: stage cni postcondition: the workload cluster cannot be read: it did not answer within 0.3s (a hook must answer Cluster API within its 10s call timeout, so reads are cut off then). Fix the addons or their conditions, or raise --hook-timeout',
    });
    expect(events.map((event) => [event.type, event.reason])).toEqual([
      ['Normal', 'LifecycleHookWaiting'],
      ['Warning', 'LifecycleHookTimedOut'],
    ]);
    expect(events[1]!.message).toContain('BeforeClusterUpgrade: letting the upgrade go after 30m');
    expect(hooks.progressOf('team', 'alpha')).toEqual([
      expect.objectContaining({ outcome: 'timed-out', message: late['message'] }),
    ]);
  });

  it('with --hook-on-timeout hold keeps holding after the timeout, asking to be called again, never Failure', async () => {
    const { reader } = hangingReader();
    const { hooks, clock, events } = hooksWith(reader, { onTimeout: 'hold' });
    const request = beforeClusterUpgradeRequest(CLUSTER, 'v1.30.2', 'v1.30.4');
    await hooks.handle('BeforeClusterUpgrade', request);
    clock.now += 31 * MINUTE;
    const late = await hooks.handle('BeforeClusterUpgrade', request);
    expect(late).toMatchObject({
      status: 'Success',
      retryAfterSeconds: 5,
      message: expect.stringMatching(
        /^still holding the upgrade after 31m .*--hook-on-timeout hold\), not confirmed: stage cni postcondition: the workload cluster cannot be read: it did not answer within 0\.3s/,
      ),
    });
    expect(events.at(-1)).toMatchObject({ type: 'Warning', reason: 'LifecycleHookTimedOut' });
  });

  it('answers AfterControlPlaneInitialized at once, never waiting on a read, and follows the condition in the background', async () => {
    let release!: (objects: Map<string, Record<string, unknown> | undefined>) => void;
    const reads: AbortSignal[] = [];
    const reader: WorkloadObjectReader = (_cluster, _objects, signal) => {
      reads.push(signal);
      return new Promise((resolve) => (release = resolve));
    };
    // A long read deadline: were the answer waiting on the read, it would take that long.
    const { hooks } = hooksWith(reader, { workloadReadTimeoutMs: 5000 });
    const { value: answer, ms } = await timed(
      hooks.handle('AfterControlPlaneInitialized', afterControlPlaneInitializedRequest(CLUSTER)),
    );
    // Half the 5 s read deadline: not waiting on the read, with room for a loaded machine's stalls.
    expect(ms).toBeLessThan(2500);
    expect(answer).toEqual({
      status: 'Success',
      message:
        'not holding (AfterControlPlaneInitialized is non-blocking); the ClusterAddon follows the wait: waiting 0s of 30m for stage cni postcondition: not read from the workload cluster yet (the controller reads it in the background and shows the result on the ClusterAddon)',
    });
    expect(reads).toHaveLength(1); // the background read started
    release(new Map([['kindnet', { status: { numberReady: 1 } }]]));
    await expect.poll(() => hooks.progressOf('team', 'alpha')[0]?.outcome).toBe('ready');
    // Asked again, it answers from what the background read found, still without waiting on a read.
    expect(
      await hooks.handle('AfterControlPlaneInitialized', afterControlPlaneInitializedRequest(CLUSTER)),
    ).toMatchObject({ status: 'Success', message: expect.stringContaining('are published') });
  });

  it('does not hold an answer on an Event the API server is slow to take', async () => {
    const { reader } = hangingReader();
    const { hooks } = hooksWith(reader, { recordEvents: () => new Promise(() => undefined) });
    const { ms } = await timed(
      hooks.handle('BeforeClusterUpgrade', beforeClusterUpgradeRequest(CLUSTER, 'v1.30.2', 'v1.30.4')),
    );
    expect(ms).toBeLessThan(READ_DEADLINE_MS + 1000);
  });
});

describe('the runtime extension, called as Cluster API calls it, with a workload API server that accepts and never answers', () => {
  let silent: Server;
  let cert: SelfSignedCert;
  const sockets: Socket[] = [];
  const closed: Socket[] = [];

  beforeAll(async () => {
    // Reads what it is sent (so it sees the client hang up) and never writes a byte back.
    silent = createServer((socket) => {
      sockets.push(socket);
      socket.resume();
      socket.on('close', () => closed.push(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cert = makeSelfSignedCert();
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    if (cert) rmSync(cert.dir, { recursive: true, force: true });
  });

  it('answers BeforeClusterUpgrade over HTTPS within the deadline and closes its connection to the silent server', async () => {
    const port = (silent.address() as { port: number }).port;
    const kubeconfig = [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: alpha, cluster: {server: "https://127.0.0.1:' + port + '", insecure-skip-tls-verify: true}}]',
      'users: [{name: admin, user: {token: not-a-secret}}]',
      'contexts: [{name: alpha, context: {cluster: alpha, user: admin}}]',
      'current-context: alpha',
    ].join('\n');
    const secrets = {
      readSecret: async (namespace: string, name: string) =>
        namespace === 'team' && name === 'alpha-kubeconfig'
          ? { metadata: { name, namespace }, data: { value: Buffer.from(kubeconfig).toString('base64') } }
          : undefined,
    };
    const { hooks } = hooksWith(workloadObjectReader(secrets), { workloadReadTimeoutMs: 1000 });
    const server = await startExtensionServer({
      port: 0,
      host: '127.0.0.1',
      certFile: cert.certFile,
      keyFile: cert.keyFile,
      handlers: hooks.handlers(),
    });
    try {
      const { value: call, ms } = await timed(
        callExtension(
          server.url,
          hookPath('BeforeClusterUpgrade', 'before-cluster-upgrade'),
          beforeClusterUpgradeRequest(CLUSTER as unknown as KubeObject, 'v1.30.2', 'v1.30.4'),
          cert.ca,
        ),
      );
      expect(ms).toBeLessThan(1000 + 1500);
      expect(call.status).toBe(200);
      expect(call.body).toMatchObject({
        kind: 'BeforeClusterUpgradeResponse',
        status: 'Success',
        retryAfterSeconds: 5,
      });
      expect(call.body['message']).toBe(
        'waiting 0s of 30m for stage cni postcondition: the workload cluster cannot be read: it did not answer within 1s (a hook must answer Cluster API within its 10s call timeout, so reads are cut off then)',
      );
      expect(sockets.length).toBeGreaterThan(0);
      // The aborted read does not leave its connection open (the poll ends once all are closed; the
      // limit only stops a stuck test).
      await expect.poll(() => closed.length, { timeout: 30_000 }).toBe(sockets.length);
    } finally {
      await server.close();
    }
  });
});
