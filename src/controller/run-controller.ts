// The controller's runtime wiring: informers feed watch events to two work queues (one key per
// ClusterStack for its release source, one `publish` key for the render-and-publish reconcile),
// leader election decides who runs them, and the health server exposes readiness and /metrics.
// The runtime pieces know nothing about cluster stacks; the Controller knows nothing about them.
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../plan/build-plan.js';
import { Controller, PUBLISH_KEY, type ControllerOptions } from './controller.js';
import { identifyClient } from './runtime/client-identity.js';
import { HealthServer, startHealthServer } from './runtime/health-server.js';
import { InformerCache } from './runtime/informer-cache.js';
import { LeaderElector } from './runtime/leader-election.js';
import { publishLeaderEndpoint } from './runtime/leader-endpoint.js';
import { equalJitterDelay } from '../core/backoff.js';
import { PrometheusMetrics } from './runtime/metrics.js';
import type { WatchEvent } from './runtime/runtime-contract.js';
import { KeyedWorkQueue } from './runtime/work-queue.js';
import { startExtensionServer, type ExtensionServer } from './runtime/extension-server.js';
import { EventRecorder } from './reconcile/event-recorder.js';
import { hookSinceOf, LifecycleHooks } from './reconcile/lifecycle-hooks.js';
import { workloadObjectReader } from './reconcile/workload-objects.js';
import { CLUSTER_ADDONS } from './desired-state/watched-kinds.js';

