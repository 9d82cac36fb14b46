// Real Flux applies what we publish: the quick start rendered by our CLI into a git repository
// served on loopback, its Flux wiring bootstrapped with `kubectl apply -k flux` on a real
// management API server, and Flux's own source- and kustomize-controller applying it there and,
// through Cluster API's `<cluster>-kubeconfig` Secret, into a second real API server standing in
// for the workload cluster "bravo". Every assertion reads LIVE objects from the servers, never
// our files. The workload server is the file's own; the management server and Flux are shared with
// the other real-Flux files (test/support/real-flux-world.ts), whose wirings have names of their
// own: this one keeps the quick start's default. A missing engine fails the file.
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClusterstack, tempDir } from './support/cli.js';
import {
  bootstrapFlux,
  classReconciled,
  conditionOf,
  daemonSetRolledOut,
  deploymentRolledOut,
  ensureNamespace,
  fluxEngineVersions,
  GIT_REPOSITORIES,
  isReady as ready,
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

const ROOT = path.resolve(import.meta.dirname, '..');
const CLASSES = '/apis/cluster.x-k8s.io/v1beta2/namespaces/cluster-stacks/clusterclasses';
const WORKLOAD_CLUSTER = 'bravo';
const RELEASES = ['v1', 'v2', 'v3'];
const DAEMON_SET = '/apis/apps/v1/namespaces/kube-system/daemonsets/kindnet';
const DEPLOYMENT = '/apis/apps/v1/namespaces/kube-system/deployments/metrics-server';
const CNI_CONFIG = '/api/v1/namespaces/kube-system/configmaps/kindnet-cfg';
const ROOT_KUSTOMIZATION = `${KUSTOMIZATIONS}/flux-system/kustomizations/clusterstacks`;

describe('real Flux applies what clusterstack publishes', () => {
  let world: FluxWorld | undefined;
  let bare: string;
  let inputs: string | undefined;
  let gitUrl = '';
  /** The first render, started while the servers and Flux start (it needs only Git); case one awaits it. */
  let firstPublish: Promise<string> | undefined;
  const started = Date.now();

  const mgmt = () => world!.mgmt();
  const wl = () => world!.wl();
  const waitFor = (what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> =>
    waitInWorld(world!, what, check, timeoutMs);

  /** Renders the inputs into the bare repository with the Flux wiring; returns the commit. */
  async function publish(): Promise<string> {
    const result = await runClusterstack(
      [
        'render',
        inputs!,
        '--release-source',
        path.join(ROOT, 'examples/quickstart/releases'),
        '--git',
        bare,
        '--gitops',
        'flux',
        '--gitops-url',
        `${gitUrl}/fleet.git`,
      ],
      { cwd: ROOT },
    );
    expect(result.code, result.stderr).toBe(0);
    return execFileSync('git', ['--git-dir', bare, 'rev-parse', 'main'], { encoding: 'utf8' }).trim();
  }

  beforeAll(async () => {
    inputs = await tempDir('csk-flux-e2e-');
    cpSync(path.join(ROOT, 'examples/quickstart/manifests'), inputs, { recursive: true });
    world = await startFluxWorld({
      whileStarting: (git, sandbox) => {
        gitUrl = git.url;
        bare = sandbox.bareRepo('fleet');
        firstPublish = publish();
        // Its failure is the first case's, where it is awaited, not an unhandled rejection here.
        firstPublish.catch(() => undefined);
      },
    });
    // What Cluster API provides: the Clusters' namespace and bravo's kubeconfig Secret, pointing at the workload server.
    await ensureNamespace(mgmt(), 'cluster-stacks');
    await writeClusterKubeconfig(world, 'cluster-stacks', WORKLOAD_CLUSTER, world.workload.admin.kubeconfig);
    console.log(
      `Engines: ${fluxEngineVersions()}; started in ${Math.round((Date.now() - started) / 1000)} s, of which the Flux world ${world.startup}`,
    );
  }, 240_000);

  afterAll(async () => {
    await world?.stop();
    if (inputs) rmSync(inputs, { recursive: true, force: true });
    console.log(`real-flux-e2e: ${Math.round((Date.now() - started) / 1000)} s in all`);
  }, 60_000);

  it("first publish: the bootstrap applies the wiring, the releases land in the management server and the first addon stage in the workload server, with helm's meaning", async () => {
    const sha = await firstPublish!;
    // The README's bootstrap, against the management server.
    bootstrapFlux(world!, bare);
    await waitFor(
      'the root Kustomization to apply the first commit',
      async () => {
        const root = await mgmt().get(ROOT_KUSTOMIZATION);
        return ready(root) && root.status.lastAppliedRevision === `main@sha1:${sha}`;
      },
      90_000,
    );

    // Management side: every release's ClusterClass and templates, live. Flux applies the *Class
    // kinds in a stage of their own and waits for them, with our health check, before it applies
    // anything else of the directory: until CAPI (played here) reports the class's variables
    // reconciled, its templates are not applied (see docs/real-engines.md).
    const releaseKustomization = (release: string): string =>
      `${KUSTOMIZATIONS}/flux-system/kustomizations/cluster-stacks-docker-ferrol-1-30-${release}`;
    for (const release of RELEASES) {
      await waitFor(
        `ClusterClass docker-ferrol-1-30-${release}`,
        async () => (await status(mgmt(), `${CLASSES}/docker-ferrol-1-30-${release}`)) === 200,
        60_000,
      );
    }
    const template = (release: string): string =>
      `/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/cluster-stacks/dockerclustertemplates/docker-ferrol-1-30-${release}-cluster`;
    expect(await status(mgmt(), template('v3'))).toBe(404);
    expect(ready(await mgmt().get(releaseKustomization('v3')))).toBe(false);
    for (const release of RELEASES)
      await setStatus(mgmt(), `${CLASSES}/docker-ferrol-1-30-${release}`, classReconciled);
    for (const release of RELEASES) {
      await waitFor(
        `DockerClusterTemplate docker-ferrol-1-30-${release}-cluster`,
        async () => (await status(mgmt(), template(release))) === 200,
        60_000,
      );
      await waitFor(
        `the release Kustomization ${release} to be Ready`,
        async () => ready(await mgmt().get(releaseKustomization(release))),
        60_000,
      );
    }
    // The class variables' defaults are integers, as helm rendered them (v1 110, v2 150), not strings.
    const maxPods = async (release: string): Promise<unknown> =>
      (await mgmt().get(`${CLASSES}/docker-ferrol-1-30-${release}`)).spec.variables.find(
        (v: any) => v.name === 'maxPods',
      )?.schema.openAPIV3Schema.default;
    expect([await maxPods('v1'), await maxPods('v2')]).toEqual([110, 150]);

    // Workload side: bravo's first stage (cni) applied through the kubeconfig Secret, with bravo's values; nothing of it in the management server.
    await waitFor(
      'the cni DaemonSet in the workload cluster',
      async () => (await status(wl(), DAEMON_SET)) === 200,
      60_000,
    );
    const config = await wl().get(CNI_CONFIG);
    expect(config.data['cluster-name']).toBe(WORKLOAD_CLUSTER);
    expect(JSON.parse(config.data['10-kindnet.conflist']).plugins[0].mtu).toBe(1500);
    expect(await status(mgmt(), DAEMON_SET)).toBe(404);
  }, 240_000);

  it('stage order: metrics-server is not applied before the cni stage is Ready, and is once it is', async () => {
    const cni = `${KUSTOMIZATIONS}/cluster-stacks/kustomizations/${WORKLOAD_CLUSTER}-cni`;
    const metrics = `${KUSTOMIZATIONS}/cluster-stacks/kustomizations/${WORKLOAD_CLUSTER}-metrics-server`;
    // The workload server runs no controllers: the DaemonSet is not rolled out by itself, so the cni
    // stage waits on its health check, and Flux, having looked at metrics-server, holds it back.
    await waitFor(
      'the cni stage to run its health check and metrics-server to wait for it',
      async () =>
        String(conditionOf(await mgmt().get(cni), 'Reconciling')?.message).startsWith('Running health checks') &&
        JSON.stringify((await mgmt().get(metrics)).status?.conditions ?? []).includes('DependencyNotReady'),
      60_000,
    );
    expect(ready(await mgmt().get(cni))).toBe(false);
    const waiting = await mgmt().get(metrics);
    expect(ready(waiting)).toBe(false);
    expect(JSON.stringify(waiting.status?.conditions ?? [])).toContain('DependencyNotReady');
    expect(await status(wl(), DEPLOYMENT)).toBe(404);

    await setStatus(wl(), DAEMON_SET, daemonSetRolledOut());
    await waitFor('the cni stage to be Ready', async () => ready(await mgmt().get(cni)), 60_000);
    await waitFor(
      'metrics-server applied after cni is Ready',
      async () => (await status(wl(), DEPLOYMENT)) === 200,
      60_000,
    );
    // helm's meaning: integers stay integers.
    expect((await wl().get(DEPLOYMENT)).spec.replicas).toBe(1);
    expect((await wl().get('/api/v1/namespaces/kube-system/services/metrics-server')).spec.ports[0].port).toBe(443);
    await setStatus(wl(), DEPLOYMENT, deploymentRolledOut);
    await waitFor('the metrics-server stage to be Ready', async () => ready(await mgmt().get(metrics)), 60_000);
  }, 180_000);

  it('drift: a live addon object edited by hand is put back by the next reconcile', async () => {
    const before = await wl().get(CNI_CONFIG);
    const edited = await wl().request('PATCH', CNI_CONFIG, {
      body: { data: { 'cluster-name': 'hand-edited' } },
      contentType: 'application/merge-patch+json',
    });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body.data['cluster-name']).toBe('hand-edited');
    await reconcileUntil(
      world!,
      `${KUSTOMIZATIONS}/cluster-stacks/kustomizations/${WORKLOAD_CLUSTER}-cni`,
      'the hand edit reverted',
      async () => (await wl().get(CNI_CONFIG)).data['cluster-name'] === WORKLOAD_CLUSTER,
      60_000,
    );
    expect((await wl().get(CNI_CONFIG)).data).toEqual(before.data);
  }, 120_000);

  it('a dropped release and a removed Cluster: their objects are pruned, releases in use stay', async () => {
    // bravo leaves the inputs, and v2 (bravo's release, pinned in spec.versions) is no longer asked for.
    const clustersFile = path.join(inputs!, 'clusters.yaml');
    writeFileSync(
      clustersFile,
      readFileSync(clustersFile, 'utf8')
        .split(/^---$/m)
        .filter((doc) => !/^\s*name: bravo$/m.test(doc))
        .join('---'),
    );
    const stackFile = path.join(inputs!, 'clusterstack.yaml');
    writeFileSync(stackFile, readFileSync(stackFile, 'utf8').replace(/versions:\n\s+- v2\n/, 'versions: []\n'));
    const sha = await publish();
    await syncWiring(
      world!,
      `${GIT_REPOSITORIES}/flux-system/gitrepositories/clusterstacks`,
      ROOT_KUSTOMIZATION,
      `main@sha1:${sha}`,
    );

    await waitFor(
      "bravo's addons removed from the workload cluster",
      async () =>
        (await status(wl(), DAEMON_SET)) === 404 &&
        (await status(wl(), DEPLOYMENT)) === 404 &&
        (await status(wl(), CNI_CONFIG)) === 404,
      90_000,
    );
    await waitFor(
      'ClusterClass v2 pruned',
      async () => (await status(mgmt(), `${CLASSES}/docker-ferrol-1-30-v2`)) === 404,
      60_000,
    );
    expect(
      await status(
        mgmt(),
        '/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/cluster-stacks/dockerclustertemplates/docker-ferrol-1-30-v2-cluster',
      ),
    ).toBe(404);
    // v1 (alpha) and v3 (charlie, and the newest) are in use: never pruned.
    expect(await status(mgmt(), `${CLASSES}/docker-ferrol-1-30-v1`)).toBe(200);
    expect(await status(mgmt(), `${CLASSES}/docker-ferrol-1-30-v3`)).toBe(200);
    // Its parent prunes the stage Kustomization; kustomize-controller's finalizer removes its objects
    // first, so the Kustomization itself goes a moment after bravo's addons did.
    await waitFor(
      `the Kustomization ${WORKLOAD_CLUSTER}-cni deleted`,
      async () =>
        (await status(mgmt(), `${KUSTOMIZATIONS}/cluster-stacks/kustomizations/${WORKLOAD_CLUSTER}-cni`)) === 404,
      60_000,
    );
  }, 240_000);
});
