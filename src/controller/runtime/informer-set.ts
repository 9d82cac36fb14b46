// One client-node informer per watched kind, kept alive: client-node 1.4 relists by itself after
// 410 Gone, but on any other failure (connection cut, 5xx, API server restart) it emits 'error'
// once and stops for good. This set restarts it with backoff, skips optional kinds that are not
// installed, and serves the caches to reconcilers.
import {
  CustomObjectsApi,
  ListWatch,
  Watch,
  type ConfigurationOptions,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  Observable,
  type ObservableMiddleware,
} from '@kubernetes/client-node';
import type { KubeObject } from '../../api/types.js';
import { type BackoffSteps, equalJitterDelay } from '../../core/backoff.js';
import type { Logger } from '../../core/logger.js';
import {
  systemClock,
  type Clock,
  type ClockTimer,
  type KindReadState,
  type ObjectCache,
  type WatchedKind,
  type WatchEvent,
  type WatchEventType,
} from './runtime-contract.js';
import { compareText } from '../../core/compare-text.js';
import { Failure } from '../../core/failure.js';
import { rateLimitWaitMs } from '../../http/http-retry.js';

export interface InformerSetOptions {
  kubeConfig: KubeConfig;
  kinds: WatchedKind[];
  /** Called for every add, update and delete; must only turn the event into queue keys. */
  onEvent: (event: WatchEvent) => void;
  logger: Logger;
  /** Backoff between restarts of a failed watch (equal jitter, doubling). Default 500 ms to 30 s. */
  restartDelay?: { baseMs: number; maxMs: number };
  /** How often an optional kind that is not served (404) is looked for again. Default 60 s. */
  absentRecheckMs?: number;
  /**
   * Each watch asks the server to end it after this many seconds, times 1 to 2 (jitter), as
   * client-go does; the informer then resumes from its resourceVersion without relisting. This
   * bounds how long a silently dead connection can hide events. Default 300.
   */
  watchTimeoutSeconds?: number;
  clock?: Clock;
  /** [0, 1); tests pin the jitter. */
  random?: () => number;
  /** Called before each restart after an error, e.g. to count restarts in metrics. */
  onRestart?: (kind: WatchedKind) => void;
}

/**
 * The API path of a kind: `/apis/<group>/<version>/<plural>` across all namespaces, or
 * `.../namespaces/<ns>/<plural>` when the kind is watched in one namespace (a Role there is enough);
 * `/api/v1/...` for the core group.
 */
function collectionPath(
  kind: Pick<WatchedKind, 'group' | 'version' | 'plural'> & { namespace?: string | undefined },
): string {
  const base = kind.group === '' ? `/api/${kind.version}` : `/apis/${kind.group}/${kind.version}`;
  return kind.namespace !== undefined
    ? `${base}/namespaces/${kind.namespace}/${kind.plural}`
    : `${base}/${kind.plural}`;
}

/** `group/version/plural[@namespace]`, the identity of a watched kind in this set. */
function kindKey(kind: Pick<WatchedKind, 'group' | 'version' | 'plural'> & { namespace?: string | undefined }): string {
  return `${kind.group}/${kind.version}/${kind.plural}${kind.namespace !== undefined ? `@${kind.namespace}` : ''}`;
}

function kindFields(kind: WatchedKind): Record<string, unknown> {
  return {
    kind: kind.kind,
    apiVersion: kind.group ? `${kind.group}/${kind.version}` : kind.version,
    ...(kind.namespace !== undefined ? { namespace: kind.namespace } : {}),
  };
}

/** The HTTP status of a client-node failure: ApiException `code`, Watch `statusCode`. */
export function httpStatusOf(error: unknown): number | undefined {
  const e = error as { code?: unknown; statusCode?: unknown } | null | undefined;
  if (typeof e?.code === 'number') return e.code;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  return undefined;
}

/**
 * A loggable summary of a client-node error: name, HTTP status or system code, and the Status
 * message. Never the raw error, whose message embeds response headers and body.
 */
