// The runtime extension's lifecycle hook handlers: BeforeClusterUpgrade, AfterControlPlaneInitialized
// and AfterClusterUpgrade. Each call reads what is needed at that moment: the last reconcile's
// snapshot of what was rendered and published per Cluster (AddonSnapshot), the GitOps engine's
// objects from the informer cache, and the objects the hook's CEL conditions name from the
// workload cluster; the pure decision (desired-state/lifecycle-hook-decision.ts) answers. The wait
// of each (hook, Cluster, target release) is recorded at its first call, before anything remote is
// read, so the bounded wait always ends (see the decision for what each hook answers then). Every
// call answers well within Cluster API's 10 s call timeout: the workload cluster's reads of one call
// share one deadline (WORKLOAD_READ_DEADLINE_MS), events are written without holding the answer,
// and AfterControlPlaneInitialized (non-blocking) is answered at once, its reads done in the
// background. Progress is exposed for the ClusterAddon's status, with events on start, success and
// timeout, and latency/outcome metrics. Hooks Cluster API stops calling while addons are still
// awaited (AfterControlPlaneInitialized, AfterClusterUpgrade before Cluster API v1.12) are followed
// here: open waits are looked at again every `revisitIntervalMs` until ready or timed out, so the
// ClusterAddon says when they are done.
import type { Logger } from 'pino';
import { clusterClassOf } from '../../api/capi-cluster.js';
import type { KubeObject } from '../../api/types.js';
import { evaluateWaitCondition, type WaitCondition } from '../../core/addon-wait-conditions.js';
import { releaseOfClusterClass } from '../../core/release-tag.js';
import { loadedRelease, type Plan } from '../../plan/build-plan.js';
import type { RenderOutcome } from '../../render/render-output.js';
import type { UnitRecord, WithheldEntry } from '../../output/provenance.js';
import type { ExtensionHandler } from '../runtime/extension-server.js';
import type { EventIntent, ObjectCache, WatchedKind } from '../runtime/runtime-contract.js';
import {
  answersWithRetry,
  decideLifecycleHook,
  followedByController,
  LIFECYCLE_HOOKS,
  type HookDecisionInput,
  type HookOutcome,
  type HookProgress,
  type HookTimeoutAction,
  type LifecycleHook,
  type RenderedAddons,
} from '../desired-state/lifecycle-hook-decision.js';
import type { PublishState } from '../desired-state/status-inputs.js';
import { syncStateOf, type RevisionOrder } from '../desired-state/sync-state.js';
import { ARGO_APPLICATIONS, CAPI_CLUSTERS, FLUX_KUSTOMIZATIONS } from '../desired-state/watched-kinds.js';

/** The CEL conditions of each hook's stages, as clusteraddon.yaml lists them. */
type HookConditions = Partial<
  Record<LifecycleHook, { stage: string; precondition?: WaitCondition; postcondition?: WaitCondition }[]>
>;

/** What the last reconcile rendered and published, per Cluster (`namespace/name`). */
export interface AddonSnapshot {
  clusters: Map<string, RenderedAddons & { conditions: HookConditions }>;
  order: RevisionOrder;
}

