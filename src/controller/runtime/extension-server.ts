// The HTTPS endpoint Cluster API's Runtime SDK calls (a "runtime extension"): the discovery hook
// and one handler per lifecycle hook, in the `hooks.runtime.cluster.x-k8s.io/v1alpha1` wire format.
// Paths are Cluster API's GVHToPath: `/<group>/<version>/discovery` and
// `/<group>/<version>/<hook in lowercase>/<handler name>`; every call is a POST of a JSON request
// object answered by the matching `<Hook>Response`. The certificate and key come from files (a
// mounted Secret that cert-manager rotates) and are reloaded when they change. Knows nothing
// about cluster stacks: handlers are given.
import { readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenOn } from './listen.js';

const HOOKS_API_GROUP = 'hooks.runtime.cluster.x-k8s.io';
const HOOKS_API_VERSION = `${HOOKS_API_GROUP}/v1alpha1`;

/** One extension handler: its hook, name (as registered through discovery) and behaviour. */
export interface ExtensionHandler {
  /** e.g. `BeforeClusterUpgrade`. */
  hook: string;
  /** DNS-label style; Cluster API registers it as `<name>.<ExtensionConfig name>`. */
  name: string;
  timeoutSeconds: number;
  failurePolicy: 'Fail' | 'Ignore';
  /** Returns the response fields (status, message, retryAfterSeconds...); apiVersion and kind are added. */
  handle(request: Record<string, unknown>): Promise<Record<string, unknown>>;
}

export interface ExtensionServerOptions {
  port: number;
  host?: string;
  certFile: string;
  keyFile: string;
  handlers: ExtensionHandler[];
  /** How often the certificate files are checked for rotation. Default 60 s. */
  reloadIntervalMs?: number;
  /** Called when a reload fails (the previous certificate stays in use). */
  onReloadError?: (error: Error) => void;
}

export interface ExtensionServer {
  readonly port: number;
  /** `https://host:port`. */
  readonly url: string;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 4 * 1024 * 1024;

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function failure(kind: string, message: string): Record<string, unknown> {
  return { apiVersion: HOOKS_API_VERSION, kind, status: 'Failure', message };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error(`request body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text.trim() === '' ? {} : JSON.parse(text);
}

/** The DiscoveryResponse listing every handler. */
function discoveryResponse(handlers: ExtensionHandler[]): Record<string, unknown> {
  return {
    apiVersion: HOOKS_API_VERSION,
    kind: 'DiscoveryResponse',
    status: 'Success',
    message: '',
    handlers: handlers.map((handler) => ({
      name: handler.name,
      requestHook: { apiVersion: HOOKS_API_VERSION, hook: handler.hook },
      timeoutSeconds: handler.timeoutSeconds,
      failurePolicy: handler.failurePolicy,
    })),
  };
}

async function handle(handlers: ExtensionHandler[], req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'https://localhost').pathname;
  const prefix = `/${HOOKS_API_VERSION}/`;
  if (!path.startsWith(prefix))
    return send(res, 404, failure('Status', `no runtime hook at ${path}; hooks live under ${prefix}`));
  const [hookSegment, nameSegment, ...rest] = path.slice(prefix.length).split('/');
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'POST');
    return send(res, 405, failure('Status', 'runtime hooks are called with POST'));
  }
  if (hookSegment === 'discovery' && nameSegment === undefined) {
    // Drain the (empty) DiscoveryRequest so keep-alive connections stay usable.
    await readJson(req).catch(() => undefined);
    return send(res, 200, discoveryResponse(handlers));
  }
  // Cluster API may append the ExtensionConfig's name to the handler's (`<handler>.<config>`).
  const handler = handlers.find(
    (candidate) =>
      candidate.hook.toLowerCase() === hookSegment &&
      nameSegment !== undefined &&
      rest.length === 0 &&
      (nameSegment === candidate.name || nameSegment.startsWith(`${candidate.name}.`)),
  );
  if (!handler)
    return send(
      res,
      404,
      failure('Status', `no handler at ${path}; discovery (${prefix}discovery) lists the handlers`),
    );
  const responseKind = `${handler.hook}Response`;
  let request: unknown;
  try {
    request = await readJson(req);
  } catch (error) {
    return send(res, 400, failure(responseKind, `the request is not JSON: ${(error as Error).message}`));
  }
  const body = request as Record<string, unknown>;
  if (
    typeof request !== 'object' ||
    request === null ||
    Array.isArray(request) ||
    body['kind'] !== `${handler.hook}Request` ||
    body['apiVersion'] !== HOOKS_API_VERSION
  ) {
    return send(
      res,
      400,
      failure(
        responseKind,
        `expected a ${handler.hook}Request of ${HOOKS_API_VERSION}, got ${JSON.stringify(body?.['kind'] ?? null)} of ${JSON.stringify(body?.['apiVersion'] ?? null)}`,
      ),
    );
  }
  try {
    const answer = await handler.handle(body);
    return send(res, 200, { apiVersion: HOOKS_API_VERSION, kind: responseKind, ...answer });
  } catch (error) {
    // A Failure is what Cluster API understands; it retries and shows the message on the Cluster.
    return send(
      res,
      200,
      failure(responseKind, `the extension failed to handle the hook: ${(error as Error).message}`),
    );
  }
}

function fileStamp(file: string): string {
  const stat = statSync(file);
  return `${stat.mtimeMs}:${stat.size}:${stat.ino}`;
}

/** Starts the HTTPS runtime extension server; resolves once listening. Throws when the certificate or key cannot be read. */
export async function startExtensionServer(options: ExtensionServerOptions): Promise<ExtensionServer> {
  const readPair = () => ({ cert: readFileSync(options.certFile), key: readFileSync(options.keyFile) });
  let stamp = `${fileStamp(options.certFile)}|${fileStamp(options.keyFile)}`;
  const server: Server = createServer({ ...readPair(), minVersion: 'TLSv1.2' }, (req, res) => {
    handle(options.handlers, req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, failure('Status', (error as Error).message));
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5000;
  const reload = setInterval(() => {
    try {
      const next = `${fileStamp(options.certFile)}|${fileStamp(options.keyFile)}`;
      if (next === stamp) return;
      server.setSecureContext(readPair());
      stamp = next;
    } catch (error) {
      options.onReloadError?.(error as Error);
    }
  }, options.reloadIntervalMs ?? 60_000);
  reload.unref();
  await listenOn(server, options.port, options.host, '--runtime-extension-addr').catch((error: unknown) => {
    clearInterval(reload);
    throw error;
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    port: address.port,
    url: `https://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        clearInterval(reload);
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
