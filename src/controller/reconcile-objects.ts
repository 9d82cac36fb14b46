// Applies a DesiredState: finalizers, owned objects (create, update, delete), statuses and events.
// Each object is applied on its own; a failure is logged, the rest still applied, and the reconcile
// then fails as a whole so the queue retries it with backoff.
import type { ClusterStack, KubeObject } from '../api/types.js';
import type { RuntimeLogger } from './logger.js';
import { KubeRequestError, type ObjectWriter, type ResourceKind } from './kube-client.js';
import { writeStatus } from './reconcile-status.js';
import { ownedObjectDrift, type DesiredState } from './status/desired-state.js';
import { FINALIZER } from './status/owned-objects.js';
import { CLUSTER_ADDONS, CLUSTER_STACK_RELEASES, CLUSTER_STACKS, watchedKindOf } from './status/watched-kinds.js';

export interface ApplyOptions {
  now: string;
  logger: RuntimeLogger;
}

export interface ApplyReport {
  created: string[];
  updated: string[];
  deleted: string[];
  statusesWritten: number;
  errors: { object: string; error: unknown }[];
}

function describe(object: { kind: string; metadata: { namespace?: string; name: string } }): string {
  return `${object.kind} ${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
}

function kindOf(object: KubeObject): ResourceKind {
  return watchedKindOf(object.apiVersion, object.kind);
}

/** Sets metadata.finalizers conditionally on the resourceVersion; on a conflict re-reads and tries again. */
async function setFinalizers(client: ObjectWriter, kind: ResourceKind, live: KubeObject, change: (finalizers: string[]) => string[] | undefined): Promise<boolean> {
  let current: KubeObject | undefined = live;
  for (let attempt = 1; current; attempt++) {
    const next = change(current.metadata.finalizers ?? []);
    if (!next) return false;
    try {
      await client.patch(kind, current.metadata.namespace ?? 'default', current.metadata.name, { metadata: { finalizers: next, resourceVersion: current.metadata.resourceVersion } });
      return true;
    } catch (error) {
      if (error instanceof KubeRequestError && error.notFound) return false;
      if (!(error instanceof KubeRequestError && error.conflict) || attempt >= 5) throw error;
    }
    current = await client.get(kind, current.metadata.namespace ?? 'default', current.metadata.name);
  }
  return false;
}

const addFinalizer = (finalizers: string[]) => (finalizers.includes(FINALIZER) ? undefined : [...finalizers, FINALIZER]);
const dropFinalizer = (finalizers: string[]) => (finalizers.includes(FINALIZER) ? finalizers.filter((finalizer) => finalizer !== FINALIZER) : undefined);

/** Creates the object, or brings a live one's labels, owner references, finalizer and spec in line. */
async function applyOwned(client: ObjectWriter, kind: ResourceKind, desired: KubeObject, live: KubeObject | undefined, report: ApplyReport): Promise<KubeObject | undefined> {
  const namespace = desired.metadata.namespace ?? 'default';
  if (!live) {
    try {
      const created = await client.create(kind, namespace, desired);
      report.created.push(describe(desired));
      return created;
    } catch (error) {
      // Created meanwhile (a stale cache): the next reconcile sees it.
      if (error instanceof KubeRequestError && error.conflict) return undefined;
      throw error;
    }
  }
  if (live.metadata.deletionTimestamp) return live;
  let current = live;
  const drift = ownedObjectDrift(live, desired);
  const wantsFinalizer = (desired.metadata.finalizers ?? []).includes(FINALIZER) && !(live.metadata.finalizers ?? []).includes(FINALIZER);
  if (drift?.labels || drift?.annotations || drift?.ownerReferences || wantsFinalizer) {
    const metadata: Record<string, unknown> = { resourceVersion: current.metadata.resourceVersion };
    if (drift?.labels) metadata['labels'] = drift.labels;
    if (drift?.annotations) metadata['annotations'] = drift.annotations;
    if (drift?.ownerReferences) metadata['ownerReferences'] = drift.ownerReferences;
    if (wantsFinalizer) metadata['finalizers'] = [...(live.metadata.finalizers ?? []), FINALIZER];
    current = await client.patch(kind, namespace, live.metadata.name, { metadata });
  }
  if (drift && 'spec' in drift) current = await client.replaceSpec(kind, namespace, live.metadata.name, drift.spec, current.metadata.resourceVersion);
  if (current !== live) report.updated.push(describe(desired));
  return current;
}

async function attempt(report: ApplyReport, logger: RuntimeLogger, object: string, action: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    report.errors.push({ object, error });
    logger.warn({ object, action, error: error instanceof Error ? error.message : String(error) }, 'could not apply a change; the reconcile will be retried');
  }
}

/** Applies the desired state to the API server; returns what it did and what failed. */
export async function applyDesiredState(client: ObjectWriter, state: DesiredState, options: ApplyOptions): Promise<ApplyReport> {
  const report: ApplyReport = { created: [], updated: [], deleted: [], statusesWritten: 0, errors: [] };
  const { logger, now } = options;
  const status = async (kind: ResourceKind, live: KubeObject, desired: Record<string, unknown>) => {
    if ((await writeStatus(client, kind, live, desired, { now })) === 'written') report.statusesWritten += 1;
  };

  // Finalizers first: a stack must carry ours before anything it owns can outlive a deletion.
  for (const stack of state.stacks.filter((entry) => entry.finalizer === 'ensure')) {
    await attempt(report, logger, describe(stack.live), 'add finalizer', async () => {
      if (await setFinalizers(client, CLUSTER_STACKS, stack.live as unknown as KubeObject, addFinalizer)) report.updated.push(describe(stack.live));
    });
  }

  for (const release of state.releases) {
    await attempt(report, logger, describe(release.object), 'apply', async () => {
      if (release.removeFinalizer && release.live) {
        if (await setFinalizers(client, CLUSTER_STACK_RELEASES, release.live as unknown as KubeObject, dropFinalizer)) report.updated.push(describe(release.live));
        return;
      }
      const applied = await applyOwned(client, CLUSTER_STACK_RELEASES, release.object as unknown as KubeObject, release.live as unknown as KubeObject | undefined, report);
      if (applied) await status(CLUSTER_STACK_RELEASES, applied, release.status as Record<string, unknown>);
    });
  }
  for (const provider of state.providerReleases) {
    await attempt(report, logger, describe(provider.object), 'apply', async () => {
      await applyOwned(client, kindOf(provider.object), provider.object, provider.live, report);
    });
  }
  for (const addon of state.addons) {
    await attempt(report, logger, describe(addon.object), 'apply', async () => {
      const applied = await applyOwned(client, CLUSTER_ADDONS, addon.object as unknown as KubeObject, addon.live as unknown as KubeObject | undefined, report);
      if (applied) await status(CLUSTER_ADDONS, applied, addon.status as Record<string, unknown>);
    });
  }

  const deletions: [ResourceKind, KubeObject][] = [
    ...state.releasesToDelete.map((object) => [CLUSTER_STACK_RELEASES, object as unknown as KubeObject] as [ResourceKind, KubeObject]),
    ...state.providerReleasesToDelete.map((object) => [kindOf(object), object] as [ResourceKind, KubeObject]),
    ...state.addonsToDelete.map((object) => [CLUSTER_ADDONS, object as unknown as KubeObject] as [ResourceKind, KubeObject]),
  ];
  for (const [kind, object] of deletions) {
    await attempt(report, logger, describe(object), 'delete', async () => {
      await client.remove(kind, object.metadata.namespace ?? 'default', object.metadata.name, object.metadata.uid);
      report.deleted.push(describe(object));
    });
  }

  for (const stack of state.stacks) {
    await attempt(report, logger, describe(stack.live), 'write status', async () => {
      await status(CLUSTER_STACKS, stack.live as unknown as KubeObject, stack.status as Record<string, unknown>);
    });
  }
  // Last: a stack whose deletion may proceed lets go only after its status said so.
  for (const stack of state.stacks.filter((entry) => entry.finalizer === 'remove')) {
    await attempt(report, logger, describe(stack.live), 'remove finalizer', async () => {
      if (await setFinalizers(client, CLUSTER_STACKS, stack.live as unknown as KubeObject, dropFinalizer)) report.updated.push(describe(stack.live as ClusterStack));
    });
  }
  return report;
}
