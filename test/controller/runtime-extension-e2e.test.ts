// The controller as a Cluster API runtime extension, end to end: a fake Cluster API caller posts
// real-shaped hook requests over HTTPS (openssl certificate) to a running controller runtime, while
// the fake API server plays the management cluster (and, through CAPI's kubeconfig Secret, the
// workload cluster), with Flux Kustomization status that flips to ready.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerRuntime } from '../../src/controller/run-controller.js';
import type { KubeObject } from '../../src/api/types.js';
import {
  CAPI,
  condition,
  MERGE,
  readyKustomization,
  startControllerFixture,
  type ControllerFixture,
  aStack,
} from '../support/controller-fixture.js';
import {
  afterControlPlaneInitializedRequest,
  beforeClusterUpgradeRequest,
  callExtension,
  HOOKS_V1ALPHA1,
  hookPath,
  type HookCall,
} from '../support/fake-capi-caller.js';
import { makeSelfSignedCert, type SelfSignedCert } from '../support/self-signed-cert.js';

const NS = 'team';
const MINUTE = 60_000;

function aCluster(name: string, className: string, version: string): KubeObject {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name, namespace: NS },
    spec: {
      controlPlaneEndpoint: { host: `${name}.test`, port: 6443 },
      clusterNetwork: { pods: { cidrBlocks: ['10.0.0.0/16'] } },
      topology: { class: className, version },
    },
  };
}

