// The one real-Flux test kit (docs/real-engines.md), shared by every real-Flux file: a world of a
// management and a workload API server, Flux's source- and kustomize-controller on the management
// server, the Cluster API CRDs its objects need, and Git served on loopback by `git http-backend`;
// plus what the scenarios do to it: read a status code, ask Flux to reconcile now (as `flux
// reconcile` does), wait with Flux's own view in the failure message, write the status a missing
// controller would write, bootstrap a published tree with `kubectl apply -k`. The management server
// and Flux are the run's, shared by the files (test/support/real-flux-world-setup.ts); each file
// starts its own workload server and Git server, and names its Flux objects apart from the others'.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, fetch } from 'undici';
import { inject } from 'vitest';
import { startGitHttpServer, type GitHttpServer } from './git-http-server.js';
import { GitSandbox } from './git-repos.js';
import { phaseClock, type SharedFlux, type SharedManagement, type SharedProcess } from './real-flux-world-setup.js';
import { kubeClient } from './real-kube-api/kube-client.js';
import {
  builtEngine,
  startRealKubeApi,
  waitUntil,
  type KubeClient,
  type LocalProcess,
  type RealKubeApi,
} from './real-kube-api/index.js';

export const KUSTOMIZATIONS = '/apis/kustomize.toolkit.fluxcd.io/v1/namespaces';
export const GIT_REPOSITORIES = '/apis/source.toolkit.fluxcd.io/v1/namespaces';

/** The run's management server as a file uses it: enough for a client, kubectl and applyShippedIdentity. */
interface FluxManagement {
  name: string;
  server: string;
  /** This file's own directory (removed at stop), for what it writes about the server (a ServiceAccount's kubeconfig). */
  dir: string;
  pki: { ca: string };
  admin: { client: KubeClient; kubeconfig: string; kubeconfigFile: string };
}

export interface FluxWorld {
  management: FluxManagement;
  workload: RealKubeApi;
  flux: { namespace: string; storageUrl: string };
  git: GitHttpServer;
  sandbox: GitSandbox;
  /** The processes whose exit fails a wait (Flux, both API servers and their etcd). */
  watched: LocalProcess[];
  mgmt(): KubeClient;
  wl(): KubeClient;
  /** How long the start took and when each phase was done, for the file's log. */
  startup: string;
  /**
   * Stops what the file started (its workload server, its Git server), removes its temporary files and
   * leaves the shared world; fails if a process of its own outlives it.
   */
  stop(): Promise<void>;
}

export interface FluxWorldOptions {
  /**
   * Called once the Git server answers, before the API servers are started: work that needs only
   * Git and its address (a file's first render) runs while they and Flux start.
   */
  whileStarting?: (git: GitHttpServer, sandbox: GitSandbox) => void;
  /**
   * Called once both API servers answer and the Cluster API CRDs are installed, while Flux may still
   * be starting: work that needs only the servers (a controller's identity) runs beside it.
   */
  whileFluxStarts?: (servers: { management: FluxManagement; workload: RealKubeApi }) => void;
}

// The world may start (tens of seconds at a high load) or wait for Flux longer than fetch's default
// 300 s for the answer's headers: the file's hook timeout, not the connection, decides how long it waits.
// And no kept-alive connection (pipelining 0): the service in Vitest's main process closes an idle one
// after 5 s, and a call that reused it just then failed with "other side closed" (seen at load 17-25);
// a file makes only a few calls.
const worldAgent = new Agent({ headersTimeout: 0, bodyTimeout: 0, pipelining: 0 });

async function worldCall(pathName: string, token?: string): Promise<string> {
  const url = `${inject('realFluxWorld')}${pathName}${token === undefined ? '' : `?token=${token}`}`;
  const response = await fetch(url, { method: 'POST', dispatcher: worldAgent });
  const text = await response.text();
  if (!response.ok) throw new Error(`the shared Flux world ${pathName}: ${response.status} ${text}`);
  return text;
}

/**
 * A process of the shared world, watched from this worker: it has exited when its pid is gone (vitest's
 * main process, its parent, reaps it at once). Only the world stops it.
 */
