// Real Flux (source- and kustomize-controller) on what we publish, beyond the quick start
// (test/real-flux-e2e.test.ts): addon layers (a version bump that drops an addon, a held layer),
// Cluster API providers (CRDs never pruned), the ClusterClass health check on a fresh release
// whose class has no status yet, helm's octal `defaultMode: 0400` read live as 256, and our OCI
// artifact in a real registry as Flux's source instead of Git. Our CLI renders into a bare repository
// served by `git http-backend`; the wiring is bootstrapped with `kubectl apply -k flux`; bravo's
// kubeconfig Secret points at a second API server. Every assertion reads LIVE objects. One
// workload server for the whole file, and the management server and Flux the real-Flux files share
// (test/support/real-flux-world.ts): the file's wiring is named `layers`, its stacks live in
// namespaces of its own. Every case runs side by side
// with those it does not build on, so that Flux's own waits (a class stage's 60 s, a health check's
// 30 s) overlap each other and the rest instead of adding up. The fresh class has a wiring (source,
// repository, namespace) of its own: the other cases' publishes would restart its class stage. So
// do the providers: each publish makes Flux build every Kustomization on the source it changed, and
// the providers' three publishes in the stack's wiring rebuilt its stages and layers every time.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClusterstack, tempDir, writeTree } from './support/cli.js';
import {
  AGENT_CHART,
  clusterInput,
  configMapManifest,
  layerInput,
  providerInputs,
  stackInput,
  WIDGET_GROUP,
} from './support/real-flux-inputs.js';
import {
  applyWiring,
  bootstrapFlux,
  classReconciled,
  classStatus,
  daemonSetRolledOut,
  deploymentRolledOut,
  ensureNamespace,
  fluxEngineVersions,
  isReady,
  KUSTOMIZATIONS,
  reconcileUntil,
  setStatus,
  startFluxWorld,
  statusOf as status,
  syncWiring,
  waitInWorld,
  writeClusterKubeconfig,
  type FluxWorld,
} from './support/real-flux-world.js';
import { startRegistry, type TestRegistry } from './support/registry/index.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const RELEASES = path.join(ROOT, 'examples/quickstart/releases');
const NS = 'fleet';
const CLUSTER = 'bravo';
const FLEET_CLASS = `/apis/cluster.x-k8s.io/v1beta2/namespaces/${NS}/clusterclasses/docker-ferrol-1-30-v2`;
const RELEASE_KUSTOMIZATION = `${KUSTOMIZATIONS}/flux-system/kustomizations/${NS}-docker-ferrol-1-30-v2`;
/** The fresh-class case's own stack namespace and wiring name. */
const CLASS_NS = 'class-stacks';
const CLASS_WIRING = 'fresh-class';
const CLASS = `/apis/cluster.x-k8s.io/v1beta2/namespaces/${CLASS_NS}/clusterclasses/docker-ferrol-1-30-v2`;
const TEMPLATE = `/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/${CLASS_NS}/dockerclustertemplates/docker-ferrol-1-30-v2-cluster`;
const CLASS_RELEASE_KUSTOMIZATION = `${KUSTOMIZATIONS}/flux-system/kustomizations/${CLASS_NS}-docker-ferrol-1-30-v2`;
/** The wiring's name: the real-Flux files share one Flux, and the e2e file's quick start has the default one. */
const WIRING = 'layers';
const ROOT_KUSTOMIZATION = `${KUSTOMIZATIONS}/flux-system/kustomizations/${WIRING}`;
const GIT_SOURCE = `/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/${WIRING}`;
/** The providers case's own wiring name (its root Kustomization and GitRepository). */
const PROVIDERS_WIRING = 'providers';
const stage = (name: string): string => `${KUSTOMIZATIONS}/${NS}/kustomizations/${CLUSTER}-${name}`;
const layerKustomization = (name: string): string => stage(`layer-${name}`);
const configMap = (name: string, namespace = 'kube-system'): string =>
  `/api/v1/namespaces/${namespace}/configmaps/${name}`;