// Steps of one history of one Cluster and its release, in order (shuffle: false): the upgrade is held
// before it is let go, and the restart and standby cases read the waits and outcomes recorded before.
describe('runtime extension (lifecycle hooks)', { shuffle: false }, () => {
  let fixture: ControllerFixture;
  let runtime: ControllerRuntime;
  let cert: SelfSignedCert;
  let offset = 0;
  let firstCommit = '';

  const publishedUnder = (prefix: string) => {
    try {
      return Object.keys(fixture.published()).some((file) => file.startsWith(prefix));
    } catch {
      return false; // no commit on the branch yet
    }
  };
  const liveCluster = (name: string) => fixture.get('Cluster', NS, name) as KubeObject;
  const call = (hook: string, body: unknown): Promise<HookCall> =>
    callExtension(
      runtime.extensionUrl!,
      hookPath(hook, hook.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase()),
      body,
      cert.ca,
    );
  const events = (reason: string, name: string) =>
    fixture.api
      .list('v1', 'Event', NS)
      .filter((event) => event['reason'] === reason && (event['involvedObject'] as { name?: string })?.name === name);
  const addon = (name: string) => fixture.get('ClusterAddon', NS, name);
  const seedKustomization = (revision: string) =>
    fixture.api.seed(readyKustomization('alpha', `clusters/${NS}/alpha`, revision));
  /**
   * Calls until the answer's message matches (the informer cache catches up with seeded objects);
   * the limit only stops a stuck test.
   */
  async function callUntil(hook: string, body: () => unknown, pattern: RegExp): Promise<HookCall> {
    let last: HookCall | undefined;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      last = await call(hook, body());
      if (pattern.test(String(last.body['message']))) return last;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`no ${hook} answer matched ${pattern}; last: ${JSON.stringify(last?.body)}`);
  }

  beforeAll(async () => {
    fixture = await startControllerFixture();
    fixture.api.registerResource({
      group: 'apps',
      version: 'v1',
      kind: 'DaemonSet',
      plural: 'daemonsets',
      namespaced: true,
      statusSubresource: true,
    });
    cert = makeSelfSignedCert();
    await fixture.createNamespace(NS);
    runtime = await fixture.start('hooks', {
      engine: 'flux',
      runtimeExtension: {
        port: 0,
        host: '127.0.0.1',
        certFile: cert.certFile,
        keyFile: cert.keyFile,
        retryAfterSeconds: 5,
        timeoutMs: 30 * MINUTE,
        now: () => Date.now() + offset,
        revisitIntervalMs: 200,
      },
    });
    await fixture.create(aStack('ferrol', NS, { versions: ['v1', 'v3'] }));
    await fixture.create(aCluster('alpha', 'docker-ferrol-1-30-v1', 'v1.30.2'));
    await fixture.waitFor(
      () => publishedUnder(`clusters/${NS}/alpha/cluster-addon/`),
      'the v1 addons of alpha published',
    );
    // The hooks read what the reconcile that pushed recorded once its push returned; the ClusterAddon's
    // status is written after that, so a loaded machine cannot answer the first call from before it.
    await fixture.waitFor(
      () => fixture.get('ClusterAddon', NS, 'alpha')?.['status'] !== undefined,
      'the reconcile that published alpha to finish',
    );
    firstCommit = fixture.git.head(fixture.remote, 'main');
  }, 90_000);

  afterAll(async () => {
    await fixture?.cleanup();
    if (cert) rmSync(cert.dir, { recursive: true, force: true });
  });

  it('announces its three lifecycle handlers through discovery, failing closed', async () => {
    const { status, body } = await callExtension(
      runtime.extensionUrl!,
      `/${HOOKS_V1ALPHA1}/discovery`,
      { apiVersion: HOOKS_V1ALPHA1, kind: 'DiscoveryRequest' },
      cert.ca,
    );
    expect(status).toBe(200);
    expect(body['handlers']).toEqual(
      ['BeforeClusterUpgrade', 'AfterControlPlaneInitialized', 'AfterClusterUpgrade'].map((hook) => ({
        name: hook.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase(),
        requestHook: { apiVersion: HOOKS_V1ALPHA1, hook },
        timeoutSeconds: 10,
        failurePolicy: 'Fail',
      })),
    );
  });

  it('holds BeforeClusterUpgrade while the target release is not rendered for the Cluster yet', async () => {
    const moving = {
      ...liveCluster('alpha'),
      spec: {
        ...(liveCluster('alpha')['spec'] as object),
        topology: { class: 'docker-ferrol-1-30-v3', version: 'v1.30.4' },
      },
    };
    const { status, body } = await call(
      'BeforeClusterUpgrade',
      beforeClusterUpgradeRequest(moving, 'v1.30.2', 'v1.30.4'),
    );
    expect(status).toBe(200);
    expect(body).toMatchObject({
      apiVersion: HOOKS_V1ALPHA1,
      kind: 'BeforeClusterUpgradeResponse',
      status: 'Success',
      retryAfterSeconds: 5,
    });
    expect(body['message']).toMatch(
      /^waiting \d+s of 30m for the controller to render and publish the addons of release docker-ferrol-1-30-v3 for Cluster team\/alpha \(it last rendered release docker-ferrol-1-30-v1\)$/,
    );
  });

  it('waits for the engine to apply each stage of the target release at the commit that holds it, then lets the upgrade go', async () => {
    await fixture.custom.patchNamespacedCustomObject(
      {
        ...CAPI,
        plural: 'clusters',
        namespace: NS,
        name: 'alpha',
        body: { spec: { topology: { class: 'docker-ferrol-1-30-v3', version: 'v1.30.4' } } },
      },
      MERGE(),
    );
    await fixture.waitFor(() => publishedUnder(`clusters/${NS}/alpha/cni/`), 'the v3 addons of alpha published');
    const request = () => beforeClusterUpgradeRequest(liveCluster('alpha'), 'v1.30.2', 'v1.30.4');

    const uncovered = await callUntil('BeforeClusterUpgrade', request, /none covers it/);
    expect(uncovered.body).toMatchObject({ status: 'Success', retryAfterSeconds: 5 });
    expect(uncovered.body['message']).toContain(
      `stage cni: a Flux Kustomization applying clusters/${NS}/alpha/cni (none covers it)`,
    );
    // The status follows the wait: what it waits for now, since the first call.
    await fixture.waitFor(
      () => /waiting for stage cni: /.test(condition(addon('alpha'), 'LifecycleHook')?.message ?? ''),
      'the ClusterAddon showing the wait',
    );
    expect(condition(addon('alpha'), 'LifecycleHook')).toMatchObject({
      status: 'False',
      reason: 'WaitingForAddons',
      message: expect.stringMatching(
        /^BeforeClusterUpgrade for release docker-ferrol-1-30-v3 \(since .*\): waiting for stage cni: /,
      ),
    });
    expect(events('LifecycleHookWaiting', 'alpha')).toHaveLength(1);

    // Flux applied the commit before the new addons: still waiting, for that commit.
    seedKustomization(firstCommit);
    const stale = await callUntil('BeforeClusterUpgrade', request, /waiting for it to apply commit/);
    expect(stale.body).toMatchObject({ status: 'Success', retryAfterSeconds: 5 });

    const head = fixture.git.head(fixture.remote, 'main');
    seedKustomization(head);
    const ready = await callUntil('BeforeClusterUpgrade', request, /applied and healthy/);
    expect(ready.body).toEqual({
      apiVersion: HOOKS_V1ALPHA1,
      kind: 'BeforeClusterUpgradeResponse',
      status: 'Success',
      retryAfterSeconds: 0,
      message: `addons of release docker-ferrol-1-30-v3 for Cluster ${NS}/alpha are applied and healthy at main@sha1:${head}: stages cni, metrics-server`,
    });
    await fixture.waitFor(
      () => condition(addon('alpha'), 'LifecycleHook')?.status === 'True',
      'the ClusterAddon showing the hook done',
    );
    expect(condition(addon('alpha'), 'LifecycleHook')?.reason).toBe('HookSucceeded');
    expect(addon('alpha')?.['spec']).toMatchObject({ hook: 'BeforeClusterUpgrade' });
    // The ClusterAddon records the commit each stage is compared against (the commit that published it).
    expect((addon('alpha')?.['status'] as { stages: unknown[] }).stages).toEqual([
      expect.objectContaining({ name: 'cni', release: 'docker-ferrol-1-30-v3', revision: head }),
      expect.objectContaining({ name: 'metrics-server', release: 'docker-ferrol-1-30-v3', revision: head }),
    ]);
    await fixture.waitFor(() => events('LifecycleHookSucceeded', 'alpha').length === 1, 'the success event');
    const metrics = await runtime.metrics.render();
    expect(metrics).toMatch(
      /clusterstack_lifecycle_hook_responses_total\{hook="BeforeClusterUpgrade",outcome="ready"\} 1/,
    );
    expect(metrics).toMatch(/clusterstack_lifecycle_hook_duration_seconds_count\{hook="BeforeClusterUpgrade"\} \d+/);
  }, 90_000);

  it("answers AfterControlPlaneInitialized (non-blocking) at once, and follows the first install's stages on the ClusterAddon until their CEL conditions hold", async () => {
    const request = () => afterControlPlaneInitializedRequest(liveCluster('alpha'));
    const unreadable = await callUntil('AfterControlPlaneInitialized', request, /cannot be read/);
    // Success, never Failure: Cluster API would stop the Cluster's whole topology reconcile on a Failure.
    expect(unreadable.body).toMatchObject({ kind: 'AfterControlPlaneInitializedResponse', status: 'Success' });
    expect(unreadable.body).not.toHaveProperty('retryAfterSeconds');
    expect(unreadable.body['message']).toMatch(
      /^not holding \(AfterControlPlaneInitialized is non-blocking\); the ClusterAddon follows the wait: waiting /,
    );
    expect(unreadable.body['message']).toContain(
      `stage cni postcondition: the workload cluster cannot be read: Secret ${NS}/alpha-kubeconfig (key value) does not exist yet`,
    );
    const hookCondition = () => condition(addon('alpha'), 'LifecycleHook');
    await fixture.waitFor(
      () =>
        /^AfterControlPlaneInitialized for release docker-ferrol-1-30-v3 \(since .*\): waiting for stage cni postcondition/.test(
          hookCondition()?.message ?? '',
        ),
      'the ClusterAddon showing the wait',
    );
    expect(hookCondition()).toMatchObject({ status: 'False', reason: 'WaitingForAddons' });
    expect(addon('alpha')?.['spec']).toMatchObject({ hook: 'AfterControlPlaneInitialized' });

    // From here on Cluster API does not call again (the hook is done for it): the controller follows the wait by itself.
    fixture.api.seed({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'alpha-kubeconfig', namespace: NS },
      data: { value: Buffer.from(fixture.api.kubeConfigYaml()).toString('base64') },
    });
    await fixture.waitFor(
      () =>
        /waits for DaemonSet kube-system\/kindnet \(kindnet\) to exist in the workload cluster/.test(
          hookCondition()?.message ?? '',
        ),
      'the wait for the DaemonSet',
    );
    const daemonSet = (ready: number) => ({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'kindnet', namespace: 'kube-system' },
      spec: {},
      status: { numberReady: ready, desiredNumberScheduled: 2 },
    });
    fixture.api.seed(daemonSet(1));
    await fixture.waitFor(
      () =>
        /condition `kindnet.status.numberReady > 0 && kindnet.status.numberReady == kindnet.status.desiredNumberScheduled` is false/.test(
          hookCondition()?.message ?? '',
        ),
      'the condition false',
    );
    expect(hookCondition()?.status).toBe('False');

    fixture.api.seed(daemonSet(2));
    await fixture.waitFor(() => hookCondition()?.status === 'True', 'the ClusterAddon showing the first install ready');
    expect(hookCondition()).toMatchObject({
      reason: 'HookSucceeded',
      message: expect.stringMatching(
        /^AfterControlPlaneInitialized for release docker-ferrol-1-30-v3 .*applied and healthy/,
      ),
    });
    await fixture.waitFor(
      () =>
        events('LifecycleHookSucceeded', 'alpha').some((event) =>
          String(event['note'] ?? event['message']).startsWith('AfterControlPlaneInitialized'),
        ),
      'the success event',
    );
    // Asked again, it answers as ready.
    expect((await call('AfterControlPlaneInitialized', request())).body).toMatchObject({
      status: 'Success',
      message: expect.stringContaining('applied and healthy'),
    });
  }, 60_000);

  it('never lets an upgrade go on a stale view: while Flux Kustomizations cannot be read, it waits naming the API error', async () => {
    const request = () => beforeClusterUpgradeRequest(liveCluster('alpha'), 'v1.30.2', 'v1.30.4');
    await callUntil('BeforeClusterUpgrade', request, /applied and healthy/);
    // The controller loses read access to Flux's objects: its cache still says Ready at the right commit.
    fixture.api.failNext({
      pathIncludes: 'kustomizations',
      status: 403,
      times: 100_000,
      reason: 'Forbidden',
      message:
        'kustomizations.kustomize.toolkit.fluxcd.io is forbidden: User "system:serviceaccount:clusterstack-system:controller" cannot list resource "kustomizations"',
    });
    fixture.api.expireWatches();
    const blind = await callUntil('BeforeClusterUpgrade', request, /read Flux Kustomizations again/);
    expect(blind.body).toMatchObject({ status: 'Success', retryAfterSeconds: 5 });
    expect(blind.body['message']).toMatch(
      /^waiting \d+s of 30m for the controller to read Flux Kustomizations again: listing or watching them has failed for \d+s \(HTTP 403: kustomizations.kustomize.toolkit.fluxcd.io is forbidden: .*\), so what they applied is unknown; check the controller's RBAC and the API server$/,
    );
    fixture.api.clearFaults();
    const back = await callUntil('BeforeClusterUpgrade', request, /applied and healthy/);
    expect(back.body).toMatchObject({ status: 'Success', retryAfterSeconds: 0 });
  }, 60_000);

  it("lets the upgrade go once the wait outlasts the timeout (never a Failure, which would stop the Cluster's topology reconcile), with a Warning event and the ClusterAddon naming what was not confirmed", async () => {
    await fixture.create(aCluster('bravo', 'docker-ferrol-1-30-v3', 'v1.30.4'));
    await fixture.waitFor(() => publishedUnder(`clusters/${NS}/bravo/cni/`), 'the addons of bravo published');
    const request = () => beforeClusterUpgradeRequest(liveCluster('bravo'), 'v1.30.2', 'v1.30.4');
    const waiting = await callUntil('BeforeClusterUpgrade', request, /none covers it/);
    expect(waiting.body).toMatchObject({ status: 'Success', retryAfterSeconds: 5 });

    offset += 31 * MINUTE;
    const { body } = await call('BeforeClusterUpgrade', request());
    expect(body).toMatchObject({ status: 'Success', retryAfterSeconds: 0 });
    expect(body['message']).toMatch(
      new RegExp(
        `^letting the upgrade go after 31m \\(the hook timeout is 30m\\) without confirming: stage cni: a Flux Kustomization applying clusters/${NS}/bravo/cni \\(none covers it\\); .* Fix the addons or their conditions, or raise --hook-timeout$`,
      ),
    );
    await fixture.waitFor(() => events('LifecycleHookTimedOut', 'bravo').length === 1, 'the timeout event');
    expect(events('LifecycleHookTimedOut', 'bravo')[0]).toMatchObject({ type: 'Warning' });
    await fixture.waitFor(
      () => condition(addon('bravo'), 'LifecycleHook')?.reason === 'HookTimedOut',
      'the ClusterAddon showing the timeout',
    );
    expect(condition(addon('bravo'), 'LifecycleHook')).toMatchObject({
      status: 'False',
      severity: 'Warning',
      message: expect.stringContaining('without confirming: stage cni'),
    });
    expect((addon('bravo')?.['status'] as { hooks?: unknown[] }).hooks).toEqual([
      expect.objectContaining({ name: 'BeforeClusterUpgrade', release: 'docker-ferrol-1-30-v3', outcome: 'TimedOut' }),
    ]);
    // Asked again, it still lets the upgrade go: no endless retry, no error.
    expect((await call('BeforeClusterUpgrade', request())).body).toMatchObject({
      status: 'Success',
      retryAfterSeconds: 0,
    });
  }, 90_000);

  it("cannot answer while it is down (Cluster API then applies the announced failurePolicy), and a restarted extension keeps the bounded wait it had and every ClusterAddon's hook outcomes", async () => {
    const request = () => beforeClusterUpgradeRequest(liveCluster('bravo'), 'v1.30.2', 'v1.30.4');
    const url = runtime.extensionUrl!;
    const alphaBefore = addon('alpha')?.['status'] as { hooks?: unknown[]; conditions?: unknown[] };
    expect(condition(addon('alpha'), 'LifecycleHook')?.reason).toBe('HookSucceeded');
    await runtime.stop();
    // What Cluster API's runtime client gets: a failed call, not a response. Fail holds the Cluster's
    // topology reconcile (retried with backoff); Ignore treats it as Success. Nothing here can answer.
    await expect(
      callExtension(url, hookPath('BeforeClusterUpgrade', 'before-cluster-upgrade'), request(), cert.ca),
    ).rejects.toThrow(/ECONNREFUSED|ECONNRESET|socket hang up/);

    runtime = await fixture.start('hooks-restarted', {
      engine: 'flux',
      runtimeExtension: {
        port: 0,
        host: '127.0.0.1',
        certFile: cert.certFile,
        keyFile: cert.keyFile,
        retryAfterSeconds: 5,
        timeoutMs: 30 * MINUTE,
        now: () => Date.now() + offset,
        revisitIntervalMs: 200,
        failurePolicy: 'Ignore',
      },
    });
    const discovery = await callExtension(
      runtime.extensionUrl!,
      `/${HOOKS_V1ALPHA1}/discovery`,
      { apiVersion: HOOKS_V1ALPHA1, kind: 'DiscoveryRequest' },
      cert.ca,
    );
    expect((discovery.body['handlers'] as { failurePolicy: string }[]).map((handler) => handler.failurePolicy)).toEqual(
      ['Ignore', 'Ignore', 'Ignore'],
    );
    // The restarted controller writes alpha's status again (Flux now reports an older commit applied),
    // and that write keeps alpha's completed hooks: the process that answered them is gone.
    seedKustomization(firstCommit);
    await fixture.waitFor(
      () => condition(addon('alpha'), 'ManifestsSynced')?.status === 'False',
      "alpha's status written by the restarted controller",
    );
    expect(condition(addon('alpha'), 'LifecycleHook')).toEqual(
      condition({ status: alphaBefore } as unknown as KubeObject, 'LifecycleHook'),
    );
    expect((addon('alpha')?.['status'] as { hooks?: unknown[] }).hooks).toEqual(alphaBefore.hooks);
    expect(alphaBefore.hooks).toEqual([
      expect.objectContaining({ name: 'BeforeClusterUpgrade', outcome: 'Succeeded' }),
      expect.objectContaining({ name: 'AfterControlPlaneInitialized', outcome: 'Succeeded' }),
    ]);
    seedKustomization(fixture.git.head(fixture.remote, 'main'));
    await fixture.waitFor(() => condition(addon('alpha'), 'ManifestsSynced')?.status === 'True', 'alpha synced again');
    // The wait started before the restart (the ClusterAddon's status.hooks says when): still over, the upgrade goes.
    const after = await callUntil('BeforeClusterUpgrade', request, /^letting the upgrade go after/);
    expect(after.body).toMatchObject({ status: 'Success', retryAfterSeconds: 0 });
  }, 90_000);

  it('a standby replica asks Cluster API to call again and records nothing: no wait, no event, no ClusterAddon change, no re-check', async () => {
    // Another replica holds the lease for the whole test.
    const now = new Date().toISOString();
    fixture.api.seed({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'hooks-lease', namespace: NS },
      spec: {
        holderIdentity: 'the-leader',
        leaseDurationSeconds: 3600,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: 0,
      },
    });
    const standby = await fixture.start('hooks-standby', {
      engine: 'flux',
      leaderElection: {
        namespace: NS,
        name: 'hooks-lease',
        identity: 'standby',
        leaseDurationMs: 3_600_000,
        renewDeadlineMs: 2000,
        retryPeriodMs: 100,
      },
      runtimeExtension: {
        port: 0,
        host: '127.0.0.1',
        certFile: cert.certFile,
        keyFile: cert.keyFile,
        retryAfterSeconds: 7,
        timeoutMs: 1,
        revisitIntervalMs: 50,
      },
    });
    expect(standby.isLeader()).toBe(false);
    const eventsBefore = fixture.api.list('v1', 'Event', NS).length;
    const addonBefore = JSON.stringify(addon('alpha')?.['status'] ?? null);
    const standbyCall = (hook: string, body: unknown) =>
      callExtension(
        standby.extensionUrl!,
        hookPath(hook, hook.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase()),
        body,
        cert.ca,
      );

    const upgrade = await standbyCall(
      'BeforeClusterUpgrade',
      beforeClusterUpgradeRequest(liveCluster('alpha'), 'v1.30.4', 'v1.30.5'),
    );
    expect(upgrade.body).toMatchObject({
      kind: 'BeforeClusterUpgradeResponse',
      status: 'Success',
      retryAfterSeconds: 7,
    });
    expect(upgrade.body['message']).toMatch(/standby/);
    const initialized = await standbyCall(
      'AfterControlPlaneInitialized',
      afterControlPlaneInitializedRequest(liveCluster('alpha')),
    );
    expect(initialized.body).toMatchObject({ kind: 'AfterControlPlaneInitializedResponse', status: 'Success' });
    expect(initialized.body).not.toHaveProperty('retryAfterSeconds');

    // Its timeout is 1 ms and it re-checks every 50 ms: were it following waits, events would come now.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(fixture.api.list('v1', 'Event', NS).length).toBe(eventsBefore);
    expect(JSON.stringify(addon('alpha')?.['status'] ?? null)).toBe(addonBefore);
    const metrics = await standby.metrics.render();
    expect(metrics).toMatch(
      /clusterstack_lifecycle_hook_responses_total\{hook="BeforeClusterUpgrade",outcome="standby"\} 1/,
    );
    await standby.stop();
  }, 60_000);
});
