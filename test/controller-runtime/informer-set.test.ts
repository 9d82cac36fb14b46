import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InformerSet, type InformerSetOptions } from '../../src/controller/runtime/informer-set.js';
import { recordingLogger } from '../support/test-logger.js';
import type { WatchedKind, WatchEvent } from '../../src/controller/runtime/runtime-contract.js';
import { startFakeKubeApi, type FakeKubeApi } from '../support/fake-kube-api/index.js';

const STACKS: WatchedKind = {
  group: 'clusterstack.x-k8s.io',
  version: 'v1alpha1',
  kind: 'ClusterStack',
  plural: 'clusterstacks',
  namespaced: true,
};
const CLUSTERS: WatchedKind = {
  group: 'cluster.x-k8s.io',
  version: 'v1beta1',
  kind: 'Cluster',
  plural: 'clusters',
  namespaced: true,
};
const SECRETS: WatchedKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
const GADGETS: WatchedKind = {
  group: 'example.com',
  version: 'v1',
  kind: 'Gadget',
  plural: 'gadgets',
  namespaced: true,
  optional: true,
};

const aStack = (name: string, namespace = 'default') => ({
  apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
  kind: 'ClusterStack',
  metadata: { name, namespace },
  spec: { provider: 'docker', name: 'ferrol', kubernetesVersion: '1.30' },
});

/** Ends as soon as the condition holds; the limit only stops a stuck test (3 s was tight at load). */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const describeEvent = (e: WatchEvent) =>
  `${e.type}:${e.kind.kind}:${e.object.metadata.namespace ?? ''}/${e.object.metadata.name}`;