const crd = (name: string): string => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
const AGENT = '/apis/apps/v1/namespaces/kube-system/daemonsets/agent';
const KINDNET = '/apis/apps/v1/namespaces/kube-system/daemonsets/kindnet';
const METRICS_SERVER = '/apis/apps/v1/namespaces/kube-system/deployments/metrics-server';

describe('real Flux applies layers, providers and the OCI artifact clusterstack publishes', () => {
  let world: FluxWorld | undefined;
  let registry: TestRegistry | undefined;
  let bare: string;
  let inputs: string;
  const temps: string[] = [];
  let gitUrl = '';
  /** The first render, started while the servers and Flux start (it needs only Git); the first case awaits it. */
  let firstPublish: Promise<string> | undefined;
  /** The fresh-class case's repository and render, started beside the first. */
  let classBare: string;
  let classPublish: Promise<void> | undefined;
  /** The providers case's inputs and repository, and its first render (widget v1.0.0), started beside the first. */
  let providerInputsDir: string;
  let providersBare: string;
  let providersPublish: Promise<string> | undefined;
  const started = Date.now();
  /** The cases that build on the first publish's state wait for it; it settles true when that case passed. */
  const firstPublished = caseOutcome('first publish');

  const mgmt = () => world!.mgmt();
  const wl = () => world!.wl();
  const waitFor = (what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> =>
    waitInWorld(world!, what, check, timeoutMs);

  /** Writes the inputs repository: the stack, bravo, the layers (monitoring at `monitoring`). */
  function writeInputs(monitoring: '1.0.0' | '1.1.0'): void {
    writeFileSync(
      path.join(inputs, 'manifests/layers.yaml'),
      layerInput('monitoring', monitoring) +
        layerInput('agent', '1.0.0') +
        layerInput('paused', '1.0.0', { hold: true }),
    );
    rmSync(path.join(inputs, 'addons/monitoring'), { recursive: true, force: true });
    mkdirSync(path.join(inputs, 'addons/monitoring'), { recursive: true });
    writeFileSync(path.join(inputs, 'addons/monitoring/keep.yaml'), configMapManifest('monitoring-keep', monitoring));
    // 1.1.0 dropped this addon.
    if (monitoring === '1.0.0')
      writeFileSync(
        path.join(inputs, 'addons/monitoring/dropped.yaml'),
        configMapManifest('monitoring-dropped', monitoring),
      );
  }

  /** Renders the inputs into the bare repository with the Flux wiring; returns Flux's revision of the commit. */
  async function publish(): Promise<string> {
    const result = await runClusterstack(
      [
        'render',
        path.join(inputs, 'manifests'),
        '--release-source',
        RELEASES,
        '--git',
        bare,
        '--gitops',
        'flux',
        '--gitops-url',
        `${gitUrl}/fleet.git`,
        '--gitops-name',
        WIRING,
      ],
      { cwd: ROOT },
    );
    expect(result.code, result.stderr).toBe(0);
    return `main@sha1:${execFileSync('git', ['--git-dir', bare, 'rev-parse', 'main'], { encoding: 'utf8' }).trim()}`;
  }

  const applied = async (apiPath: string): Promise<string | undefined> =>
    (await mgmt().get(apiPath)).status?.lastAppliedRevision;

  /** Renders the core provider and the widget provider at `widget` (none when undefined) into the providers' repository; returns Flux's revision. */
  async function publishProviders(widget: 'v1.0.0' | 'v1.1.0' | undefined): Promise<string> {
    writeFileSync(path.join(providerInputsDir, 'providers.yaml'), providerInputs(widget));
    const result = await runClusterstack(
      [
        'render',
        providerInputsDir,
        '--release-source',
        RELEASES,
        '--git',
        providersBare,
        '--gitops',
        'flux',
        '--gitops-url',
        `${gitUrl}/providers.git`,
        '--gitops-name',
        PROVIDERS_WIRING,
      ],
      { cwd: ROOT },
    );
    expect(result.code, result.stderr).toBe(0);
    return `main@sha1:${execFileSync('git', ['--git-dir', providersBare, 'rev-parse', 'main'], { encoding: 'utf8' }).trim()}`;
  }

  /** Renders a stack of release v2 alone into its own repository, under its own wiring name. */
  async function publishFreshClass(): Promise<void> {
    const stackDir = await writeTree({ 'stack.yaml': stackInput(CLASS_NS, ['v2']) });
    temps.push(stackDir);
    const result = await runClusterstack(
      [
        'render',
        stackDir,
        '--release-source',
        RELEASES,
        '--git',
        classBare,
        '--gitops',
        'flux',
        '--gitops-url',
        `${gitUrl}/classes.git`,
        '--gitops-name',
        CLASS_WIRING,
      ],
      { cwd: ROOT },
    );
    expect(result.code, result.stderr).toBe(0);
  }

  beforeAll(async () => {
    // The layers' sources are directories of the Git work tree holding the inputs, as in Kraan.
    inputs = await writeTree({
      'manifests/stack.yaml': stackInput(NS, ['v2']),
      'manifests/cluster.yaml': clusterInput(NS, CLUSTER),
      'addons/paused/paused.yaml': configMapManifest('paused', '1.0.0'),
      ...Object.fromEntries(Object.entries(AGENT_CHART).map(([file, text]) => [`addons/agent/${file}`, text])),
    });
    temps.push(inputs);
    execFileSync('git', ['init', '-q', inputs]);
    writeInputs('1.0.0');
    providerInputsDir = await tempDir('csk-flux-providers-');
    temps.push(providerInputsDir);
    // Side by side; each one that started is kept, so that afterAll stops it when the other failed.
    const [flux, oci] = await Promise.allSettled([
      startFluxWorld({
        whileStarting: (git, sandbox) => {
          gitUrl = git.url;
          bare = sandbox.bareRepo('fleet');
          classBare = sandbox.bareRepo('classes');
          providersBare = sandbox.bareRepo('providers');
          firstPublish = publish();
          classPublish = publishFreshClass();
          providersPublish = publishProviders('v1.0.0');
          // Their failures are the cases', where they are awaited, not unhandled rejections here.
          firstPublish.catch(() => undefined);
          classPublish.catch(() => undefined);
          providersPublish.catch(() => undefined);
        },
      }),
      startRegistry(),
    ]);
    if (flux.status === 'fulfilled') world = flux.value;
    if (oci.status === 'fulfilled') registry = oci.value;
    for (const result of [flux, oci]) if (result.status === 'rejected') throw result.reason;
    // What Cluster API provides: the Cluster's namespace and bravo's kubeconfig Secret, pointing at the workload server.
    for (const namespace of [NS, CLASS_NS, 'oci-stacks']) await ensureNamespace(mgmt(), namespace);
    await writeClusterKubeconfig(world!, NS, CLUSTER, world!.workload.admin.kubeconfig);
    console.log(
      `Engines: ${fluxEngineVersions()}; set up in ${Math.round((Date.now() - started) / 1000)} s, of which the Flux world ${world!.startup}`,
    );
  }, 240_000);

  afterAll(async () => {
    await registry?.stop();
    await world?.stop();
    for (const dir of temps) rmSync(dir, { recursive: true, force: true });
    console.log(`real-flux-layers: ${Math.round((Date.now() - started) / 1000)} s in all`);
  }, 60_000);

  it.concurrent(
    "first publish: the layers reach the workload cluster, helm's octal defaultMode 0400 reads live as 256, and the held layer is suspended with nothing of it applied",
    async ({ expect }) =>
      firstPublished.track(async () => {
        const revision = await firstPublish!;
        bootstrapFlux(world!, bare);
        await waitFor(
          'the root Kustomization to apply the first commit',
          async () => (await applied(ROOT_KUSTOMIZATION)) === revision,
          90_000,
        );

        await waitFor(
          'the agent DaemonSet in the workload cluster',
          async () => (await status(wl(), AGENT)) === 200,
          90_000,
        );
        expect((await wl().get(AGENT)).spec.template.spec.volumes[0].secret.defaultMode).toBe(256);
        await waitFor(
          'the monitoring layer applied',
          async () => (await status(wl(), configMap('monitoring-dropped'))) === 200,
          60_000,
        );
        expect((await wl().get(configMap('monitoring-keep'))).data.value).toBe('1.0.0');

        const paused = await mgmt().get(layerKustomization('paused'));
        expect(paused.spec.suspend).toBe(true);
        expect(paused.status?.lastAppliedRevision).toBeUndefined();
        expect(await status(wl(), configMap('paused'))).toBe(404);

        // The stages and the other layers do not wait for it.
        await setStatus(wl(), AGENT, daemonSetRolledOut());
        await waitFor('the kindnet DaemonSet', async () => (await status(wl(), KINDNET)) === 200, 60_000);
        await setStatus(wl(), KINDNET, daemonSetRolledOut());
        await waitFor(
          'metrics-server applied after cni',
          async () => (await status(wl(), METRICS_SERVER)) === 200,
          90_000,
        );
        await setStatus(wl(), METRICS_SERVER, deploymentRolledOut);
        for (const name of ['cni', 'metrics-server', 'layer-agent', 'layer-monitoring'])
          await waitFor(`${name} Ready`, async () => isReady(await mgmt().get(stage(name))), 90_000);
        // Cluster API (played here) reconciles bravo's class, so that its release goes on to the
        // templates: a fresh class's wait is the next case's, in a wiring of its own.
        await waitFor(
          'the ClusterClass of the release applied',
          async () => (await status(mgmt(), FLEET_CLASS)) === 200,
          90_000,
        );
        await setStatus(mgmt(), FLEET_CLASS, classReconciled);
      }),
    300_000,
  );

  // Side by side with the first publish and what builds on it: two waits on Flux's own clock (the
  // class stage's 60 s, a health check's 30 s) and the OCI artifact's first publish, which shares
  // nothing with the Git world but the servers.
  it.concurrent(
    'a fresh ClusterClass is waited for until Cluster API reports its variables, and its templates follow without status.observedGeneration (which CAPI writes only once they exist)',
    async ({ expect }) => {
      await classPublish!;
      bootstrapFlux(world!, classBare);
      // Flux applies the class alone and waits for it.
      await waitFor('the ClusterClass applied', async () => (await status(mgmt(), CLASS)) === 200, 90_000);
      expect((await mgmt().get(CLASS)).status).toBeUndefined();
      // kustomize-controller waits for a *Class stage at most 60 s (fluxcd/pkg/ssa's default, not the
      // Kustomization's timeout), then fails the reconcile naming each class's status and retries
      // later. A class without any status is Unknown to it (CEL cannot test for a missing top-level
      // field), not Failed: it waits, as for InProgress, and says what is missing.
      await waitFor(
        'the class stage to time out',
        async () =>
          (await mgmt().get(CLASS_RELEASE_KUSTOMIZATION)).status?.conditions?.some(
            (c: any) => c.type === 'Ready' && c.status === 'False',
          ),
        120_000,
      );
      const verdict = (await mgmt().get(CLASS_RELEASE_KUSTOMIZATION)).status.conditions.find(
        (c: any) => c.type === 'Ready',
      );
      expect(verdict.message).toContain(
        `timeout waiting for: [ClusterClass/${CLASS_NS}/docker-ferrol-1-30-v2 status: 'Unknown'`,
      );
      expect(verdict.message).toContain('no such attribute(s): status');
      expect(await status(mgmt(), TEMPLATE)).toBe(404);

      // Cluster API's first pass over the class, as real CAPI does it with the templates missing:
      // variables reconciled, status.observedGeneration not written. That is enough for Flux to go on.
      await setStatus(mgmt(), CLASS, (cls) => classStatus(cls, false));
      await reconcileUntil(
        world!,
        CLASS_RELEASE_KUSTOMIZATION,
        'the templates applied after the class reported its variables',
        async () => (await status(mgmt(), TEMPLATE)) === 200,
        // Room for a second request after a failed reconcile: ends as soon as the templates are there.
        150_000,
      );
      // CAPI's next pass finds the templates and writes observedGeneration: the release is Ready.
      await setStatus(mgmt(), CLASS, (cls) => classStatus(cls, true));
      await waitFor(
        'the release Kustomization Ready',
        async () => isReady(await mgmt().get(CLASS_RELEASE_KUSTOMIZATION)),
        90_000,
      );
    },
    300_000,
  );

  it.concurrent(
    'deleting a stage Kustomization while it waits for an unhealthy object: real Flux finishes the health check (up to its timeout) before the finalizer runs',
    async ({ expect }) => {
      await firstPublished.passed();
      // A copy of bravo's agent layer whose DaemonSet never rolls out, with a 30 s timeout (Flux's least) instead of the wiring's 5 m.
      const layer = await mgmt().get(layerKustomization('agent'));
      const stuck = `${KUSTOMIZATIONS}/${NS}/kustomizations/stuck-stage`;
      const created = await mgmt().request('POST', `${KUSTOMIZATIONS}/${NS}/kustomizations`, {
        body: {
          apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
          kind: 'Kustomization',
          metadata: { name: 'stuck-stage' },
          spec: { ...layer.spec, namePrefix: 'stuck-', timeout: '30s' },
        },
      });
      expect(created.status, created.text).toBe(201);
      let checking: { lastTransitionTime: string } | undefined;
      await waitFor(
        'the copy to wait on its health check',
        async () =>
          !!(checking = (await mgmt().get(stuck)).status?.conditions?.find(
            (c: any) => c.type === 'Reconciling' && String(c.message).startsWith('Running health checks'),
          )),
        60_000,
      );
      // Since when, by the server's clock: the condition's lastTransitionTime, when this reconcile began
      // (its build and apply, a second or so, come before the health check). Our own look at the
      // condition may come seconds late on a loaded machine, which shortened what was measured.
      const waitingSince = Date.parse(checking!.lastTransitionTime);
      expect((await mgmt().request('DELETE', stuck)).status).toBe(200);
      await waitFor('the deleted Kustomization gone', async () => (await status(mgmt(), stuck)) === 404, 90_000);
      const seconds = (Date.now() - waitingSince) / 1000;
      console.log(`an unhealthy Kustomization (timeout 30s) took ${seconds.toFixed(1)} s to delete`);
      // kustomize-controller v1.9.6 handles the deletion only when the running reconcile returns: the
      // health check is not interrupted, and then at once, not after retryInterval.
      expect(seconds).toBeGreaterThan(20);
      // Then its finalizer deletes what it applied.
      await waitFor(
        'its DaemonSet deleted',
        async () => (await status(wl(), '/apis/apps/v1/namespaces/kube-system/daemonsets/stuck-agent')) === 404,
        60_000,
      );
    },
    180_000,
  );
  it.concurrent(
    'OCI: the artifact clusterstack pushes to a real registry is the source: an OCIRepository, bootstrapped from the artifact itself, applies the first publish',
    async ({ expect }) => {
      const stackDir = await writeTree({ 'stack.yaml': stackInput('oci-stacks', ['v1']) });
      temps.push(stackDir);
      const reference = `oci://${registry!.host}/fleet/tree:main`;
      const result = await runClusterstack(
        [
          'render',
          stackDir,
          '--release-source',
          RELEASES,
          '--oci',
          reference,
          '--plain-http',
          '--gitops',
          'flux',
          '--gitops-name',
          'oci-fleet',
        ],
        { cwd: ROOT },
      );
      expect(result.code, result.stderr).toBe(0);

      // Bootstrap from what the registry serves: the manifest's one layer, a tar.gz of the tree.
      const manifest = (await (
        await fetch(`http://${registry!.host}/v2/fleet/tree/manifests/main`, {
          headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
        })
      ).json()) as { layers: { digest: string }[] };
      expect(manifest.layers).toHaveLength(1);
      const blob = Buffer.from(
        await (await fetch(`http://${registry!.host}/v2/fleet/tree/blobs/${manifest.layers[0]!.digest}`)).arrayBuffer(),
      );
      const tree = await tempDir('csk-flux-oci-tree-');
      temps.push(tree);
      execFileSync('tar', ['-xzf', '-', '-C', tree], { input: blob });
      applyWiring(world!, tree);

      const source = await mgmt().get(
        '/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/ocirepositories/oci-fleet',
      );
      expect(source.spec).toMatchObject({
        url: `oci://${registry!.host}/fleet/tree`,
        ref: { tag: 'main' },
        insecure: true,
      });
      const cls = '/apis/cluster.x-k8s.io/v1beta2/namespaces/oci-stacks/clusterclasses/docker-ferrol-1-30-v1';
      // Ready and the applied revision together: Flux can show Ready=True a moment before it writes
      // lastAppliedRevision.
      await waitFor(
        'the root Kustomization to apply the artifact',
        async () => {
          const root = await mgmt().get(`${KUSTOMIZATIONS}/flux-system/kustomizations/oci-fleet`);
          return isReady(root) && root.status?.lastAppliedRevision !== undefined;
        },
        90_000,
      );
      expect(await applied(`${KUSTOMIZATIONS}/flux-system/kustomizations/oci-fleet`)).toMatch(
        /^main@sha256:[0-9a-f]{64}$/,
      );
      await waitFor('the ClusterClass from the artifact', async () => (await status(mgmt(), cls)) === 200, 90_000);
      await setStatus(mgmt(), cls, (object) => classStatus(object, false));
      await waitFor(
        'its templates',
        async () =>
          (await status(
            mgmt(),
            '/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/oci-stacks/dockerclustertemplates/docker-ferrol-1-30-v1-cluster',
          )) === 200,
        90_000,
      );
      // The class variables' defaults are integers, as helm rendered them.
      expect(
        (await mgmt().get(cls)).spec.variables.find((v: any) => v.name === 'maxPods')?.schema.openAPIV3Schema.default,
      ).toBe(110);
    },
    300_000,
  );

  // The bump builds on the first publish.
  it.concurrent(
    'a layer version bump that drops an addon: real Flux prunes it and updates what both versions keep; the held layer stays paused while everything else applies the new revision',
    async ({ expect }) => {
      await firstPublished.passed();
      writeInputs('1.1.0');
      const revision = await publish();
      await syncWiring(world!, GIT_SOURCE, ROOT_KUSTOMIZATION, revision);
      await waitFor(
        'the dropped addon pruned',
        async () => (await status(wl(), configMap('monitoring-dropped'))) === 404,
        90_000,
      );
      expect((await wl().get(configMap('monitoring-keep'))).data.value).toBe('1.1.0');
      const monitoring = await mgmt().get(layerKustomization('monitoring'));
      expect(monitoring.metadata.labels['clusterstack.x-k8s.io/layer-version']).toBe('1.1.0');

      for (const name of ['cni', 'metrics-server', 'layer-agent', 'layer-monitoring']) {
        await waitFor(`${name} at the new revision`, async () => (await applied(stage(name))) === revision, 90_000);
      }
      await waitFor(
        'the release at the new revision',
        async () => (await applied(RELEASE_KUSTOMIZATION)) === revision,
        90_000,
      );
      const paused = await mgmt().get(layerKustomization('paused'));
      expect(paused.spec.suspend).toBe(true);
      expect(paused.status?.lastAppliedRevision).toBeUndefined();
      expect(await status(wl(), configMap('paused'))).toBe(404);
    },
    300_000,
  );

  it.concurrent(
    'Cluster API providers: a CRD a new provider version dropped and the CRDs of a removed provider are never pruned, nor the objects made through them',
    async ({ expect }) => {
      const root = `${KUSTOMIZATIONS}/flux-system/kustomizations/${PROVIDERS_WIRING}`;
      const source = `/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/${PROVIDERS_WIRING}`;
      const widgetProvider = `${KUSTOMIZATIONS}/flux-system/kustomizations/provider-infrastructureprovider-widget`;
      const first = await providersPublish!;
      bootstrapFlux(world!, providersBare);
      await waitFor(
        'the providers root Kustomization to apply the first commit',
        async () => (await applied(root)) === first,
        90_000,
      );
      // Applied, not only created: Flux applies CRDs first and waits until the API server serves them.
      await waitFor(
        'the widget provider to apply the first commit',
        async () => (await applied(widgetProvider)) === first,
        90_000,
      );
      expect(await status(mgmt(), crd(`widgetmachines.${WIDGET_GROUP}`))).toBe(200);
      // A user's object of the provider's kind.
      const machine = await mgmt().request('POST', `/apis/${WIDGET_GROUP}/v1beta1/namespaces/${NS}/widgetmachines`, {
        body: {
          apiVersion: `${WIDGET_GROUP}/v1beta1`,
          kind: 'WidgetMachine',
          metadata: { name: 'worker-0' },
          spec: { size: 2 },
        },
      });
      expect(machine.status, machine.text).toBe(201);

      // v1.1.0 no longer ships WidgetMachine.
      let revision = await publishProviders('v1.1.0');
      await syncWiring(world!, source, root, revision);
      await waitFor('the widget provider at v1.1.0', async () => (await applied(widgetProvider)) === revision, 90_000);
      expect((await mgmt().get(configMap('provider-version', 'widget-system'))).data.version).toBe('v1.1.0');
      expect(await status(mgmt(), crd(`widgetmachines.${WIDGET_GROUP}`))).toBe(200);
      expect(await status(mgmt(), `/apis/${WIDGET_GROUP}/v1beta1/namespaces/${NS}/widgetmachines/worker-0`)).toBe(200);

      // The provider removed: its Kustomization is deleted and its finalizer deletes what it applied, except the CRDs and the Namespace.
      revision = await publishProviders(undefined);
      await syncWiring(world!, source, root, revision);
      await waitFor(
        'the widget provider Kustomization deleted',
        async () => (await status(mgmt(), widgetProvider)) === 404,
        90_000,
      );
      await waitFor(
        'its ConfigMap deleted',
        async () => (await status(mgmt(), configMap('provider-version', 'widget-system'))) === 404,
        60_000,
      );
      for (const name of ['widgetclusters', 'widgetmachines'])
        expect(await status(mgmt(), crd(`${name}.${WIDGET_GROUP}`)), name).toBe(200);
      expect((await mgmt().get('/api/v1/namespaces/widget-system')).status.phase).toBe('Active');
      expect(await status(mgmt(), `/apis/${WIDGET_GROUP}/v1beta1/namespaces/${NS}/widgetmachines/worker-0`)).toBe(200);
      // The core provider, untouched: Ready at the last revision too. Flux reconciles it at each new
      // revision of its source, and every reconcile starts with Ready Unknown, so it is waited for:
      // alone on its source with the widget provider, it may still be at it here.
      const core = `${KUSTOMIZATIONS}/flux-system/kustomizations/provider-coreprovider-cluster-api`;
      await waitFor(
        'the core provider Ready at the last revision',
        async () => {
          const live = await mgmt().get(core);
          return isReady(live) && live.status?.lastAppliedRevision === revision;
        },
        90_000,
      );
      expect((await mgmt().get('/api/v1/namespaces/capi-system')).status.phase).toBe('Active');
      expect(await status(mgmt(), crd('corewidgets.core.widget.test'))).toBe(200);
    },
    300_000,
  );
});

/**
 * A case's outcome, for the cases that build on its state and run beside the rest: track() runs
 * the case, passed() waits until it has finished and fails, naming it, when it did not pass.
 */
function caseOutcome(name: string): { track(body: () => Promise<void>): Promise<void>; passed(): Promise<void> } {
  let settle!: (passed: boolean) => void;
  const outcome = new Promise<boolean>((resolve) => (settle = resolve));
  return {
    async track(body) {
      try {
        await body();
        settle(true);
      } catch (error) {
        settle(false);
        throw error;
      }
    },
    async passed() {
      if (!(await outcome)) throw new Error(`this case builds on the case "${name}", which failed`);
    },
  };
}
