// The real engines themselves, as the controller and Flux scenarios will use them: each is the
// pinned version built from the Go module proxy (named here, so every run says what it ran
// against), a management and a workload API server start side by side and answer (on per-machine
// seeds of their CRDs, a broken seed made again), and kube-controller-manager does a cluster's
// housekeeping on a real server. A server is emptied back to a baseline through etcd, as the
// broker empties a leased one between files.
//
// It starts its own pair rather than leasing a broker server: it needs two separate clusters, signs
// a client certificate for a user of its own (a lease carries no CA key), and runs Flux, whose
// controllers and further CRDs would outlive a lease on a server the next file gets.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  builtEngine,
  emptyServer,
  engineBinary,
  engineCrdFiles,
  keptSeed,
  pinnedEngines,
  seedKey,
  serverKeys,
  serverSeedKey,
  startFluxControllers,
  startKubeControllerManager,
  startRealKubeApi,
  waitUntil,
  type FluxControllers,
  type KubeControllerManager,
  type RealKubeApi,
} from './support/real-kube-api/index.js';
import { startGitHttpServer, type GitHttpServer } from './support/git-http-server.js';
import { GitSandbox } from './support/git-repos.js';

/** Flux's CRDs, as startFluxControllers installs them: the management server starts with them. */
const FLUX_CRDS = [...engineCrdFiles('source-controller'), ...engineCrdFiles('kustomize-controller')];
/** One small CRD of ours: the workload server starts with it, on a seed of its own made here. */
const WORKLOAD_CRDS = [path.resolve('crds/clusterstack.x-k8s.io_clusteraddons.yaml')];
/** An object the workload's seed holds besides its CRD, as the broker's seed holds deploy/'s identity. */
const WORKLOAD_SEED_OBJECTS = {
  key: 'a ConfigMap made in the seed',
  apply: async (api: RealKubeApi): Promise<void> => {
    const made = await api.admin.client.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: { metadata: { name: 'made-in-seed' }, data: { made: 'once' } },
    });
    if (made.status !== 201) throw new Error(`the seed's ConfigMap: ${made.status} ${made.text}`);
  },
};

