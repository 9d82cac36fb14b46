// Applies a DesiredState: finalizers, owned objects (create, update, delete), statuses and events.
// Each object is applied on its own, several of one kind at once; a failure is logged, the rest
// still applied, and the reconcile then reports it so that it is retried with backoff.
//
// Every write continues from the object the previous write returned (finalizer, then status, then
// the finalizer's removal), so the controller never conflicts with itself; a conflict with someone
// else (409, or a failed JSON-patch `test` of the resourceVersion) is retried on a fresh read.
import { RankedSlots } from '../../core/ranked-slots.js';
import type { KubeObject } from '../../api/types.js';
import type { Logger } from '../../core/logger.js';
import { KubeRequestError, type ObjectWriter, type ResourceKind } from '../runtime/kube-client.js';
import { writeStatus } from './write-status.js';
import { ownedObjectDrift, type DesiredState } from '../desired-state/desired-state.js';
import type { EventIntent } from '../desired-state/event-intents.js';
import { FINALIZER } from '../desired-state/owned-objects.js';
import {
  CAPI_PROVIDER_KINDS,
  CLUSTER_ADDONS,
  CLUSTER_STACK_RELEASES,
  CLUSTER_STACKS,
} from '../desired-state/watched-kinds.js';

export interface ApplyOptions {
  now: string;
  logger: Logger;
  /** Objects of one kind written at once (default APPLY_CONCURRENCY). */
  concurrency?: number;
  /** The REST kind of a provider object (from discovery); undefined: not served, the object is skipped. */
  kindOf: (apiVersion: string, kind: string) => ResourceKind | undefined;
  maxConflictRetries?: number;
}

/** Our writes to one object in one apply: the versions it went through before, and the object the server returned last. */
export interface OwnWrite {
  before: string[];
  /** The first write created it. */
  created: boolean;
  object: KubeObject;
}

export interface ApplyReport {
  created: string[];
  updated: string[];
  deleted: string[];
  statusesWritten: number;
  /** What could not be written; `stack` is the ClusterStack (`ns/name`) owning the object, if one does. */
  errors: { object: string; error: unknown; stack?: string }[];
  /** The latest copy of every object written, by `objectKey`: newer than the informer cache for a moment. */
  written: Map<string, OwnWrite>;
}

