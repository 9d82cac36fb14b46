// The controller's Prometheus metrics, on prom-client (the ecosystem's client: exposition format,
// escaping, histogram buckets and Node's process metrics are its job, not ours). Each runtime has
// its own Registry rather than prom-client's global one, so two runtimes in one process (tests, a
// library user) never share or collide on series.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ControllerMetrics } from './runtime-contract.js';

/** The Content-Type of `render()`'s text: Prometheus text exposition format 0.0.4. */
export const PROMETHEUS_CONTENT_TYPE: string = Registry.PROMETHEUS_CONTENT_TYPE;

const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const RECONCILE_RESULTS = ['success', 'error', 'requeue'] as const;
const REMOTE_KINDS = ['github', 'oci', 'git'] as const;
const REMOTE_OUTCOMES = ['ok', 'error'] as const;
/** The lifecycle hooks a runtime extension serves, and what an answer can be. */
const HOOKS = ['BeforeClusterUpgrade', 'AfterControlPlaneInitialized', 'AfterClusterUpgrade'] as const;
const HOOK_OUTCOMES = ['ready', 'waiting', 'timed-out', 'not-ours', 'standby'] as const;

type ReconcileResult = (typeof RECONCILE_RESULTS)[number];

/** A gauge's collect(): the value read at scrape time; a reader that throws shows NaN instead of failing the scrape. */
function atScrape(read: () => number): (this: Gauge) => void {
  return function (this: Gauge) {
    let value: number;
    try {
      value = read();
    } catch {
      value = NaN;
    }
    this.set(value);
  };
}

export interface PrometheusMetricsOptions {
  /** Node's process metrics (CPU, memory, event loop lag, GC, handles), prefixed `process_`/`nodejs_`. Default true. */
  processMetrics?: boolean;
}

/** The controller's metrics; `render()` is what /metrics serves. */
export class PrometheusMetrics implements ControllerMetrics {
  readonly registry = new Registry();

  private readonly reconcileCounter = new Counter({
    name: 'clusterstack_reconcile_total',
    help: 'Reconciles by result.',
    labelNames: ['result'],
    registers: [this.registry],
  });
  private readonly reconcileErrors = new Counter({
    name: 'clusterstack_reconcile_errors_total',
    help: 'Reconciles that failed.',
    registers: [this.registry],
  });
  private readQueueDepth: () => number = () => 0;
  private readLeader: () => number = () => 0;
  private readonly queueDepth = new Gauge({
    name: 'clusterstack_workqueue_depth',
    help: 'Keys waiting in the work queue.',
    registers: [this.registry],
    collect: atScrape(() => this.readQueueDepth()),
  });
  private readonly renderSeconds = new Histogram({
    name: 'clusterstack_render_duration_seconds',
    help: 'Time to render manifests.',
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  private readonly publishSeconds = new Histogram({
    name: 'clusterstack_publish_duration_seconds',
    help: 'Time to publish rendered manifests.',
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  private readonly helmProcessCount = new Counter({
    name: 'clusterstack_helm_processes_total',
    help: 'helm processes started.',
    registers: [this.registry],
  });
  private readonly remoteRequests = new Counter({
    name: 'clusterstack_remote_requests_total',
    help: 'Requests to GitHub, OCI registries and Git remotes by outcome.',
    labelNames: ['kind', 'outcome'],
    registers: [this.registry],
  });
  private readonly leader = new Gauge({
    name: 'clusterstack_leader',
    help: '1 while this replica holds the leader lease.',
    registers: [this.registry],
    collect: atScrape(() => this.readLeader()),
  });
  private readonly hookResponses = new Counter({
    name: 'clusterstack_lifecycle_hook_responses_total',
    help: 'Cluster API lifecycle hook calls answered, by hook and outcome (ready, waiting, timed-out, not-ours; standby: answered by a replica that does not lead).',
    labelNames: ['hook', 'outcome'],
    registers: [this.registry],
  });
  private readonly hookSeconds = new Histogram({
    name: 'clusterstack_lifecycle_hook_duration_seconds',
    help: 'Time to answer a Cluster API lifecycle hook call, by hook.',
    labelNames: ['hook'],
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  private readonly informerRestarts = new Counter({
    name: 'clusterstack_informer_restarts_total',
    help: 'Watches restarted after an error, by kind.',
    labelNames: ['kind'],
    registers: [this.registry],
  });

  // prom-client reads values asynchronously; the runtime and its tests need the reconcile counts
  // at once (to wait for a settled reconcile), so they are also kept here.
  private readonly reconcileCounts: Record<ReconcileResult, number> = { success: 0, error: 0, requeue: 0 };

  /** Reconciles by result, read synchronously in-process. */
  readonly reconciles = { value: (labels: { result: ReconcileResult }): number => this.reconcileCounts[labels.result] };

  constructor(options: PrometheusMetricsOptions = {}) {
    // Every labelled series the controller can write exists from the start (at 0), so rate() and
    // alerts see a series before the first event.
    for (const result of RECONCILE_RESULTS) this.reconcileCounter.inc({ result }, 0);
    for (const kind of REMOTE_KINDS)
      for (const outcome of REMOTE_OUTCOMES) this.remoteRequests.inc({ kind, outcome }, 0);
    for (const hook of HOOKS) for (const outcome of HOOK_OUTCOMES) this.hookResponses.inc({ hook, outcome }, 0);
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** Counts one reconcile by its result (errors also in clusterstack_reconcile_errors_total). */
  reconcileTotal(result: ReconcileResult): void {
    this.reconcileCounter.inc({ result });
    this.reconcileCounts[result] += 1;
    if (result === 'error') this.reconcileErrors.inc();
  }

  /** Records how long one render took. */
  renderDuration(seconds: number): void {
    if (Number.isFinite(seconds)) this.renderSeconds.observe(seconds);
  }

  /** Records how long one publish took. */
  publishDuration(seconds: number): void {
    if (Number.isFinite(seconds)) this.publishSeconds.observe(seconds);
  }

  /** Adds the helm processes a render started. */
  helmProcesses(count: number): void {
    if (count > 0) this.helmProcessCount.inc(count);
  }

  /** Counts one request to a remote (GitHub, an OCI registry, a Git remote) by outcome. */
  remoteRequest(kind: 'github' | 'oci' | 'git', outcome: 'ok' | 'error'): void {
    this.remoteRequests.inc({ kind, outcome });
  }

  /** Reads the queue depth at scrape time. */
  observeQueueDepth(read: () => number): void {
    this.readQueueDepth = read;
  }

  /** Reads leadership at scrape time. */
  observeLeader(read: () => boolean): void {
    this.readLeader = () => (read() ? 1 : 0);
  }

  /** Counts one lifecycle hook answer and how long it took. */
  hookResponse(hook: string, outcome: string, seconds: number): void {
    this.hookResponses.inc({ hook, outcome });
    if (Number.isFinite(seconds)) this.hookSeconds.observe({ hook }, seconds);
  }

  /** Counts one watch restarted after an error. */
  informerRestart(kind: string): void {
    this.informerRestarts.inc({ kind });
  }

  /** Every metric in the Prometheus text format (PROMETHEUS_CONTENT_TYPE). */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