describe('InformerSet', () => {
  let api: FakeKubeApi;
  const sets: InformerSet[] = [];

  beforeEach(async () => {
    api = await startFakeKubeApi();
  });

  afterEach(async () => {
    for (const set of sets.splice(0)) await set.stop();
    await api.close();
  });

  function anInformerSet(kinds: WatchedKind[], options: Partial<InformerSetOptions> = {}) {
    const events: string[] = [];
    const restarts: string[] = [];
    const { logger, entries } = recordingLogger();
    const set = new InformerSet({
      kubeConfig: api.kubeConfig(),
      kinds,
      onEvent: (e) => void events.push(describeEvent(e)),
      logger,
      restartDelay: { baseMs: 20, maxMs: 200 },
      onRestart: (kind) => void restarts.push(kind.kind),
      ...options,
    });
    sets.push(set);
    return { set, events, entries, restarts };
  }

  it('lists every kind across namespaces, serves the cache and forwards events', async () => {
    api.seed(aStack('a'));
    api.seed(aStack('b', 'team-a'));
    api.seed({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'workload-kubeconfig', namespace: 'default' },
      data: { value: Buffer.from('kubeconfig').toString('base64') },
    });
    const { set, events } = anInformerSet([STACKS, CLUSTERS, SECRETS]);
    expect(set.synced()).toBe(false);
    await set.start();
    await set.whenSynced();

    expect(set.synced()).toBe(true);
    expect(set.list(STACKS).map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      'default/a',
      'team-a/b',
    ]);
    expect(set.get({ ...STACKS }, 'team-a', 'b')?.['spec']).toMatchObject({ name: 'ferrol' });
    expect(set.get(SECRETS, 'default', 'workload-kubeconfig')?.['data']).toEqual({
      value: Buffer.from('kubeconfig').toString('base64'),
    });
    expect(set.list(CLUSTERS)).toEqual([]);
    // Core kinds list under /api/v1, everything cluster-wide.
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining([
        'GET /apis/clusterstack.x-k8s.io/v1alpha1/clusterstacks',
        'GET /api/v1/secrets',
        'GET /apis/cluster.x-k8s.io/v1beta1/clusters',
      ]),
    );
    expect(events.sort()).toEqual([
      'add:ClusterStack:default/a',
      'add:ClusterStack:team-a/b',
      'add:Secret:default/workload-kubeconfig',
    ]);

    await api.waitForWatches(3);
    // Watches carry a server-side timeout (300 s default, jittered up to twice that).
    const watchTimeouts = api.requests.filter((r) => r.query['watch']).map((r) => Number(r.query['timeoutSeconds']));
    expect(watchTimeouts).toHaveLength(3);
    for (const t of watchTimeouts) expect(t >= 300 && t <= 600).toBe(true);
    const custom = api.kubeConfig().makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      group: CLUSTERS.group,
      version: CLUSTERS.version,
      plural: CLUSTERS.plural,
      namespace: 'default',
      body: { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', metadata: { name: 'workload' }, spec: {} },
    });
    await custom.deleteNamespacedCustomObject({
      group: STACKS.group,
      version: STACKS.version,
      plural: STACKS.plural,
      namespace: 'default',
      name: 'a',
    });
    await waitFor(() => events.includes('delete:ClusterStack:default/a'), 'the delete event');
    expect(events).toContain('add:Cluster:default/workload');
    expect(set.get(STACKS, 'default', 'a')).toBeUndefined();
    expect(() => set.list(GADGETS)).toThrow(/Gadget .* is not watched/);
  });

  it('restarts a watch after the API server goes away, and sees what was created meanwhile', async () => {
    api.seed(aStack('before'));
    const { set, events, entries, restarts } = anInformerSet([STACKS]);
    await set.start();
    await api.waitForWatches(1);

    await api.stop();
    await waitFor(() => restarts.length >= 2, 'restart attempts while the server is down');
    api.seed(aStack('missed'));
    await api.restart();
    await waitFor(() => events.includes('add:ClusterStack:default/missed'), 'the add after the restart');
    await api.waitForWatches(1);

    const warnings = entries.filter((e) => e.level === 'warn');
    expect(warnings[0]).toMatchObject({
      message: 'watch failed; restarting after backoff',
      fields: { kind: 'ClusterStack', attempt: 1 },
    });
    expect(warnings.map((w) => w.fields['attempt'])).toEqual(warnings.map((_, i) => i + 1));
    expect(entries.some((e) => e.level === 'info' && e.message === 'watch resumed')).toBe(true);
    expect(JSON.stringify(entries)).not.toContain('fake-token');

    // And it keeps working afterwards.
    api.seed(aStack('after'));
    await waitFor(() => events.includes('add:ClusterStack:default/after'), 'the add after recovery');
  });

  it('resumes a watch the server ended at its timeout, without relisting', async () => {
    const { set, events } = anInformerSet([STACKS], { watchTimeoutSeconds: 1, random: () => 0 });
    await set.start();
    await api.waitForWatches(1);
    api.clearRequests();
    await waitFor(() => api.requests.length >= 1, 'the next watch');
    expect(api.requests[0]?.query).toMatchObject({
      timeoutSeconds: '1',
      resourceVersion: expect.stringMatching(/^\d+$/),
    });
    expect(api.requests.every((r) => r.query['watch'] === 'true')).toBe(true);
    api.seed(aStack('late'));
    await waitFor(() => events.includes('add:ClusterStack:default/late'), 'the add after resuming');
  });

  it('relists after 410 Gone without reporting an error', async () => {
    const { set, events, entries } = anInformerSet([STACKS]);
    await set.start();
    await api.waitForWatches(1);
    api.clearRequests();
    api.expireWatches();
    await waitFor(
      () => api.watchCount() === 1 && api.requests.some((r) => !r.query['watch']),
      'the relist and the new watch',
    );
    api.seed(aStack('after-relist'));
    await waitFor(() => events.includes('add:ClusterStack:default/after-relist'), 'the add after the relist');
    expect(entries.filter((e) => e.level !== 'info')).toEqual([]);
  });

  it('relists when its resourceVersion expired while the server was down, reporting deletes', async () => {
    await api.close();
    api = await startFakeKubeApi({ historyLimit: 2 });
    api.seed(aStack('gone'));
    api.seed(aStack('kept'));
    const { set, events } = anInformerSet([STACKS]);
    await set.start();
    await api.waitForWatches(1);

    await api.stop();
    const custom = () => api.kubeConfig().makeApiClient(CustomObjectsApi);
    for (const name of ['n1', 'n2', 'n3']) api.seed(aStack(name));
    await api.restart();
    await custom().deleteNamespacedCustomObject({
      group: STACKS.group,
      version: STACKS.version,
      plural: STACKS.plural,
      namespace: 'default',
      name: 'gone',
    });
    await waitFor(
      () => events.includes('delete:ClusterStack:default/gone') && events.includes('add:ClusterStack:default/n3'),
      'the relist',
    );
    expect(set.list(STACKS).map((o) => o.metadata.name)).toEqual(['kept', 'n1', 'n2', 'n3']);
  });

  it('retries a failing list with growing backoff; synced waits for it', async () => {
    api.failNext({ method: 'GET', pathIncludes: 'clusterstacks', status: 503, times: 3 });
    const { set, entries } = anInformerSet([STACKS], { random: () => 0 });
    await set.start();
    expect(set.synced()).toBe(false);
    await set.whenSynced();
    const warnings = entries.filter((e) => e.level === 'warn');
    // Equal jitter with random 0: half of 20, 40, 80 ms.
    expect(warnings.map((w) => w.fields['retryInMs'])).toEqual([10, 20, 40]);
    expect(warnings[0]?.fields['error']).toMatchObject({ status: 503 });
  });

  it('waits as long as a 429 asks (Retry-After) and logs it without a warning: a server filling its watch cache', async () => {
    api.failNext({
      method: 'GET',
      pathIncludes: 'clusterstacks',
      status: 429,
      times: 2,
      reason: 'TooManyRequests',
      message: 'storage is (re)initializing',
      retryAfterSeconds: 0,
    });
    const { set, entries, restarts } = anInformerSet([STACKS], {
      random: () => 0,
      restartDelay: { baseMs: 60_000, maxMs: 60_000 },
    });
    await set.start();
    // A backoff of a minute (equal jitter, random 0: 30 s) would outlast this wait: the server's 0 s is what counts.
    await waitFor(() => set.synced(), 'the list after the server asked to wait 0 s');
    const asked = entries.filter((e) => e.message === 'API server asked to retry later; watch restarts then');
    expect(asked.map((e) => [e.level, e.fields['retryInMs'], e.fields['attempt']])).toEqual([
      ['info', 0, 1],
      ['info', 0, 2],
    ]);
    expect(asked[0]?.fields['error']).toMatchObject({ status: 429, message: 'storage is (re)initializing' });
    expect(entries.filter((e) => e.level === 'warn')).toEqual([]);
    expect(restarts).toEqual(['ClusterStack', 'ClusterStack']);
  });

  it('backs off on a 429 without Retry-After, as on any failure, still without a warning', async () => {
    api.failNext({ method: 'GET', pathIncludes: 'clusterstacks', status: 429, times: 1, message: 'slow down' });
    const { set, entries } = anInformerSet([STACKS], { random: () => 0 });
    await set.start();
    await set.whenSynced();
    const asked = entries.filter((e) => e.message === 'API server asked to retry later; watch restarts then');
    // Equal jitter with random 0: half of 20 ms.
    expect(asked.map((e) => e.fields['retryInMs'])).toEqual([10]);
    expect(entries.filter((e) => e.level === 'warn')).toEqual([]);
  });

  it('says while a kind cannot be read (since when, the API error), so a stale cache is not taken for the truth', async () => {
    api.failNext({
      method: 'GET',
      pathIncludes: 'clusterstacks',
      status: 403,
      times: 2,
      reason: 'Forbidden',
      message: 'clusterstacks.clusterstack.x-k8s.io is forbidden',
    });
    let now = 1_000;
    const { set } = anInformerSet([STACKS], {
      random: () => 0,
      clock: {
        now: () => now,
        setTimeout: (callback, ms) => setTimeout(callback, ms),
        clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
      },
    });
    await set.start();
    expect(set.readState(STACKS)).toEqual({
      listed: false,
      failing: { since: 1_000, error: 'HTTP 403: clusterstacks.clusterstack.x-k8s.io is forbidden' },
    });
    now = 5_000;
    await waitFor(() => set.readState(STACKS).listed, 'the list once allowed');
    expect(set.readState(STACKS)).toEqual({ listed: true, served: true });
  });

  it('stays stopped after stop(): its own abort is no reason to restart', async () => {
    const { set, entries, restarts } = anInformerSet([STACKS, CLUSTERS]);
    await set.start();
    await api.waitForWatches(2);
    await set.stop();
    await waitFor(() => api.watchCount() === 0, 'the watches to close');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(api.watchCount()).toBe(0);
    expect(restarts).toEqual([]);
    expect(entries.filter((e) => e.level === 'warn')).toEqual([]);

    // A stopped set can start again and resumes from its cache.
    api.seed(aStack('later'));
    await set.start();
    await waitFor(() => set.get(STACKS, 'default', 'later') !== undefined, 'the object seen after starting again');
  });

  it('skips an optional kind that is not served and picks it up once it is installed', async () => {
    const { set, events, entries } = anInformerSet([STACKS, GADGETS], { absentRecheckMs: 50 });
    await set.start();
    await set.whenSynced();
    expect(set.synced()).toBe(true);
    expect(set.isServed(GADGETS)).toBe(false);
    expect(set.isServed(STACKS)).toBe(true);
    expect(set.list(GADGETS)).toEqual([]);
    expect(entries.find((e) => e.message === 'optional kind is not served; looking again later')?.fields).toMatchObject(
      { kind: 'Gadget', apiVersion: 'example.com/v1' },
    );
    expect(entries.filter((e) => e.level === 'warn')).toEqual([]);

    api.registerResource({ group: 'example.com', version: 'v1', kind: 'Gadget', plural: 'gadgets', namespaced: true });
    api.seed({ apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g1', namespace: 'default' } });
    await waitFor(() => events.includes('add:Gadget:default/g1'), 'the gadget once installed');
    expect(set.isServed(GADGETS)).toBe(true);
  });

  it('reports a required kind that is not served, with what to do, and never syncs', async () => {
    const { set, entries } = anInformerSet([STACKS, { ...GADGETS, optional: false }]);
    await set.start();
    await waitFor(() => entries.some((e) => e.level === 'warn'), 'the warning');
    expect(set.synced()).toBe(false);
    expect(entries.find((e) => e.level === 'warn')?.fields).toMatchObject({
      kind: 'Gadget',
      error: { status: 404 },
      hint: expect.stringContaining('CustomResourceDefinition'),
    });
  });

  it('keeps watching when the event callback throws', async () => {
    const seen: string[] = [];
    const { set, entries } = anInformerSet([STACKS], {
      onEvent: (e) => {
        seen.push(e.object.metadata.name);
        if (e.object.metadata.name === 'bad') throw new Error('bug in the callback');
      },
    });
    await set.start();
    await api.waitForWatches(1);
    api.seed(aStack('bad'));
    api.seed(aStack('good'));
    await waitFor(() => seen.includes('good'), 'the event after the throwing one');
    expect(entries.find((e) => e.level === 'error')).toMatchObject({
      message: 'watch event handler failed',
      fields: { name: 'bad' },
    });
  });
});