function sharedProcess({ name, pid, logFile }: SharedProcess): LocalProcess {
  const notOurs = async (): Promise<void> => {
    throw new Error(`${name} belongs to the shared Flux world: only the world stops it`);
  };
  return {
    name,
    pid,
    logFile,
    exited: () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch (error) {
        return (error as NodeJS.ErrnoException).code === 'ESRCH';
      }
    },
    logTail: (lines = 30) => {
      try {
        return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
      } catch {
        return '';
      }
    },
    stop: notOurs,
    kill: notOurs,
  };
}

/**
 * Starts this file's Git server, then joins the run's management server and Flux (started by the
 * first file that joins) while starting this file's workload server. The file names its Flux objects
 * apart from the other files' (its own wiring name, stack namespaces): the management server and Flux
 * see every file's.
 */
export async function startFluxWorld(options: FluxWorldOptions = {}): Promise<FluxWorld> {
  const clock = phaseClock();
  const sandbox = new GitSandbox();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'csk-flux-file-'));
  let git: GitHttpServer | undefined;
  let workload: RealKubeApi | undefined;
  let token: string | undefined;
  const stop = async (): Promise<void> => {
    await git?.close();
    await workload?.stop();
    sandbox.cleanup();
    rmSync(dir, { recursive: true, force: true });
    if (token !== undefined) await worldCall('/leave', token);
    const alive = (workload?.processes ?? []).filter((process) => !process.exited());
    if (alive.length > 0)
      throw new Error(`still running: ${alive.map((process) => `${process.name} (pid ${process.pid})`).join(', ')}`);
  };
  try {
    git = await startGitHttpServer({ projectRoot: sandbox.root });
    options.whileStarting?.(git, sandbox);
    // Each settles before a failure is thrown, so that stop() finds everything that was started.
    const [joined, started] = await Promise.allSettled([
      worldCall('/join').then((text) => JSON.parse(text) as { token: string; management: SharedManagement }),
      startRealKubeApi({ name: 'workload' }),
    ]);
    if (joined.status === 'fulfilled') token = joined.value.token;
    if (started.status === 'fulfilled') workload = started.value;
    if (joined.status === 'rejected') throw joined.reason;
    if (started.status === 'rejected') throw started.reason;
    clock.mark('API servers');
    const shared = joined.value.management;
    const management: FluxManagement = {
      name: shared.name,
      server: shared.server,
      dir,
      pki: { ca: shared.ca },
      admin: {
        client: kubeClient(shared.server, { ca: shared.ca, cert: shared.admin.cert, key: shared.admin.key }),
        kubeconfig: shared.admin.kubeconfig,
        kubeconfigFile: shared.admin.kubeconfigFile,
      },
    };
    const server = started.value;
    options.whileFluxStarts?.({ management, workload: server });
    const flux = JSON.parse(await worldCall('/flux', token)) as SharedFlux;
    clock.mark('Flux');
    return {
      management,
      workload: server,
      flux: { namespace: flux.namespace, storageUrl: flux.storageUrl },
      git,
      sandbox,
      watched: [...flux.processes.map(sharedProcess), ...server.processes],
      mgmt: () => management.admin.client,
      wl: () => server.admin.client,
      startup: `${clock.summary()}; the shared management server and Flux: ${flux.startup}`,
      stop,
    };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
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

/** A Kustomization's line in a failed wait: its Ready condition, applied revision and inventory size. */
function kustomizationLine(k: any): string {
  const ready = conditionOf(k, 'Ready');
  return `${k.metadata.namespace}/${k.metadata.name}${k.metadata.deletionTimestamp ? ' (deleting)' : ''}${k.spec.suspend ? ' (suspended)' : ''}: Ready=${ready?.status ?? '-'} ${ready?.reason ?? ''} ${String(ready?.message ?? '').slice(0, 2000)} [applied ${k.status?.lastAppliedRevision ?? '-'}, handled ${k.status?.lastHandledReconcileAt ?? '-'}, ${k.status?.inventory?.entries?.length ?? 0} in inventory]`;
}

/** The lines of kustomize-controller's log about one Kustomization, its deprecation notices left out: what it did, and when. */
function controllerLinesAbout(world: FluxWorld, namespace: string, name: string, lines = 12): string[] {
  const controller = world.watched.find((process) => process.name.startsWith('kustomize-controller'));
  if (controller === undefined) return [];
  const about = `"Kustomization": {"name":"${name}","namespace":"${namespace}"}`;
  return controller
    .logTail(Number.MAX_SAFE_INTEGER)
    .split('\n')
    .filter((line) => line.includes(about) && !line.includes(' is deprecated'))
    .slice(-lines)
    .map((line) => line.slice(0, 700));
}

/**
 * Flux's view of things for a failed wait: every Kustomization's state, then kustomize-controller's
 * own lines about each one that is not Ready (when it reconciled, what failed, when it retries),
 * last, so that the end of a long failure output says why.
 */
async function fluxState(world: FluxWorld): Promise<string> {
  const list = await world.mgmt().get('/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations');
  const notReady = list.items.filter((k: any) => !isReady(k));
  const history = notReady.map((k: any) => {
    const lines = controllerLinesAbout(world, k.metadata.namespace, k.metadata.name);
    return `kustomize-controller on ${k.metadata.namespace}/${k.metadata.name}:\n${lines.length === 0 ? '(nothing)' : lines.join('\n')}`;
  });
  return [`Flux Kustomizations:`, ...list.items.map(kustomizationLine), ...history].join('\n');
}

/**
 * waitUntil on the world's processes, failing with the engines' logs and then Flux's view of things
 * (and `extra`): the Kustomizations' state and kustomize-controller's lines about those not Ready
 * come last, where a cut output (a CI summary keeps the end) still shows them.
 */
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
    const [first, ...logs] = String((error as Error).message).split('\n');
    const more = extra ? `\n${await extra()}` : '';
    const flux = await fluxState(world).catch(
      (reason: unknown) => `Flux Kustomizations: not readable (${String(reason)})`,
    );
    // The logs move into this message, before Flux's view; the cause keeps its first line only, so
    // that what is printed after this message (the cause) does not bury Flux's view again.
    if (error instanceof Error) error.message = first!;
    throw new Error([first, ...logs, flux].join('\n') + more, { cause: error });
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

/** How long a reconcile request may wait to be handled before reconcileUntil asks again: a class stage's 60 s wait can be running when it asks. */
const UNHANDLED_REQUEST_MS = 70_000;

/**
 * `flux reconcile` as an operator runs it until the object does what is expected: asks Flux to
 * reconcile `apiPath` and waits for `check`. When Flux has handled a request (its token is in
 * status.lastHandledReconcileAt) and `check` is still false, that reconcile ended without it: it
 * failed a step for a reason of the moment (an API server answering too slowly at load), and Flux
 * would try again only after the retryInterval (2 m). So it asks again, as it does when a request
 * is not handled within UNHANDLED_REQUEST_MS, at most `asks` times in all, and prints what each
 * request came to. A Kustomization that cannot get there fails each time, and the wait fails after
 * `timeoutMs` naming every verdict.
 */
export async function reconcileUntil(
  world: FluxWorld,
  apiPath: string,
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  asks = 3,
): Promise<void> {
  let token = await requestReconcile(world.mgmt(), apiPath);
  let askedAt = Date.now();
  let asked = 1;
  const verdicts: string[] = [];
  await waitInWorld(
    world,
    what,
    async () => {
      if (await check()) return true;
      if (asked >= asks) return false;
      const object = await world.mgmt().get(apiPath);
      const handled = object.status?.lastHandledReconcileAt === token;
      if (!handled && Date.now() - askedAt < UNHANDLED_REQUEST_MS) return false;
      const ready = conditionOf(object, 'Ready');
      verdicts.push(
        handled
          ? `request ${asked} handled without ${what}: Ready=${ready?.status} ${ready?.reason}: ${ready?.message}`
          : `request ${asked} not handled within ${UNHANDLED_REQUEST_MS / 1000} s (Ready=${ready?.status} ${ready?.reason})`,
      );
      console.log(`${apiPath}: ${verdicts.at(-1)}; asking again`);
      token = await requestReconcile(world.mgmt(), apiPath);
      askedAt = Date.now();
      asked += 1;
      return false;
    },
    timeoutMs,
    () => `reconcile requests made: ${asked}${verdicts.length === 0 ? '' : `\n${verdicts.join('\n')}`}`,
  );
}

/**
 * Fetches `source` now, then waits until the `root` Kustomization applied `revision` (`main@sha1:...`).
 * The source alone is asked: kustomize-controller watches it and reconciles every Kustomization on
 * it, the root too, once it has the new revision. Asking the root as well made a build of the old
 * revision, which the source had not fetched yet, before the one that counts.
 */
export async function syncWiring(world: FluxWorld, source: string, root: string, revision: string): Promise<void> {
  await requestReconcile(world.mgmt(), source);
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
