// Real Flux applies what we publish: the quick start rendered by our CLI into a git repository
// served on loopback, its Flux wiring bootstrapped with `kubectl apply -k flux` on a real
// management API server, and Flux's own source- and kustomize-controller applying it there and,
// through Cluster API's `<cluster>-kubeconfig` Secret, into a second real API server standing in
// for the workload cluster "bravo". Every assertion reads LIVE objects from the servers, never
// our files. Engines are started once for the file; a missing engine fails the file.
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClusterstack, tempDir } from './support/cli.js';
import { startGitHttpServer, type GitHttpServer } from './support/git-http-server.js';
import { GitSandbox } from './support/git-repos.js';
import {
  builtEngine,
  engineCrdFiles,
  installCrds,
  startFluxControllers,
  startRealKubeApi,
  waitUntil,
  type FluxControllers,
  type KubeClient,
  type LocalProcess,
  type RealKubeApi,
} from './support/real-kube-api/index.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const KUSTOMIZATIONS = '/apis/kustomize.toolkit.fluxcd.io/v1/namespaces';
const CLASSES = '/apis/cluster.x-k8s.io/v1beta2/namespaces/cluster-stacks/clusterclasses';
const WORKLOAD_CLUSTER = 'bravo';
const RELEASES = ['v1', 'v2', 'v3'];
const DAEMON_SET = '/apis/apps/v1/namespaces/kube-system/daemonsets/kindnet';
const DEPLOYMENT = '/apis/apps/v1/namespaces/kube-system/deployments/metrics-server';
const CNI_CONFIG = '/api/v1/namespaces/kube-system/configmaps/kindnet-cfg';