describe('real engines', () => {
  let management: RealKubeApi | undefined;
  let workload: RealKubeApi | undefined;
  let controllerManager: KubeControllerManager | undefined;
  let flux: FluxControllers | undefined;
  let git: GitHttpServer | undefined;
  // The workload's seeds, apart from the machine's: one is planted broken here.
  const seedCache = mkdtempSync(path.join(os.tmpdir(), 'csk-kube-seeds-'));
  const workloadKey = serverSeedKey({ crds: WORKLOAD_CRDS, seedObjects: WORKLOAD_SEED_OBJECTS });

  beforeAll(async () => {
    // A seed etcd cannot start on (its member directory is a file), kept under the right key.
    mkdirSync(path.join(seedCache, workloadKey, 'etcd'), { recursive: true });
    writeFileSync(path.join(seedCache, workloadKey, 'etcd', 'member'), 'not a data directory\n');
    writeFileSync(path.join(seedCache, workloadKey, 'seed.json'), JSON.stringify({ key: workloadKey }));
    [management, workload] = await Promise.all([
      startRealKubeApi({ name: 'management', crds: FLUX_CRDS }),
      startRealKubeApi({ name: 'workload', crds: WORKLOAD_CRDS, seedCache, seedObjects: WORKLOAD_SEED_OBJECTS }),
    ]);
  }, 240_000);

  afterAll(async () => {
    rmSync(seedCache, { recursive: true, force: true });
    await flux?.stop();
    await git?.close();
    await controllerManager?.stop();
    await Promise.all([management?.stop(), workload?.stop()]);
    for (const process of [
      ...(management?.processes ?? []),
      ...(workload?.processes ?? []),
      ...(controllerManager ? [controllerManager.process] : []),
      ...(flux ? [flux.sourceController, flux.kustomizeController] : []),
    ]) {
      expect(process.exited(), `${process.name} (pid ${process.pid}) is still running`).toBe(true);
    }
  }, 60_000);

  it('names each engine version it runs against, each built from its pinned module', () => {
    const lines: string[] = [];
    for (const pinned of pinnedEngines()) {
      const built = builtEngine(pinned.name);
      expect(built).toMatchObject({ name: pinned.name, module: pinned.module, version: pinned.version });
      expect(built.binaries.sort()).toEqual(Object.keys(pinned.bin ?? {}).sort());
      if (pinned.crds) expect(built.crds.length).toBeGreaterThan(0);
      expect(built.replaced).toEqual(pinned.replace ?? {});
      const replaced = Object.entries(built.replaced)
        .map(([module, version]) => `; ${module} at ${version}`)
        .join('');
      const what = built.binaries.length ? `built with ${built.go}: ${built.binaries.join(', ')}` : 'downloaded';
      lines.push(
        `${pinned.name.padEnd(22)} ${built.version.padEnd(9)} ${built.module}  (${what}${built.crds.length ? `; ${built.crds.length} CRDs` : ''}${replaced})`,
      );
    }
    console.log(`Real engines in this run:\n${lines.join('\n')}`);
  });

  it('the built programs report the pinned versions', () => {
    const kubernetes = builtEngine('kubernetes').version;
    expect(execFileSync(engineBinary('kubernetes', 'kube-apiserver'), ['--version'], { encoding: 'utf8' }).trim()).toBe(
      `Kubernetes ${kubernetes}`,
    );
    expect(
      execFileSync(engineBinary('kubernetes', 'kube-controller-manager'), ['--version'], { encoding: 'utf8' }).trim(),
    ).toBe(`Kubernetes ${kubernetes}`);
    expect(execFileSync(engineBinary('etcd', 'etcd'), ['--version'], { encoding: 'utf8' })).toContain(
      `etcd Version: ${builtEngine('etcd').version.slice(1)}`,
    );
    expect(execFileSync(engineBinary('helm3', 'helm'), ['version', '--short'], { encoding: 'utf8' })).toContain(
      builtEngine('helm3').version,
    );
    expect(execFileSync(engineBinary('helm4', 'helm'), ['version', '--short'], { encoding: 'utf8' })).toContain(
      builtEngine('helm4').version,
    );
  });

  it('runs a management and a workload API server, separate clusters that both answer', async () => {
    for (const api of [management!, workload!]) {
      expect(((await api.admin.client.get('/version')) as { gitVersion: string }).gitVersion).toBe(
        builtEngine('kubernetes').version,
      );
      expect(api.versions).toEqual({
        kubernetes: builtEngine('kubernetes').version,
        etcd: builtEngine('etcd').version,
      });
    }
    expect(management!.server).not.toBe(workload!.server);
    const created = await workload!.admin.client.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'only-in-workload' }, data: { mode: '0400' } },
    });
    expect(created.status).toBe(201);
    expect((await workload!.admin.client.get('/api/v1/namespaces/default/configmaps/only-in-workload')).data).toEqual({
      mode: '0400',
    });
    expect(
      (await management!.admin.client.request('GET', '/api/v1/namespaces/default/configmaps/only-in-workload')).status,
    ).toBe(404);
    // RBAC is on: a user without bindings is refused, as the controller's ServiceAccount will be outside its role.
    const stranger = management!.credential('clusterstack-test-stranger');
    expect((await stranger.client.request('GET', '/api/v1/namespaces/default/configmaps')).status).toBe(403);
  });

  it("keys a seed by the engines, the server settings and each CRD file's name and content", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'csk-seed-key-'));
    try {
      const crd = path.join(dir, 'a.yaml');
      copyFileSync(WORKLOAD_CRDS[0]!, crd);
      const key = seedKey([crd], { serviceCidr: '10.0.0.0/24' });
      expect(seedKey([crd], { serviceCidr: '10.0.0.0/24' })).toBe(key);
      expect(seedKey([crd], { serviceCidr: '10.0.1.0/24' })).not.toBe(key);
      const renamed = path.join(dir, 'b.yaml');
      copyFileSync(crd, renamed);
      expect(seedKey([renamed], { serviceCidr: '10.0.0.0/24' })).not.toBe(key);
      // One changed description in the CRD: another key, so the old seed is never used for it.
      writeFileSync(crd, readFileSync(crd, 'utf8').replace(/description: /, 'description: Changed. '));
      expect(seedKey([crd], { serviceCidr: '10.0.0.0/24' })).not.toBe(key);
      // A seed whose marker names another key is not kept for this one.
      mkdirSync(path.join(dir, 'seeds', key), { recursive: true });
      writeFileSync(path.join(dir, 'seeds', key, 'seed.json'), JSON.stringify({ key: 'another' }));
      expect(keptSeed(path.join(dir, 'seeds'), key)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('starts servers on seeds of their CRDs (and objects): a seed that does not start is dropped and made again', async () => {
    expect(management!.seed?.key).toBe(serverSeedKey({ crds: FLUX_CRDS }));
    expect(workload!.seed).toEqual({ key: workloadKey, dropped: true, made: true });
    // Its objects are part of its key, and the server started on it holds them.
    expect(serverSeedKey({ crds: WORKLOAD_CRDS })).not.toBe(workloadKey);
    expect(serverSeedKey({ crds: WORKLOAD_CRDS, seedObjects: { ...WORKLOAD_SEED_OBJECTS, key: 'another' } })).not.toBe(
      workloadKey,
    );
    expect((await workload!.admin.client.get('/api/v1/namespaces/default/configmaps/made-in-seed')).data).toEqual({
      made: 'once',
    });
    // Made again whole: etcd's member directory, and a marker naming the key and its CRDs.
    expect(statSync(path.join(seedCache, workloadKey, 'etcd', 'member')).isDirectory()).toBe(true);
    expect(JSON.parse(readFileSync(path.join(seedCache, workloadKey, 'seed.json'), 'utf8'))).toEqual({
      key: workloadKey,
      crds: ['clusteraddons.clusterstack.x-k8s.io'],
    });
    for (const [api, names] of [
      [management!, ['kustomizations.kustomize.toolkit.fluxcd.io', 'gitrepositories.source.toolkit.fluxcd.io']],
      [workload!, ['clusteraddons.clusterstack.x-k8s.io']],
    ] as const)
      for (const name of names) {
        const crd = await api.admin.client.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
        expect(crd.status.conditions).toContainEqual(expect.objectContaining({ type: 'Established', status: 'True' }));
      }
    // Served: an object of the seeded kind is stored and read back.
    const created = await workload!.admin.client.request(
      'POST',
      '/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/default/clusteraddons',
      {
        body: {
          apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
          kind: 'ClusterAddon',
          metadata: { name: 'seeded' },
          spec: {},
        },
      },
    );
    expect(created.status, created.text).toBe(201);
    expect(
      (await workload!.admin.client.get('/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/default/clusteraddons/seeded'))
        .metadata.name,
    ).toBe('seeded');
  });

  it('empties a server back to its baseline through etcd: every kind lists as before, from the watch cache too, and the names can be taken again', async () => {
    const api = workload!;
    const client = api.admin.client;
    const create = async (path: string, body: object): Promise<void> => {
      const response = await client.request('POST', path, { body });
      expect(response.status, `${path}: ${response.text}`).toBe(201);
    };
    // Every kind the server lists, as namespace/name/uid lines: at resourceVersion 0 from the watch
    // cache (what an informer's first LIST reads), else from etcd.
    const listed = async (query: Record<string, string>): Promise<Record<string, string[] | number>> => {
      const lists: Record<string, string[] | number> = {};
      for (const root of ['/api', '/apis']) {
        const discovery = await client.request('GET', root, {
          accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
        });
        for (const group of discovery.body.items as any[]) {
          const version = group.versions[0];
          const prefix = group.metadata.name
            ? `/apis/${group.metadata.name}/${version.version}`
            : `/api/${version.version}`;
          for (const resource of version.resources as { resource: string; verbs: string[] }[]) {
            if (!resource.verbs.includes('list')) continue;
            const answer = await client.request('GET', `${prefix}/${resource.resource}`, { query });
            lists[`${prefix}/${resource.resource}`] =
              answer.status !== 200
                ? answer.status
                : (answer.body.items as { metadata: { namespace?: string; name: string; uid?: string } }[])
                    .map(({ metadata }) => `${metadata.namespace ?? ''}/${metadata.name} ${metadata.uid ?? ''}`)
                    .sort();
          }
        }
      }
      return lists;
    };
    const baseline = new Set((await serverKeys(api)).keys);
    const before = await listed({});
    expect(Object.keys(before).length).toBeGreaterThan(50);

    // A CRD of the "file's" own, and an object of it held by a finalizer.
    const widgets = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.emptying.test' },
      spec: {
        group: 'emptying.test',
        names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    };
    await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', widgets);
    await create('/api/v1/namespaces', { metadata: { name: 'leftover' } });
    const inLeftover = (path: string): string => path.replace('{ns}', 'namespaces/leftover');
    await create(inLeftover('/api/v1/{ns}/configmaps'), { metadata: { name: 'c' }, data: { a: 'b' } });
    await create(inLeftover('/api/v1/{ns}/secrets'), { metadata: { name: 's' }, stringData: { a: 'b' } });
    await create(inLeftover('/api/v1/{ns}/serviceaccounts'), { metadata: { name: 'sa' } });
    // A ClusterIP Service: its address is allocated (an IPAddress object) and must be freed with it.
    await create(inLeftover('/api/v1/{ns}/services'), { metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }] } });
    await create(inLeftover('/apis/rbac.authorization.k8s.io/v1/{ns}/roles'), {
      metadata: { name: 'r' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    });
    await create(inLeftover('/apis/coordination.k8s.io/v1/{ns}/leases'), { metadata: { name: 'l' }, spec: {} });
    await create(inLeftover('/api/v1/{ns}/events'), {
      metadata: { name: 'e' },
      involvedObject: { kind: 'ConfigMap', namespace: 'leftover', name: 'c' },
      reason: 'Made',
      message: 'by the test',
    });
    await create(inLeftover('/apis/clusterstack.x-k8s.io/v1alpha1/{ns}/clusteraddons'), {
      apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
      kind: 'ClusterAddon',
      metadata: { name: 'held', finalizers: ['emptying.test/hold'] },
      spec: {},
    });
    // What a file leaves in a namespace the server keeps, and cluster-wide.
    await create('/api/v1/namespaces/default/configmaps', { metadata: { name: 'left-in-kept' } });
    await create('/api/v1/namespaces/kube-system/secrets', { metadata: { name: 'left-in-system' } });
    await create('/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'emptying-test' }, rules: [] });
    await create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: 'emptying-test' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'emptying-test' },
      subjects: [{ kind: 'User', name: 'someone' }],
    });
    await create('/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', {
      metadata: { name: 'emptying-test' },
      spec: {
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
        },
        validations: [{ expression: "object.metadata.name != 'refused'" }],
      },
    });
    await create('/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings', {
      metadata: { name: 'emptying-test' },
      spec: { policyName: 'emptying-test', validationActions: ['Deny'] },
    });
    // A namespace held Terminating (no kube-controller-manager here empties it), with an object in it.
    await create('/api/v1/namespaces', { metadata: { name: 'terminating' } });
    await create('/api/v1/namespaces/terminating/configmaps', { metadata: { name: 'c' } });
    expect((await client.request('DELETE', '/api/v1/namespaces/terminating')).status).toBe(200);
    await waitUntil(
      'the Widget CRD to be served',
      async () => (await client.request('GET', '/apis/emptying.test/v1/widgets')).status === 200,
      api.processes,
    );
    await create(inLeftover('/apis/emptying.test/v1/{ns}/widgets'), {
      apiVersion: 'emptying.test/v1',
      kind: 'Widget',
      metadata: { name: 'w', finalizers: ['emptying.test/hold'] },
    });
    expect((await listed({}))['/apis/emptying.test/v1/widgets']).toHaveLength(1);

    await emptyServer(api, baseline, api.processes);
    expect(new Set((await serverKeys(api)).keys)).toEqual(baseline);
    expect(await listed({ resourceVersion: '0' })).toEqual(before);
    expect(await listed({})).toEqual(before);
    // Its names are free again: the namespace, an object in it, and a CRD of the same name (not still terminating).
    await create('/api/v1/namespaces', { metadata: { name: 'leftover' } });
    await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', widgets);
    // The deleted policy stops refusing once the admission plugin rebuilds its policies from its
    // informers, which it does on its own timer (as after a delete through the API).
    await waitUntil(
      'the deleted admission policy to let a ConfigMap named refused in',
      async () =>
        (
          await client.request('POST', inLeftover('/api/v1/{ns}/configmaps'), {
            body: { metadata: { name: 'refused' } },
          })
        ).status === 201,
      api.processes,
      30_000,
    );
    await emptyServer(api, baseline, api.processes);
    expect(await listed({ resourceVersion: '0' })).toEqual(before);
  });

  // The housekeeping and Flux cases wait on their engines independently (kube-controller-manager on
  // objects in namespaces Flux does not use): side by side.
  it.concurrent(
    'runs kube-controller-manager: a deleted namespace is emptied and removed, and the garbage collector follows ownerReferences',
    async ({ expect }) => {
      const api = management!;
      controllerManager = await startKubeControllerManager(api);
      const client = api.admin.client;
      expect(
        (await client.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'doomed' } } })).status,
      ).toBe(201);
      expect(
        (
          await client.request('POST', '/api/v1/namespaces/doomed/configmaps', {
            body: { metadata: { name: 'content' } },
          })
        ).status,
      ).toBe(201);
      const owner = await client.request('POST', '/api/v1/namespaces/default/configmaps', {
        body: { metadata: { name: 'owner' } },
      });
      expect(owner.status).toBe(201);
      const ownerReference = { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.body.metadata.uid };
      expect(
        (
          await client.request('POST', '/api/v1/namespaces/default/configmaps', {
            body: { metadata: { name: 'dependent', ownerReferences: [ownerReference] } },
          })
        ).status,
      ).toBe(201);

      expect((await client.request('DELETE', '/api/v1/namespaces/doomed')).status).toBe(200);
      expect((await client.request('DELETE', '/api/v1/namespaces/default/configmaps/owner')).status).toBe(200);
      await waitUntil(
        'namespace doomed to be gone',
        async () => (await client.request('GET', '/api/v1/namespaces/doomed')).status === 404,
        [controllerManager.process, ...api.processes],
        90_000,
      );
      await waitUntil(
        'the dependent ConfigMap to be collected',
        async () => (await client.request('GET', '/api/v1/namespaces/default/configmaps/dependent')).status === 404,
        [controllerManager.process, ...api.processes],
        90_000,
      );
    },
    200_000,
  );

  it.concurrent(
    'runs Flux (its CRDs from the same modules): a GitRepository served on loopback, applied by a Kustomization to the workload cluster through a kubeconfig Secret',
    async ({ expect }) => {
      const sandbox = new GitSandbox();
      const sha = sandbox.commitFiles(
        sandbox.bareRepo('fleet'),
        'main',
        {
          'app/configmap.yaml':
            'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-flux\n  namespace: default\ndata:\n  mode: "0400"\n',
        },
        'An object for the workload cluster',
      );
      git = await startGitHttpServer({ projectRoot: sandbox.root });
      flux = await startFluxControllers(management!);
      const client = management!.admin.client;
      const create = async (path: string, body: unknown): Promise<void> => {
        const response = await client.request('POST', path, { body });
        expect(response.status, `${path}: ${response.text}`).toBe(201);
      };
      // What Cluster API writes for a workload cluster, and what the generated wiring points Flux at.
      await create('/api/v1/namespaces/flux-system/secrets', {
        metadata: { name: 'workload-kubeconfig' },
        stringData: { value: workload!.admin.kubeconfig },
      });
      await create('/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories', {
        apiVersion: 'source.toolkit.fluxcd.io/v1',
        kind: 'GitRepository',
        metadata: { name: 'fleet' },
        spec: { url: `${git.url}/fleet.git`, ref: { branch: 'main' }, interval: '1m' },
      });
      await create('/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations', {
        apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
        kind: 'Kustomization',
        metadata: { name: 'workload-app' },
        spec: {
          sourceRef: { kind: 'GitRepository', name: 'fleet' },
          path: './app',
          prune: true,
          interval: '1m',
          kubeConfig: { secretRef: { name: 'workload-kubeconfig', key: 'value' } },
        },
      });
      const watched = [
        flux.sourceController,
        flux.kustomizeController,
        ...management!.processes,
        ...workload!.processes,
      ];
      await waitUntil(
        'the ConfigMap applied by Flux in the workload cluster',
        async () =>
          (await workload!.admin.client.request('GET', '/api/v1/namespaces/default/configmaps/from-flux')).status ===
          200,
        watched,
        120_000,
      );
      expect((await workload!.admin.client.get('/api/v1/namespaces/default/configmaps/from-flux')).data).toEqual({
        mode: '0400',
      });
      expect((await client.request('GET', '/api/v1/namespaces/default/configmaps/from-flux')).status).toBe(404);
      let kustomization: any;
      // Under load a read has shown Ready=True before lastAppliedRevision was set (load 17): wait for both.
      await waitUntil(
        'the Kustomization to report Ready with its applied revision',
        async () => {
          kustomization = await client.get(
            '/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/workload-app',
          );
          return (
            kustomization.status?.lastAppliedRevision !== undefined &&
            (kustomization.status?.conditions ?? []).some(
              (condition: any) => condition.type === 'Ready' && condition.status === 'True',
            )
          );
        },
        watched,
        60_000,
      );
      expect(kustomization.status.lastAppliedRevision).toBe(`main@sha1:${sha}`);
    },
    300_000,
  );
});
