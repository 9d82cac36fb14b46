// The runtime extension's lifecycle hook handlers: BeforeClusterUpgrade, AfterControlPlaneInitialized
// and AfterClusterUpgrade. Each call reads what is needed at that moment: the last reconcile's
// snapshot of what was rendered and published per Cluster (AddonSnapshot), the GitOps engine's
// objects from the informer cache, and the objects the hook's CEL conditions name from the
// workload cluster; the pure decision (desired-state/lifecycle-hook-decision.ts) answers. The wait
// of each (hook, Cluster, target release) is remembered from its first call, so the bounded wait
// ends (see the decision for what each hook answers then); progress is exposed for the ClusterAddon's
// status, with events on start, success and timeout, and latency/outcome metrics. Hooks Cluster API
// stops calling while addons are still awaited (AfterControlPlaneInitialized, AfterClusterUpgrade
// before Cluster API v1.12) are followed here: open waits are looked at again every
// `revisitIntervalMs` until ready or timed out, so the ClusterAddon says when they are done.
import type { Logger } from 'pino';
import { clusterClassOf } from '../../api/capi-cluster.js';
import type { KubeObject } from '../../api/types.js';
import { evaluateWaitCondition, type WaitCondition } from '../../core/addon-wait-conditions.js';
import { releaseOfClusterClass } from '../../core/release-tag.js';
import { loadedRelease, type Plan } from '../../plan/build-plan.js';
import type { RenderOutcome } from '../../render/render-output.js';
import type { ExtensionHandler } from '../runtime/extension-server.js';
import type { EventIntent, ObjectCache, WatchedKind } from '../runtime/runtime-contract.js';
import { answersWithRetry, decideLifecycleHook, followedByController, LIFECYCLE_HOOKS, type HookOutcome, type HookProgress, type LifecycleHook, type RenderedAddons } from '../desired-state/lifecycle-hook-decision.js';
import type { PublishState } from '../desired-state/status-inputs.js';
import { syncStateOf, type RevisionOrder } from '../desired-state/sync-state.js';
import { ARGO_APPLICATIONS, CAPI_CLUSTERS, FLUX_KUSTOMIZATIONS } from '../desired-state/watched-kinds.js';

/** The CEL conditions of each hook's stages, as clusteraddon.yaml lists them. */
type HookConditions = Partial<Record<LifecycleHook, { stage: string; precondition?: WaitCondition; postcondition?: WaitCondition }[]>>;

/** What the last reconcile rendered and published, per Cluster (`namespace/name`). */
export interface AddonSnapshot {
  clusters: Map<string, RenderedAddons & { conditions: HookConditions }>;
  order: RevisionOrder;
}

