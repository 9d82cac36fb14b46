// What a real-Flux scenario does again and again, against a management (and workload) RealKubeApi:
// read an object's status code and Ready condition, wait with Flux's own view in the failure, ask
// Flux to reconcile now (as `flux reconcile` does), and write the status the objects' controllers
// would write (neither server runs them). One kit per test file, shared by its scenarios.
import type { KubeClient } from './kube-client.js';
import { waitUntil, type LocalProcess } from './local-process.js';

export const KUSTOMIZATIONS = '/apis/kustomize.toolkit.fluxcd.io/v1/namespaces';

/** Now, as the API server writes times (seconds, `Z`). */
function kubeNow(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

/** True when the object's Ready condition is True. */
export function isReady(object: any): boolean {
  return (object?.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
}

/** kstatus calls a DaemonSet Current once its controller has observed it with every pod in place; with no nodes that is zero of zero. */
export function daemonSetRolledOut(daemonSet: any): Record<string, unknown> {
  return { observedGeneration: daemonSet.metadata.generation, desiredNumberScheduled: 0, currentNumberScheduled: 0, updatedNumberScheduled: 0, numberAvailable: 0, numberReady: 0, numberMisscheduled: 0 };
}

/** A Deployment whose replicas are all updated, ready and available, as kstatus requires. */
export function deploymentRolledOut(deployment: any): Record<string, unknown> {
  const replicas = deployment.spec.replicas;
  const now = kubeNow();
  return {
    observedGeneration: deployment.metadata.generation, replicas, updatedReplicas: replicas, readyReplicas: replicas, availableReplicas: replicas,
    conditions: [
      { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: '', lastUpdateTime: now, lastTransitionTime: now },
      { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: '', lastUpdateTime: now, lastTransitionTime: now },
    ],
  };
}

/**
 * What Cluster API's ClusterClass controller (v1beta2) writes. `templatesFound: false` is its first
 * pass over a fresh class whose templates are not applied yet: the variables are reconciled
 * (VariablesReady True) but the template references fail, so the reconcile ends in an error and
 * `status.observedGeneration` is not written (core/reconcilers/clusterclass, v1.14).
 */
export function classStatus(cls: any, templatesFound: boolean): Record<string, unknown> {
  const generation = cls.metadata.generation;
  const now = kubeNow();
  const refs = templatesFound
    ? { type: 'RefVersionsUpToDate', status: 'True', reason: 'RefVersionsUpToDate', message: '', observedGeneration: generation, lastTransitionTime: now }
    : { type: 'RefVersionsUpToDate', status: 'Unknown', reason: 'InternalError', message: 'Please check controller logs for errors', observedGeneration: generation, lastTransitionTime: now };
  return {
    ...(templatesFound ? { observedGeneration: generation } : {}),
    conditions: [refs, { type: 'VariablesReady', status: 'True', reason: 'VariablesReady', message: '', observedGeneration: generation, lastTransitionTime: now }],
  };
}

export interface FluxTestKit {
  /** The HTTP status of a GET (200, 404, ...). */
  status(client: KubeClient, apiPath: string): Promise<number>;
  /** Every Flux Kustomization with its Ready condition and inventory size: what a failed wait prints. */
  fluxState(): Promise<string>;
  /** waitUntil, failing with Flux's view of things instead of every log's tail. */
  waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void>;
  /** What `flux reconcile` does: asks a controller to reconcile `apiPath` now, without waiting for the interval. */
  requestReconcile(apiPath: string): Promise<void>;
  /** Writes `status` through the status subresource, as the object's own controller would. */
  setStatus(client: KubeClient, apiPath: string, status: (object: any) => Record<string, unknown>): Promise<void>;
  /** Fetches the source now and re-applies the root Kustomization, then waits until the root applied `revision`. */
  syncWiring(source: string, root: string, revision: string): Promise<void>;
}

/** The kit for a management server's client; `watched` are the processes whose exit fails a wait. */
export function fluxTestKit(management: () => KubeClient, watched: () => LocalProcess[]): FluxTestKit {
  const kit: FluxTestKit = {
    async status(client, apiPath) {
      return (await client.request('GET', apiPath)).status;
    },
    async fluxState() {
      const list = await management().get('/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations');
      return list.items.map((k: any) => {
        const condition = (k.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
        return `${k.metadata.namespace}/${k.metadata.name}${k.metadata.deletionTimestamp ? ' (deleting)' : ''}${k.spec.suspend ? ' (suspended)' : ''}: Ready=${condition?.status ?? '-'} ${condition?.reason ?? ''} ${String(condition?.message ?? '').slice(0, 300)} [${k.status?.inventory?.entries?.length ?? 0} in inventory]`;
      }).join('\n');
    },
    async waitFor(what, check, timeoutMs) {
      try {
        await waitUntil(what, check, watched(), timeoutMs);
      } catch (error) {
        throw new Error(`${String((error as Error).message).split('\n')[0]}\nFlux Kustomizations:\n${await kit.fluxState()}`, { cause: error });
      }
    },
    async requestReconcile(apiPath) {
      const response = await management().request('PATCH', apiPath, {
        body: { metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': new Date().toISOString() + Math.random() } } },
        contentType: 'application/merge-patch+json',
      });
      if (response.status !== 200) throw new Error(`asking ${apiPath} to reconcile: ${response.status} ${response.text}`);
    },
    async setStatus(client, apiPath, status) {
      const object = await client.get(apiPath);
      const response = await client.request('PATCH', `${apiPath}/status`, { body: { status: status(object) }, contentType: 'application/merge-patch+json' });
      if (response.status !== 200) throw new Error(`writing the status of ${apiPath}: ${response.status} ${response.text}`);
    },
    async syncWiring(source, root, revision) {
      await kit.requestReconcile(source);
      await kit.requestReconcile(root);
      await kit.waitFor(`${root} to apply ${revision}`, async () => (await management().get(root)).status?.lastAppliedRevision === revision, 90_000);
    },
  };
  return kit;
}