/** Builds the snapshot the hook handlers read, from one reconcile's plan, render and publish. */
export function addonSnapshot(
  plan: Plan | undefined,
  render: RenderOutcome | undefined,
  publish: PublishState,
): AddonSnapshot {
  const clusters: AddonSnapshot['clusters'] = new Map();
  const published = publish.outcome === 'published' || publish.outcome === 'unchanged';
  // Grouped by Cluster once: every reconcile builds this, for thousands of Clusters and their units.
  const stagesOf = new Map<string, UnitRecord[]>();
  for (const unit of render?.provenance.units ?? []) {
    if (unit.kind !== 'cluster-stage') continue;
    const key = `${unit.namespace}/${unit.name}`;
    const stages = stagesOf.get(key);
    if (stages) stages.push(unit);
    else stagesOf.set(key, [unit]);
  }
  const withheldOf = new Map<string, WithheldEntry>();
  for (const entry of render?.withheld ?? [])
    if (entry.kind === 'cluster' && !withheldOf.has(`${entry.namespace}/${entry.name}`))
      withheldOf.set(`${entry.namespace}/${entry.name}`, entry);
  for (const cluster of plan?.resolution.clusters ?? []) {
    if (!cluster.managed) continue;
    const key = `${cluster.namespace}/${cluster.name}`;
    const units = [...(stagesOf.get(key) ?? [])].sort((a, b) => (a.order ?? 0) - (b.order ?? 0));
    const withheld = withheldOf.get(key);
    const content = cluster.stack ? loadedRelease(plan!, cluster.stack.namespace, cluster.release)?.content : undefined;
    const conditions: HookConditions = {};
    if (content?.addons.format === 'multi-stage') {
      for (const hook of LIFECYCLE_HOOKS) {
        conditions[hook] = (content.addons.config.addonStages[hook] ?? []).map((stage) => ({
          stage: stage.name,
          ...(stage.waitForPreCondition ? { precondition: stage.waitForPreCondition } : {}),
          ...(stage.waitForPostCondition ? { postcondition: stage.waitForPostCondition } : {}),
        }));
      }
    }
    clusters.set(key, {
      ...(cluster.release ? { release: cluster.release } : {}),
      stages: units.map((unit) => ({ dir: unit.dir, stage: unit.stage ?? unit.dir, release: unit.release })),
      ...(withheld ? { withheld: withheld.reason } : {}),
      unpublished: published ? [] : units.map((unit) => unit.dir).filter((dir) => publish.dirtyDirs.has(dir)),
      conditions,
    });
  }
  return { clusters, order: publish.order };
}

/**
 * Reads the objects a condition names from the Cluster's workload cluster (`undefined`: not there),
 * giving up (and closing its connections) when `signal` aborts.
 */
export type WorkloadObjectReader = (
  cluster: { namespace: string; name: string },
  objects: WaitCondition['objects'],
  signal: AbortSignal,
) => Promise<Map<string, Record<string, unknown> | undefined>>;

/**
 * How long the workload cluster reads of one hook call may take together. Cluster API gives every
 * hook call 10 s (the handlers' announced timeoutSeconds) and counts a later answer as a failed
 * call; 2.5 s leaves the rest for TLS, the caches and the answer on a loaded controller, so a
 * workload API server that accepts and never answers costs an answer that says so, not the call.
 */
export const WORKLOAD_READ_DEADLINE_MS = 2500;

type ConditionResult = HookDecisionInput['conditions'][number];

export interface LifecycleHooksOptions {
  cache: ObjectCache;
  engine: 'flux' | 'argocd' | 'none';
  /** The last reconcile's snapshot (undefined before the first). */
  snapshot: () => AddonSnapshot | undefined;
  readWorkloadObjects: WorkloadObjectReader;
  recordEvents: (events: EventIntent[]) => Promise<unknown>;
  /** Called when a Cluster's hook progress changed, so its ClusterAddon status is written. */
  onProgress: () => void;
  metrics?: { hookResponse(hook: string, outcome: HookOutcome | 'standby', seconds: number): void };
  logger: Logger;
  /** The bounded overall wait. Default 30 minutes. */
  timeoutMs?: number;
  /** What BeforeClusterUpgrade does once `timeoutMs` passed: let the upgrade go (default) or keep holding. */
  onTimeout?: HookTimeoutAction;
  /** The shared deadline of one call's workload cluster reads. Default WORKLOAD_READ_DEADLINE_MS. */
  workloadReadTimeoutMs?: number;
  /** How soon Cluster API asks again while waiting. Default 10 s. */
  retryAfterSeconds?: number;
  /** The handlers' timeout as announced through discovery. Default 10 s. */
  handlerTimeoutSeconds?: number;
  /** `Fail` (default) holds the upgrade while the extension is unreachable; `Ignore` lets Cluster API go on without it. */
  failurePolicy?: 'Fail' | 'Ignore';
  now?: () => number;
  /** How often open waits Cluster API does not hold on are looked at again. Default retryAfterSeconds. */
  revisitIntervalMs?: number;
  /**
   * Whether this replica leads (default: always). A standby has no render to answer from: it asks
   * Cluster API to call again (the Service may route the next call to the leader) and records no
   * wait, event or progress, and it does not look at open waits again, so no event is repeated.
   */
  isLeader?: () => boolean;
  /** When a wait for this hook and release started, as the Cluster's ClusterAddon recorded it. */
  persistedSince?: (hook: LifecycleHook, namespace: string, name: string, targetRelease: string) => number | undefined;
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The release a Cluster's class names (v1beta1 `topology.class`, v1beta2 `topology.classRef.name`); undefined when it is no cluster stack class. */
function targetReleaseOf(cluster: Record<string, unknown>): string | undefined {
  const named = clusterClassOf({
    apiVersion: cluster['apiVersion'],
    metadata: record(cluster['metadata']),
    spec: cluster['spec'],
  });
  return named.kind === 'class' ? releaseOfClusterClass(named.name) : undefined;
}

interface HookWait {
  hook: LifecycleHook;
  clusterKey: string;
  targetRelease?: string;
  since: number;
  outcome?: HookOutcome;
  progress?: HookProgress;
  /** The Cluster as last seen in a request (used to follow the wait when Cluster API does not call again). */
  cluster: Record<string, unknown>;
  /** The conditions as last read from the workload cluster (for answers that read nothing remote). */
  conditions?: ConditionResult[];
  /** A read of the workload cluster for this wait is under way: others answer from `conditions`. */
  reading?: boolean;
}

/** The three lifecycle hook handlers and the progress they made, per Cluster. */
export class LifecycleHooks {
  private readonly waits = new Map<string, HookWait>();
  private revisitTimer: ReturnType<typeof setInterval> | undefined;
  private revisiting = false;

