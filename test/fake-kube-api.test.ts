/**
 * The fake API server, driven through the real @kubernetes/client-node 1.4. Besides proving the
 * fake, these tests document how client-node 1.4 behaves, for the controller's authors:
 *
 * - Patch content type: CustomObjectsApi/CoreV1Api patch* calls send `application/json-patch+json`
 *   by default (the first JSON type in the generated `consumes` list). For a merge patch, pass
 *   `setHeaderOptions('Content-Type', PatchStrategy.MergePatch)` as the second argument.
 * - Errors are `ApiException`s: `err.code` is the HTTP status, `err.body` the Status as a JSON *string*.
 * - Informers (makeInformer / ListWatch) relist by themselves after 410 Gone and resume after a
 *   cleanly ended watch, but on any other failure (connection cut, 5xx on list or watch) they emit
 *   'error' once and STOP. The controller must call `informer.start()` again (with backoff).
 */
import {
  ApisApi,
  CoordinationV1Api,
  CoreApi,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  VersionApi,
  Watch,
  makeInformer,
  setHeaderOptions,
  type Informer,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  serviceAccountUser,
  startFakeKubeApi,
  type FakeKubeApi,
  type KubeObject,
  type Status,
} from './support/fake-kube-api/index.js';

const GROUP = 'clusterstack.x-k8s.io';
const VERSION = 'v1alpha1';
const API_VERSION = `${GROUP}/${VERSION}`;
const NS = 'default';
const STACKS = { group: GROUP, version: VERSION, plural: 'clusterstacks' } as const;
const STACKS_PATH = `/apis/${GROUP}/${VERSION}/namespaces/${NS}/clusterstacks`;

interface CustomObject extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

function aClusterStack(
  name: string,
  spec: Record<string, unknown> = { provider: 'docker', name: 'ferrol', kubernetesVersion: '1.30' },
): CustomObject {
  return { apiVersion: API_VERSION, kind: 'ClusterStack', metadata: { name, namespace: NS }, spec };
}

