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
  const batchWindowMs = options.batchWindowMs ?? 200;
  const backoff = options.backoff ?? { baseDelayMs: 1000, maxDelayMs: 120_000 };
  // Two queues: the publish key never waits behind a stack whose source hangs, and a stack key
  // never waits behind a long publish.
  let publishQueue: KeyedWorkQueue | undefined;
  let stackQueue: KeyedWorkQueue | undefined;
  let leading = options.leaderElection === undefined;
  // eslint-disable-next-line prefer-const -- informer events may arrive before the controller is built (undefined until then)
  let controller: Controller | undefined;
  const requestPublish = () => publishQueue?.addBatched(PUBLISH_KEY, batchWindowMs, undefined, { inputsChanged: true });
  const onEvent = (event: WatchEvent) => {
    if (!controller?.isRelevant(event)) return;
    const key = controller.stackKeyFor(event);
    if (key) stackQueue?.add(key, { inputsChanged: true });
    requestPublish();
  };
  const scope = {
    ...(options.watchNamespace !== undefined
      ? { namespace: options.watchNamespace, engineNamespaces: options.engineNamespaces ?? [] }
      : {}),
    layers: options.layerRoot !== undefined,
  };
  const cache = new InformerCache({
    kubeConfig: options.kubeConfig,
    kinds: Controller.watchedKinds(options.engine, scope, options.scheduler !== undefined),
    onEvent,
    logger,
    onRestart: (kind) => metrics.informerRestart(kind.kind),
    ...(options.watchNamespace !== undefined ? { namespace: options.watchNamespace } : {}),
  });
  let hooks: LifecycleHooks | undefined;
  controller = new Controller({
    ...options,
    cache,
    metrics,
    ...(options.runtimeExtension
      ? { hookProgress: (namespace: string, name: string) => hooks?.progressOf(namespace, name) }
      : {}),
  });
  const ctl = controller;
  const newQueue = (concurrency: number) =>
    new KeyedWorkQueue({
      concurrency,
      handler: (key, signal) => ctl.handle(key, signal, requestPublish),
      logger,
      ...backoff,
      onResult: (_key, outcome) => metrics.reconcileTotal(outcome),
    });

  // Set when the runtime starts to stop (leadership lost, or stop()): from then on /readyz and
  // /healthz answer 500, so no probe reports a replica that is on its way out as fine.
  let ending = false;
  let health: HealthServer | undefined;
  if (options.health) {
    health = await startHealthServer({
      port: options.health.port,
      ...(options.health.host ? { host: options.health.host } : {}),
      metrics,
      ready: () => !ending && cache.synced(),
      healthy: () => !ending,
    });
  }
  let extension: ExtensionServer | undefined;
  if (options.runtimeExtension) {
    const settings = options.runtimeExtension;
    const events = new EventRecorder({ sink: options.kube, logger });
    hooks = new LifecycleHooks({
      cache,
      engine: options.engine,
      snapshot: () => ctl.addonSnapshot(),
      isLeader: () => leading,
      readWorkloadObjects: workloadObjectReader(options.kube),
      recordEvents: (intents) => events.record(intents),
      onProgress: requestPublish,
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
    extension = await startExtensionServer({
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
  }
  await cache.start();
  // A scheduler configuration file that changes is read again, and the change published.
  const scheduler = options.scheduler;
  const unwatchScheduler =
    scheduler && 'watch' in scheduler && scheduler.watch ? scheduler.watch(requestPublish) : undefined;

  let resolveDone!: (value: { reason: string }) => void;
  const done = new Promise<{ reason: string }>((resolve) => {
    resolveDone = resolve;
  });
  const startQueues = () => {
    publishQueue = newQueue(1);
    stackQueue = newQueue(options.sourceConcurrency ?? 4);
    metrics.observeQueueDepth(() => (publishQueue?.depth ?? 0) + (stackQueue?.depth ?? 0));
    publishQueue.start();
    stackQueue.start();
    for (const key of ctl.stackKeys()) stackQueue.add(key);
    publishQueue.add(PUBLISH_KEY);
  };
  const stopQueues = async () => {
    const queues = [publishQueue, stackQueue];
    publishQueue = undefined;
    stackQueue = undefined;
    await Promise.all(
      queues.map((queue) => queue?.shutdown({ drain: false, timeoutMs: options.shutdownTimeoutMs ?? 20_000 })),
    );
  };

  let stopped = false;
  let stopping: Promise<void> | undefined;
  /** Stops in order: informers, queues (the reconcile in flight finishes or is abandoned), lease, servers. Once; a second call waits for the first. */
  const shutdown = (reason: string): Promise<void> =>
    (stopping ??= (async () => {
      stopped = true;
      ending = true;
      unwatchScheduler?.();
      await cache.stop();
      await stopQueues();
      await elector?.stop();
      await health?.close();
      await extension?.close();
      hooks?.stop();
      resolveDone({ reason });
    })());
  // The runtime extension's Service points at the leader: written when leading starts, retried until it is.
  const routeExtensionToLeader = async (signal?: AbortSignal): Promise<void> => {
    const route = options.runtimeExtension?.leaderService;
    if (!route || !extension) return;
    const endpoint = { ...route, port: Number(new URL(extension.url).port), portName: 'https' };
    for (let attempt = 0; !stopped && !signal?.aborted; attempt += 1) {
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
          setTimeout(resolve, equalJitterDelay(attempt, backoff)).unref();
        });
      }
    }
  };

  let elector: LeaderElector | undefined;
  metrics.observeLeader(() => leading);
  if (options.leaderElection) {
    const election = options.leaderElection;
    elector = new LeaderElector({
      kubeConfig: options.kubeConfig,
      namespace: election.namespace,
      name: election.name,
      identity: election.identity,
      leaseDurationMs: election.leaseDurationMs ?? 15_000,
      renewDeadlineMs: election.renewDeadlineMs ?? 10_000,
      retryPeriodMs: election.retryPeriodMs ?? 2_000,
      logger,
    });
    void elector
      .run({
        onStartedLeading: async (signal) => {
          leading = true;
          void routeExtensionToLeader(signal);
          await cache.whenSynced(signal).catch(() => undefined);
          if (!signal.aborted) startQueues();
        },
        onStoppedLeading: () => {
          leading = false;
          // Not ready from the moment leadership ends: the lease is being released and everything stops.
          ending = true;
          void stopQueues();
        },
      })
      .then(
        () => 'leadership ended',
        (error: unknown) => `leader election failed: ${errorMessage(error)}`,
      )
      .then((reason) => {
        // Not by stop(): a replica that lost its lease never campaigns again (the elector's rule),
        // so it must not stay alive idle. Everything stops, then `done` tells the process to exit.
        if (stopped) return;
        ending = true;
        logger.error({ reason }, 'Leadership ended: stopping, to exit and be restarted by Kubernetes');
        void shutdown(reason);
      });
  } else {
    void routeExtensionToLeader();
    startQueues();
  }

  return {
    controller: ctl,
    metrics,
    cache,
    ...(health ? { healthUrl: health.url } : {}),
    ...(extension ? { extensionUrl: extension.url } : {}),
    isLeader: () => leading,
    done,
    stop: () => shutdown('stopped'),
  };
}