export interface ControllerRuntimeOptions extends Omit<ControllerOptions, 'cache' | 'metrics'> {
  kubeConfig: KubeConfig;
  /** Undefined: no leader election (a single replica). */
  leaderElection?: {
    namespace: string;
    name: string;
    identity: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
  /** Undefined: no health/metrics server. */
  health?: { port: number; host?: string };
  /** Changes within this window are published together. Default 200 ms (a burst of watch events arrives within tens of ms). */
  batchWindowMs?: number;
  /** Abandon a reconcile (publish) still running this long after shutdown starts. Default 20 s. */
  shutdownTimeoutMs?: number;
  /** Namespaced mode: where the GitOps engine's objects live besides the watched namespace. */
  engineNamespaces?: string[];
  /** Stack keys handled at the same time (sources listed in parallel). Default 4. */
  sourceConcurrency?: number;
  /** Failure backoff of every key: first cap and largest delay (defaults 1 s and 2 min); `random` pins the jitter in tests. */
  backoff?: { baseDelayMs: number; maxDelayMs: number; random?: () => number };
  /** Given when something created before the runtime (the release sources) counts into it too; else a new one. */
  metrics?: PrometheusMetrics;
  /** Undefined: no Cluster API runtime extension (lifecycle hooks) server. */
  runtimeExtension?: RuntimeExtensionOptions;
}

/** The HTTPS runtime extension serving Cluster API's lifecycle hooks. */
interface RuntimeExtensionOptions {
  port: number;
  host?: string;
  /** PEM files of the serving certificate (tls.crt, tls.key of the mounted Secret). */
  certFile: string;
  keyFile: string;
  /** The bounded wait of a hook. Default 30 min. */
  timeoutMs?: number;
  /** What BeforeClusterUpgrade does once timeoutMs passed: let the upgrade go (default) or keep holding. */
  onTimeout?: 'proceed' | 'hold';
  /** How soon Cluster API asks again while waiting. Default 10 s. */
  retryAfterSeconds?: number;
  /** Announced through discovery: Fail (default) or Ignore when the extension cannot be reached. */
  failurePolicy?: 'Fail' | 'Ignore';
  /** How often the certificate files are checked for rotation. Default 60 s. */
  reloadIntervalMs?: number;
  /** The clock of the hook waits (tests move it to reach the timeout). */
  now?: () => number;
  /** How often waits Cluster API does not hold on (AfterControlPlaneInitialized) are looked at again. Default retryAfterSeconds. */
  revisitIntervalMs?: number;
  /**
   * The selector-less Service (port named `https`) whose EndpointSlice the leader writes with its
   * pod IP and this port, so Cluster API's calls reach the replica that renders.
   */
  leaderService?: { service: string; namespace: string; podIP: string; podName?: string };
}

export interface ControllerRuntime {
  readonly controller: Controller;
  readonly metrics: PrometheusMetrics;
  readonly cache: InformerCache;
  readonly healthUrl?: string;
  /** `https://host:port` of the runtime extension, when it runs. */
  readonly extensionUrl?: string;
  isLeader(): boolean;
  /** Stops in order: informers, queues (the reconcile in flight finishes or is abandoned), lease, health server. */
  stop(): Promise<void>;
  /**
   * Resolves once the runtime has stopped: `stopped` after stop(), else why it stopped by itself
   * (leadership lost, leader election failed), after stopping everything as stop() does. The
   * process should then exit non-zero, so that Kubernetes restarts it and it campaigns again.
   */
  readonly done: Promise<{ reason: string }>;
}

/** Starts the controller with its runtime. Only the leader reconciles (and so publishes and writes). */
export async function runController(options: ControllerRuntimeOptions): Promise<ControllerRuntime> {
  const { logger } = options;
  identifyClient(options.kubeConfig);
  const metrics = options.metrics ?? new PrometheusMetrics();
  const backoff = options.backoff ?? { baseDelayMs: 1000, maxDelayMs: 120_000 };
  const queues = new WorkQueues({ ...options, backoff, metrics });
  const requestPublish = queues.requestPublish;
  let leading = options.leaderElection === undefined;
  const hooksRef: { hooks?: LifecycleHooks } = {};
  const { controller, cache } = watchAndBuildController(options, metrics, queues, hooksRef);
  // Set when the runtime starts to stop (leadership lost, or stop()): from then on /readyz and
  // /healthz answer 500, so no probe reports a replica that is on its way out as fine.
  let ending = false;
  const { health, hooks, extension } = await startServers(options, {
    cache,
    controller,
    metrics,
    isLeader: () => leading,
    isEnding: () => ending,
    requestPublish,
  });
  if (hooks) hooksRef.hooks = hooks;
  await cache.start();
  // A scheduler configuration file that changes is read again, and the change published.
  const scheduler = options.scheduler;
  const unwatchScheduler =
    scheduler && 'watch' in scheduler && scheduler.watch ? scheduler.watch(requestPublish) : undefined;

  let stopped = false;
  /** Stops in order: informers, queues (the reconcile in flight finishes or is abandoned), lease, servers. */
  const end = endOnce(async () => {
    stopped = true;
    ending = true;
    unwatchScheduler?.();
    await cache.stop();
    await queues.stop();
    await elector?.stop();
    await health?.close();
    await extension?.close();
    hooks?.stop();
  });
  const routeToLeader = (signal?: AbortSignal) =>
    routeExtensionToLeader(options, extension, { backoff, stopped: () => stopped, ...(signal ? { signal } : {}) });

  let elector: LeaderElector | undefined;
  metrics.observeLeader(() => leading);
  if (options.leaderElection) {
    elector = electLeader(options.kubeConfig, options.leaderElection, logger, {
      onStartedLeading: async (signal) => {
        leading = true;
        void routeToLeader(signal);
        await cache.whenSynced(signal).catch(() => undefined);
        if (!signal.aborted) queues.start(controller);
      },
      onStoppedLeading: () => {
        leading = false;
        // Not ready from the moment leadership ends: the lease is being released and everything stops.
        ending = true;
        void queues.stop();
      },
      onEnded: (reason) => {
        // Not by stop(): a replica that lost its lease never campaigns again (the elector's rule),
        // so it must not stay alive idle. Everything stops, then `done` tells the process to exit.
        if (stopped) return;
        ending = true;
        logger.error({ reason }, 'Leadership ended: stopping, to exit and be restarted by Kubernetes');
        void end.stop(reason);
      },
    });
  } else {
    void routeToLeader();
    queues.start(controller);
  }

  return {
    controller,
    metrics,
    cache,
    ...(health ? { healthUrl: health.url } : {}),
    ...(extension ? { extensionUrl: extension.url } : {}),
    isLeader: () => leading,
    done: end.done,
    stop: () => end.stop('stopped'),
  };
}

/** `stop(reason)` runs `steps` once (a second call waits for the first); `done` then resolves with the reason. */
function endOnce(steps: () => Promise<void>): {
  stop(reason: string): Promise<void>;
  done: Promise<{ reason: string }>;
} {
  let resolveDone!: (value: { reason: string }) => void;
  const done = new Promise<{ reason: string }>((resolve) => {
    resolveDone = resolve;
  });
  let stopping: Promise<void> | undefined;
  return {
    done,
    stop: (reason) =>
      (stopping ??= (async () => {
        await steps();
        resolveDone({ reason });
      })()),
  };
}

/**
 * The informer cache and the Controller it feeds: a relevant watch event lists its stack's source
 * again (a stack key) and asks for a publish. `hooksRef` is where the lifecycle hooks will be.
 */
function watchAndBuildController(
  options: ControllerRuntimeOptions,
  metrics: PrometheusMetrics,
  queues: WorkQueues,
  hooksRef: { hooks?: LifecycleHooks },
): { controller: Controller; cache: InformerCache } {
  // eslint-disable-next-line prefer-const -- informer events may arrive before the controller is built (undefined until then)
  let controller: Controller | undefined;
  const cache = watchCache(options, metrics, (event) => {
    if (!controller?.isRelevant(event)) return;
    const key = controller.stackKeyFor(event);
    if (key) queues.addStack(key);
    queues.requestPublish();
  });
  controller = new Controller({
    ...options,
    cache,
    metrics,
    ...(options.runtimeExtension
      ? { hookProgress: (namespace: string, name: string) => hooksRef.hooks?.progressOf(namespace, name) }
      : {}),
  });
  return { controller, cache };
}

/** What the servers started beside the controller use of the runtime. */
interface RuntimeParts {
  cache: InformerCache;
  controller: Controller;
  metrics: PrometheusMetrics;
  isLeader: () => boolean;
  requestPublish: () => void;
}

/** The health/metrics server and the runtime extension with its lifecycle hooks, each when configured. */
async function startServers(
  options: ControllerRuntimeOptions,
  runtime: RuntimeParts & { isEnding: () => boolean },
): Promise<{ health?: HealthServer; hooks?: LifecycleHooks; extension?: ExtensionServer }> {
  const { cache, metrics, isEnding } = runtime;
  const health = options.health
    ? await startHealthServer({
        port: options.health.port,
        ...(options.health.host ? { host: options.health.host } : {}),
        metrics,
        ready: () => !isEnding() && cache.synced(),
        healthy: () => !isEnding(),
      })
    : undefined;
  const served = options.runtimeExtension
    ? await startRuntimeExtension(options, options.runtimeExtension, runtime)
    : undefined;
  return { ...(health ? { health } : {}), ...served };
}

/**
 * Two queues: the publish key never waits behind a stack whose source hangs, and a stack key never
 * waits behind a long publish. They exist while this replica leads.
 */
class WorkQueues {
  private publish: KeyedWorkQueue | undefined;
  private stacks: KeyedWorkQueue | undefined;

