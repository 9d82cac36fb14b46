// The controller on a real kube-apiserver (with etcd and kube-controller-manager for garbage
// collection), under the RBAC deploy/ ships: a server leased from the run's broker (our CRDs and
// Cluster API's installed), a copy of deploy/'s namespace, ServiceAccount, roles and bindings
// applied as `kubectl kustomize deploy` renders them (in this file's own namespace, its
// ClusterRoles renamed, apart from the broker's copy), and two controller replicas (`clusterstack
// controller --leader-elect`, as processes) running as that ServiceAccount with a token from the
// TokenRequest API, never as admin. The API server's audit log records every request: a 403 for the
// ServiceAccount fails the file (except while the API server restarts, when its RBAC cache is still
// empty; see the 403 test). Last, deploy/namespaced: a second ServiceAccount bound only by its Roles
// runs the controller for one namespace, no 403.
//
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Condition } from '../src/api/types.js';
import { FIELD_MANAGER, USER_AGENT } from '../src/controller/runtime/client-identity.js';
import { kubernetesVersionOf } from './support/builders.js';
import { copyExampleReleases } from './support/cli.js';
import { bundleCli, spawnController, type ControllerProcess } from './support/controller-process.js';
import { GitSandbox } from './support/git-repos.js';
import { leaseRealKubeApi, type LeasedKubeApi } from './support/real-controller-fixture.js';
import {
  describeAuditEvent,
  type AuditEvent,
  distinctFreePorts,
  grantedNow,
  serviceAccountUserName,
  waitUntil,
  wireIdentity,
} from './support/real-kube-api/index.js';

const NS = 'fleet';
/** The controller's namespace: this file's copy of deploy/'s clusterstack-system. */
const SYSTEM = 'clusterstack-real-api';
const SA = 'clusterstack-gitops-controller';
const SA_USER = serviceAccountUserName(SYSTEM, SA);
const LEASE = `/apis/coordination.k8s.io/v1/namespaces/${SYSTEM}/leases/clusterstack-gitops-controller`;
const STACKS = `/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/${NS}/clusterstacks`;
const RELEASES = `/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/${NS}/clusterstackreleases`;
const ADDONS = `/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/${NS}/clusteraddons`;
const CLUSTERS = `/apis/cluster.x-k8s.io/v1beta2/namespaces/${NS}/clusters`;
const FINALIZER = 'clusterstack.x-k8s.io/finalizer';
/**
 * The replicas' leader election, shorter than the default 15 s, 10 s and 2 s: the failover waits out
 * one lease duration. The renew deadline stays well above a renewal's round trip at load 20.
 */
const LEASE_DURATION_MS = 6_000;
const RENEW_DEADLINE_MS = 5_000;
const RETRY_PERIOD_MS = 500;

type Live = {
  metadata: {
    name: string;
    uid: string;
    finalizers?: string[];
    deletionTimestamp?: string;
    ownerReferences?: { kind: string; name: string }[];
  };
  spec?: Record<string, unknown>;
  status?: { conditions?: Condition[] };
};

function aStack(name: string, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
    kind: 'ClusterStack',
    metadata: { name, namespace: NS },
    spec: {
      provider: 'docker',
      name: 'ferrol',
      kubernetesVersion: '1.30',
      versions: ['v2'],
      noProvider: true,
      ...spec,
    },
  };
}

/** A Cluster as Cluster API 1.14 stores it (v1beta2): its class in classRef, its control plane named by group only. */
function aCluster(name: string, className: string): Record<string, unknown> {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Cluster',
    metadata: { name, namespace: NS },
    spec: {
      controlPlaneEndpoint: { host: `${name}.test`, port: 6443 },
      clusterNetwork: { pods: { cidrBlocks: ['10.0.0.0/16'] } },
      controlPlaneRef: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane', name: `${name}-cp` },
      topology: { classRef: { name: className }, version: kubernetesVersionOf(className) },
    },
  };
}

function conditionOf(object: Live | undefined, type: string): Condition | undefined {
  return (object?.status?.conditions ?? []).find((condition) => condition.type === type);
}