/** `<apiVersion>/<kind>/<namespace>/<name>`: how applied objects and event subjects are matched. */
export function objectKey(object: {
  apiVersion: string;
  kind: string;
  metadata: { namespace?: string; name: string };
}): string {
  return `${object.apiVersion}/${object.kind}/${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
}

function describe(object: { kind: string; metadata: { namespace?: string; name: string } }): string {
  return `${object.kind} ${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
}

class Writes {
  constructor(private readonly report: ApplyReport) {}

  /** The freshest copy we know of `object`: our last write to it, else the given one. */
  latest<T extends KubeObject>(object: T): T {
    return (this.report.written.get(objectKey(object))?.object as T | undefined) ?? object;
  }

  record(before: KubeObject | undefined, after: KubeObject): KubeObject {
    const key = objectKey(after);
    const earlier = this.report.written.get(key);
    const versions = [
      ...(earlier?.before ?? []),
      ...(earlier ? [earlier.object.metadata.resourceVersion ?? ''] : []),
      ...(before?.metadata.resourceVersion ? [before.metadata.resourceVersion] : []),
    ];
    this.report.written.set(key, {
      before: [...new Set(versions)].filter((version) => version !== after.metadata.resourceVersion),
      created: earlier?.created ?? before === undefined,
      object: after,
    });
    return after;
  }
}

/** Sets metadata.finalizers conditionally on the resourceVersion; on a conflict re-reads and tries again. Returns the updated object. */
async function setFinalizers(
  client: ObjectWriter,
  kind: ResourceKind,
  live: KubeObject,
  change: (finalizers: string[]) => string[] | undefined,
  maxAttempts: number,
): Promise<KubeObject | undefined> {
  let current: KubeObject | undefined = live;
  for (let attempt = 1; current; attempt++) {
    const next = change(current.metadata.finalizers ?? []);
    if (!next) return undefined;
    try {
      return await client.patch(kind, current.metadata.namespace ?? 'default', current.metadata.name, {
        metadata: { finalizers: next, resourceVersion: current.metadata.resourceVersion },
      });
    } catch (error) {
      if (error instanceof KubeRequestError && error.notFound) return undefined;
      if (!(error instanceof KubeRequestError && error.conflict) || attempt >= maxAttempts) throw error;
    }
    current = await client.get(kind, current.metadata.namespace ?? 'default', current.metadata.name);
  }
  return undefined;
}

const addFinalizer = (finalizers: string[]) =>
  finalizers.includes(FINALIZER) ? undefined : [...finalizers, FINALIZER];
const dropFinalizer = (finalizers: string[]) =>
  finalizers.includes(FINALIZER) ? finalizers.filter((finalizer) => finalizer !== FINALIZER) : undefined;

/**
 * Creates the object, or brings a live one's labels, annotations, owner references, finalizer and
 * spec in line; a conflict (the cache was stale) is retried on a fresh read.
 */
async function applyOwned(
  client: ObjectWriter,
  kind: ResourceKind,
  desired: KubeObject,
  live: KubeObject | undefined,
  report: ApplyReport,
  writes: Writes,
  maxAttempts: number,
): Promise<KubeObject | undefined> {
  const namespace = desired.metadata.namespace ?? 'default';
  if (!live) {
    try {
      const created = await client.create(kind, namespace, desired);
      report.created.push(describe(desired));
      return writes.record(undefined, created);
    } catch (error) {
      // Created meanwhile (a stale cache): the next reconcile sees it.
      if (error instanceof KubeRequestError && error.conflict) return undefined;
      throw error;
    }
  }
  let base: KubeObject | undefined = writes.latest(live);
  for (let attempt = 1; base; attempt++) {
    if (base.metadata.deletionTimestamp) return base;
    let current = base;
    const drift = ownedObjectDrift(base, desired);
    const wantsFinalizer =
      (desired.metadata.finalizers ?? []).includes(FINALIZER) && !(base.metadata.finalizers ?? []).includes(FINALIZER);
    try {
      if (drift?.labels || drift?.annotations || drift?.ownerReferences || wantsFinalizer) {
        const metadata: Record<string, unknown> = { resourceVersion: current.metadata.resourceVersion };
        if (drift?.labels) metadata['labels'] = drift.labels;
        if (drift?.annotations) metadata['annotations'] = drift.annotations;
        if (drift?.ownerReferences) metadata['ownerReferences'] = drift.ownerReferences;
        if (wantsFinalizer) metadata['finalizers'] = [...(base.metadata.finalizers ?? []), FINALIZER];
        current = writes.record(current, await client.patch(kind, namespace, base.metadata.name, { metadata }));
      }
      if (drift && 'spec' in drift)
        current = writes.record(
          current,
          await client.replaceSpec(kind, namespace, base.metadata.name, drift.spec, current.metadata.resourceVersion),
        );
      if (current !== base) report.updated.push(describe(desired));
      return current;
    } catch (error) {
      if (error instanceof KubeRequestError && error.notFound) return undefined;
      if (!(error instanceof KubeRequestError && error.conflict) || attempt >= maxAttempts) throw error;
    }
    base = await client.get(kind, namespace, live.metadata.name);
  }
  return undefined;
}

/** The ClusterStack (`ns/name`) that owns `object` through its controller reference, if any. */
function owningStack(object: KubeObject | undefined): string | undefined {
  const owner = (object?.metadata.ownerReferences ?? []).find((ref) => ref.kind === 'ClusterStack' && ref.controller);
  return owner ? `${object!.metadata.namespace ?? 'default'}/${owner.name}` : undefined;
}

async function attempt(
  report: ApplyReport,
  logger: Logger,
  object: string,
  action: string,
  run: () => Promise<void>,
  owner?: KubeObject,
): Promise<void> {
  try {
    await run();
  } catch (error) {
    const stack = owningStack(owner);
    report.errors.push({ object, error, ...(stack ? { stack } : {}) });
    logger.warn(
      { object, action, error: error instanceof Error ? error.message : String(error) },
      'could not apply a change; the reconcile will be retried',
    );
  }
}

/**
 * Objects written at once within one kind. Each object's own writes stay in order (create or
 * update, then status); different objects do not depend on each other, and one at a time made the
 * first reconcile of a large fleet (hundreds of ClusterAddons, two requests each) hold every later
 * change back for seconds.
 */
export const APPLY_CONCURRENCY = 16;

/** Runs `fn` for every item, `limit` at a time; resolves when all are done. */
async function forEachBounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  await new RankedSlots(limit).map(items, fn);
}