  constructor(
    private readonly settings: Pick<
      ControllerRuntimeOptions,
      'logger' | 'batchWindowMs' | 'sourceConcurrency' | 'shutdownTimeoutMs'
    > & {
      backoff: NonNullable<ControllerRuntimeOptions['backoff']>;
      metrics: PrometheusMetrics;
    },
  ) {}

  /** Publishes soon: changes within the batch window are published together. */
  readonly requestPublish = () =>
    this.publish?.addBatched(PUBLISH_KEY, this.settings.batchWindowMs ?? 200, undefined, { inputsChanged: true });

  /** Lists the stack's release source again. */
  addStack(key: string): void {
    this.stacks?.add(key, { inputsChanged: true });
  }

  /** Starts both queues with every stack's key and a publish. */
  start(controller: Controller): void {
    const { logger, backoff, metrics } = this.settings;
    const newQueue = (concurrency: number) =>
      new KeyedWorkQueue({
        concurrency,
        handler: (key, signal) => controller.handle(key, signal, this.requestPublish),
        logger,
        ...backoff,
        onResult: (_key, outcome) => metrics.reconcileTotal(outcome),
      });
    this.publish = newQueue(1);
    this.stacks = newQueue(this.settings.sourceConcurrency ?? 4);
    metrics.observeQueueDepth(() => (this.publish?.depth ?? 0) + (this.stacks?.depth ?? 0));
    this.publish.start();
    this.stacks.start();
    for (const key of controller.stackKeys()) this.stacks.add(key);
    this.publish.add(PUBLISH_KEY);
  }

