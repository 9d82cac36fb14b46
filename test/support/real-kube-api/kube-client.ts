// A small HTTPS client for a real API server, authenticated by a client certificate: just the
// REST calls the tests make (the product's own client is @kubernetes/client-node, used through a
// kubeconfig; this one stays independent of it).
import { Agent, request } from 'node:https';

interface KubeResponse {
  status: number;
  /** The parsed JSON body (undefined for an empty or non-JSON body). */
  body: any;
  text: string;
}

interface KubeRequest {
  /** Query parameters, e.g. { dryRun: 'All', fieldValidation: 'Strict' }. */
  query?: Record<string, string>;
  body?: unknown;
  /** Default: application/json; server-side apply takes application/apply-patch+yaml. */
  contentType?: string;
  /** Default: application/json; aggregated discovery is asked for by its own media type. */
  accept?: string;
}

export interface KubeClient {
  server: string;
  request(method: string, path: string, options?: KubeRequest): Promise<KubeResponse>;
  /** GET that must answer 200; throws with the server's message otherwise. */
  get(path: string): Promise<any>;
  /**
   * Watches the collection at `path` (`query` adds resourceVersion, timeoutSeconds, ...): calls
   * `onEvent` with each event as it arrives; resolves true once `onEvent` returned true (the watch
   * is closed then), false when the server ended the watch first.
   */
  watch(path: string, query: Record<string, string>, onEvent: (event: WatchEvent) => boolean): Promise<boolean>;
}

/** One line of a watch: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (then `object` is a Status). */
interface WatchEvent {
  type: string;
  object: any;
}

/** A client for `server` (https://127.0.0.1:<port>) trusting `ca`, as the user of `cert`/`key`. */
export function kubeClient(server: string, credentials: { ca: string; cert: string; key: string }): KubeClient {
  const agent = new Agent({
    ca: credentials.ca,
    cert: credentials.cert,
    key: credentials.key,
    keepAlive: true,
    maxSockets: 8,
  });
  const call = (method: string, path: string, options: KubeRequest = {}): Promise<KubeResponse> => {
    const url = new URL(path, server);
    for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
    const payload =
      options.body === undefined
        ? undefined
        : typeof options.body === 'string'
          ? options.body
          : JSON.stringify(options.body);
    return new Promise((resolve, reject) => {
      const outgoing = request(
        url,
        {
          method,
          agent,
          headers: {
            accept: options.accept ?? 'application/json',
            ...(payload === undefined
              ? {}
              : {
                  'content-type': options.contentType ?? 'application/json',
                  'content-length': Buffer.byteLength(payload),
                }),
          },
        },
        (incoming) => {
          const chunks: Buffer[] = [];
          incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
          incoming.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: any;
            try {
              body = text ? JSON.parse(text) : undefined;
            } catch {
              body = undefined;
            }
            resolve({ status: incoming.statusCode ?? 0, body, text });
          });
          incoming.on('error', reject);
        },
      );
      outgoing.setTimeout(30_000, () => outgoing.destroy(new Error(`${method} ${url.pathname}: no answer in 30s`)));
      outgoing.on('error', reject);
      outgoing.end(payload);
    });
  };
  const watch = (path: string, query: Record<string, string>, onEvent: (event: WatchEvent) => boolean) => {
    const url = new URL(path, server);
    for (const [key, value] of Object.entries({ ...query, watch: 'true' })) url.searchParams.set(key, value);
    return new Promise<boolean>((resolve, reject) => {
      const outgoing = request(url, { agent, headers: { accept: 'application/json' } }, (incoming) => {
        if (incoming.statusCode !== 200) {
          incoming.resume();
          reject(new Error(`watch ${url.pathname}: ${incoming.statusCode}`));
          return;
        }
        let buffer = '';
        incoming.on('data', (chunk: Buffer) => {
          buffer += chunk.toString('utf8');
          let newline: number;
          while ((newline = buffer.indexOf('\n')) >= 0) {
            const line = buffer.slice(0, newline);
            buffer = buffer.slice(newline + 1);
            if (line.trim() && onEvent(JSON.parse(line) as WatchEvent)) {
              resolve(true);
              outgoing.destroy();
              return;
            }
          }
        });
        incoming.on('end', () => resolve(false));
        incoming.on('error', reject);
      });
      // The server ends a watch at its timeoutSeconds; this only ends one whose server went silent.
      outgoing.setTimeout(60_000, () => outgoing.destroy(new Error(`watch ${url.pathname}: silent for 60s`)));
      outgoing.on('error', reject);
      outgoing.end();
    });
  };
  return {
    server,
    request: call,
    watch,
    async get(path) {
      const response = await call('GET', path);
      if (response.status !== 200)
        throw new Error(`GET ${path}: ${response.status} ${response.body?.message ?? response.text}`);
      return response.body;
    },
  };
}