  constructor(private readonly options: LifecycleHooksOptions) {}

  /** The handlers for the extension server. Handler names are the hook names in lowercase with dashes. */
  handlers(): ExtensionHandler[] {
    return LIFECYCLE_HOOKS.map((hook) => ({
      hook,
      name: hook.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase(),
      timeoutSeconds: this.options.handlerTimeoutSeconds ?? 10,
      failurePolicy: this.options.failurePolicy ?? 'Fail',
      handle: (request) => this.handle(hook, request),
    }));
  }

  /** Starts following open waits Cluster API does not hold on (idempotent). */
  start(): void {
    if (this.revisitTimer) return;
    const interval = this.options.revisitIntervalMs ?? (this.options.retryAfterSeconds ?? 10) * 1000;
    this.revisitTimer = setInterval(() => void this.revisit(), interval);
    this.revisitTimer.unref();
  }

  stop(): void {
    if (this.revisitTimer) clearInterval(this.revisitTimer);
    this.revisitTimer = undefined;
  }

  /** The newest progress of each hook called for a Cluster since this process started (none: nothing new to add to what its ClusterAddon says). */
  progressOf(namespace: string, name: string): HookProgress[] {
    const newest = new Map<LifecycleHook, HookProgress>();
    for (const wait of this.waits.values()) {
      const progress = wait.progress;
      const before = progress ? newest.get(progress.hook) : undefined;
      if (progress && wait.clusterKey === `${namespace}/${name}` && (!before || progress.since >= before.since))
        newest.set(progress.hook, progress);
    }
    return [...newest.values()];
  }

  /** Answers one hook call. */
  async handle(hook: LifecycleHook, request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const started = Date.now();
    const cluster = record(request['cluster']);
    const metadata = record(cluster['metadata']);
    if (typeof metadata['name'] !== 'string')
      return {
        status: 'Failure',
        message: `the ${hook}Request has no cluster.metadata.name`,
        ...(answersWithRetry(hook) ? { retryAfterSeconds: 0 } : {}),
      };
    if (!this.leading()) return this.standbyAnswer(hook);
    // Non-blocking AfterControlPlaneInitialized is answered from what is known now; its conditions
    // are read in the background (the ClusterAddon shows them), so no read ever delays that answer.
    const readNow = answersWithRetry(hook);
    const decision = await this.evaluate(hook, cluster, readNow);
    if (!readNow)
      void this.evaluate(hook, cluster, true).catch((error: Error) =>
        this.options.logger.warn({ hook, error: error.message }, 'Could not look at a lifecycle hook wait'),
      );
    this.options.metrics?.hookResponse(hook, decision.outcome, (Date.now() - started) / 1000);
    const answer: Record<string, unknown> = { status: decision.status, message: decision.message };
    if (answersWithRetry(hook)) answer['retryAfterSeconds'] = decision.retryAfterSeconds;
    return answer;
  }

  private leading(): boolean {
    return this.options.isLeader?.() ?? true;
  }

