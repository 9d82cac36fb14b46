// The contract between the controller's runtime (watching, queueing, leading, serving health) and
// its reconcilers. The runtime knows nothing about cluster stacks; reconcilers know nothing about
// informers or HTTP.
import type { KubeObject } from '../../api/types.js';

/** A kind the controller watches. */
export interface WatchedKind {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  /** Watch only this namespace (a namespaced kind); undefined: all namespaces. */
  namespace?: string;
  /** Kinds that may not be installed (Flux, Argo CD, a provider): absent ones are skipped, rechecked later. */
  optional?: boolean;
  /**
   * Watch the version the API server prefers for the group (discovery's preferredVersion, e.g.
   * cluster.x-k8s.io/v1beta2 from Cluster API 1.11 on); `version` is used when discovery does not
   * say. Reconcilers keep addressing the kind as declared: the cache serves the watched version.
   */
  preferredVersion?: boolean;
}

/** `group/version/plural`: the identity of a kind, whatever namespace it is watched in. */
export function kindId(kind: Pick<WatchedKind, 'group' | 'version' | 'plural'>): string {
  return `${kind.group}/${kind.version}/${kind.plural}`;
}

/** The object a Kubernetes Event is about. */
export interface EventRegarding {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid?: string;
}

/** A Kubernetes Event to record. */
export interface EventIntent {
  regarding: EventRegarding;
  type: 'Normal' | 'Warning';
  /** PascalCase. */
  reason: string;
  message: string;
}

export type WatchEventType = 'add' | 'update' | 'delete';

/** What watch callbacks receive; they only turn it into queue keys. */
export interface WatchEvent {
  type: WatchEventType;
  kind: WatchedKind;
  object: KubeObject;
}

/** Whether the cache of one kind can be trusted now. */
export interface KindReadState {
  /** Listed at least once, so the cache was complete at some point. */
  listed: boolean;
  /** false: the API server does not serve the kind (an optional kind that got a 404); undefined until known. */
  served?: boolean;
  /** Set while its list or watch fails (the cache may be stale): since when (ms since the epoch) and the last error. */
  failing?: { since: number; error: string };
}

/** Read access to the watched objects (the informers' caches). */
export interface ObjectCache {
  list(kind: WatchedKind): KubeObject[];
  get(kind: WatchedKind, namespace: string | undefined, name: string): KubeObject | undefined;
  /** True once every required kind has listed at least once. */
  synced(): boolean;
  /** Whether one kind's cache can be trusted now (listed, served, its watch not failing). */
  readState?(kind: WatchedKind): KindReadState;
}

/** A keyed work queue: deduplicates keys, bounded concurrency, exponential backoff with jitter. */
export interface WorkQueue {
  add(key: string): void;
  addAfter(key: string, delayMs: number): void;
  /** Keys waiting (for the queue-depth metric). */
  readonly depth: number;
}

/** Metrics the reconcilers record; the runtime exposes them at /metrics in Prometheus format. */
export interface ControllerMetrics {
  reconcileTotal(result: 'success' | 'error' | 'requeue'): void;
  renderDuration(seconds: number): void;
  publishDuration(seconds: number): void;
  helmProcesses(count: number): void;
  remoteRequest(kind: 'github' | 'oci' | 'git', outcome: 'ok' | 'error'): void;
}

/** Timer handle of a Clock (opaque). */
export type ClockTimer = unknown;

/** Time and timers, injected so tests can move time without sleeping. */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer): void;
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
};