export function describeKubeError(error: unknown): Record<string, unknown> {
  const e = (error ?? {}) as { name?: unknown; message?: unknown; code?: unknown; body?: unknown };
  const summary: Record<string, unknown> = { name: typeof e.name === 'string' ? e.name : 'Error' };
  const status = httpStatusOf(error);
  if (status !== undefined) summary['status'] = status;
  else if (typeof e.code === 'string') summary['code'] = e.code;
  let message = typeof e.message === 'string' ? e.message : String(error);
  if (typeof e.body === 'string') {
    try {
      const parsed = JSON.parse(e.body) as { message?: unknown };
      if (typeof parsed.message === 'string') message = parsed.message;
    } catch {
      // Not a Status: keep the message.
    }
  }
  summary['message'] = (message.split('\n')[0] ?? '').slice(0, 300);
  return summary;
}

/** The wait a 429's Retry-After asks for, in ms (client-node's ApiException keeps the response headers). */
function retryAfterMs(error: unknown): number | undefined {
  const headers = (error as { headers?: unknown } | null)?.headers;
  if (typeof headers !== 'object' || headers === null) return undefined;
  const waitMs = rateLimitWaitMs(headers as Record<string, string>, new Date());
  return waitMs !== undefined && Number.isFinite(waitMs) ? waitMs : undefined;
}

function isAbortError(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'AbortError';
}

// CustomObjectsApi builds `/apis/{group}/...`; for the core group ('') that must be `/api/...`.
const rewriteCoreGroupPath: ObservableMiddleware = {
  pre: (context) => {
    context.setUrl(context.getUrl().replace('/apis//', '/api/'));
    return new Observable(Promise.resolve(context));
  },
  post: (response) => new Observable(Promise.resolve(response)),
};
const CORE_GROUP_PATH: ConfigurationOptions = { middleware: [rewriteCoreGroupPath], middlewareMergeStrategy: 'append' };

/**
 * client-node's Watch, hardened: a failure before the request is sent (credentials, kubeconfig)
 * is reported through `done` instead of a rejection nobody catches, a watch whose response
 * arrives after the set was stopped is closed at once (ListWatch.stop() cannot see it yet), and
 * every watch carries a server-side timeout.
 */
class GuardedWatch extends Watch {
  constructor(
    config: KubeConfig,
    private readonly stopped: () => boolean,
    private readonly timeoutSeconds: () => number,
  ) {
    super(config);
  }

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    try {
      const controller = await super.watch(
        path,
        { timeoutSeconds: this.timeoutSeconds(), ...queryParams },
        callback,
        done,
      );
      if (this.stopped()) controller.abort();
      return controller;
    } catch (error) {
      done(error);
      return new AbortController();
    }
  }
}

class StoppedError extends Failure {
  override readonly name = 'AbortError';
  constructor() {
    super('internal', 'informer set stopped');
  }
}

interface KindState {
  kind: WatchedKind;
  informer: ListWatch<KubernetesObject>;
  /** Listed at least once, so the cache is complete. */
  listed: boolean;
  /** false after a 404 for an optional kind; undefined until known. */
  served: boolean | undefined;
  /** Consecutive failed starts, for the backoff; reset after a successful list or watch start. */
  failures: number;
  /** Set by the 'error' handler during a start attempt. */
  errored: boolean;
  timer: ClockTimer | undefined;
  /** While the list or watch fails: since when, and the last error in a sentence. */
  failing?: { since: number; error: string };
}

/** One line for status messages: `HTTP 403: <the Status message>`, or the system error. */
function kubeErrorSentence(error: unknown): string {
  const described = describeKubeError(error);
  const status = described['status'];
  const code = described['code'];
  const message = String(described['message'] ?? '');
  if (status !== undefined) return `HTTP ${String(status)}: ${message}`;
  return typeof code === 'string' ? `${code}: ${message}` : message || 'unknown error';
}

/** Informers for a set of kinds, restarted after errors; also the reconcilers' read-only cache. */
export class InformerSet implements ObjectCache {
  private readonly states = new Map<string, KindState>();
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly restartPolicy: BackoffSteps;
  private readonly absentRecheckMs: number;
  private readonly syncWaiters: Array<() => void> = [];
  private stopped = true;