  /**
   * A standby's answer: blocking hooks are asked again (by then the call may reach the leader);
   * AfterControlPlaneInitialized, which Cluster API calls once and does not block on, is answered
   * Success, as the leader would, and the ClusterAddon's stage conditions still show the first
   * install becoming ready.
   */
  private standbyAnswer(hook: LifecycleHook): Record<string, unknown> {
    this.options.metrics?.hookResponse(hook, 'standby', 0);
    if (!answersWithRetry(hook))
      return {
        status: 'Success',
        message: 'answered by a standby replica: the leading replica follows the first install on the ClusterAddon',
      };
    return {
      status: 'Success',
      message: 'this replica is a standby and has not rendered the addons; the leading replica answers',
      retryAfterSeconds: this.options.retryAfterSeconds ?? 10,
    };
  }

  /**
   * Looks again at every open wait Cluster API may have stopped calling about (non-blocking hooks),
   * with the Cluster as the cache has it now; a Cluster that is gone or moved to another release
   * ends the wait. Records progress, events and timeouts as a call would.
   */
  async revisit(): Promise<void> {
    if (this.revisiting || !this.leading()) return;
    this.revisiting = true;
    try {
      for (const [key, wait] of [...this.waits]) {
        if (!followedByController(wait.hook) || wait.outcome !== 'waiting') continue;
        const [namespace, name] = wait.clusterKey.split('/') as [string, string];
        const live = this.options.cache.get(CAPI_CLUSTERS, namespace, name) as Record<string, unknown> | undefined;
        const cluster = live ?? wait.cluster;
        if (
          (live && targetReleaseOf(live) !== wait.targetRelease) ||
          record(record(live)['metadata'])['deletionTimestamp']
        ) {
          this.waits.delete(key);
          this.options.onProgress();
          continue;
        }
        await this.evaluate(wait.hook, cluster, true);
      }
    } catch (error) {
      this.options.logger.warn(
        { error: (error as Error).message },
        'Could not look at the open lifecycle hook waits again',
      );
    } finally {
      this.revisiting = false;
    }
  }

  /** Decides one hook for one Cluster now; `readRemote`: read the conditions' objects from the workload cluster (else use the last read). */
  private async evaluate(hook: LifecycleHook, cluster: Record<string, unknown>, readRemote: boolean) {
    const now = (this.options.now ?? Date.now)();
    const metadata = record(cluster['metadata']);
    const namespace = typeof metadata['namespace'] === 'string' ? metadata['namespace'] : 'default';
    const name = metadata['name'] as string;
    const clusterKey = `${namespace}/${name}`;
    const targetRelease = targetReleaseOf(cluster);
    // The wait is recorded first: whatever the reads below do, the bounded wait runs from here.
    const waitKey = `${hook}/${clusterKey}/${targetRelease ?? ''}`;
    let wait = this.waits.get(waitKey);
    if (!wait) {
      // Another replica (or this one before a restart) may have started the wait: its ClusterAddon says since when.
      const persisted = targetRelease ? this.options.persistedSince?.(hook, namespace, name, targetRelease) : undefined;
      wait = {
        hook,
        clusterKey,
        ...(targetRelease ? { targetRelease } : {}),
        since: persisted !== undefined && persisted <= now ? persisted : now,
        cluster,
      };
      this.waits.set(waitKey, wait);
    } else if (wait.outcome === 'ready') {
      // Asked again after it was ready (the addons changed since): a new wait.
      wait.since = now;
    }
    wait.cluster = cluster;
    const snapshot = this.options.snapshot();
    const rendered = snapshot?.clusters.get(clusterKey);
    const sync = this.syncOf(rendered, snapshot?.order);
    const engineUnreadable = this.engineUnreadable(now);
    const stages =
      rendered && targetRelease && rendered.release === targetRelease ? (rendered.conditions[hook] ?? []) : [];
    let conditions: ConditionResult[];
    if (readRemote && !wait.reading) {
      wait.reading = true;
      try {
        conditions = await this.readConditions(hook, { namespace, name }, stages);
      } finally {
        wait.reading = false;
      }
      wait.conditions = conditions;
    } else {
      conditions = stages.length === 0 ? [] : (wait.conditions ?? notReadYet(stages));
    }
    const decision = decideLifecycleHook({
      hook,
      cluster: { namespace, name },
      ...(targetRelease ? { targetRelease } : {}),
      engine: this.options.engine,
      ...(rendered ? { rendered } : {}),
      sync,
      ...(engineUnreadable ? { engineUnreadable } : {}),
      conditions,
      since: wait.since,
      now,
      timeoutMs: this.options.timeoutMs ?? 30 * 60_000,
      retryAfterSeconds: this.options.retryAfterSeconds ?? 10,
      ...(this.options.onTimeout ? { onTimeout: this.options.onTimeout } : {}),
    });
    if (decision.outcome !== 'not-ours' && targetRelease)
      this.recordProgress(wait, decision, hook, cluster, { namespace, name }, targetRelease);
    return decision;
  }

