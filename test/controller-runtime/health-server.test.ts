import { createServer, type AddressInfo } from 'node:net';
import { register as globalRegistry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { Failure } from '../../src/core/failure.js';
import { startHealthServer, type HealthServer } from '../../src/controller/runtime/health-server.js';
import { PrometheusMetrics } from '../../src/controller/runtime/metrics.js';

/** Sample lines of a Prometheus text exposition as `name{labels}` -> value. */
function samples(text: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    map.set(match[1] as string, Number(match[2] === '+Inf' ? Infinity : match[2]));
  }
  return map;
}

interface Family {
  type: string;
  help: string;
  samples: { name: string; labels: Record<string, string>; value: number }[];
}

/**
 * A whole Prometheus text exposition, checked as a scraper reads it: every family has one HELP and
 * one TYPE before its samples, every sample belongs to the family above it (histograms and
 * summaries through their _bucket/_sum/_count series), label values are well-escaped.
 */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  let current: string | undefined;
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue; // prom-client puts a blank line between families; the format ignores it
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (comment) {
      const [, what, name, rest] = comment as unknown as [string, string, string, string];
      const family = families.get(name) ?? { type: '', help: '', samples: [] };
      if (what === 'HELP') {
        expect(family.help, `second HELP for ${name}`).toBe('');
        family.help = rest;
      } else {
        expect(family.type, `second TYPE for ${name}`).toBe('');
        expect(['counter', 'gauge', 'histogram', 'summary', 'untyped']).toContain(rest);
        family.type = rest;
      }
      families.set(name, family);
      current = name;
      continue;
    }
    const sample =
      /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\["\\n])*",?)*)\})? (\S+)$/.exec(line);
    if (!sample) throw new Error(`not a sample line: ${line}`);
    const [, name, labelText, value] = sample as unknown as [string, string, string | undefined, string];
    const family = current === undefined ? undefined : families.get(current);
    if (!family || current === undefined) throw new Error(`sample before any TYPE: ${line}`);
    const suffixes =
      family.type === 'histogram'
        ? ['_bucket', '_sum', '_count']
        : family.type === 'summary'
          ? ['', '_sum', '_count']
          : [''];
    expect(
      suffixes.map((suffix) => `${current}${suffix}`),
      line,
    ).toContain(name);
    const labels = Object.fromEntries(
      [...(labelText ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\["\\n])*)"/g)].map(([, key, raw]) => [
        key!,
        raw!,
      ]),
    );
    const number = value === '+Inf' ? Infinity : value === '-Inf' ? -Infinity : Number(value);
    // Prometheus reads floats with Go's ParseFloat, which ignores case: prom-client writes `Nan`.
    expect(/^nan$/i.test(value) || !Number.isNaN(number), line).toBe(true);
    family.samples.push({ name, labels, value: number });
  }
  return families;
}

