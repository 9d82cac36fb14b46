// The probe and metrics endpoint kubelet and Prometheus call: /healthz, /readyz, /metrics.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenOn } from './listen.js';
import { PROMETHEUS_CONTENT_TYPE } from './metrics.js';

export interface HealthServerOptions {
  /** 0 picks a free port (tests). */
  port: number;
  /** Defaults to all interfaces: kubelet probes the pod IP. */
  host?: string;
  /** What /metrics serves, in the Prometheus text format (prom-client renders asynchronously). */
  metrics: { render(): string | Promise<string> };
  /**
   * /readyz: true once the informers have synced. Leadership is not part of it: a standby replica
   * with warm caches is ready (it can take over at once), and gating on leadership would take the
   * standby out of the Service and make rollouts wait forever for the second pod.
   */
  ready: () => boolean;
  /** /healthz: false only when the process is wedged and a restart would help. */
  healthy: () => boolean;
}

export interface HealthServer {
  readonly port: number;
  /** `http://host:port`, for tests and logs. */
  readonly url: string;
  close(): Promise<void>;
}

function probe(res: ServerResponse, ok: boolean, head: boolean): void {
  res.writeHead(ok ? 200 : 500, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(head ? undefined : ok ? 'ok\n' : 'not ok\n');
}

function handle(options: HealthServerOptions, req: IncomingMessage, res: ServerResponse): void {
  const method = req.method ?? 'GET';
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (method !== 'GET' && method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('method not allowed\n');
    return;
  }
  const head = method === 'HEAD';
  // A probe callback that throws means "not ok", never a crashed server.
  const safely = (check: () => boolean) => {
    try {
      return check();
    } catch {
      return false;
    }
  };
  switch (path) {
    case '/healthz':
    case '/livez':
      return probe(res, safely(options.healthy), head);
    case '/readyz':
      return probe(res, safely(options.ready), head);
    case '/metrics':
      // A render that fails (or throws at once) is a 500 for this scrape, never a crashed server.
      Promise.resolve()
        .then(() => options.metrics.render())
        .then(
          (body) => {
            res.writeHead(200, { 'Content-Type': PROMETHEUS_CONTENT_TYPE, 'Cache-Control': 'no-store' });
            res.end(head ? undefined : body);
          },
          (error: unknown) => {
            res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
            res.end(`metrics failed: ${(error as Error).message}\n`);
          },
        );
      return;
    default:
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('not found\n');
  }
}

/** Serves /healthz, /readyz and /metrics; resolves once listening. */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server = createServer((req, res) => handle(options, req, res));
  // Probes are short; do not let idle keep-alive sockets hold close() up.
  server.keepAliveTimeout = 5000;
  await listenOn(server, options.port, options.host, '--metrics-addr');
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    port: address.port,
    url: `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
