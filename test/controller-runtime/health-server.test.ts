import { afterEach, describe, expect, it } from 'vitest';
import { startHealthServer, type HealthServer } from '../../src/controller/health-server.js';
import { PrometheusMetrics } from '../../src/controller/metrics.js';

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

  it('escapes label values', () => {
    const metrics = new PrometheusMetrics();
    metrics.informerRestart('we"ird\\kind\nname');
    expect(metrics.render()).toContain('clusterstack_informer_restarts_total{kind="we\\"ird\\\\kind\\nname"} 1\n');
  });
});