  /** Keeps the wait's answer for the ClusterAddon's status, and on a new outcome logs it and records an Event. */
  private recordProgress(
    wait: HookWait,
    decision: ReturnType<typeof decideLifecycleHook>,
    hook: LifecycleHook,
    cluster: Record<string, unknown>,
    { namespace, name }: { namespace: string; name: string },
    targetRelease: string,
  ): void {
    const log = this.options.logger.child({ hook, cluster: wait.clusterKey, release: targetRelease });
    // The status names what is awaited, not the seconds elapsed: it changes when the wait does.
    const message = decision.outcome === 'waiting' ? `waiting for ${decision.waitingFor.join('; ')}` : decision.message;
    const progress: HookProgress = {
      hook,
      targetRelease,
      outcome: decision.outcome,
      message,
      since: new Date(wait.since).toISOString(),
    };
    const changed = wait.outcome !== decision.outcome || wait.progress?.message !== message;
    const transition = wait.outcome !== decision.outcome;
    wait.outcome = decision.outcome;
    wait.progress = progress;
    if (transition) {
      log.info({ outcome: decision.outcome, waitingFor: decision.waitingFor.length }, 'Lifecycle hook answered');
      // Not awaited: an API server slow to take the Event must not delay the answer.
      void Promise.resolve(
        this.options.recordEvents([this.eventFor(hook, cluster, namespace, name, decision.outcome, decision.message)]),
      ).catch((error: Error) => log.warn({ error: error.message }, 'Could not record the lifecycle hook event'));
    }
    if (changed) this.options.onProgress();
  }

  /** Why the engine's objects cannot be trusted now, if they cannot (a failing watch keeps a stale cache). */
  private engineUnreadable(now: number): string | undefined {
    if (this.options.engine === 'none' || !this.options.cache.readState) return undefined;
    const kind: WatchedKind = this.options.engine === 'flux' ? FLUX_KUSTOMIZATIONS : ARGO_APPLICATIONS;
    const what = this.options.engine === 'flux' ? 'Flux Kustomizations' : 'Argo CD Applications';
    const state = this.options.cache.readState(kind);
    if (state.served === false)
      return `the API server to serve ${what} (${kind.group}/${kind.version} ${kind.plural} is not installed), so no stage can be seen applied`;
    if (state.failing) {
      const seconds = Math.max(0, Math.round((now - state.failing.since) / 1000));
      return `the controller to read ${what} again: listing or watching them has failed for ${seconds}s (${state.failing.error}), so what they applied is unknown; check the controller's RBAC and the API server`;
    }
    if (!state.listed) return `the controller to list ${what} (not listed yet)`;
    return undefined;
  }

  private eventFor(
    hook: LifecycleHook,
    cluster: Record<string, unknown>,
    namespace: string,
    name: string,
    outcome: HookOutcome,
    message: string,
  ): EventIntent {
    const uid = record(cluster['metadata'])['uid'];
    const reason =
      outcome === 'ready'
        ? 'LifecycleHookSucceeded'
        : outcome === 'timed-out'
          ? 'LifecycleHookTimedOut'
          : 'LifecycleHookWaiting';
    return {
      regarding: {
        apiVersion: typeof cluster['apiVersion'] === 'string' ? cluster['apiVersion'] : 'cluster.x-k8s.io/v1beta1',
        kind: 'Cluster',
        namespace,
        name,
        ...(typeof uid === 'string' ? { uid } : {}),
      },
      type: outcome === 'timed-out' ? 'Warning' : 'Normal',
      reason,
      message: `${hook}: ${message}`,
    };
  }