/** The HTTP code and the Status body of a failed client-node call. */
async function failure(call: Promise<unknown>): Promise<{ code: number; status: Status }> {
  try {
    await call;
  } catch (err) {
    const e = err as { code?: number; body?: unknown };
    // client-node 1.4 keeps the response body as the raw JSON text.
    const status = (typeof e.body === 'string' ? JSON.parse(e.body) : e.body) as Status;
    return { code: e.code ?? 0, status };
  }
  throw new Error('expected the call to fail');
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

type Recorded = { event: string; name?: string; object?: unknown; error?: unknown };

describe('fake kube api through @kubernetes/client-node', () => {
  let api: FakeKubeApi;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  const informers: Array<Informer<CustomObject>> = [];

  beforeEach(async () => {
    api = await startFakeKubeApi();
    kc = api.kubeConfig();
    custom = kc.makeApiClient(CustomObjectsApi);
  });

  afterEach(async () => {
    for (const informer of informers.splice(0)) await informer.stop();
    await api.close();
  });

  const createStack = (obj: CustomObject) =>
    custom.createNamespacedCustomObject({ ...STACKS, namespace: NS, body: obj }) as Promise<CustomObject>;
  const getStack = (name: string) =>
    custom.getNamespacedCustomObject({ ...STACKS, namespace: NS, name }) as Promise<CustomObject>;

  function stackInformer(labelSelector?: string): {
    informer: Informer<CustomObject> & ObjectCache<CustomObject>;
    events: Recorded[];
  } {
    const informer = makeInformer<CustomObject>(
      kc,
      STACKS_PATH,
      () =>
        custom.listNamespacedCustomObject({ ...STACKS, namespace: NS, ...(labelSelector ? { labelSelector } : {}) }),
      labelSelector,
    );
    const events: Recorded[] = [];
    for (const event of ['add', 'update', 'delete'] as const) {
      informer.on(event, (obj) =>
        events.push({ event, ...(obj.metadata?.name ? { name: obj.metadata.name } : {}), object: obj }),
      );
    }
    informer.on('connect', () => events.push({ event: 'connect' }));
    informer.on('error', (error) => events.push({ event: 'error', error }));
    informers.push(informer);
    return { informer, events };
  }

  describe('discovery', () => {
    it('serves /version, /api, /apis and APIResourceLists with status subresources', async () => {
      expect((await kc.makeApiClient(VersionApi).getCode()).gitVersion).toMatch(/^v1\.\d+/);
      expect((await kc.makeApiClient(CoreApi).getAPIVersions()).versions).toEqual(['v1']);
      const groups = (await kc.makeApiClient(ApisApi).getAPIVersions()).groups.map((g) => g.name);
      for (const group of [
        GROUP,
        'cluster.x-k8s.io',
        'coordination.k8s.io',
        'events.k8s.io',
        'kustomize.toolkit.fluxcd.io',
        'argoproj.io',
        'infrastructure.clusterstack.x-k8s.io',
      ]) {
        expect(groups).toContain(group);
      }

      const resources = (await custom.getAPIResources({ group: GROUP, version: VERSION })).resources;
      expect(resources).toContainEqual(
        expect.objectContaining({
          name: 'clusterstacks',
          singularName: 'clusterstack',
          namespaced: true,
          kind: 'ClusterStack',
          shortNames: ['csk'],
        }),
      );
      expect(resources).toContainEqual(
        expect.objectContaining({
          name: 'clusterstacks/status',
          kind: 'ClusterStack',
          verbs: ['get', 'patch', 'update'],
        }),
      );
      const core = (await kc.makeApiClient(CoreV1Api).getAPIResources()).resources.map((r) => r.name);
      expect(core).toEqual(expect.arrayContaining(['namespaces', 'secrets', 'configmaps', 'events']));
    });

    it('lets KubernetesObjectApi find plurals through discovery, including registered kinds', async () => {
      api.registerResource({
        group: 'infrastructure.clusterstack.x-k8s.io',
        version: 'v1alpha1',
        kind: 'FakeClusterStackRelease',
        plural: 'fakeclusterstackreleases',
        namespaced: true,
        statusSubresource: true,
      });
      const objects = KubernetesObjectApi.makeApiClient(kc);
      await objects.create({
        apiVersion: 'infrastructure.clusterstack.x-k8s.io/v1alpha1',
        kind: 'FakeClusterStackRelease',
        metadata: { name: 'r1', namespace: NS },
      });
      const read = await objects.read({
        apiVersion: 'infrastructure.clusterstack.x-k8s.io/v1alpha1',
        kind: 'FakeClusterStackRelease',
        metadata: { name: 'r1', namespace: NS },
      });
      expect(read.metadata?.uid).toBeTruthy();
      expect(api.requests.map((r) => r.path)).toContain('/apis/infrastructure.clusterstack.x-k8s.io/v1alpha1');
    });
  });

  describe('CRUD', () => {
    it('creates, reads, lists, replaces and deletes custom objects with server-set metadata', async () => {
      const created = await createStack({ ...aClusterStack('ferrol'), status: { ignored: true } });
      expect(created.metadata).toMatchObject({ name: 'ferrol', namespace: NS, generation: 1 });
      expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect(created.metadata?.creationTimestamp).toBeTruthy();
      expect(Number(created.metadata?.resourceVersion)).toBeGreaterThan(0);
      // With a status subresource, status sent on create is dropped.
      expect(created.status).toBeUndefined();

      const list = (await custom.listNamespacedCustomObject({ ...STACKS, namespace: NS })) as {
        kind: string;
        metadata: { resourceVersion: string };
        items: CustomObject[];
      };
      expect(list.kind).toBe('ClusterStackList');
      expect(list.items.map((i) => i.metadata?.name)).toEqual(['ferrol']);
      expect(Number(list.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(created.metadata?.resourceVersion));

      const replaced = (await custom.replaceNamespacedCustomObject({
        ...STACKS,
        namespace: NS,
        name: 'ferrol',
        body: { ...created, spec: { ...created.spec, versions: ['v1'] } },
      })) as CustomObject;
      expect(replaced.spec?.['versions']).toEqual(['v1']);
      expect(replaced.metadata?.generation).toBe(2);
      expect(Number(replaced.metadata?.resourceVersion)).toBeGreaterThan(Number(created.metadata?.resourceVersion));

      await custom.deleteNamespacedCustomObject({ ...STACKS, namespace: NS, name: 'ferrol' });
      const missing = await failure(getStack('ferrol'));
      expect(missing.code).toBe(404);
      expect(missing.status).toMatchObject({
        kind: 'Status',
        status: 'Failure',
        reason: 'NotFound',
        code: 404,
        message: 'clusterstacks.clusterstack.x-k8s.io "ferrol" not found',
      });
    });

    it('answers AlreadyExists, honours generateName and refuses bad names and missing namespaces', async () => {
      await createStack(aClusterStack('ferrol'));
      const again = await failure(createStack(aClusterStack('ferrol')));
      expect(again.code).toBe(409);
      expect(again.status).toMatchObject({
        reason: 'AlreadyExists',
        message: 'clusterstacks.clusterstack.x-k8s.io "ferrol" already exists',
      });

      const generated = await createStack({
        ...aClusterStack(''),
        metadata: { generateName: 'stack-', namespace: NS },
      });
      expect(generated.metadata?.name).toMatch(/^stack-[a-z0-9]{5}$/);

      const badName = await failure(createStack(aClusterStack('Not_Valid')));
      expect(badName.code).toBe(422);
      expect(badName.status.reason).toBe('Invalid');

      const noNamespace = await failure(
        custom.createNamespacedCustomObject({
          ...STACKS,
          namespace: 'nowhere',
          body: { ...aClusterStack('x'), metadata: { name: 'x' } },
        }),
      );
      expect(noNamespace.code).toBe(404);
      expect(noNamespace.status.message).toBe('namespaces "nowhere" not found');

      // Copying a fetched object into a create fails on a real server too.
      const withVersion = await failure(
        createStack({ ...aClusterStack('copy'), metadata: { name: 'copy', resourceVersion: '5' } }),
      );
      expect(withVersion.code).toBe(500);
    });

    it('serves cluster-scoped kinds and typed core APIs (namespaces, secrets with stringData, configmaps)', async () => {
      const core = kc.makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: 'capi-system' } } });
      const ns = await core.readNamespace({ name: 'capi-system' });
      expect(ns.status?.phase).toBe('Active');
      expect(ns.metadata?.labels?.['kubernetes.io/metadata.name']).toBe('capi-system');

      await core.createNamespacedSecret({
        namespace: 'capi-system',
        body: { metadata: { name: 'git' }, stringData: { token: 's3cret' } },
      });
      const secret = await core.readNamespacedSecret({ namespace: 'capi-system', name: 'git' });
      expect(secret.data?.['token']).toBe(Buffer.from('s3cret').toString('base64'));
      expect(secret.stringData).toBeUndefined();
      expect(secret.type).toBe('Opaque');

      await core.createNamespacedConfigMap({
        namespace: 'capi-system',
        body: { metadata: { name: 'values', labels: { app: 'x' } }, data: { a: '1' } },
      });
      const maps = await core.listConfigMapForAllNamespaces({ labelSelector: 'app=x' });
      expect(maps.items.map((m) => `${m.metadata?.namespace}/${m.metadata?.name}`)).toEqual(['capi-system/values']);
    });

    it('serves leases and both event APIs, with the events.k8s.io validation of a real server', async () => {
      const leases = kc.makeApiClient(CoordinationV1Api);
      const lease = await leases.createNamespacedLease({
        namespace: NS,
        body: {
          metadata: { name: 'clusterstack-controller' },
          spec: { holderIdentity: 'pod-a', leaseDurationSeconds: 15, acquireTime: new Date(), renewTime: new Date() },
        },
      });
      const renewed = await leases.replaceNamespacedLease({
        namespace: NS,
        name: 'clusterstack-controller',
        body: { ...lease, spec: { ...lease.spec, renewTime: new Date() } },
      });
      expect(Number(renewed.metadata?.resourceVersion)).toBeGreaterThan(Number(lease.metadata?.resourceVersion));
      const stolen = await failure(
        leases.replaceNamespacedLease({
          namespace: NS,
          name: 'clusterstack-controller',
          body: { ...lease, spec: { ...lease.spec, holderIdentity: 'pod-b' } },
        }),
      );
      expect(stolen.code).toBe(409);

      const events = kc.makeApiClient(EventsV1Api);
      const incomplete = await failure(
        events.createNamespacedEvent({
          namespace: NS,
          body: { metadata: { generateName: 'ferrol.' }, eventTime: new Date() },
        }),
      );
      expect(incomplete.code).toBe(422);
      expect(incomplete.status.details?.causes?.map((c) => c.field)).toEqual([
        'reportingController',
        'reportingInstance',
        'action',
        'reason',
        'type',
      ]);
      const event = await events.createNamespacedEvent({
        namespace: NS,
        body: {
          metadata: { generateName: 'ferrol.' },
          eventTime: new Date(),
          reportingController: 'clusterstack.x-k8s.io/controller',
          reportingInstance: 'pod-a',
          action: 'Render',
          reason: 'ManifestsPublished',
          type: 'Normal',
          note: 'published 3 files',
          regarding: { apiVersion: API_VERSION, kind: 'ClusterStack', name: 'ferrol', namespace: NS },
        },
      });
      expect(event.metadata?.name).toMatch(/^ferrol\./);

      const coreEvent = await kc.makeApiClient(CoreV1Api).createNamespacedEvent({
        namespace: NS,
        body: {
          metadata: { generateName: 'ferrol.' },
          involvedObject: { kind: 'ClusterStack', name: 'ferrol', namespace: NS },
          reason: 'Rendered',
          type: 'Normal',
          message: 'ok',
        },
      });
      expect(coreEvent.involvedObject.name).toBe('ferrol');
    });
  });

  describe('status subresource, generation and optimistic concurrency', () => {
    it('changes only status through /status and ignores status on the main resource', async () => {
      const created = await createStack(aClusterStack('ferrol'));
      // replace*Status: a full object whose .status is taken, everything else ignored.
      const withStatus = (await custom.replaceNamespacedCustomObjectStatus({
        ...STACKS,
        namespace: NS,
        name: 'ferrol',
        body: { ...created, spec: { provider: 'ignored' }, status: { usableVersions: ['v1'] } },
      })) as CustomObject;
      expect(withStatus.status).toEqual({ usableVersions: ['v1'] });
      expect(withStatus.spec?.['provider']).toBe('docker');
      expect(withStatus.metadata?.generation).toBe(1);

      // patch*Status with a merge patch: the usual way to write conditions.
      const patched = (await custom.patchNamespacedCustomObjectStatus(
        {
          ...STACKS,
          namespace: NS,
          name: 'ferrol',
          body: { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Published' }] } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )) as CustomObject;
      expect(patched.status).toEqual({
        usableVersions: ['v1'],
        conditions: [{ type: 'Ready', status: 'True', reason: 'Published' }],
      });

      const mainUpdate = (await custom.replaceNamespacedCustomObject({
        ...STACKS,
        namespace: NS,
        name: 'ferrol',
        body: { ...patched, status: { usableVersions: [] } },
      })) as CustomObject;
      expect(mainUpdate.status?.['usableVersions']).toEqual(['v1']);
      // Nothing changed, so the write is a no-op: same resourceVersion, same generation.
      expect(mainUpdate.metadata?.resourceVersion).toBe(patched.metadata?.resourceVersion);

      const labelled = (await custom.patchNamespacedCustomObject(
        { ...STACKS, namespace: NS, name: 'ferrol', body: { metadata: { labels: { team: 'a' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )) as CustomObject;
      expect(labelled.metadata?.generation).toBe(1);
      const respecced = (await custom.patchNamespacedCustomObject(
        { ...STACKS, namespace: NS, name: 'ferrol', body: { spec: { versions: ['v2'] } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )) as CustomObject;
      expect(respecced.metadata?.generation).toBe(2);
    });

    it('answers 409 Conflict with the real message when the resourceVersion is stale', async () => {
      const created = await createStack(aClusterStack('ferrol'));
      await custom.replaceNamespacedCustomObject({
        ...STACKS,
        namespace: NS,
        name: 'ferrol',
        body: { ...created, spec: { ...created.spec, versions: ['v1'] } },
      });
      const stale = await failure(
        custom.replaceNamespacedCustomObject({
          ...STACKS,
          namespace: NS,
          name: 'ferrol',
          body: { ...created, spec: { ...created.spec, versions: ['v2'] } },
        }),
      );
      expect(stale.code).toBe(409);
      expect(stale.status).toEqual({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'Operation cannot be fulfilled on clusterstacks.clusterstack.x-k8s.io "ferrol": the object has been modified; please apply your changes to the latest version and try again',
        reason: 'Conflict',
        details: { name: 'ferrol', group: GROUP, kind: 'clusterstacks' },
        code: 409,
      });
      // Same check through the status endpoint, and through a merge patch that carries a resourceVersion.
      expect(
        (
          await failure(
            custom.replaceNamespacedCustomObjectStatus({
              ...STACKS,
              namespace: NS,
              name: 'ferrol',
              body: { ...created, status: {} },
            }),
          )
        ).code,
      ).toBe(409);
      const lockedPatch = custom.patchNamespacedCustomObject(
        {
          ...STACKS,
          namespace: NS,
          name: 'ferrol',
          body: { metadata: { resourceVersion: created.metadata?.resourceVersion }, spec: { versions: [] } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      expect((await failure(lockedPatch)).code).toBe(409);

      // Custom resources refuse unconditional updates (a PUT without resourceVersion).
      const { resourceVersion: _rv, ...metadataWithoutVersion } = created.metadata ?? {};
      const unconditional = await failure(
        custom.replaceNamespacedCustomObject({
          ...STACKS,
          namespace: NS,
          name: 'ferrol',
          body: { ...created, metadata: metadataWithoutVersion },
        }),
      );
      expect(unconditional.code).toBe(422);
    });
  });

  describe('patch', () => {
    it('applies merge patches and JSON patches chosen through setHeaderOptions', async () => {
      await createStack({ ...aClusterStack('ferrol'), metadata: { name: 'ferrol', labels: { a: '1', b: '2' } } });
      // Merge patch (RFC 7386): objects merge, null deletes, arrays replace.
      await custom.patchNamespacedCustomObject(
        {
          ...STACKS,
          namespace: NS,
          name: 'ferrol',
          body: { metadata: { labels: { b: null, c: '3' } }, spec: { versions: ['v1', 'v2'] } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      // JSON patch (RFC 6902) is also what the patch* calls send when given no options.
      const patched = (await custom
        .patchNamespacedCustomObject(
          {
            ...STACKS,
            namespace: NS,
            name: 'ferrol',
            body: [
              { op: 'test', path: '/spec/versions/0', value: 'v1' },
              { op: 'add', path: '/spec/versions/-', value: 'v3' },
              { op: 'remove', path: '/spec/versions/1' },
              { op: 'replace', path: '/spec/channel', value: 'stable' },
              { op: 'copy', from: '/spec/name', path: '/spec/alias' },
              { op: 'move', from: '/spec/alias', path: '/metadata/annotations' },
            ],
          },
          setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
        )
        .catch((e: unknown) => e)) as CustomObject | { code: number };
      // `replace` needs the path to exist: /spec/channel does not, so the whole patch fails atomically.
      expect((patched as { code: number }).code).toBe(422);
      expect(api.get(API_VERSION, 'ClusterStack', NS, 'ferrol')?.['spec']).toMatchObject({ versions: ['v1', 'v2'] });

      const ok = (await custom.patchNamespacedCustomObject(
        {
          ...STACKS,
          namespace: NS,
          name: 'ferrol',
          body: [
            { op: 'test', path: '/spec/versions/0', value: 'v1' },
            { op: 'add', path: '/spec/versions/-', value: 'v3' },
            { op: 'remove', path: '/spec/versions/1' },
            { op: 'add', path: '/spec/channel', value: 'alpha' },
            { op: 'replace', path: '/spec/channel', value: 'stable' },
            { op: 'copy', from: '/metadata/labels', path: '/metadata/annotations' },
            { op: 'move', from: '/metadata/annotations/c', path: '/metadata/annotations/moved~1key' },
          ],
        },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      )) as CustomObject;
      expect(ok.spec).toMatchObject({ versions: ['v1', 'v3'], channel: 'stable' });
      expect(ok.metadata?.labels).toEqual({ a: '1', c: '3' });
      expect(ok.metadata?.annotations).toEqual({ a: '1', 'moved/key': '3' });

      const failedTest = await failure(
        custom.patchNamespacedCustomObject({
          ...STACKS,
          namespace: NS,
          name: 'ferrol',
          body: [{ op: 'test', path: '/spec/channel', value: 'alpha' }],
        }),
      );
      expect(failedTest.code).toBe(422);

      const contentTypes = api.requests.filter((r) => r.method === 'PATCH').map((r) => r.contentType);
      expect(contentTypes).toEqual([
        PatchStrategy.MergePatch,
        PatchStrategy.JsonPatch,
        PatchStrategy.JsonPatch,
        'application/json-patch+json',
      ]);
    });

    it('shows the gotchas: a merge-style body without options, strategic merge and apply on custom resources', async () => {
      await createStack(aClusterStack('ferrol'));
      // Forgetting the options sends the object as a JSON patch: 400 from the server.
      const forgot = await failure(
        custom.patchNamespacedCustomObject({
          ...STACKS,
          namespace: NS,
          name: 'ferrol',
          body: { spec: { versions: [] } },
        }),
      );
      expect(forgot.code).toBe(400);
      // Real servers refuse strategic merge patch for custom resources (KubernetesObjectApi.patch defaults to it!).
      const strategic = await failure(
        custom.patchNamespacedCustomObject(
          { ...STACKS, namespace: NS, name: 'ferrol', body: { spec: {} } },
          setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
        ),
      );
      expect(strategic.code).toBe(415);
      expect(strategic.status.reason).toBe('UnsupportedMediaType');
      const apply = await failure(
        custom.patchNamespacedCustomObject(
          { ...STACKS, namespace: NS, name: 'ferrol', body: { spec: {} }, fieldManager: 'x' },
          setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
        ),
      );
      expect(apply.code).toBe(415);

      // Built-in kinds accept strategic merge patch.
      const core = kc.makeApiClient(CoreV1Api);
      await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'cm' }, data: { a: '1' } } });
      const cm = await core.patchNamespacedConfigMap(
        { namespace: NS, name: 'cm', body: { data: { b: '2' } } },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
      );
      expect(cm.data).toEqual({ a: '1', b: '2' });
    });
  });

  describe('list selectors', () => {
    it('filters by label selector (=, !=, exists, !exists, in, notin) and field selector', async () => {
      api.seed({ ...aClusterStack('a'), metadata: { name: 'a', namespace: NS, labels: { env: 'prod', tier: 'web' } } });
      api.seed({ ...aClusterStack('b'), metadata: { name: 'b', namespace: NS, labels: { env: 'dev' } } });
      api.seed({ ...aClusterStack('c'), metadata: { name: 'c', namespace: NS } });
      api.seed({ ...aClusterStack('d'), metadata: { name: 'd', namespace: 'other', labels: { env: 'prod' } } });
      const names = async (options: { labelSelector?: string; fieldSelector?: string }, namespace?: string) => {
        const list = (
          namespace
            ? await custom.listNamespacedCustomObject({ ...STACKS, namespace, ...options })
            : await custom.listClusterCustomObject({ ...STACKS, ...options })
        ) as { items: CustomObject[] };
        return list.items.map((i) => i.metadata?.name);
      };
      expect(await names({ labelSelector: 'env=prod' })).toEqual(['a', 'd']);
      expect(await names({ labelSelector: 'env=prod' }, NS)).toEqual(['a']);
      expect(await names({ labelSelector: 'env!=prod' })).toEqual(['b', 'c']);
      expect(await names({ labelSelector: 'env' })).toEqual(['a', 'b', 'd']);
      expect(await names({ labelSelector: '!env' })).toEqual(['c']);
      expect(await names({ labelSelector: 'env in (dev, prod),tier' })).toEqual(['a']);
      expect(await names({ labelSelector: 'env notin (prod)' })).toEqual(['b', 'c']);
      expect(await names({ fieldSelector: 'metadata.name=b' })).toEqual(['b']);
      expect(await names({ fieldSelector: 'metadata.namespace!=default' })).toEqual(['d']);

      const bad = await failure(custom.listClusterCustomObject({ ...STACKS, labelSelector: 'env in prod' }));
      expect(bad.code).toBe(400);
      const badField = await failure(
        custom.listClusterCustomObject({ ...STACKS, fieldSelector: 'spec.provider=docker' }),
      );
      expect(badField.code).toBe(400);
      expect(
        api.list(API_VERSION, 'csk', undefined, { labelSelector: 'env=prod' }).map((o) => o.metadata.name),
      ).toEqual(['a', 'd']);
    });
  });

  describe('informers and watches', () => {
    it('delivers add, update and delete to a makeInformer', async () => {
      api.seed(aClusterStack('existing'));
      const { informer, events } = stackInformer();
      await informer.start();
      await api.waitForWatches();
      expect(events.map((e) => `${e.event}:${e.name ?? ''}`)).toEqual(['connect:', 'add:existing']);

      const created = await createStack(aClusterStack('ferrol'));
      await custom.patchNamespacedCustomObjectStatus(
        { ...STACKS, namespace: NS, name: 'ferrol', body: { status: { usableVersions: ['v1'] } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await custom.deleteNamespacedCustomObject({ ...STACKS, namespace: NS, name: 'ferrol' });
      await waitFor(() => events.some((e) => e.event === 'delete'), 'the delete event');
      expect(events.slice(2).map((e) => `${e.event}:${e.name}`)).toEqual([
        'add:ferrol',
        'update:ferrol',
        'delete:ferrol',
      ]);
      expect(informer.get('ferrol', NS)).toBeUndefined();
      expect(informer.get('existing', NS)?.metadata?.name).toBe('existing');
      expect(created.metadata?.uid).toBe((events[2]?.object as CustomObject).metadata?.uid);
    });

    it('makes the informer relist after a 410 Gone, and resume without relisting after a clean end', async () => {
      const { informer, events } = stackInformer();
      await informer.start();
      await api.waitForWatches();
      await createStack(aClusterStack('ferrol'));
      await waitFor(() => events.some((e) => e.event === 'add'), 'the add event');

      // A server-side watch timeout: the informer reconnects with its last resourceVersion, no list.
      api.clearRequests();
      api.endWatches();
      await waitFor(() => api.watchCount() === 1 && api.requests.length === 1, 'the re-watch');
      expect(api.requests[0]?.query).toMatchObject({ watch: 'true', resourceVersion: expect.stringMatching(/^\d+$/) });

      // 410 Gone: the informer drops its resourceVersion, emits 'connect' and relists.
      api.clearRequests();
      const connects = events.filter((e) => e.event === 'connect').length;
      api.expireWatches();
      await waitFor(() => api.watchCount() === 1 && api.requests.length === 2, 'the relist and the new watch');
      expect(api.requests.map((r) => (r.query['watch'] ? 'watch' : 'list'))).toEqual(['list', 'watch']);
      expect(events.filter((e) => e.event === 'connect').length).toBe(connects + 1);
      expect(events.some((e) => e.event === 'error')).toBe(false);

      // It keeps working after the relist.
      await createStack(aClusterStack('after'));
      await waitFor(() => events.some((e) => e.event === 'add' && e.name === 'after'), 'the add after the relist');
    });

    it('sends a 410 ERROR event for a resourceVersion older than the history window', async () => {
      await api.close();
      api = await startFakeKubeApi({ historyLimit: 2 });
      kc = api.kubeConfig();
      custom = kc.makeApiClient(CustomObjectsApi);
      const first = await createStack(aClusterStack('a'));
      for (const name of ['b', 'c', 'd']) await createStack(aClusterStack(name));

      const received: Array<{ type: string; object: Status }> = [];
      const ended = new Promise<unknown>((resolve) => {
        void new Watch(kc).watch(
          STACKS_PATH,
          { resourceVersion: first.metadata?.resourceVersion },
          (type, object) => received.push({ type, object }),
          resolve,
        );
      });
      expect(await ended).toBeNull();
      expect(received).toHaveLength(1);
      expect(received[0]?.type).toBe('ERROR');
      expect(received[0]?.object).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Expired', code: 410 });
      expect(received[0]?.object.message).toMatch(/^too old resource version: \d+ \(\d+\)$/);
    });

    it('streams bookmarks, ends on timeoutSeconds, and turns selector moves into ADDED/DELETED', async () => {
      const created = await createStack({
        ...aClusterStack('ferrol'),
        metadata: { name: 'ferrol', labels: { watched: 'yes' } },
      });
      const received: string[] = [];
      let done = false;
      await new Watch(kc).watch(
        STACKS_PATH,
        {
          resourceVersion: created.metadata?.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: 1,
          labelSelector: 'watched=yes',
        },
        (type, object: KubeObject) =>
          received.push(`${type}:${object.metadata.name ?? object.metadata.resourceVersion}`),
        () => {
          done = true;
        },
      );
      await api.waitForWatches();
      api.sendBookmarks();
      const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
      await custom.patchNamespacedCustomObject(
        { ...STACKS, namespace: NS, name: 'ferrol', body: { metadata: { labels: { watched: 'no' } } } },
        merge,
      );
      await custom.patchNamespacedCustomObject(
        { ...STACKS, namespace: NS, name: 'ferrol', body: { metadata: { labels: { watched: 'yes' } } } },
        merge,
      );
      await custom.patchNamespacedCustomObject(
        { ...STACKS, namespace: NS, name: 'ferrol', body: { spec: { versions: ['v1'] } } },
        merge,
      );
      await waitFor(() => done, 'the watch to end after timeoutSeconds');
      expect(received).toEqual([
        `BOOKMARK:${created.metadata?.resourceVersion}`,
        'DELETED:ferrol',
        'ADDED:ferrol',
        'MODIFIED:ferrol',
      ]);
    });

    it('replays the current state as ADDED events for a watch without resourceVersion', async () => {
      api.seed(aClusterStack('a'));
      api.seed({ ...aClusterStack('b'), metadata: { name: 'b', namespace: 'other' } });
      const received: string[] = [];
      const controller = await new Watch(kc).watch(
        `/apis/${GROUP}/${VERSION}/clusterstacks`,
        {},
        (type, object: KubeObject) => received.push(`${type}:${object.metadata.namespace}/${object.metadata.name}`),
        () => {},
      );
      await waitFor(() => received.length === 2, 'two ADDED events');
      expect(received).toEqual(['ADDED:default/a', 'ADDED:other/b']);
      controller.abort();
      await waitFor(() => api.watchCount() === 0, 'the watch to close');
    });

    it('shows that the informer emits error and STOPS when the server goes away; start() resumes it', async () => {
      api.seed(aClusterStack('ferrol'));
      const { informer, events } = stackInformer();
      await informer.start();
      await api.waitForWatches();

      await api.stop();
      await waitFor(() => events.some((e) => e.event === 'error'), 'the error event');
      expect((events.find((e) => e.event === 'error')?.error as { code?: string }).code).toBe(
        'ERR_STREAM_PREMATURE_CLOSE',
      );
      await api.restart();
      // Give a (non-existent) automatic retry a chance; there is none: the informer stays stopped.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(api.watchCount()).toBe(0);
      expect(events.filter((e) => e.event === 'error')).toHaveLength(1);
      await createStack(aClusterStack('missed'));
      expect(events.some((e) => e.name === 'missed')).toBe(false);

      // What the controller must do: start again. It watches from its last resourceVersion and catches up.
      await informer.start();
      await waitFor(
        () => events.some((e) => e.event === 'add' && e.name === 'missed'),
        'the add after restarting the informer',
      );
      expect(api.url).toBe(kc.getCurrentCluster()?.server);
    });

    it('shows that informer.stop() itself emits an AbortError through the error callback', async () => {
      const { informer, events } = stackInformer();
      await informer.start();
      await api.waitForWatches();
      await informer.stop();
      // A controller that restarts informers on 'error' must ignore this one, or it undoes its own stop().
      const error = events.find((e) => e.event === 'error')?.error as Error | undefined;
      expect(error?.name).toBe('AbortError');
      await waitFor(() => api.watchCount() === 0, 'the watch to close');
    });

    it('shows that a failing list or a cut connection also stops the informer', async () => {
      const { informer, events } = stackInformer();
      api.failNext({ method: 'GET', pathIncludes: 'clusterstacks', status: 503 });
      await informer.start();
      const listError = events.find((e) => e.event === 'error')?.error as { code?: number };
      expect(listError.code).toBe(503);
      expect(api.watchCount()).toBe(0);

      await informer.start();
      await api.waitForWatches();
      api.dropConnections();
      await waitFor(() => events.filter((e) => e.event === 'error').length === 2, 'the second error');
      const cut = events.filter((e) => e.event === 'error')[1]?.error as { code?: string };
      expect(cut.code).toBe('ERR_STREAM_PREMATURE_CLOSE');

      api.failNext({ pathIncludes: 'watch=true', status: 500 });
      await informer.start();
      await waitFor(() => events.filter((e) => e.event === 'error').length === 3, 'the third error');
      expect((events.filter((e) => e.event === 'error')[2]?.error as { statusCode?: number }).statusCode).toBe(500);
    });
  });

  describe('fault injection and request log', () => {
    it('fails the next matching requests with the given status, then recovers', async () => {
      api.failNext({ method: 'POST', status: 500, times: 2 });
      expect((await failure(createStack(aClusterStack('a')))).code).toBe(500);
      const second = await failure(createStack(aClusterStack('a')));
      expect(second.status).toMatchObject({ kind: 'Status', reason: 'InternalError', code: 500 });
      await createStack(aClusterStack('a'));

      api.failNext({ pathIncludes: '/clusterstacks/a', status: 429, retryAfterSeconds: 2 });
      const throttled = await failure(getStack('a'));
      expect(throttled.code).toBe(429);
      expect(throttled.status.details?.retryAfterSeconds).toBe(2);

      const log = api.requests.map((r) => `${r.method} ${r.path} ${r.status}`);
      expect(log).toEqual([
        `POST ${STACKS_PATH} 500`,
        `POST ${STACKS_PATH} 500`,
        `POST ${STACKS_PATH} 201`,
        `GET ${STACKS_PATH}/a 429`,
      ]);
    });

    it('requires the configured bearer token', async () => {
      const secured = await startFakeKubeApi({ token: 's3cret' });
      try {
        const good = secured.kubeConfig().makeApiClient(CoreV1Api);
        expect((await good.listNamespace()).items.map((n) => n.metadata?.name)).toContain('default');
        const wrong = new KubeConfig();
        wrong.loadFromString(secured.kubeConfigYaml().replace('s3cret', 'nope'));
        expect((await failure(wrong.makeApiClient(CoreV1Api).listNamespace())).code).toBe(401);
      } finally {
        await secured.close();
      }
    });
  });

  describe('RBAC and validation', () => {
    it('refuses label values longer than 63 characters, as apimachinery does', async () => {
      const custom = api.kubeConfig().makeApiClient(CustomObjectsApi);
      const long = 'a'.repeat(64);
      const stack = {
        ...aClusterStack('labelled'),
        metadata: { name: 'labelled', namespace: NS, labels: { 'clusterstack.x-k8s.io/cluster-stack': long } },
      };
      const refused = await failure(custom.createNamespacedCustomObject({ ...STACKS, namespace: NS, body: stack }));
      expect(refused.code).toBe(422);
      expect(refused.status.message).toContain(
        `metadata.labels: Invalid value: "${long}": must be no more than 63 characters`,
      );
      stack.metadata.labels['clusterstack.x-k8s.io/cluster-stack'] = 'a'.repeat(63);
      await custom.createNamespacedCustomObject({ ...STACKS, namespace: NS, body: stack });
    });

    it('authorizes user tokens through Roles and bindings, answering 403 with the real Status otherwise', async () => {
      const secured = await startFakeKubeApi({ users: { 'sa-token': serviceAccountUser('ops', 'robot') } });
      try {
        secured.seed({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ops' } });
        secured.seed({
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'stacks', namespace: NS },
          rules: [
            { apiGroups: [GROUP], resources: ['clusterstacks'], verbs: ['list', 'watch'] },
            { apiGroups: [GROUP], resources: ['clusterstacks/status'], verbs: ['patch'] },
          ],
        } as never);
        secured.seed({
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'stacks', namespace: NS },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'stacks' },
          subjects: [{ kind: 'ServiceAccount', name: 'robot', namespace: 'ops' }],
        } as never);
        const robot = secured.kubeConfig('sa-token').makeApiClient(CustomObjectsApi);
        expect((await robot.listNamespacedCustomObject({ ...STACKS, namespace: NS })).items).toEqual([]);
        const clusterWide = await failure(robot.listClusterCustomObject(STACKS));
        expect(clusterWide.code).toBe(403);
        expect(clusterWide.status).toMatchObject({
          kind: 'Status',
          reason: 'Forbidden',
          message:
            'clusterstacks.clusterstack.x-k8s.io is forbidden: User "system:serviceaccount:ops:robot" cannot list resource "clusterstacks" in API group "clusterstack.x-k8s.io" at the cluster scope',
          details: { group: GROUP, kind: 'clusterstacks' },
        });
        const named = await failure(robot.getNamespacedCustomObject({ ...STACKS, namespace: NS, name: 'x' }));
        expect(named.status.message).toBe(
          'clusterstacks.clusterstack.x-k8s.io "x" is forbidden: User "system:serviceaccount:ops:robot" cannot get resource "clusterstacks" in API group "clusterstack.x-k8s.io" in the namespace "default"',
        );
        // The admin token is still allowed everything; discovery is open to every user.
        expect(
          (await secured.kubeConfig().makeApiClient(CustomObjectsApi).listClusterCustomObject(STACKS)).items,
        ).toEqual([]);
        expect(
          (await secured.kubeConfig('sa-token').makeApiClient(ApisApi).getAPIVersions()).groups.length,
        ).toBeGreaterThan(0);
        expect((await failure(secured.kubeConfig('nope').makeApiClient(CoreV1Api).listNamespace())).code).toBe(401);
      } finally {
        await secured.close();
      }
    });
  });

  describe('deletion', () => {
    const CLUSTERS = { group: 'cluster.x-k8s.io', version: 'v1beta1', plural: 'clusters' } as const;
    const ADDONS = { group: GROUP, version: VERSION, plural: 'clusteraddons' } as const;
    const merge = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

    it('keeps an object with finalizers until they are removed, and refuses new finalizers meanwhile', async () => {
      await createStack({
        ...aClusterStack('ferrol'),
        metadata: { name: 'ferrol', finalizers: ['clusterstack.x-k8s.io/finalizer'] },
      });
      await custom.deleteNamespacedCustomObject({ ...STACKS, namespace: NS, name: 'ferrol' });
      const terminating = await getStack('ferrol');
      expect(terminating.metadata?.deletionTimestamp).toBeTruthy();
      expect(terminating.metadata?.generation).toBe(2);

      const added = await failure(
        custom.patchNamespacedCustomObject(
          {
            ...STACKS,
            namespace: NS,
            name: 'ferrol',
            body: { metadata: { finalizers: ['clusterstack.x-k8s.io/finalizer', 'other'] } },
          },
          merge(),
        ),
      );
      expect(added.code).toBe(422);

      await custom.patchNamespacedCustomObject(
        { ...STACKS, namespace: NS, name: 'ferrol', body: [{ op: 'remove', path: '/metadata/finalizers' }] },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      );
      expect((await failure(getStack('ferrol'))).code).toBe(404);
    });

    it('garbage collects dependants through ownerReferences, keeping those with another live owner', async () => {
      const cluster = (await custom.createNamespacedCustomObject({
        ...CLUSTERS,
        namespace: NS,
        body: {
          apiVersion: 'cluster.x-k8s.io/v1beta1',
          kind: 'Cluster',
          metadata: { name: 'workload', finalizers: ['cluster.cluster.x-k8s.io'] },
          spec: {},
        },
      })) as CustomObject;
      const stack = await createStack(aClusterStack('ferrol'));
      const ownerRef = (o: CustomObject) => ({
        apiVersion: o.apiVersion ?? '',
        kind: o.kind ?? '',
        name: o.metadata?.name ?? '',
        uid: o.metadata?.uid ?? '',
      });
      const addon = (name: string, owners: CustomObject[]) =>
        custom.createNamespacedCustomObject({
          ...ADDONS,
          namespace: NS,
          body: {
            apiVersion: API_VERSION,
            kind: 'ClusterAddon',
            metadata: { name, ownerReferences: owners.map(ownerRef) },
            spec: { clusterRef: { name: 'workload' } },
          },
        });
      await addon('only-cluster', [cluster]);
      await addon('shared', [cluster, stack]);

      const { informer, events } = stackInformer();
      await informer.start();
      await api.waitForWatches();

      await custom.deleteNamespacedCustomObject({ ...CLUSTERS, namespace: NS, name: 'workload' });
      // Finalizer still set: nothing is collected yet.
      expect(api.list('clusterstack.x-k8s.io/v1alpha1', 'ClusterAddon', NS).map((a) => a.metadata.name)).toEqual([
        'only-cluster',
        'shared',
      ]);

      await custom.patchNamespacedCustomObject(
        { ...CLUSTERS, namespace: NS, name: 'workload', body: { metadata: { finalizers: null } } },
        merge(),
      );
      expect(api.get('cluster.x-k8s.io/v1beta1', 'Cluster', NS, 'workload')).toBeUndefined();
      const remaining = api.list(API_VERSION, 'clusteraddons', NS);
      expect(remaining.map((a) => a.metadata.name)).toEqual(['shared']);
      expect(remaining[0]?.metadata.ownerReferences?.map((r) => r.kind)).toEqual(['ClusterStack']);

      // Deleting the last owner collects the rest; the stack's informer sees the delete.
      await custom.deleteNamespacedCustomObject({ ...STACKS, namespace: NS, name: 'ferrol' });
      expect(api.list(API_VERSION, 'clusteraddons', NS)).toEqual([]);
      await waitFor(() => events.some((e) => e.event === 'delete' && e.name === 'ferrol'), 'the stack delete event');
    });

    it('deletes the content of a namespace before the namespace itself', async () => {
      const core = kc.makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: 'team-a' } } });
      api.seed({ ...aClusterStack('held'), metadata: { name: 'held', namespace: 'team-a', finalizers: ['x/y'] } });
      api.seed({ ...aClusterStack('free'), metadata: { name: 'free', namespace: 'team-a' } });
      await core.deleteNamespace({ name: 'team-a' });
      expect((await core.readNamespace({ name: 'team-a' })).status?.phase).toBe('Terminating');
      expect(api.list(API_VERSION, 'ClusterStack', 'team-a').map((o) => o.metadata.name)).toEqual(['held']);
      const blocked = await failure(
        custom.createNamespacedCustomObject({
          ...STACKS,
          namespace: 'team-a',
          body: { ...aClusterStack('new'), metadata: { name: 'new' } },
        }),
      );
      expect(blocked.code).toBe(403);

      await custom.patchNamespacedCustomObject(
        { ...STACKS, namespace: 'team-a', name: 'held', body: { metadata: { finalizers: [] } } },
        merge(),
      );
      expect((await failure(core.readNamespace({ name: 'team-a' }))).code).toBe(404);
    });
  });
});
