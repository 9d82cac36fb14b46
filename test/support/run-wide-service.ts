// One service for a whole vitest run, from a global setup. Vitest runs a global setup once per project
// (vitest.config.ts has one per helm, the shared workers and the rest, all extending the root), so a
// service started by each call would run once per project: the first call starts it, every call counts
// as a user, and the last project's teardown stops it. Kept on globalThis under a Symbol.for key, as
// each project may load this module anew.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A started service: where workers reach it, and how to stop it. */
export interface RunWideService {
  url: string;
  stop(): Promise<void>;
}

interface Shared {
  started: Promise<RunWideService>;
  /** Projects whose teardown has not run yet. */
  users: number;
}

/**
 * The run's one service under `key`, started by `start` on the first call; resolves with its URL and
 * this project's teardown, which stops the service once every project that asked has torn down.
 */
export async function runWideService(
  key: string,
  start: () => Promise<RunWideService>,
): Promise<{ url: string; teardown: () => Promise<void> }> {
  const symbol = Symbol.for(key);
  const holder = globalThis as { [symbol: symbol]: Shared | undefined };
  const shared = (holder[symbol] ??= { started: start(), users: 0 });
  shared.users++;
  const { url, stop } = await shared.started;
  return {
    url,
    teardown: async () => {
      shared.users--;
      if (shared.users > 0) return;
      delete holder[symbol];
      await stop();
    },
  };
}

/**
 * Serves `handle` on a loopback port, where workers reach a run-wide service; a request whose handler
 * throws is answered 500 with the error. `close` stops listening and drops open connections.
 */
export async function serveOnLoopback(
  handle: (request: IncomingMessage, response: ServerResponse) => Promise<void>,
): Promise<{ url: string; close: () => void }> {
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(String((error as Error).stack ?? error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}