  /** Stops both queues: the reconcile in flight finishes or is abandoned after the shutdown timeout. */
  async stop(): Promise<void> {
    const queues = [this.publish, this.stacks];
    this.publish = undefined;
    this.stacks = undefined;
    await Promise.all(
      queues.map((queue) => queue?.shutdown({ drain: false, timeoutMs: this.settings.shutdownTimeoutMs ?? 20_000 })),
    );
  }
}

/** The informer cache of the kinds the controller watches, in its scope (a namespace, or the cluster). */
function watchCache(
  options: ControllerRuntimeOptions,
  metrics: PrometheusMetrics,
  onEvent: (event: WatchEvent) => void,
): InformerCache {
  const scope = {
    ...(options.watchNamespace !== undefined
      ? { namespace: options.watchNamespace, engineNamespaces: options.engineNamespaces ?? [] }
      : {}),
    layers: options.layerRoot !== undefined,
  };
  return new InformerCache({
    kubeConfig: options.kubeConfig,
    kinds: Controller.watchedKinds(options.engine, scope, options.scheduler !== undefined),
    onEvent,
    logger: options.logger,
    onRestart: (kind) => metrics.informerRestart(kind.kind),
    ...(options.watchNamespace !== undefined ? { namespace: options.watchNamespace } : {}),
  });
}

/** The lifecycle hooks, started, and the HTTPS runtime extension server that serves them to Cluster API. */
async function startRuntimeExtension(
  options: ControllerRuntimeOptions,
  settings: RuntimeExtensionOptions,
  runtime: RuntimeParts,
): Promise<{ hooks: LifecycleHooks; extension: ExtensionServer }> {
  const { logger } = options;
  const { cache, controller, metrics } = runtime;
  const events = new EventRecorder({ sink: options.kube, logger });
  const hooks = new LifecycleHooks({
    cache,
    engine: options.engine,
    snapshot: () => controller.addonSnapshot(),
    isLeader: runtime.isLeader,
    readWorkloadObjects: workloadObjectReader(options.kube),
    recordEvents: (intents) => events.record(intents),
    onProgress: runtime.requestPublish,
    metrics,
    logger,
    persistedSince: (hook, namespace, name, target) =>
      hookSinceOf(cache.get(CLUSTER_ADDONS, namespace, name), hook, target),
    ...(settings.timeoutMs !== undefined ? { timeoutMs: settings.timeoutMs } : {}),
    ...(settings.onTimeout ? { onTimeout: settings.onTimeout } : {}),
    ...(settings.retryAfterSeconds !== undefined ? { retryAfterSeconds: settings.retryAfterSeconds } : {}),
    ...(settings.failurePolicy ? { failurePolicy: settings.failurePolicy } : {}),
    ...(settings.now ? { now: settings.now } : {}),
    ...(settings.revisitIntervalMs !== undefined ? { revisitIntervalMs: settings.revisitIntervalMs } : {}),
  });
  hooks.start();
  const extension = await startExtensionServer({
    port: settings.port,
    ...(settings.host ? { host: settings.host } : {}),
    certFile: settings.certFile,
    keyFile: settings.keyFile,
    handlers: hooks.handlers(),
    ...(settings.reloadIntervalMs !== undefined ? { reloadIntervalMs: settings.reloadIntervalMs } : {}),
    onReloadError: (error) =>
      logger.warn(
        { error: error.message },
        'Could not reload the runtime extension certificate; the previous one stays in use',
      ),
  });
  return { hooks, extension };
}

/** The runtime extension's Service points at the leader: written when leading starts, retried until it is (or the runtime stops). */
async function routeExtensionToLeader(
  options: ControllerRuntimeOptions,
  extension: ExtensionServer | undefined,
  until: { backoff: NonNullable<ControllerRuntimeOptions['backoff']>; stopped: () => boolean; signal?: AbortSignal },
): Promise<void> {
  const { logger } = options;
  const route = options.runtimeExtension?.leaderService;
  if (!route || !extension) return;
  const endpoint = { ...route, port: Number(new URL(extension.url).port), portName: 'https' };
  for (let attempt = 0; !until.stopped() && !until.signal?.aborted; attempt += 1) {
    try {
      await publishLeaderEndpoint(options.kube, endpoint);
      logger.info(
        { service: `${route.namespace}/${route.service}`, podIP: route.podIP },
        'Runtime extension Service routed to this replica',
      );
      return;
    } catch (error) {
      logger.warn(
        { service: `${route.namespace}/${route.service}`, error: errorMessage(error) },
        'Could not route the runtime extension Service to this replica; retrying (grant create, get and patch on endpointslices)',
      );
      await new Promise<void>((resolve) => {
        setTimeout(resolve, equalJitterDelay(attempt, until.backoff)).unref();
      });
    }
  }
}

/** Campaigns for the lease; `onEnded` says why leading (or the election) ended, whatever ended it. */
function electLeader(
  kubeConfig: KubeConfig,
  election: NonNullable<ControllerRuntimeOptions['leaderElection']>,
  logger: ControllerRuntimeOptions['logger'],
  handlers: {
    onStartedLeading: (signal: AbortSignal) => Promise<void>;
    onStoppedLeading: () => void;
    onEnded: (reason: string) => void;
  },
): LeaderElector {
  const elector = new LeaderElector({
    kubeConfig,
    namespace: election.namespace,
    name: election.name,
    identity: election.identity,
    leaseDurationMs: election.leaseDurationMs ?? 15_000,
    renewDeadlineMs: election.renewDeadlineMs ?? 10_000,
    retryPeriodMs: election.retryPeriodMs ?? 2_000,
    logger,
  });
  void elector
    .run({ onStartedLeading: handlers.onStartedLeading, onStoppedLeading: handlers.onStoppedLeading })
    .then(
      () => 'leadership ended',
      (error: unknown) => `leader election failed: ${errorMessage(error)}`,
    )
    .then(handlers.onEnded);
  return elector;
}