/** Builds the snapshot the hook handlers read, from one reconcile's plan, render and publish. */
export function addonSnapshot(plan: Plan | undefined, render: RenderOutcome | undefined, publish: PublishState): AddonSnapshot {
  const clusters: AddonSnapshot['clusters'] = new Map();
  const published = publish.outcome === 'published' || publish.outcome === 'unchanged';
  for (const cluster of plan?.resolution.clusters ?? []) {
    if (!cluster.managed) continue;
    const key = `${cluster.namespace}/${cluster.name}`;
    const units = (render?.provenance.units ?? []).filter((unit) => unit.kind === 'cluster-stage' && unit.namespace === cluster.namespace && unit.name === cluster.name).sort((a, b) => (a.order ?? 0) - (b.order ?? 0));
    const withheld = render?.withheld.find((entry) => entry.kind === 'cluster' && entry.namespace === cluster.namespace && entry.name === cluster.name);
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

/** Reads the objects a condition names from the Cluster's workload cluster (`undefined`: not there). */
export type WorkloadObjectReader = (cluster: { namespace: string; name: string }, objects: WaitCondition['objects']) => Promise<Map<string, Record<string, unknown> | undefined>>;

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
export function targetReleaseOf(cluster: Record<string, unknown>): string | undefined {
  const named = clusterClassOf({ apiVersion: cluster['apiVersion'], metadata: record(cluster['metadata']), spec: cluster['spec'] });
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

  /** The newest hook progress of a Cluster, if a hook was called for it. */
  progressOf(namespace: string, name: string): HookProgress | undefined {
    let newest: HookProgress | undefined;
    for (const wait of this.waits.values()) {
      const progress = wait.progress;
      if (progress && wait.clusterKey === `${namespace}/${name}` && (!newest || progress.since >= newest.since)) newest = progress;
    }
    return newest;
  }

  /** Answers one hook call. */
  async handle(hook: LifecycleHook, request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const started = Date.now();
    const cluster = record(request['cluster']);
    const metadata = record(cluster['metadata']);
    if (typeof metadata['name'] !== 'string') return { status: 'Failure', message: `the ${hook}Request has no cluster.metadata.name`, ...(answersWithRetry(hook) ? { retryAfterSeconds: 0 } : {}) };
    if (!this.leading()) return this.standbyAnswer(hook);
    const decision = await this.evaluate(hook, cluster);
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
    if (!answersWithRetry(hook)) return { status: 'Success', message: 'answered by a standby replica: the leading replica follows the first install on the ClusterAddon' };
    return { status: 'Success', message: 'this replica is a standby and has not rendered the addons; the leading replica answers', retryAfterSeconds: this.options.retryAfterSeconds ?? 10 };
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
        if ((live && targetReleaseOf(live) !== wait.targetRelease) || record(record(live)['metadata'])['deletionTimestamp']) {
          this.waits.delete(key);
          this.options.onProgress();
          continue;
        }
        await this.evaluate(wait.hook, cluster);
      }
    } catch (error) {
      this.options.logger.warn({ error: (error as Error).message }, 'Could not look at the open lifecycle hook waits again');
    } finally {
      this.revisiting = false;
    }
  }

  private async evaluate(hook: LifecycleHook, cluster: Record<string, unknown>) {
    const now = (this.options.now ?? Date.now)();
    const metadata = record(cluster['metadata']);
    const namespace = typeof metadata['namespace'] === 'string' ? metadata['namespace'] : 'default';
    const name = metadata['name'] as string;
    const clusterKey = `${namespace}/${name}`;
    const targetRelease = targetReleaseOf(cluster);
    const snapshot = this.options.snapshot();
    const rendered = snapshot?.clusters.get(clusterKey);
    const sync = this.syncOf(rendered, snapshot?.order);
    const engineUnreadable = this.engineUnreadable(now);
    const conditions = rendered && targetRelease && rendered.release === targetRelease ? await this.evaluateConditions(hook, { namespace, name }, rendered.conditions[hook] ?? []) : [];
    const waitKey = `${hook}/${clusterKey}/${targetRelease ?? ''}`;
    let wait = this.waits.get(waitKey);
    if (!wait) {
      // Another replica (or this one before a restart) may have started the wait: its ClusterAddon says since when.
      const persisted = targetRelease ? this.options.persistedSince?.(hook, namespace, name, targetRelease) : undefined;
      wait = { hook, clusterKey, ...(targetRelease ? { targetRelease } : {}), since: persisted !== undefined && persisted <= now ? persisted : now, cluster };
      this.waits.set(waitKey, wait);
    } else if (wait.outcome === 'ready') {
      // Asked again after it was ready (the addons changed since): a new wait.
      wait.since = now;
    }
    wait.cluster = cluster;
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
    });
    const log = this.options.logger.child({ hook, cluster: clusterKey, release: targetRelease });
    if (decision.outcome !== 'not-ours' && targetRelease) {
      // The status names what is awaited, not the seconds elapsed: it changes when the wait does.
      const message = decision.outcome === 'waiting' ? `waiting for ${decision.waitingFor.join('; ')}` : decision.message;
      const progress: HookProgress = { hook, targetRelease, outcome: decision.outcome, message, since: new Date(wait.since).toISOString() };
      const changed = wait.outcome !== decision.outcome || wait.progress?.message !== message;
      const transition = wait.outcome !== decision.outcome;
      wait.outcome = decision.outcome;
      wait.progress = progress;
      if (transition) {
        log.info({ outcome: decision.outcome, waitingFor: decision.waitingFor.length }, 'Lifecycle hook answered');
        await this.options.recordEvents([this.eventFor(hook, cluster, namespace, name, decision.outcome, decision.message)]);
      }
      if (changed) this.options.onProgress();
    }
    return decision;
  }

  /** Why the engine's objects cannot be trusted now, if they cannot (a failing watch keeps a stale cache). */
  private engineUnreadable(now: number): string | undefined {
    if (this.options.engine === 'none' || !this.options.cache.readState) return undefined;
    const kind: WatchedKind = this.options.engine === 'flux' ? FLUX_KUSTOMIZATIONS : ARGO_APPLICATIONS;
    const what = this.options.engine === 'flux' ? 'Flux Kustomizations' : 'Argo CD Applications';
    const state = this.options.cache.readState(kind);
    if (state.served === false) return `the API server to serve ${what} (${kind.group}/${kind.version} ${kind.plural} is not installed), so no stage can be seen applied`;
    if (state.failing) {
      const seconds = Math.max(0, Math.round((now - state.failing.since) / 1000));
      return `the controller to read ${what} again: listing or watching them has failed for ${seconds}s (${state.failing.error}), so what they applied is unknown; check the controller's RBAC and the API server`;
    }
    if (!state.listed) return `the controller to list ${what} (not listed yet)`;
    return undefined;
  }

  private eventFor(hook: LifecycleHook, cluster: Record<string, unknown>, namespace: string, name: string, outcome: HookOutcome, message: string): EventIntent {
    const uid = record(cluster['metadata'])['uid'];
    const reason = outcome === 'ready' ? 'LifecycleHookSucceeded' : outcome === 'timed-out' ? 'LifecycleHookTimedOut' : 'LifecycleHookWaiting';
    return {
      regarding: { apiVersion: typeof cluster['apiVersion'] === 'string' ? cluster['apiVersion'] : 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', namespace, name, ...(typeof uid === 'string' ? { uid } : {}) },
      type: outcome === 'timed-out' ? 'Warning' : 'Normal',
      reason,
      message: `${hook}: ${message}`,
    };
  }

  private syncOf(rendered: RenderedAddons | undefined, order: RevisionOrder | undefined) {
    if (!rendered || !order || this.options.engine === 'none') return new Map();
    const kind: WatchedKind = this.options.engine === 'flux' ? FLUX_KUSTOMIZATIONS : ARGO_APPLICATIONS;
    return syncStateOf(this.options.engine, this.options.cache.list(kind) as KubeObject[], rendered.stages.map((stage) => stage.dir), order);
  }

  private async evaluateConditions(hook: LifecycleHook, cluster: { namespace: string; name: string }, stages: { stage: string; precondition?: WaitCondition; postcondition?: WaitCondition }[]) {
    const results: { stage: string; kind: 'precondition' | 'postcondition'; verdict: ReturnType<typeof evaluateWaitCondition> }[] = [];
    for (const stage of stages) {
      for (const kind of ['precondition', 'postcondition'] as const) {
        const condition = stage[kind];
        if (!condition) continue;
        try {
          const objects = await this.options.readWorkloadObjects(cluster, condition.objects);
          results.push({ stage: stage.stage, kind, verdict: evaluateWaitCondition(condition, objects) });
        } catch (error) {
          this.options.logger.warn({ hook, cluster: `${cluster.namespace}/${cluster.name}`, stage: stage.stage, error: (error as Error).message }, 'Could not read workload cluster objects for a condition');
          results.push({ stage: stage.stage, kind, verdict: { holds: false, message: `the workload cluster cannot be read: ${(error as Error).message}` } });
        }
      }
    }
    return results;
  }
}

/**
 * When the ClusterAddon says a wait for this hook and release started: its LifecycleHook condition
 * turned False then (it stays False while waiting and after a timeout).
 */
export function hookSinceOf(addon: KubeObject | undefined, hook: LifecycleHook, targetRelease: string): number | undefined {
  const conditions = (record(addon?.['status'])['conditions'] ?? []) as { type?: string; status?: string; message?: string; lastTransitionTime?: string }[];
  const condition = Array.isArray(conditions) ? conditions.find((candidate) => candidate.type === 'LifecycleHook') : undefined;
  if (!condition || condition.status !== 'False' || !condition.lastTransitionTime) return undefined;
  if (!condition.message?.startsWith(`${hook} for release ${targetRelease} `)) return undefined;
  const since = Date.parse(condition.lastTransitionTime);
  return Number.isNaN(since) ? undefined : since;
}