describe('health server and metrics', () => {
  let server: HealthServer | undefined;

  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('serves the controller metrics in the Prometheus text format', async () => {
    const metrics = new PrometheusMetrics();
    let depth = 3;
    let leading = false;
    metrics.observeQueueDepth(() => depth);
    metrics.observeLeader(() => leading);
    metrics.reconcileTotal('success');
    metrics.reconcileTotal('success');
    metrics.reconcileTotal('error');
    metrics.renderDuration(0.07);
    metrics.renderDuration(3);
    metrics.publishDuration(0.4);
    metrics.helmProcesses(4);
    metrics.remoteRequest('github', 'ok');
    metrics.remoteRequest('oci', 'error');
    metrics.informerRestart('ClusterStack');
    server = await startHealthServer({ port: 0, host: '127.0.0.1', metrics, ready: () => true, healthy: () => true });

    const response = await fetch(`${server.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await response.text();
    expect(text).toContain('# TYPE clusterstack_reconcile_total counter\n');
    expect(text).toContain('# TYPE clusterstack_render_duration_seconds histogram\n');
    expect(text).toContain('# TYPE clusterstack_workqueue_depth gauge\n');
    const values = samples(text);
    expect(values.get('clusterstack_reconcile_total{result="success"}')).toBe(2);
    expect(values.get('clusterstack_reconcile_total{result="error"}')).toBe(1);
    expect(values.get('clusterstack_reconcile_total{result="requeue"}')).toBe(0);
    expect(values.get('clusterstack_reconcile_errors_total')).toBe(1);
    expect(values.get('clusterstack_workqueue_depth')).toBe(3);
    expect(values.get('clusterstack_leader')).toBe(0);
    expect(values.get('clusterstack_helm_processes_total')).toBe(4);
    expect(values.get('clusterstack_remote_requests_total{kind="github",outcome="ok"}')).toBe(1);
    expect(values.get('clusterstack_remote_requests_total{kind="oci",outcome="error"}')).toBe(1);
    expect(values.get('clusterstack_remote_requests_total{kind="git",outcome="ok"}')).toBe(0);
    expect(values.get('clusterstack_informer_restarts_total{kind="ClusterStack"}')).toBe(1);
    // Histogram buckets are cumulative and end in +Inf = count.
    expect(values.get('clusterstack_render_duration_seconds_bucket{le="0.05"}')).toBe(0);
    expect(values.get('clusterstack_render_duration_seconds_bucket{le="0.1"}')).toBe(1);
    expect(values.get('clusterstack_render_duration_seconds_bucket{le="2.5"}')).toBe(1);
    expect(values.get('clusterstack_render_duration_seconds_bucket{le="5"}')).toBe(2);
    expect(values.get('clusterstack_render_duration_seconds_bucket{le="+Inf"}')).toBe(2);
    expect(values.get('clusterstack_render_duration_seconds_count')).toBe(2);
    expect(values.get('clusterstack_render_duration_seconds_sum')).toBeCloseTo(3.07);
    expect(values.get('clusterstack_publish_duration_seconds_count')).toBe(1);

    // Gauges are read at scrape time.
    depth = 0;
    leading = true;
    const again = samples(await (await fetch(`${server.url}/metrics`)).text());
    expect(again.get('clusterstack_workqueue_depth')).toBe(0);
    expect(again.get('clusterstack_leader')).toBe(1);
  });

  it('answers the probes from the callbacks', async () => {
    let ready = false;
    let healthy = true;
    server = await startHealthServer({
      port: 0,
      host: '127.0.0.1',
      metrics: new PrometheusMetrics(),
      ready: () => ready,
      healthy: () => {
        if (!healthy) throw new Error('wedged');
        return true;
      },
    });
    const status = async (path: string, method = 'GET') => (await fetch(`${server?.url}${path}`, { method })).status;
    expect(await status('/healthz')).toBe(200);
    expect(await status('/readyz')).toBe(500);
    ready = true;
    expect(await status('/readyz')).toBe(200);
    expect(await status('/readyz', 'HEAD')).toBe(200);
    healthy = false;
    expect(await status('/healthz')).toBe(500);
    expect(await status('/nope')).toBe(404);
    expect(await status('/metrics', 'POST')).toBe(405);
  });

  it('escapes label values', async () => {
    const metrics = new PrometheusMetrics();
    metrics.informerRestart('we"ird\\kind\nname');
    expect(await metrics.render()).toContain(
      'clusterstack_informer_restarts_total{kind="we\\"ird\\\\kind\\nname"} 1\n',
    );
  });

  it('serves a well-formed exposition with our families and the process metrics, on its own registry', async () => {
    const metrics = new PrometheusMetrics();
    metrics.observeQueueDepth(() => {
      throw new Error('queue gone');
    });
    metrics.informerRestart('Cluster');
    server = await startHealthServer({ port: 0, host: '127.0.0.1', metrics, ready: () => true, healthy: () => true });
    const response = await fetch(`${server.url}/metrics`);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const families = parseExposition(await response.text());

    const ours = [...families].filter(([name]) => name.startsWith('clusterstack_'));
    expect(Object.fromEntries(ours.map(([name, family]) => [name, family.type]))).toEqual({
      clusterstack_reconcile_total: 'counter',
      clusterstack_reconcile_errors_total: 'counter',
      clusterstack_workqueue_depth: 'gauge',
      clusterstack_render_duration_seconds: 'histogram',
      clusterstack_publish_duration_seconds: 'histogram',
      clusterstack_helm_processes_total: 'counter',
      clusterstack_remote_requests_total: 'counter',
      clusterstack_leader: 'gauge',
      clusterstack_informer_restarts_total: 'counter',
      clusterstack_lifecycle_hook_responses_total: 'counter',
      clusterstack_lifecycle_hook_duration_seconds: 'histogram',
    });
    for (const [name, family] of ours) expect(family.help, name).not.toBe('');
    // Every labelled series exists from the start; a reader that throws is NaN, not a failed scrape.
    expect(
      families
        .get('clusterstack_remote_requests_total')!
        .samples.map((sample) => `${sample.labels.kind}/${sample.labels.outcome}=${sample.value}`)
        .sort(),
    ).toEqual(['git/error=0', 'git/ok=0', 'github/error=0', 'github/ok=0', 'oci/error=0', 'oci/ok=0']);
    expect(families.get('clusterstack_workqueue_depth')!.samples).toEqual([
      { name: 'clusterstack_workqueue_depth', labels: {}, value: NaN },
    ]);
    expect(families.get('clusterstack_informer_restarts_total')!.samples).toEqual([
      { name: 'clusterstack_informer_restarts_total', labels: { kind: 'Cluster' }, value: 1 },
    ]);
    expect(
      families
        .get('clusterstack_render_duration_seconds')!
        .samples.filter((sample) => sample.name.endsWith('_bucket'))
        .map((sample) => sample.labels.le),
    ).toEqual(['0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '30', '60', '120', '300', '+Inf']);

    // Node's process metrics, as every Node service exports them.
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(families.get(name)?.samples.length, name).toBeGreaterThan(0);
    }
    expect(families.get('process_resident_memory_bytes')!.samples[0]!.value).toBeGreaterThan(0);

    // A registry per runtime: nothing lands in prom-client's global one, and two runtimes do not collide.
    expect(globalRegistry.getMetricsAsArray()).toEqual([]);
    const other = new PrometheusMetrics({ processMetrics: false });
    other.reconcileTotal('error');
    expect(metrics.reconciles.value({ result: 'error' })).toBe(0);
    expect(other.reconciles.value({ result: 'error' })).toBe(1);
    expect(await other.render()).not.toContain('process_cpu_user_seconds_total');
  });

  it('answers 500 for a scrape whose metrics fail, and keeps serving', async () => {
    let fail = true;
    server = await startHealthServer({
      port: 0,
      host: '127.0.0.1',
      metrics: { render: async () => (fail ? Promise.reject(new Error('collector broke')) : '# nothing\n') },
      ready: () => true,
      healthy: () => true,
    });
    const failed = await fetch(`${server.url}/metrics`);
    expect(failed.status).toBe(500);
    expect(await failed.text()).toBe('metrics failed: collector broke\n');
    fail = false;
    expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
  });

  it('says which flag to change when its address is taken or may not be bound, as a setting to fix (exit 1), not a bug', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    const start = (host: string, at: number) =>
      startHealthServer({ port: at, host, metrics: { render: () => '' }, ready: () => true, healthy: () => true });
    try {
      const inUse = await start('127.0.0.1', port).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(inUse).toBeInstanceOf(Failure);
      expect((inUse as Failure).exitCode).toBe(1);
      expect((inUse as Failure).message).toBe(
        `cannot listen on 127.0.0.1:${port} (--metrics-addr): the address is already in use; choose another address with --metrics-addr, or stop what listens there`,
      );
      // An address no interface of this machine has (TEST-NET-1, RFC 5737).
      await expect(start('192.0.2.1', 0)).rejects.toThrow(
        'cannot listen on 192.0.2.1:0 (--metrics-addr): no network interface of this machine has that address',
      );
    } finally {
      taken.close();
    }
  });
});