  private syncOf(rendered: RenderedAddons | undefined, order: RevisionOrder | undefined) {
    if (!rendered || !order || this.options.engine === 'none') return new Map();
    const kind: WatchedKind = this.options.engine === 'flux' ? FLUX_KUSTOMIZATIONS : ARGO_APPLICATIONS;
    return syncStateOf(
      this.options.engine,
      this.options.cache.list(kind) as KubeObject[],
      rendered.stages.map((stage) => stage.dir),
      order,
    );
  }

  /**
   * Evaluates the stages' conditions against the workload cluster, all reads of this call sharing
   * one deadline: a read still pending then is aborted and its condition counts as not holding,
   * saying the workload cluster did not answer in time.
   */
  private async readConditions(
    hook: LifecycleHook,
    cluster: { namespace: string; name: string },
    stages: { stage: string; precondition?: WaitCondition; postcondition?: WaitCondition }[],
  ): Promise<ConditionResult[]> {
    const wanted = stages.flatMap((stage) =>
      (['precondition', 'postcondition'] as const).flatMap((kind) =>
        stage[kind] ? [{ stage: stage.stage, kind, condition: stage[kind] }] : [],
      ),
    );
    if (wanted.length === 0) return [];
    const deadlineMs = this.options.workloadReadTimeoutMs ?? WORKLOAD_READ_DEADLINE_MS;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        reject(
          new Error(
            `it did not answer within ${deadlineMs / 1000}s (a hook must answer Cluster API within its 10s call timeout, so reads are cut off then)`,
          ),
        );
        abort.abort();
      }, deadlineMs);
    });
    expired.catch(() => undefined);
    try {
      return await Promise.all(
        wanted.map(async ({ stage, kind, condition }): Promise<ConditionResult> => {
          try {
            const objects = await Promise.race([
              this.options.readWorkloadObjects(cluster, condition.objects, abort.signal),
              expired,
            ]);
            return { stage, kind, verdict: evaluateWaitCondition(condition, objects) };
          } catch (error) {
            this.options.logger.warn(
              { hook, cluster: `${cluster.namespace}/${cluster.name}`, stage, error: (error as Error).message },
              'Could not read workload cluster objects for a condition',
            );
            return {
              stage,
              kind,
              verdict: { holds: false, message: `the workload cluster cannot be read: ${(error as Error).message}` },
            };
          }
        }),
      );
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The stages' conditions before the workload cluster was first read: none holds yet. */
function notReadYet(
  stages: { stage: string; precondition?: WaitCondition; postcondition?: WaitCondition }[],
): ConditionResult[] {
  return stages.flatMap((stage) =>
    (['precondition', 'postcondition'] as const).flatMap((kind) =>
      stage[kind]
        ? [
            {
              stage: stage.stage,
              kind,
              verdict: {
                holds: false,
                message:
                  'not read from the workload cluster yet (the controller reads it in the background and shows the result on the ClusterAddon)',
              },
            },
          ]
        : [],
    ),
  );
}

/**
 * When the ClusterAddon says a wait for this hook and release started: its entry in status.hooks
 * (waiting or timed out), else, for a ClusterAddon written before those were kept, its
 * LifecycleHook condition (it turned False then and stays False while waiting and after a timeout).
 */
export function hookSinceOf(
  addon: KubeObject | undefined,
  hook: LifecycleHook,
  targetRelease: string,
): number | undefined {
  const status = record(addon?.['status']);
  const hooks = Array.isArray(status['hooks'])
    ? (status['hooks'] as { name?: string; release?: string; outcome?: string; since?: string }[])
    : [];
  const entry = hooks.find((candidate) => candidate.name === hook);
  if (entry) {
    if (entry.release !== targetRelease || entry.outcome === 'Succeeded' || !entry.since) return undefined;
    const since = Date.parse(entry.since);
    return Number.isNaN(since) ? undefined : since;
  }
  const conditions = (status['conditions'] ?? []) as {
    type?: string;
    status?: string;
    message?: string;
    lastTransitionTime?: string;
  }[];
  const condition = Array.isArray(conditions)
    ? conditions.find((candidate) => candidate.type === 'LifecycleHook')
    : undefined;
  if (!condition || condition.status !== 'False' || !condition.lastTransitionTime) return undefined;
  if (!condition.message?.startsWith(`${hook} for release ${targetRelease} `)) return undefined;
  const since = Date.parse(condition.lastTransitionTime);
  return Number.isNaN(since) ? undefined : since;
}
