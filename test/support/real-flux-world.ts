// The one real-Flux test kit (docs/real-engines.md), shared by every real-Flux file: a world of a
// management and a workload API server, Flux's source- and kustomize-controller on the management
// server, the Cluster API CRDs its objects need, and Git served on loopback by `git http-backend`;
// plus what the scenarios do to it: read a status code, ask Flux to reconcile now (as `flux
// reconcile` does), wait with Flux's own view in the failure message, write the status a missing
// controller would write, bootstrap a published tree with `kubectl apply -k`. One world per test file.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startGitHttpServer, type GitHttpServer } from './git-http-server.js';
import { GitSandbox } from './git-repos.js';
import {
  builtEngine,
  crdFilesServing,
  engineCrdFiles,
  installCrds,
  startFluxControllers,
  startRealKubeApi,
  waitUntil,
  type FluxControllers,
  type KubeClient,
  type LocalProcess,
  type RealKubeApi,
} from './real-kube-api/index.js';

export const KUSTOMIZATIONS = '/apis/kustomize.toolkit.fluxcd.io/v1/namespaces';
export const GIT_REPOSITORIES = '/apis/source.toolkit.fluxcd.io/v1/namespaces';

/**
 * The Cluster API kinds the real-Flux files' objects are made of: the releases' ClusterClass and
 * templates, a Cluster, and the runtime extension's ExtensionConfig (deploy/runtime-extension).
 * Only their CRDs are installed, not all 29 of Cluster API and its Docker provider: each CRD costs
 * the API server seconds of CPU to establish, and nothing here makes the others' objects. A kind
 * missing here fails Flux's dry-run naming it ("no matches for kind").
 */
const CLUSTER_API_KINDS = new Set([
  'cluster.x-k8s.io/ClusterClass',
  'cluster.x-k8s.io/Cluster',
  'infrastructure.cluster.x-k8s.io/DockerClusterTemplate',
  'infrastructure.cluster.x-k8s.io/DockerMachineTemplate',
  'bootstrap.cluster.x-k8s.io/KubeadmConfigTemplate',
  'controlplane.cluster.x-k8s.io/KubeadmControlPlaneTemplate',
  'runtime.cluster.x-k8s.io/ExtensionConfig',
]);

export interface FluxWorld {
  management: RealKubeApi;
  workload: RealKubeApi;
  flux: FluxControllers;
  git: GitHttpServer;
  sandbox: GitSandbox;
  /** The processes whose exit fails a wait (Flux, both API servers and their etcd). */
  watched: LocalProcess[];
  mgmt(): KubeClient;
  wl(): KubeClient;
  /** How long the start took and when each phase was done, for the file's log. */
  startup: string;
  /** Stops everything it started and removes its temporary files; fails if a process outlives it. */
  stop(): Promise<void>;
}

export interface FluxWorldOptions {
  /** Extra kustomize-controller flags. */
  kustomizeControllerArgs?: string[];
  /**
   * Called once the Git server answers, before the API servers are started: work that needs only
   * Git and its address (a file's first render) runs while they and Flux start.
   */
  whileStarting?: (git: GitHttpServer, sandbox: GitSandbox) => void;
  /**
   * Called once both API servers answer and the Cluster API CRDs are installed, while Flux may still
   * be starting: work that needs only the servers (a controller's identity) runs beside it.
   */
  whileFluxStarts?: (servers: { management: RealKubeApi; workload: RealKubeApi }) => void;
}

/**
 * Starts the Git server, then both API servers, then the Cluster API CRDs and Flux side by side.
 * Flux looks at a dependency that is not Ready again after 1 s (its default is 30 s) and runs up to
 * 10 Kustomizations at once (default 4), so that a file's cases that wait on Flux in parallel (a
 * class stage's 60 s, a health check's timeout) do not queue behind each other.
 */