/** Writes of status and finalizers that start from the latest object this round wrote, and record what they wrote. */
function statusWriters(
  client: ObjectWriter,
  writes: Writes,
  report: ApplyReport,
  options: ApplyOptions,
  maxAttempts: number,
) {
  const { now } = options;
  const status = async (kind: ResourceKind, live: KubeObject, desired: Record<string, unknown>) => {
    const base = writes.latest(live);
    const result = await writeStatus(client, kind, base, desired, { now, maxAttempts });
    if (result.object) writes.record(base, result.object);
    if (result.outcome === 'written') report.statusesWritten += 1;
  };
  const finalizers = async (
    kind: ResourceKind,
    live: KubeObject,
    change: (finalizers: string[]) => string[] | undefined,
  ) => {
    const base = writes.latest(live);
    const updated = await setFinalizers(client, kind, base, change, maxAttempts);
    if (!updated) return;
    writes.record(base, updated);
    report.updated.push(describe(live));
  };
  return { status, finalizers };
}

/** Applies the kept ClusterStackReleases, provider releases and ClusterAddons (and their statuses), `concurrency` at a time. */
async function applyKept(
  client: ObjectWriter,
  state: DesiredState,
  options: ApplyOptions,
  round: { report: ApplyReport; writes: Writes } & ReturnType<typeof statusWriters>,
  concurrency: number,
): Promise<void> {
  const { report, writes, status, finalizers } = round;
  const { logger } = options;
  const maxAttempts = options.maxConflictRetries ?? 5;
  await forEachBounded(state.releases, concurrency, async (release) => {
    await attempt(
      report,
      logger,
      describe(release.object),
      'apply',
      async () => {
        if (release.removeFinalizer && release.live) {
          await finalizers(CLUSTER_STACK_RELEASES, release.live as unknown as KubeObject, dropFinalizer);
          return;
        }
        const applied = await applyOwned(
          client,
          CLUSTER_STACK_RELEASES,
          release.object as unknown as KubeObject,
          release.live as unknown as KubeObject | undefined,
          report,
          writes,
          maxAttempts,
        );
        if (applied) await status(CLUSTER_STACK_RELEASES, applied, release.status as Record<string, unknown>);
      },
      release.object as unknown as KubeObject,
    );
  });
  await forEachBounded(state.providerReleases, concurrency, async (provider) => {
    await attempt(
      report,
      logger,
      describe(provider.object),
      'apply',
      async () => {
        const kind = options.kindOf(provider.object.apiVersion, provider.object.kind);
        if (!kind) return; // not served: the stack's condition says so
        await applyOwned(client, kind, provider.object, provider.live, report, writes, maxAttempts);
      },
      provider.object,
    );
  });
  await forEachBounded(state.addons, concurrency, async (addon) => {
    await attempt(report, logger, describe(addon.object), 'apply', async () => {
      const applied = await applyOwned(
        client,
        CLUSTER_ADDONS,
        addon.object as unknown as KubeObject,
        addon.live as unknown as KubeObject | undefined,
        report,
        writes,
        maxAttempts,
      );
      if (applied) await status(CLUSTER_ADDONS, applied, addon.status as Record<string, unknown>);
    });
  });
}