describe('the controller on a real API server under the shipped RBAC', { timeout: 180_000 }, () => {
  let api: LeasedKubeApi;
  let git: GitSandbox;
  let remote: string;
  let work: string;
  let releases: string;
  let bundle: string;
  let kubeconfig: string;
  const replicas = new Map<
    string,
    { process: ControllerProcess; port: number; metrics: string; exitCode?: number | null }
  >();
  const timings: Record<string, string> = {};
  let restartWindow = { from: 0, to: 0 };

  /** GET that answers the object, or undefined for a 404. */
  async function read(pathName: string): Promise<Live | undefined> {
    const response = await api.admin.request('GET', pathName);
    if (response.status === 404) return undefined;
    if (response.status !== 200) throw new Error(`GET ${pathName}: ${response.status} ${response.text}`);
    return response.body as Live;
  }

  async function create(collection: string, body: Record<string, unknown>): Promise<void> {
    const response = await api.admin.request('POST', collection, { body });
    if (response.status !== 201) throw new Error(`POST ${collection}: ${response.status} ${response.text}`);
  }

  async function eventually<T>(
    what: string,
    probe: () => Promise<T | undefined | false>,
    timeoutMs = 60_000,
  ): Promise<T> {
    let value: T | undefined | false;
    await waitUntil(what, async () => Boolean((value = await probe())), [], timeoutMs);
    return value as T;
  }

  function startReplica(name: string, port: number, env: Record<string, string> = {}): ControllerProcess {
    const process = spawnController(bundle, [], {
      PATH: globalThis.process.env.PATH ?? '/usr/bin:/bin',
      HOME: path.join(work, 'home'),
      KUBECONFIG: kubeconfig,
      POD_NAME: name,
      POD_NAMESPACE: SYSTEM,
      CLUSTERSTACK_LEADER_ELECT: 'true',
      CLUSTERSTACK_LEADER_ELECT_LEASE_DURATION: `${LEASE_DURATION_MS}ms`,
      CLUSTERSTACK_LEADER_ELECT_RENEW_DEADLINE: `${RENEW_DEADLINE_MS}ms`,
      CLUSTERSTACK_LEADER_ELECT_RETRY_PERIOD: `${RETRY_PERIOD_MS}ms`,
      CLUSTERSTACK_CACHE_DIR: path.join(work, name),
      CLUSTERSTACK_RELEASE_SOURCE: releases,
      CLUSTERSTACK_GIT: remote,
      CLUSTERSTACK_METRICS_ADDR: `127.0.0.1:${port}`,
      CLUSTERSTACK_BATCH_WINDOW: '50ms',
      CLUSTERSTACK_LOG_LEVEL: 'debug',
      ...env,
    });
    const replica: { process: ControllerProcess; port: number; metrics: string; exitCode?: number | null } = {
      process,
      port,
      metrics: `http://127.0.0.1:${port}/metrics`,
    };
    void process.exited.then((code) => (replica.exitCode = code));
    replicas.set(name, replica);
    return process;
  }

  async function leaderMetric(name: string): Promise<number | undefined> {
    try {
      const text = await (await fetch(replicas.get(name)!.metrics)).text();
      const match = /^clusterstack_leader (\d+)/m.exec(text);
      return match ? Number(match[1]) : undefined;
    } catch {
      return undefined;
    }
  }

  /** Whether the server now grants the ServiceAccount the request of `event` (a SubjectAccessReview). */
  const grantedToServiceAccount = (event: AuditEvent): Promise<boolean> =>
    grantedNow(
      api.admin,
      {
        username: SA_USER,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${SYSTEM}`, 'system:authenticated'],
      },
      event,
    );

  beforeAll(async () => {
    const started = Date.now();
    // The bundle and the fixtures while the lease waits. The leased server's kube-controller-manager
    // runs garbage collection (owner references) and namespace deletion, as a cluster runs them.
    const leasing = leaseRealKubeApi();
    leasing.catch(() => undefined);
    bundle = bundleCli();
    git = new GitSandbox();
    remote = git.bareRepo('gitops');
    work = await mkdtemp(path.join(os.tmpdir(), 'csk-real-controller-'));
    releases = await copyExampleReleases();
    api = await leasing;
    timings['API server leased'] = `${Date.now() - started} ms`;
    kubeconfig = (await api.shippedIdentity({ overlay: '', namespace: SYSTEM, dir: work })).kubeconfigFile;
    await create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  }, 240_000);

  afterAll(async () => {
    for (const { process } of replicas.values()) await process.killHard();
    await api?.release();
    git?.cleanup();
    if (work) await rm(work, { recursive: true, force: true });
    if (releases) await rm(releases, { recursive: true, force: true });
    console.log(
      `controller-real-api: ${Object.entries(timings)
        .map(([what, value]) => `${what}: ${value}`)
        .join(', ')}`,
    );
  }, 60_000);

  it("refuses, by the server's own CEL rules, an invalid spec and a change of an immutable field", async () => {
    const invalid = await api.admin.request('POST', STACKS, {
      body: aStack('no-provider', { noProvider: false }),
    });
    expect(invalid.status).toBe(422);
    expect(invalid.body.message).toMatch(
      /spec\.providerRef: Required value: providerRef is required unless noProvider is true/,
    );
    const channel = await api.admin.request('POST', STACKS, {
      body: aStack('wrong-channel', { versions: ['v1-beta.1'] }),
    });
    expect(channel.status).toBe(422);
    expect(channel.body.message).toMatch(
      /spec\.versions: Invalid value: .*v1-beta\.1 belongs to the beta channel, but this ClusterStack follows stable/,
    );
    expect(await read(`${STACKS}/no-provider`)).toBeUndefined();

    await create(STACKS, aStack('immutable'));
    const change = await api.admin.request('PATCH', `${STACKS}/immutable`, {
      contentType: 'application/merge-patch+json',
      body: { spec: { kubernetesVersion: '1.31' } },
    });
    expect(change.status).toBe(422);
    expect(change.body.message).toMatch(
      /spec\.kubernetesVersion: Invalid value: .*spec\.kubernetesVersion is immutable/,
    );
    expect((await read(`${STACKS}/immutable`))?.spec?.['kubernetesVersion']).toBe('1.30');
    // Gone before the controller starts: it only tested the server.
    await api.admin.request('DELETE', `${STACKS}/immutable`);
  });

  it('runs as its ServiceAccount: one replica leads, adds its finalizer and writes status through the status subresource', async () => {
    await create(STACKS, aStack('ferrol'));
    await create(CLUSTERS, aCluster('alpha', 'docker-ferrol-1-30-v2'));
    const [portA, portB] = await distinctFreePorts(2);
    const started = Date.now();
    startReplica('replica-a', portA!);
    startReplica('replica-b', portB!);

    const lease = await eventually(
      'a replica to hold the Lease',
      async () => (await read(LEASE)) as { spec?: { holderIdentity?: string } } | undefined,
    );
    const leader = lease.spec!.holderIdentity!;
    expect(['replica-a', 'replica-b']).toContain(leader);
    const addon = await eventually("alpha's addons published", async () => {
      const live = await read(`${ADDONS}/alpha`);
      return conditionOf(live, 'ManifestsPublished')?.status === 'True' && live;
    });
    timings['first publish after start'] = `${Date.now() - started} ms`;
    expect(Object.keys(git.files(remote, 'main')).some((file) => file.startsWith(`clusters/${NS}/alpha/`))).toBe(true);

    const stack = await eventually('the stack Ready with its finalizer', async () => {
      const live = await read(`${STACKS}/ferrol`);
      return conditionOf(live, 'Ready') !== undefined && (live?.metadata.finalizers ?? []).includes(FINALIZER) && live;
    });
    expect(stack.metadata.finalizers).toContain(FINALIZER);
    // Each object's status is its own write, in no set order: the release's may land after the addon's.
    const release = await eventually('the release published', async () => {
      const live = await read(`${RELEASES}/docker-ferrol-1-30-v2`);
      return conditionOf(live, 'ManifestsPublished')?.status === 'True' && live;
    });
    expect(release?.metadata.ownerReferences?.map((owner) => `${owner.kind}/${owner.name}`)).toEqual([
      'ClusterStack/ferrol',
    ]);
    expect(conditionOf(release, 'ManifestsPublished')).toMatchObject({ status: 'True' });
    expect(conditionOf(addon, 'ManifestsPublished')).toMatchObject({ status: 'True' });

    // The real server drops status from writes to the main resource: status arrived through
    // the status subresource, and only the leader wrote. The server logs a write once it has
    // answered it, so a status already read may reach the audit log a moment later: wait for all three.
    const statusWrites = (): (string | undefined)[] =>
      api
        .auditEvents()
        .filter(
          (event) =>
            event.user.username === SA_USER &&
            ['patch', 'update', 'create'].includes(event.verb) &&
            event.objectRef?.apiGroup === 'clusterstack.x-k8s.io' &&
            event.objectRef.subresource === 'status',
        )
        .map((event) => event.objectRef?.resource);
    const kinds = ['clusterstacks', 'clusterstackreleases', 'clusteraddons'];
    await eventually('status writes of all three kinds in the audit log', async () =>
      kinds.every((kind) => statusWrites().includes(kind)),
    );
    expect(statusWrites()).toEqual(expect.arrayContaining(kinds));
    expect(await leaderMetric(leader)).toBe(1);
    expect(await leaderMetric(leader === 'replica-a' ? 'replica-b' : 'replica-a')).toBe(0);
  });

  it('records Events on its objects that `kubectl describe` shows', async () => {
    const stack = (await read(`${STACKS}/ferrol`))!;
    // The controller records Events in the background, after the status they explain: wait for them.
    const reasons = await eventually('Events on the ClusterStack', async () => {
      const events = await api.admin.get(
        `/api/v1/namespaces/${NS}/events?fieldSelector=${encodeURIComponent(`involvedObject.uid=${stack.metadata.uid}`)}`,
      );
      const found = (events.items as { reason: string }[]).map((event) => event.reason);
      return found.length > 0 && found;
    });
    expect(reasons.length).toBeGreaterThan(0);
    const described = execFileSync(
      'kubectl',
      ['--kubeconfig', api.lease.admin.kubeconfigFile, 'describe', 'clusterstack', 'ferrol', '-n', NS],
      { encoding: 'utf8' },
    );
    const eventsSection = described.slice(described.indexOf('Events:'));
    for (const reason of reasons) expect(eventsSection).toContain(reason);
    // Our category lists all three kinds, and does not shadow the singular name used above.
    const listed = execFileSync(
      'kubectl',
      ['--kubeconfig', api.lease.admin.kubeconfigFile, 'get', 'cluster-stacks', '-n', NS, '-o', 'name'],
      { encoding: 'utf8' },
    );
    expect(listed).toMatch(/^clusterstack\.clusterstack\.x-k8s\.io\/ferrol$/m);
    expect(listed).toMatch(/^clusterstackrelease\.clusterstack\.x-k8s\.io\/docker-ferrol-1-30-v2$/m);
    expect(listed).toMatch(/^clusteraddon\.clusterstack\.x-k8s\.io\/alpha$/m);
  });

  it('keeps the addons and the ClusterAddon of a published Cluster whose class it can no longer read, saying why', async () => {
    const addonsOf = () =>
      Object.entries(git.files(remote, 'main')).filter(([file]) => file.startsWith(`clusters/${NS}/alpha/`));
    const before = addonsOf();
    expect(before.length).toBeGreaterThan(0);
    // A ClusterClass of someone else's: the Cluster is no longer ours to render, but its addons were published.
    const patched = await api.admin.request('PATCH', `${CLUSTERS}/alpha`, {
      contentType: 'application/merge-patch+json',
      body: { spec: { topology: { classRef: { name: 'hand-made-class' } } } },
    });
    expect(patched.status, patched.text).toBe(200);
    const held = await eventually('the held Cluster to say why', async () => {
      const condition = conditionOf(await read(`${ADDONS}/alpha`), 'ClusterClassAvailable');
      return condition?.status === 'False' && condition;
    });
    expect(held.message).toMatch(
      /spec\.topology\.classRef\.name names hand-made-class, which is not a cluster stack class, but the published tree holds this Cluster's addons/,
    );
    expect(addonsOf()).toEqual(before);
    await api.admin.request('PATCH', `${CLUSTERS}/alpha`, {
      contentType: 'application/merge-patch+json',
      body: { spec: { topology: { classRef: { name: 'docker-ferrol-1-30-v2' } } } },
    });
    await eventually(
      'alpha back on its class',
      async () => conditionOf(await read(`${ADDONS}/alpha`), 'ClusterClassAvailable')?.status === 'True',
    );
  });

  it('keeps reconciling after the API server restarts, its watches opened again', async () => {
    const mark = api.auditEvents().length;
    const restarted = Date.now();
    await api.apiServer('restart');
    restartWindow = { from: restarted, to: Date.now() + 5_000 };
    timings['API server restart'] = `${Date.now() - restarted} ms`;
    await create(CLUSTERS, aCluster('bravo', 'docker-ferrol-1-30-v2'));
    await eventually(
      "bravo's addons published after the restart",
      async () => conditionOf(await read(`${ADDONS}/bravo`), 'ManifestsPublished')?.status === 'True',
      // After an outage of a minute the watches restart on a backoff of up to 30 s, and the render runs
      // at the machine's load: 90 s ran out twice and once just held (90.1 s) at load 20-57.
      180_000,
    ).catch((error: unknown) => {
      // What each replica was doing, should this wait still run out.
      const states = [...replicas].map(
        ([name, { process, exitCode }]) =>
          `${name} (exit ${exitCode === undefined ? 'none' : exitCode}):\n${process.lines
            .slice(-25)
            .map((line) => `  ${JSON.stringify(line).slice(0, 400)}`)
            .join('\n')}`,
      );
      throw new Error(`${(error as Error).message}\n${states.join('\n')}`, { cause: error });
    });
    const watchesAfter = api
      .auditEvents()
      .slice(mark)
      .filter(
        (event) => event.user.username === SA_USER && event.verb === 'watch' && event.stage === 'ResponseStarted',
      );
    expect([...new Set(watchesAfter.map((event) => event.objectRef?.resource))]).toEqual(
      expect.arrayContaining(['clusterstacks', 'clusterstackreleases', 'clusteraddons', 'clusters']),
    );
    // A leader that could not renew its Lease during the outage (RENEW_DEADLINE_MS) exits with 3, as documented,
    // and Kubernetes would restart its container: so does the test, to keep two replicas.
    for (const [name, replica] of replicas) {
      if (replica.exitCode === undefined) continue;
      expect(replica.exitCode, `${name} exited`).toBe(3);
      startReplica(name, replica.port);
    }
    // The restart itself took 48-86 s at load 20-57, before the wait above.
  }, 420_000);

  it('fails over: the leader killed, the standby takes the Lease within its duration and goes on', async () => {
    // A replica started again after the restart campaigns once it has started: only then does its
    // clock for the Lease run, so the takeover is timed from a standby that is watching it.
    // (Read from each one's log so far: one that exits meanwhile ends no wait early.)
    await eventually(
      'every replica started',
      async () =>
        [...replicas.values()].every(({ process }) =>
          process.lines.some((line) => line['msg'] === 'Controller started'),
        ),
      120_000,
    );
    const holder = await eventually('a replica to hold the Lease', async () => {
      const identity = ((await read(LEASE)) as unknown as { spec: { holderIdentity?: string } }).spec.holderIdentity;
      return identity !== undefined && replicas.has(identity) && identity;
    });
    const standby = holder === 'replica-a' ? 'replica-b' : 'replica-a';
    const killed = Date.now();
    await replicas.get(holder)!.process.killHard();
    await eventually(
      `${standby} to take the Lease`,
      async () =>
        ((await read(LEASE)) as unknown as { spec: { holderIdentity?: string } }).spec.holderIdentity === standby,
      40_000,
    );
    const takeover = Date.now() - killed;
    timings['takeover after SIGKILL'] = `${takeover} ms`;
    // The standby counts the lease duration from the last renewal it observed, which it may see up
    // to one retry period after the kill, and looks again every retry period: at most 7 s, plus 4 s
    // for a machine shared with other test runs.
    expect(takeover).toBeLessThan(LEASE_DURATION_MS + 2 * RETRY_PERIOD_MS + 4_000);
    await eventually(`${standby} to report itself leader`, async () => (await leaderMetric(standby)) === 1);

    await create(CLUSTERS, aCluster('charlie', 'docker-ferrol-1-30-v2'));
    await eventually(
      "charlie's addons published by the new leader",
      async () => conditionOf(await read(`${ADDONS}/charlie`), 'ManifestsPublished')?.status === 'True',
      60_000,
    );
  });

  it('holds a deleted ClusterStack by its finalizer while Clusters use its release, and lets go when they are gone', async () => {
    await api.admin.request('DELETE', `${STACKS}/ferrol`);
    const blocked = await eventually('the deletion blocked', async () => {
      const live = await read(`${STACKS}/ferrol`);
      return conditionOf(live, 'Ready')?.reason === 'DeletionBlocked' && live;
    });
    expect(blocked.metadata.deletionTimestamp).toBeDefined();
    expect(conditionOf(blocked, 'Ready')?.message).toMatch(/alpha/);

    for (const name of ['alpha', 'bravo', 'charlie']) await api.admin.request('DELETE', `${CLUSTERS}/${name}`);
    await eventually(
      'the ClusterStack gone',
      async () => (await read(`${STACKS}/ferrol`)) === undefined && true,
      60_000,
    );
    // Its ClusterStackReleases go with it (owner references, kube-controller-manager's garbage collector).
    await eventually(
      'its ClusterStackReleases gone',
      async () => ((await api.admin.get(RELEASES)).items as unknown[]).length === 0 && true,
      60_000,
    );
  });

  it('was never refused a request (403) under the shipped RBAC, never acted as anyone else, and said who it is', async () => {
    const events = api.auditEvents();
    const ours = events.filter((event) => event.user.username === SA_USER);
    expect(ours.length).toBeGreaterThan(50);
    // Right after its restart the API server answers before its RBAC cache holds all roles and
    // bindings (it may even report its own bootstrap role system:discovery "not found"). Such a 403
    // is the server starting, not a missing grant: it is excused only inside the restart window and
    // only if the server, asked now (SubjectAccessReview), grants exactly that request. Any other
    // 403 is a gap in deploy/.
    const forbidden = ours.filter((event) => event.responseStatus?.code === 403);
    const unexcused: string[] = [];
    for (const event of forbidden) {
      const at = Date.parse(event.requestReceivedTimestamp);
      const inWindow = at >= restartWindow.from && at <= restartWindow.to;
      if (!inWindow || !(await grantedToServiceAccount(event))) unexcused.push(describeAuditEvent(event));
    }
    expect(unexcused).toEqual([]);
    // The review is no rubber stamp: what deploy/ does not grant, it refuses.
    expect(
      await grantedToServiceAccount({
        verb: 'delete',
        objectRef: { apiGroup: 'clusterstack.x-k8s.io', resource: 'clusterstacks', namespace: NS },
      } as AuditEvent),
    ).toBe(false);
    timings['403s while the API server restarted'] = String(forbidden.length);
    const controllerAgent = events.filter((event) => event.userAgent?.startsWith('clusterstack-gitops/'));
    expect(controllerAgent.length).toBeGreaterThan(0);
    // While it restarts, the API server may also answer 401 before its token authenticator can look
    // the ServiceAccount up: such a request has no user. Excused in the restart window only.
    const unauthenticatedWhileRestarting = (event: AuditEvent): boolean => {
      const at = Date.parse(event.requestReceivedTimestamp);
      return event.responseStatus?.code === 401 && at >= restartWindow.from && at <= restartWindow.to;
    };
    expect(
      controllerAgent
        .filter((event) => event.user.username !== SA_USER && !unauthenticatedWhileRestarting(event))
        .map((event) => `${describeAuditEvent(event)} (user ${JSON.stringify(event.user)})`),
    ).toEqual([]);
    // Our identity on the wire: our User-Agent on every request, our field manager on every write.
    const identity = wireIdentity(ours, api.lease.server, FIELD_MANAGER);
    expect(identity.userAgents).toEqual([USER_AGENT]);
    expect(identity.writes).toBeGreaterThan(0);
    expect(identity.foreignWrites).toEqual([]);
    // Clusters are watched in the version the server prefers (Cluster API 1.14: v1beta2), never v1beta1.
    const clusterWatches = ours
      .filter((event) => event.verb === 'watch' && event.objectRef?.resource === 'clusters')
      .map((event) => new URL(event.requestURI, api.lease.server).pathname);
    expect(clusterWatches.length).toBeGreaterThan(0);
    expect([...new Set(clusterWatches)]).toEqual(['/apis/cluster.x-k8s.io/v1beta2/clusters']);
    // The control plane, named by group only, is watched in the version the server prefers.
    const controlPlaneWatches = ours
      .filter((event) => event.verb === 'watch' && event.objectRef?.resource === 'kubeadmcontrolplanes')
      .map((event) => new URL(event.requestURI, api.lease.server).pathname);
    expect([...new Set(controlPlaneWatches)]).toEqual([
      '/apis/controlplane.cluster.x-k8s.io/v1beta2/kubeadmcontrolplanes',
    ]);
  });
  it('deploy/namespaced: a controller for one namespace, as a ServiceAccount bound only by its Roles, reconciles with no 403', async () => {
    // The cluster-wide replicas would act on this namespace too: gone first.
    for (const { process } of replicas.values()) await process.killHard();
    const WATCHED = 'cluster-stacks';
    await create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WATCHED } });
    // A second copy of deploy/namespaced whose ServiceAccount lives in its own namespace: a distinct
    // user on this server, with no ClusterRoleBinding, only that overlay's Roles.
    const identity = await api.shippedIdentity({
      overlay: 'namespaced',
      namespace: 'clusterstack-namespaced',
      dir: work,
    });
    const review = async (namespace: string): Promise<boolean> => {
      const answer = await api.admin.request('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: identity.user,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${identity.namespace}`, 'system:authenticated'],
            resourceAttributes: { verb: 'list', group: 'clusterstack.x-k8s.io', resource: 'clusterstacks', namespace },
          },
        },
      });
      return answer.body.status?.allowed === true;
    };
    expect([await review(WATCHED), await review(''), await review(NS)]).toEqual([true, false, false]);

    // A wait that times out says what the server refused the ServiceAccount, the likely cause.
    const refused = (): string[] =>
      api
        .auditEvents()
        .filter((event) => event.user.username === identity.user && event.responseStatus?.code === 403)
        .map(describeAuditEvent);
    const waitFor = async <T>(
      what: string,
      probe: () => Promise<T | undefined | false>,
      timeoutMs = 60_000,
    ): Promise<T> => {
      try {
        return await eventually(what, probe, timeoutMs);
      } catch (error) {
        throw new Error(
          `${String((error as Error).message).split('\n')[0]}; refused to ${identity.user}:\n${[...new Set(refused())].join('\n') || '(nothing)'}`,
          { cause: error },
        );
      }
    };
    const collection = (apiPath: string): string => apiPath.replace(`/namespaces/${NS}/`, `/namespaces/${WATCHED}/`);
    const stack = aStack('ferrol');
    await create(collection(STACKS), { ...stack, metadata: { name: 'ferrol', namespace: WATCHED } });
    const cluster = aCluster('delta', 'docker-ferrol-1-30-v2');
    await create(collection(CLUSTERS), { ...cluster, metadata: { name: 'delta', namespace: WATCHED } });
    const namespacedRemote = git.bareRepo('gitops-namespaced');
    const [port] = await distinctFreePorts(1);
    const mark = Date.now();
    startReplica('namespaced', port!, {
      KUBECONFIG: identity.kubeconfigFile,
      POD_NAMESPACE: identity.namespace,
      CLUSTERSTACK_WATCH_NAMESPACE: WATCHED,
      CLUSTERSTACK_GIT: namespacedRemote,
    });

    await waitFor(
      "delta's addons published by the namespaced controller",
      async () => conditionOf(await read(`${collection(ADDONS)}/delta`), 'ManifestsPublished')?.status === 'True',
      90_000,
    );
    expect(
      Object.keys(git.files(namespacedRemote, 'main')).some((file) => file.startsWith(`clusters/${WATCHED}/delta/`)),
    ).toBe(true);
    const ready = await waitFor('the stack with Ready and its finalizer', async () => {
      const live = await read(`${collection(STACKS)}/ferrol`);
      return conditionOf(live, 'Ready') !== undefined && (live?.metadata.finalizers ?? []).includes(FINALIZER) && live;
    });
    expect(ready.metadata.finalizers).toContain(FINALIZER);
    // The release's status is a write of its own, in no set order with the others.
    const namespacedRelease = await waitFor('the release published', async () => {
      const live = await read(`${collection(RELEASES)}/docker-ferrol-1-30-v2`);
      return conditionOf(live, 'ManifestsPublished')?.status === 'True' && live;
    });
    expect(conditionOf(namespacedRelease, 'ManifestsPublished')).toMatchObject({ status: 'True' });
    // Deletion under the same Roles: the Cluster, then the stack, its finalizer let go by the controller.
    await api.admin.request('DELETE', `${collection(CLUSTERS)}/delta`);
    await api.admin.request('DELETE', `${collection(STACKS)}/ferrol`);
    await waitFor(
      'the namespaced ClusterStack gone',
      async () => (await read(`${collection(STACKS)}/ferrol`)) === undefined && true,
      60_000,
    );
    timings['namespaced: publish and delete'] = `${Date.now() - mark} ms`;

    const ours = api.auditEvents().filter((event) => event.user.username === identity.user);
    expect(ours.length).toBeGreaterThan(20);
    expect(refused()).toEqual([]);
    // It stays where its Roles are: the watched namespace, and its own for the Lease.
    expect([...new Set(ours.map((event) => event.objectRef?.namespace).filter(Boolean))].sort()).toEqual(
      [identity.namespace, WATCHED].sort(),
    );
  });
});