  constructor(private readonly options: InformerSetOptions) {
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    const delay = options.restartDelay ?? { baseMs: 500, maxMs: 30_000 };
    this.restartPolicy = { baseDelayMs: delay.baseMs, maxDelayMs: delay.maxMs };
    this.absentRecheckMs = options.absentRecheckMs ?? 60_000;
    const custom = options.kubeConfig.makeApiClient(CustomObjectsApi);
    for (const kind of options.kinds) {
      const key = kindKey(kind);
      if (this.states.has(key)) throw new Error(`informer set: ${kind.kind} (${key}) is listed twice`);
      const list = async (): Promise<KubernetesListObject<KubernetesObject>> => {
        // A list finishing after stop() would open a watch nobody closes; failing it ends the attempt.
        if (this.stopped) throw new StoppedError();
        const coreGroup = kind.group === '' ? CORE_GROUP_PATH : undefined;
        const result = (
          kind.namespace !== undefined
            ? await custom.listNamespacedCustomObject(
                { group: kind.group, version: kind.version, plural: kind.plural, namespace: kind.namespace },
                coreGroup,
              )
            : await custom.listClusterCustomObject(
                { group: kind.group, version: kind.version, plural: kind.plural },
                coreGroup,
              )
        ) as KubernetesListObject<KubernetesObject>;
        if (this.stopped) throw new StoppedError();
        this.listed(key);
        return result;
      };
      const watchTimeout = () => Math.max(1, Math.round((options.watchTimeoutSeconds ?? 300) * (1 + this.random())));
      const informer = new ListWatch(
        collectionPath(kind),
        new GuardedWatch(options.kubeConfig, () => this.stopped, watchTimeout),
        list,
        false,
      );
      const state: KindState = {
        kind,
        informer,
        listed: false,
        served: undefined,
        failures: 0,
        errored: false,
        timer: undefined,
      };
      for (const type of ['add', 'update', 'delete'] as const)
        informer.on(type, (object) => this.forward(type, kind, object));
      informer.on('error', (error) => this.failed(state, error));
      this.states.set(key, state);
    }
  }

