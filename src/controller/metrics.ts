// Controller metrics in the Prometheus text exposition format (version 0.0.4). Hand-written: the
// controller needs counters, gauges read from callbacks and two histograms, nothing more.
import type { ControllerMetrics } from './runtime-contract.js';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Record<string, string>;

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatLabels(labels: Labels): string {
  const entries = Object.entries(labels);
  return entries.length === 0 ? '' : `{${entries.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function header(name: string, help: string, type: string): string {
  return `# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n# TYPE ${name} ${type}\n`;
}

/** A metric family that can write itself in the text format. */
interface Collector {
  render(): string;
}

/** A monotonically increasing count, optionally split by labels. */
export class Counter implements Collector {
  private readonly values = new Map<string, { labels: Labels; value: number }>();

  constructor(readonly name: string, private readonly help: string, initial: Labels[] = []) {
    for (const labels of initial) this.inc(labels, 0);
  }

  inc(labels: Labels = {}, by = 1): void {
    if (by < 0) throw new Error(`counter ${this.name} cannot decrease`);
    const key = formatLabels(labels);
    const series = this.values.get(key) ?? { labels, value: 0 };
    series.value += by;
    this.values.set(key, series);
  }

  value(labels: Labels = {}): number {
    return this.values.get(formatLabels(labels))?.value ?? 0;
  }

  render(): string {
    let out = header(this.name, this.help, 'counter');
    for (const [key, series] of [...this.values].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) out += `${this.name}${key} ${formatValue(series.value)}\n`;
    return out;
  }
}

/** A value read when scraped, from a callback. */
export class CallbackGauge implements Collector {
  constructor(readonly name: string, private readonly help: string, private read: () => number = () => 0) {}

  /** Replaces the callback (the queue or the elector may be created after the metrics). */
  observe(read: () => number): void {
    this.read = read;
  }

  render(): string {
    let value: number;
    try {
      value = this.read();
    } catch {
      value = NaN;
    }
    return `${header(this.name, this.help, 'gauge')}${this.name} ${formatValue(value)}\n`;
  }
}

/** Observations counted into cumulative buckets, with their sum and count. */
export class Histogram implements Collector {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(readonly name: string, private readonly help: string, private readonly buckets: readonly number[]) {
    const sorted = [...buckets].sort((a, b) => a - b);
    if (sorted.some((b, i) => b !== buckets[i]) || new Set(buckets).size !== buckets.length) throw new Error(`histogram ${name}: buckets must be strictly increasing`);
    this.counts = buckets.map(() => 0);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    this.sum += value;
    this.count += 1;
    for (let i = 0; i < this.buckets.length; i++) if (value <= (this.buckets[i] as number)) this.counts[i] = (this.counts[i] as number) + 1;
  }

  render(): string {
    let out = header(this.name, this.help, 'histogram');
    this.buckets.forEach((bound, i) => {
      out += `${this.name}_bucket${formatLabels({ le: formatValue(bound) })} ${this.counts[i]}\n`;
    });
    out += `${this.name}_bucket{le="+Inf"} ${this.count}\n`;
    out += `${this.name}_sum ${formatValue(this.sum)}\n${this.name}_count ${this.count}\n`;
    return out;
  }
}

const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const RECONCILE_RESULTS = ['success', 'error', 'requeue'] as const;
const REMOTE_KINDS = ['github', 'oci', 'git'] as const;
const REMOTE_OUTCOMES = ['ok', 'error'] as const;

/** The controller's metrics; `render()` is what /metrics serves. */
export class PrometheusMetrics implements ControllerMetrics {
  readonly reconciles = new Counter('clusterstack_reconcile_total', 'Reconciles by result.', RECONCILE_RESULTS.map((result) => ({ result })));
  readonly reconcileErrors = new Counter('clusterstack_reconcile_errors_total', 'Reconciles that failed.', [{}]);
  readonly queueDepth = new CallbackGauge('clusterstack_workqueue_depth', 'Keys waiting in the work queue.');
  readonly renderSeconds = new Histogram('clusterstack_render_duration_seconds', 'Time to render manifests.', DURATION_BUCKETS);
  readonly publishSeconds = new Histogram('clusterstack_publish_duration_seconds', 'Time to publish rendered manifests.', DURATION_BUCKETS);
  readonly helmProcessCount = new Counter('clusterstack_helm_processes_total', 'helm processes started.', [{}]);
  readonly remoteRequests = new Counter(
    'clusterstack_remote_requests_total',
    'Requests to GitHub, OCI registries and Git remotes by outcome.',
    REMOTE_KINDS.flatMap((kind) => REMOTE_OUTCOMES.map((outcome) => ({ kind, outcome }))),
  );
  readonly leader = new CallbackGauge('clusterstack_leader', '1 while this replica holds the leader lease.');
  readonly informerRestarts = new Counter('clusterstack_informer_restarts_total', 'Watches restarted after an error, by kind.');

  private readonly collectors: Collector[] = [
    this.reconciles,
    this.reconcileErrors,
    this.queueDepth,
    this.renderSeconds,
    this.publishSeconds,
    this.helmProcessCount,
    this.remoteRequests,
    this.leader,
    this.informerRestarts,
  ];

  reconcileTotal(result: 'success' | 'error' | 'requeue'): void {
    this.reconciles.inc({ result });
    if (result === 'error') this.reconcileErrors.inc();
  }

  renderDuration(seconds: number): void {
    this.renderSeconds.observe(seconds);
  }

  publishDuration(seconds: number): void {
    this.publishSeconds.observe(seconds);
  }

  helmProcesses(count: number): void {
    this.helmProcessCount.inc({}, count);
  }

  remoteRequest(kind: 'github' | 'oci' | 'git', outcome: 'ok' | 'error'): void {
    this.remoteRequests.inc({ kind, outcome });
  }

  /** Reads the queue depth at scrape time. */
  observeQueueDepth(read: () => number): void {
    this.queueDepth.observe(read);
  }

  /** Reads leadership at scrape time. */
  observeLeader(read: () => boolean): void {
    this.leader.observe(() => (read() ? 1 : 0));
  }

  informerRestart(kind: string): void {
    this.informerRestarts.inc({ kind });
  }

  /** Every metric in the Prometheus text format. */
  render(): string {
    return this.collectors.map((c) => c.render()).join('');
  }
}