export async function startFluxWorld(options: FluxWorldOptions = {}): Promise<FluxWorld> {
  const clock = phaseClock();
  const sandbox = new GitSandbox();
  const git = await startGitHttpServer({ projectRoot: sandbox.root }).catch((error: unknown) => {
    sandbox.cleanup();
    throw error;
  });
  options.whileStarting?.(git, sandbox);
  const [management, workload] = await Promise.all([
    startRealKubeApi({ name: 'management' }),
    startRealKubeApi({ name: 'workload' }),
  ]).catch(async (error: unknown) => {
    await git.close();
    sandbox.cleanup();
    throw error;
  });
  clock.mark('API servers');
  let flux: FluxControllers | undefined;
  const stop = async (): Promise<void> => {
    await flux?.stop();
    await git.close();
    await Promise.all([management.stop(), workload.stop()]);
    sandbox.cleanup();
    const alive = [
      flux?.sourceController,
      flux?.kustomizeController,
      ...management.processes,
      ...workload.processes,
    ].filter((process) => process && !process.exited());
    if (alive.length > 0)
      throw new Error(`still running: ${alive.map((process) => `${process!.name} (pid ${process!.pid})`).join(', ')}`);
  };
  try {
    // Each settles before the failure is thrown, so that stop() finds everything that was started.
    const started = await Promise.allSettled([
      installCrds(
        management,
        crdFilesServing([...engineCrdFiles('cluster-api'), ...engineCrdFiles('cluster-api-docker')], CLUSTER_API_KINDS),
      ).then(() => {
        clock.mark('Cluster API CRDs');
        options.whileFluxStarts?.({ management, workload });
      }),
      startFluxControllers(management, {
        kustomizeControllerArgs: [
          '--requeue-dependency=1s',
          '--concurrent=10',
          ...(options.kustomizeControllerArgs ?? []),
        ],
      }).then((controllers) => {
        flux = controllers;
        clock.mark('Flux');
      }),
    ]);
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  return {
    management,
    workload,
    flux: flux!,
    git,
    sandbox,
    watched: [flux!.sourceController, flux!.kustomizeController, ...management.processes, ...workload.processes],
    mgmt: () => management.admin.client,
    wl: () => workload.admin.client,
    startup: clock.summary(),
    stop,
  };
}

/** Marks the end of each phase of a start-up; summary() gives the total and when each phase was done, since the start. */
function phaseClock(): { mark(phase: string): void; summary(): string } {
  const begun = performance.now();
  const marks: [string, number][] = [];
  return {
    mark: (phase) => void marks.push([phase, performance.now()]),
    summary: () =>
      `${((performance.now() - begun) / 1000).toFixed(1)} s (${marks
        .map(([phase, at]) => `${phase} done at ${((at - begun) / 1000).toFixed(1)} s`)
        .join(', ')})`,
  };
}

/** The engine versions a file ran against, for its log. */
export function fluxEngineVersions(): string {
  return `kube-apiserver ${builtEngine('kubernetes').version}, etcd ${builtEngine('etcd').version}, source-controller ${builtEngine('source-controller').version}, kustomize-controller ${builtEngine('kustomize-controller').version}, cluster-api CRDs ${builtEngine('cluster-api').version}`;
}

/** The HTTP status of a GET (200, 404, ...). */
export async function statusOf(client: KubeClient, apiPath: string): Promise<number> {
  return (await client.request('GET', apiPath)).status;
}

/** A condition of a live object, by type. */
export function conditionOf(
  object: any,
  type: string,
): { type: string; status: string; reason?: string; message?: string } | undefined {
  return (object?.status?.conditions ?? []).find((c: any) => c.type === type);
}

/** Whether a live object's Ready condition is True. */
export function isReady(object: any): boolean {
  return conditionOf(object, 'Ready')?.status === 'True';
}

/** Every Flux Kustomization with its Ready condition, applied revision and inventory size: what a failed wait prints. */
async function fluxState(client: KubeClient): Promise<string> {
  const list = await client.get('/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations');
  return list.items
    .map((k: any) => {
      const ready = conditionOf(k, 'Ready');
      return `${k.metadata.namespace}/${k.metadata.name}${k.metadata.deletionTimestamp ? ' (deleting)' : ''}${k.spec.suspend ? ' (suspended)' : ''}: Ready=${ready?.status ?? '-'} ${ready?.reason ?? ''} ${String(ready?.message ?? '').slice(0, 2000)} [applied ${k.status?.lastAppliedRevision ?? '-'}, ${k.status?.inventory?.entries?.length ?? 0} in inventory]`;
    })
    .join('\n');
}

/** waitUntil on the world's processes, failing with Flux's view of things (and `extra`) instead of every log's tail. */
export async function waitInWorld(
  world: FluxWorld,
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  extra?: () => Promise<string> | string,
): Promise<void> {
  try {
    await waitUntil(what, check, world.watched, timeoutMs);
  } catch (error) {
    const more = extra ? `\n${await extra()}` : '';
    throw new Error(
      `${String((error as Error).message).split('\n')[0]}\nFlux Kustomizations:\n${await fluxState(world.mgmt())}${more}`,
      { cause: error },
    );
  }
}

/**
 * What `flux reconcile` does: asks a Flux controller to reconcile the object now, without waiting
 * for its interval. Returns the request's token, which Flux copies to `status.lastHandledReconcileAt`
 * when that reconcile has finished.
 */
export async function requestReconcile(client: KubeClient, apiPath: string): Promise<string> {
  const token = new Date().toISOString() + Math.random();
  const response = await client.request('PATCH', apiPath, {
    body: { metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': token } } },
    contentType: 'application/merge-patch+json',
  });
  if (response.status !== 200) throw new Error(`PATCH ${apiPath}: ${response.status} ${response.text}`);
  return token;
}

/** Fetches `source` now and re-applies the `root` Kustomization, then waits until the root applied `revision` (`main@sha1:...`). */
export async function syncWiring(world: FluxWorld, source: string, root: string, revision: string): Promise<void> {
  await requestReconcile(world.mgmt(), source);
  await requestReconcile(world.mgmt(), root);
  await waitInWorld(
    world,
    `${root} to apply ${revision}`,
    async () => (await world.mgmt().get(root)).status?.lastAppliedRevision === revision,
    90_000,
  );
}

/** Writes `status` through the status subresource, as the object's own controller would (neither server runs one). */
export async function setStatus(
  client: KubeClient,
  apiPath: string,
  status: (object: any) => Record<string, unknown>,
): Promise<void> {
  const object = await client.get(apiPath);
  const response = await client.request('PATCH', `${apiPath}/status`, {
    body: { status: status(object) },
    contentType: 'application/merge-patch+json',
  });
  if (response.status !== 200) throw new Error(`PATCH ${apiPath}/status: ${response.status} ${response.text}`);
}

/** Now, as the API server writes times (seconds, `Z`). */
const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** kstatus calls a DaemonSet Current once its controller observed it with every pod in place: here `pods` of `pods` (no nodes: zero of zero). */
export const daemonSetRolledOut =
  (pods = 0) =>
  (daemonSet: any): Record<string, unknown> => ({
    observedGeneration: daemonSet.metadata.generation,
    desiredNumberScheduled: pods,
    currentNumberScheduled: pods,
    updatedNumberScheduled: pods,
    numberAvailable: pods,
    numberReady: pods,
    numberMisscheduled: 0,
  });

/** A Deployment whose replicas are all updated, ready and available, as kstatus requires. */
export const deploymentRolledOut = (deployment: any): Record<string, unknown> => {
  const replicas = deployment.spec.replicas;
  return {
    observedGeneration: deployment.metadata.generation,
    replicas,
    updatedReplicas: replicas,
    readyReplicas: replicas,
    availableReplicas: replicas,
    conditions: [
      {
        type: 'Available',
        status: 'True',
        reason: 'MinimumReplicasAvailable',
        message: '',
        lastUpdateTime: now(),
        lastTransitionTime: now(),
      },
      {
        type: 'Progressing',
        status: 'True',
        reason: 'NewReplicaSetAvailable',
        message: '',
        lastUpdateTime: now(),
        lastTransitionTime: now(),
      },
    ],
  };
};

/**
 * What Cluster API's ClusterClass controller (v1beta2) writes. `templatesFound: false` is its first
 * pass over a fresh class whose templates are not applied yet: the variables are reconciled
 * (VariablesReady True) but the template references fail, so the reconcile ends in an error and
 * `status.observedGeneration` is not written (core/reconcilers/clusterclass, v1.14).
 */
export function classStatus(cls: any, templatesFound: boolean): Record<string, unknown> {
  const generation = cls.metadata.generation;
  const at = now();
  const refs = templatesFound
    ? {
        type: 'RefVersionsUpToDate',
        status: 'True',
        reason: 'RefVersionsUpToDate',
        message: '',
        observedGeneration: generation,
        lastTransitionTime: at,
      }
    : {
        type: 'RefVersionsUpToDate',
        status: 'Unknown',
        reason: 'InternalError',
        message: 'Please check controller logs for errors',
        observedGeneration: generation,
        lastTransitionTime: at,
      };
  return {
    ...(templatesFound ? { observedGeneration: generation } : {}),
    conditions: [
      refs,
      {
        type: 'VariablesReady',
        status: 'True',
        reason: 'VariablesReady',
        message: '',
        observedGeneration: generation,
        lastTransitionTime: at,
      },
    ],
  };
}

/** A class Cluster API has fully reconciled (templates found). */
export const classReconciled = (cls: any): Record<string, unknown> => classStatus(cls, true);

/** `kubectl apply -k <tree>/flux` on the management server: the README's bootstrap from a published tree on disk. */
export function applyWiring(world: FluxWorld, tree: string): void {
  execFileSync(
    'kubectl',
    ['--kubeconfig', world.management.admin.kubeconfigFile, 'apply', '-k', path.join(tree, 'flux')],
    { encoding: 'utf8', stdio: 'pipe' },
  );
}

/** The README's bootstrap: `kubectl apply -k flux` from a checkout of `bare`'s main branch, on the management server. */
export function bootstrapFlux(world: FluxWorld, bare: string): void {
  const checkout = mkdtempSync(path.join(os.tmpdir(), 'csk-flux-bootstrap-'));
  try {
    execFileSync('git', ['clone', '--quiet', '--branch', 'main', bare, checkout], { stdio: 'pipe' });
    applyWiring(world, checkout);
  } finally {
    rmSync(checkout, { recursive: true, force: true });
  }
}

/** Puts `kubeconfig` into Cluster API's `<cluster>-kubeconfig` Secret (key `value`) on the management server. */
export async function writeClusterKubeconfig(
  world: FluxWorld,
  namespace: string,
  cluster: string,
  kubeconfig: string,
): Promise<void> {
  const response = await world.mgmt().request('POST', `/api/v1/namespaces/${namespace}/secrets`, {
    body: {
      metadata: { name: `${cluster}-kubeconfig`, namespace, labels: { 'cluster.x-k8s.io/cluster-name': cluster } },
      type: 'cluster.x-k8s.io/secret',
      stringData: { value: kubeconfig },
    },
  });
  if (response.status !== 201)
    throw new Error(`creating Secret ${namespace}/${cluster}-kubeconfig: ${response.status} ${response.text}`);
}

/** Creates a namespace (on either server); an existing one is fine. */
export async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  const response = await client.request('POST', '/api/v1/namespaces', { body: { metadata: { name } } });
  if (response.status !== 201 && response.status !== 409)
    throw new Error(`creating namespace ${name}: ${response.status} ${response.text}`);
}