describe('real Flux applies what clusterstack publishes', () => {
  let management: RealKubeApi | undefined;
  let workload: RealKubeApi | undefined;
  let flux: FluxControllers | undefined;
  let git: GitHttpServer | undefined;
  let sandbox: GitSandbox | undefined;
  let bare: string;
  let inputs: string | undefined;
  let checkout: string | undefined;
  let watched: LocalProcess[] = [];

  const mgmt = (): KubeClient => management!.admin.client;
  const wl = (): KubeClient => workload!.admin.client;
  const status = async (client: KubeClient, apiPath: string): Promise<number> => (await client.request('GET', apiPath)).status;
  const ready = (object: any): boolean => (object?.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');

  /** Every Flux Kustomization with its Ready condition and inventory size: what a failed wait prints. */
  async function fluxState(): Promise<string> {
    const list = await mgmt().get('/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations');
    return list.items.map((k: any) => {
      const condition = (k.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
      return `${k.metadata.namespace}/${k.metadata.name}${k.metadata.deletionTimestamp ? ' (deleting)' : ''}: Ready=${condition?.status ?? '-'} ${condition?.reason ?? ''} ${String(condition?.message ?? '').slice(0, 300)} [${k.status?.inventory?.entries?.length ?? 0} in inventory]`;
    }).join('\n');
  }

  /** waitUntil, failing with Flux's view of things instead of every log's tail. */
  async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    try {
      await waitUntil(what, check, watched, timeoutMs);
    } catch (error) {
      throw new Error(`${String((error as Error).message).split('\n')[0]}\nFlux Kustomizations:\n${await fluxState()}`, { cause: error });
    }
  }

  /** Renders the inputs into the bare repository with the Flux wiring; returns the commit. */
  async function publish(): Promise<string> {
    const result = await runClusterstack(['render', inputs!, '--release-source', path.join(ROOT, 'examples/quickstart/releases'), '--git', bare,
      '--gitops', 'flux', '--gitops-url', `${git!.url}/fleet.git`], { cwd: ROOT });
    expect(result.code, result.stderr).toBe(0);
    return execFileSync('git', ['--git-dir', bare, 'rev-parse', 'main'], { encoding: 'utf8' }).trim();
  }

  /** What `flux reconcile` does: asks a controller to reconcile now, without waiting for the interval. */
  async function requestReconcile(apiPath: string): Promise<void> {
    const response = await mgmt().request('PATCH', apiPath, {
      body: { metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': new Date().toISOString() + Math.random() } } },
      contentType: 'application/merge-patch+json',
    });
    expect(response.status, response.text).toBe(200);
  }

  /** Fetches the new commit and re-applies the wiring, then waits for the root to apply `sha`. */
  async function syncWiring(sha: string): Promise<void> {
    await requestReconcile('/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/clusterstacks');
    await requestReconcile(`${KUSTOMIZATIONS}/flux-system/kustomizations/clusterstacks`);
    await waitFor(`the root Kustomization to apply ${sha}`, async () => {
      const root = await mgmt().get(`${KUSTOMIZATIONS}/flux-system/kustomizations/clusterstacks`);
      return root.status?.lastAppliedRevision === `main@sha1:${sha}`;
    }, 60_000);
  }

  /** Writes `status` through the status subresource, as the object's own controller would (neither server runs one). */
  async function setStatus(client: KubeClient, apiPath: string, status: (object: any) => Record<string, unknown>): Promise<void> {
    const object = await client.get(apiPath);
    const response = await client.request('PATCH', `${apiPath}/status`, { body: { status: status(object) }, contentType: 'application/merge-patch+json' });
    expect(response.status, response.text).toBe(200);
  }

  /** kstatus calls a DaemonSet Current once its controller has observed it with every pod in place; with no nodes that is zero of zero. */
  const daemonSetRolledOut = (daemonSet: any): Record<string, unknown> => ({
    observedGeneration: daemonSet.metadata.generation, desiredNumberScheduled: 0, currentNumberScheduled: 0, updatedNumberScheduled: 0, numberAvailable: 0, numberReady: 0, numberMisscheduled: 0,
  });

  /** A Deployment whose replicas are all updated, ready and available, as kstatus requires. */
  const deploymentRolledOut = (deployment: any): Record<string, unknown> => {
    const replicas = deployment.spec.replicas;
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    return {
      observedGeneration: deployment.metadata.generation, replicas, updatedReplicas: replicas, readyReplicas: replicas, availableReplicas: replicas,
      conditions: [
        { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: '', lastUpdateTime: now, lastTransitionTime: now },
        { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: '', lastUpdateTime: now, lastTransitionTime: now },
      ],
    };
  };

  /** What CAPI's ClusterClass controller reports once the class's variables are reconciled (v1beta2). */
  const classReconciled = (cls: any): Record<string, unknown> => ({
    observedGeneration: cls.metadata.generation,
    conditions: [{ type: 'VariablesReady', status: 'True', reason: 'VariablesReady', message: '', observedGeneration: cls.metadata.generation, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }],
  });

  beforeAll(async () => {
    [management, workload] = await Promise.all([startRealKubeApi({ name: 'management' }), startRealKubeApi({ name: 'workload' })]);
    await installCrds(management, [...engineCrdFiles('cluster-api'), ...engineCrdFiles('cluster-api-docker')]);
    // A dependency not yet Ready is looked at again after 2 s instead of 30 s, to keep the file short.
    flux = await startFluxControllers(management, { kustomizeControllerArgs: ['--requeue-dependency=2s'] });
    watched = [flux.sourceController, flux.kustomizeController, ...management.processes, ...workload.processes];
    sandbox = new GitSandbox();
    bare = sandbox.bareRepo('fleet');
    git = await startGitHttpServer({ projectRoot: sandbox.root });
    inputs = await tempDir('csk-flux-e2e-');
    cpSync(path.join(ROOT, 'examples/quickstart/manifests'), inputs, { recursive: true });
    // What Cluster API provides: the Clusters' namespace and bravo's kubeconfig Secret, pointing at the workload server.
    expect((await mgmt().request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'cluster-stacks' } } })).status).toBe(201);
    const secret = await mgmt().request('POST', '/api/v1/namespaces/cluster-stacks/secrets', {
      body: { metadata: { name: `${WORKLOAD_CLUSTER}-kubeconfig`, labels: { 'cluster.x-k8s.io/cluster-name': WORKLOAD_CLUSTER } }, type: 'cluster.x-k8s.io/secret', stringData: { value: workload.admin.kubeconfig } },
    });
    expect(secret.status, secret.text).toBe(201);
    console.log(`Engines: kube-apiserver ${builtEngine('kubernetes').version}, etcd ${builtEngine('etcd').version}, source-controller ${builtEngine('source-controller').version}, kustomize-controller ${builtEngine('kustomize-controller').version}, cluster-api CRDs ${builtEngine('cluster-api').version}`);
  }, 240_000);

  afterAll(async () => {
    await flux?.stop();
    await git?.close();
    await Promise.all([management?.stop(), workload?.stop()]);
    sandbox?.cleanup();
    for (const dir of [inputs, checkout]) if (dir) rmSync(dir, { recursive: true, force: true });
    for (const process of watched) expect(process.exited(), `${process.name} (pid ${process.pid}) is still running`).toBe(true);
  }, 60_000);

  it("first publish: the bootstrap applies the wiring, the releases land in the management server and the first addon stage in the workload server, with helm's meaning", async () => {
    const sha = await publish();
    checkout = await tempDir('csk-flux-e2e-checkout-');
    execFileSync('git', ['clone', '--quiet', '--branch', 'main', bare, checkout]);
    // The README's bootstrap, against the management server.
    execFileSync('kubectl', ['--kubeconfig', management!.admin.kubeconfigFile, 'apply', '-k', path.join(checkout, 'flux')], { encoding: 'utf8' });
    await waitFor('the root Kustomization to apply the first commit', async () => {
      const root = await mgmt().get(`${KUSTOMIZATIONS}/flux-system/kustomizations/clusterstacks`);
      return ready(root) && root.status.lastAppliedRevision === `main@sha1:${sha}`;
    }, 90_000);

    // Management side: every release's ClusterClass and templates, live. Flux applies the *Class
    // kinds in a stage of their own and waits for them, with our health check, before it applies
    // anything else of the directory: until CAPI (played here) reports the class's variables
    // reconciled, its templates are not applied (see docs/real-engines.md).
    const releaseKustomization = (release: string): string => `${KUSTOMIZATIONS}/flux-system/kustomizations/cluster-stacks-docker-ferrol-1-30-${release}`;
    for (const release of RELEASES) {
      await waitFor(`ClusterClass docker-ferrol-1-30-${release}`, async () => (await status(mgmt(), `${CLASSES}/docker-ferrol-1-30-${release}`)) === 200, 60_000);
    }
    const template = (release: string): string => `/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/cluster-stacks/dockerclustertemplates/docker-ferrol-1-30-${release}-cluster`;
    expect(await status(mgmt(), template('v3'))).toBe(404);
    expect(ready(await mgmt().get(releaseKustomization('v3')))).toBe(false);
    for (const release of RELEASES) await setStatus(mgmt(), `${CLASSES}/docker-ferrol-1-30-${release}`, classReconciled);
    for (const release of RELEASES) {
      await waitFor(`DockerClusterTemplate docker-ferrol-1-30-${release}-cluster`, async () => (await status(mgmt(), template(release))) === 200, 60_000);
      await waitFor(`the release Kustomization ${release} to be Ready`, async () => ready(await mgmt().get(releaseKustomization(release))), 60_000);
    }
    // The class variables' defaults are integers, as helm rendered them (v1 110, v2 150), not strings.
    const maxPods = async (release: string): Promise<unknown> => (await mgmt().get(`${CLASSES}/docker-ferrol-1-30-${release}`)).spec.variables.find((v: any) => v.name === 'maxPods')?.schema.openAPIV3Schema.default;
    expect([await maxPods('v1'), await maxPods('v2')]).toEqual([110, 150]);

    // Workload side: bravo's first stage (cni) applied through the kubeconfig Secret, with bravo's values; nothing of it in the management server.
    await waitFor('the cni DaemonSet in the workload cluster', async () => (await status(wl(), DAEMON_SET)) === 200, 60_000);
    const config = await wl().get(CNI_CONFIG);
    expect(config.data['cluster-name']).toBe(WORKLOAD_CLUSTER);
    expect(JSON.parse(config.data['10-kindnet.conflist']).plugins[0].mtu).toBe(1500);
    expect(await status(mgmt(), DAEMON_SET)).toBe(404);
  }, 240_000);

  it('stage order: metrics-server is not applied before the cni stage is Ready, and is once it is', async () => {
    const cni = `${KUSTOMIZATIONS}/cluster-stacks/kustomizations/${WORKLOAD_CLUSTER}-cni`;
    const metrics = `${KUSTOMIZATIONS}/cluster-stacks/kustomizations/${WORKLOAD_CLUSTER}-metrics-server`;
    // The workload server runs no controllers: the DaemonSet is not rolled out by itself, so the cni stage waits.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(ready(await mgmt().get(cni))).toBe(false);
    const waiting = await mgmt().get(metrics);
    expect(ready(waiting)).toBe(false);
    expect(JSON.stringify(waiting.status?.conditions ?? [])).toContain('DependencyNotReady');
    expect(await status(wl(), DEPLOYMENT)).toBe(404);

    await setStatus(wl(), DAEMON_SET, daemonSetRolledOut);
    await waitFor('the cni stage to be Ready', async () => ready(await mgmt().get(cni)), 60_000);
    await waitFor('metrics-server applied after cni is Ready', async () => (await status(wl(), DEPLOYMENT)) === 200, 60_000);
    // helm's meaning: integers stay integers.
    expect((await wl().get(DEPLOYMENT)).spec.replicas).toBe(1);
    expect((await wl().get('/api/v1/namespaces/kube-system/services/metrics-server')).spec.ports[0].port).toBe(443);
    await setStatus(wl(), DEPLOYMENT, deploymentRolledOut);
    await waitFor('the metrics-server stage to be Ready', async () => ready(await mgmt().get(metrics)), 60_000);
  }, 180_000);

  it('drift: a live addon object edited by hand is put back by the next reconcile', async () => {
    const before = await wl().get(CNI_CONFIG);
    const edited = await wl().request('PATCH', CNI_CONFIG, { body: { data: { 'cluster-name': 'hand-edited' } }, contentType: 'application/merge-patch+json' });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body.data['cluster-name']).toBe('hand-edited');
    await requestReconcile(`${KUSTOMIZATIONS}/cluster-stacks/kustomizations/${WORKLOAD_CLUSTER}-cni`);
    await waitFor('the hand edit reverted', async () => (await wl().get(CNI_CONFIG)).data['cluster-name'] === WORKLOAD_CLUSTER, 60_000);
    expect((await wl().get(CNI_CONFIG)).data).toEqual(before.data);
  }, 120_000);

  it('a dropped release and a removed Cluster: their objects are pruned, releases in use stay', async () => {
    // bravo leaves the inputs, and v2 (bravo's release, pinned in spec.versions) is no longer asked for.
    const clustersFile = path.join(inputs!, 'clusters.yaml');
    writeFileSync(clustersFile, readFileSync(clustersFile, 'utf8').split(/^---$/m).filter((doc) => !/^\s*name: bravo$/m.test(doc)).join('---'));
    const stackFile = path.join(inputs!, 'clusterstack.yaml');
    writeFileSync(stackFile, readFileSync(stackFile, 'utf8').replace(/versions:\n\s+- v2\n/, 'versions: []\n'));
    const sha = await publish();
    await syncWiring(sha);

    await waitFor('bravo\'s addons removed from the workload cluster', async () => (await status(wl(), DAEMON_SET)) === 404
      && (await status(wl(), DEPLOYMENT)) === 404 && (await status(wl(), CNI_CONFIG)) === 404, 90_000);
    await waitFor('ClusterClass v2 pruned', async () => (await status(mgmt(), `${CLASSES}/docker-ferrol-1-30-v2`)) === 404, 60_000);
    expect(await status(mgmt(), '/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/cluster-stacks/dockerclustertemplates/docker-ferrol-1-30-v2-cluster')).toBe(404);
    // v1 (alpha) and v3 (charlie, and the newest) are in use: never pruned.
    expect(await status(mgmt(), `${CLASSES}/docker-ferrol-1-30-v1`)).toBe(200);
    expect(await status(mgmt(), `${CLASSES}/docker-ferrol-1-30-v3`)).toBe(200);
    expect(await status(mgmt(), `${KUSTOMIZATIONS}/cluster-stacks/kustomizations/${WORKLOAD_CLUSTER}-cni`)).toBe(404);
  }, 240_000);
});