/** Deletes the releases, provider releases and ClusterAddons no stack keeps any more, `concurrency` at a time. */
async function deleteDropped(
  client: ObjectWriter,
  state: DesiredState,
  options: ApplyOptions,
  report: ApplyReport,
  concurrency: number,
): Promise<void> {
  const deletions: [ResourceKind | undefined, KubeObject][] = [
    ...state.releasesToDelete.map(
      (object) => [CLUSTER_STACK_RELEASES, object as unknown as KubeObject] as [ResourceKind, KubeObject],
    ),
    ...state.providerReleasesToDelete.map(
      (object) => [options.kindOf(object.apiVersion, object.kind), object] as [ResourceKind | undefined, KubeObject],
    ),
    ...state.addonsToDelete.map(
      (object) => [CLUSTER_ADDONS, object as unknown as KubeObject] as [ResourceKind, KubeObject],
    ),
  ];
  await forEachBounded(deletions, concurrency, async ([kind, object]) => {
    if (!kind) return;
    await attempt(report, options.logger, describe(object), 'delete', async () => {
      await client.remove(kind, object.metadata.namespace ?? 'default', object.metadata.name, object.metadata.uid);
      report.deleted.push(describe(object));
    });
  });
}

/** Applies the desired state to the API server; returns what it did, what failed, and the objects as written. */
export async function applyDesiredState(
  client: ObjectWriter,
  state: DesiredState,
  options: ApplyOptions,
): Promise<ApplyReport> {
  const report: ApplyReport = {
    created: [],
    updated: [],
    deleted: [],
    statusesWritten: 0,
    errors: [],
    written: new Map(),
  };
  const writes = new Writes(report);
  const { logger } = options;
  const maxAttempts = options.maxConflictRetries ?? 5;
  const { status, finalizers } = statusWriters(client, writes, report, options, maxAttempts);

  // Finalizers first: a stack must carry ours before anything it owns can outlive a deletion.
  for (const stack of state.stacks.filter((entry) => entry.finalizer === 'ensure')) {
    await attempt(report, logger, describe(stack.live), 'add finalizer', () =>
      finalizers(CLUSTER_STACKS, stack.live as unknown as KubeObject, addFinalizer),
    );
  }

  const concurrency = options.concurrency ?? APPLY_CONCURRENCY;
  await applyKept(client, state, options, { report, writes, status, finalizers }, concurrency);
  await deleteDropped(client, state, options, report, concurrency);
  // Done in parallel, reported in a stable order.
  for (const list of [report.created, report.updated, report.deleted]) list.sort();

  // Cluster API providers: status only; their spec is the user's.
  for (const provider of state.capiProviders ?? []) {
    const kind = CAPI_PROVIDER_KINDS.find((candidate) => candidate.kind === provider.live.kind);
    if (!kind) continue;
    await attempt(report, logger, describe(provider.live), 'write status', () =>
      status(kind, provider.live, provider.status as unknown as Record<string, unknown>),
    );
  }
  for (const stack of state.stacks) {
    await attempt(report, logger, describe(stack.live), 'write status', () =>
      status(CLUSTER_STACKS, stack.live as unknown as KubeObject, stack.status as Record<string, unknown>),
    );
  }
  // Last: a stack whose deletion may proceed lets go only after its status said so.
  for (const stack of state.stacks.filter((entry) => entry.finalizer === 'remove')) {
    await attempt(report, logger, describe(stack.live), 'remove finalizer', () =>
      finalizers(CLUSTER_STACKS, stack.live as unknown as KubeObject, dropFinalizer),
    );
  }
  return report;
}

/**
 * The events worth recording once the objects exist: each gets the uid of its subject (an object
 * created in this round has one only now), and events about objects that could not be created are
 * dropped, since `kubectl describe` could never show them.
 */
export function eventsWithSubjects(events: EventIntent[], report: ApplyReport): EventIntent[] {
  const uids = new Map<string, string>();
  for (const [key, write] of report.written) if (write.object.metadata.uid) uids.set(key, write.object.metadata.uid);
  const out: EventIntent[] = [];
  for (const event of events) {
    if (event.regarding.uid) {
      out.push(event);
      continue;
    }
    const { apiVersion, kind, namespace, name } = event.regarding;
    const uid = uids.get(objectKey({ apiVersion, kind, metadata: { namespace, name } }));
    if (uid) out.push({ ...event, regarding: { ...event.regarding, uid } });
  }
  return out;
}