  /** Starts every informer; resolves after each has made its first attempt (see `whenSynced`). */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    await Promise.all([...this.states.values()].map((state) => this.launch(state)));
  }

  /** Stops every informer and pending restart; caches keep their content. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const state of this.states.values()) {
      if (state.timer !== undefined) this.clock.clearTimeout(state.timer);
      state.timer = undefined;
    }
    await Promise.all([...this.states.values()].map((state) => state.informer.stop()));
  }

  /** True once every required kind has listed at least once. */
  synced(): boolean {
    return [...this.states.values()].every((state) => state.kind.optional || state.listed);
  }

  /** Resolves once `synced()`; rejects if `signal` aborts first. */
  whenSynced(signal?: AbortSignal): Promise<void> {
    if (this.synced()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal?.reason ?? new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  /** Whether the API server serves a kind: false for an optional kind that got a 404, undefined until known. */
  isServed(kind: WatchedKind): boolean | undefined {
    return this.stateOf(kind).served;
  }

  /** Whether a kind's cache can be trusted now: listed, served, and its watch not failing. */
  readState(kind: WatchedKind): KindReadState {
    const state = this.stateOf(kind);
    return {
      listed: state.listed,
      ...(state.served !== undefined ? { served: state.served } : {}),
      ...(state.failing ? { failing: { ...state.failing } } : {}),
    };
  }

  /** The cached objects of a kind in every namespace, sorted by namespace and name. Do not mutate them. */
  list(kind: WatchedKind): KubeObject[] {
    const objects = [...this.stateOf(kind).informer.list()] as unknown as KubeObject[];
    const order = (o: KubeObject) => `${o.metadata.namespace ?? ''}\u0000${o.metadata.name}`;
    return objects.sort((a, b) => compareText(order(a), order(b)));
  }

  /** One cached object; `namespace` is ignored for cluster-scoped kinds. Do not mutate it. */
  get(kind: WatchedKind, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.stateOf(kind).informer.get(name, kind.namespaced ? namespace : undefined) as unknown as
      KubeObject | undefined;
  }

  private stateOf(kind: WatchedKind): KindState {
    const state = this.states.get(kindKey(kind));
    if (!state) throw new Error(`informer set: ${kind.kind} (${kindKey(kind)}) is not watched`);
    return state;
  }

  private async launch(state: KindState): Promise<void> {
    state.timer = undefined;
    if (this.stopped) return;
    state.errored = false;
    const hadFailed = state.failures > 0 || state.served === false;
    try {
      // Errors normally arrive through the 'error' callback (see failed), not by start() rejecting.
      await state.informer.start();
    } catch (error) {
      this.failed(state, error);
    }
    if (this.stopped) {
      await state.informer.stop();
      return;
    }
    if (!state.errored) {
      state.failures = 0;
      state.served = true;
      delete state.failing;
      if (hadFailed) this.options.logger.info(kindFields(state.kind), 'watch resumed');
    }
  }

  private listed(key: string): void {
    const state = this.states.get(key) as KindState;
    state.listed = true;
    state.served = true;
    state.failures = 0;
    delete state.failing;
    if (this.synced()) for (const waiter of this.syncWaiters.splice(0)) waiter();
  }

  private failed(state: KindState, error: unknown): void {
    // informer.stop() reports its own abort as an error; restarting then would undo the stop.
    if (this.stopped || isAbortError(error)) return;
    state.errored = true;
    if (state.timer !== undefined) return;
    const fields = kindFields(state.kind);
    let delayMs: number;
    if (httpStatusOf(error) === 404 && state.kind.optional) {
      if (state.served !== false)
        this.options.logger.info(
          { ...fields, recheckInMs: this.absentRecheckMs },
          'optional kind is not served; looking again later',
        );
      state.served = false;
      delete state.failing;
      delayMs = this.absentRecheckMs;
    } else {
      state.failures += 1;
      state.failing = { since: state.failing?.since ?? this.clock.now(), error: kubeErrorSentence(error) };
      const backoffMs = equalJitterDelay(state.failures - 1, this.restartPolicy, this.random);
      const status = httpStatusOf(error);
      if (status === 429) {
        // The server asks to come back later: its watch cache is still filling (just after it or a
        // CRD started: "storage is (re)initializing") or API Priority and Fairness holds the
        // request back. As client-go does, wait as long as it asks, and say so without a
        // warning: every controller started beside a new server logged one per kind.
        const askedMs = retryAfterMs(error);
        delayMs = askedMs === undefined ? backoffMs : Math.min(askedMs, this.restartPolicy.maxDelayMs);
        this.options.logger.info(
          { ...fields, attempt: state.failures, retryInMs: delayMs, error: describeKubeError(error) },
          'API server asked to retry later; watch restarts then',
        );
      } else {
        delayMs = backoffMs;
        const hint =
          status === 404
            ? { hint: 'the API server does not serve this kind: install its CustomResourceDefinition' }
            : {};
        this.options.logger.warn(
          { ...fields, attempt: state.failures, retryInMs: delayMs, error: describeKubeError(error), ...hint },
          'watch failed; restarting after backoff',
        );
      }
      try {
        this.options.onRestart?.(state.kind);
      } catch (hookError) {
        this.options.logger.error({ ...fields, error: describeKubeError(hookError) }, 'informer restart hook failed');
      }
    }
    state.timer = this.clock.setTimeout(() => {
      this.launch(state).catch((launchError: unknown) => this.failed(state, launchError));
    }, delayMs);
  }

  private forward(type: WatchEventType, kind: WatchedKind, object: KubernetesObject): void {
    try {
      this.options.onEvent({ type, kind, object: object as unknown as KubeObject });
    } catch (error) {
      // A throwing callback is a bug; letting it escape would break the informer's own bookkeeping.
      this.options.logger.error(
        { ...kindFields(kind), name: object.metadata?.name, error: describeKubeError(error) },
        'watch event handler failed',
      );
    }
  }
}
