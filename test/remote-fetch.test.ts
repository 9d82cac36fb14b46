// The fetch every remote read starts from: undici's own fetch with its own Agent (connect timeout),
// so the pairing holds on every supported Node line (test/run-on-node.sh runs this file on 22 and 24).
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONNECT_TIMEOUT_CODE, createConnectingFetch, defaultRemoteFetch } from '../src/http/remote-fetch.js';

async function body(request: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of request) text += chunk;
  return text;
}

describe('createConnectingFetch', () => {
  let http: Server;
  let silent: ReturnType<typeof createTcpServer>;
  const sockets: Socket[] = [];
  let httpUrl: string;
  let silentPort: number;

  beforeAll(async () => {
    http = createHttpServer(async (request, response) => {
      const received = await body(request);
      response.setHeader('content-type', 'application/json');
      response.setHeader('etag', '"v1"');
      response.end(
        JSON.stringify({ method: request.method, url: request.url, accept: request.headers.accept, received }),
      );
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    httpUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    // Accepts connections and never answers: a TLS handshake to it never completes.
    silent = createTcpServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentPort = (silent.address() as AddressInfo).port;
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    await new Promise((resolve) => http.close(resolve));
  });

  it(`fetches through its own Agent on Node ${process.versions.node}: global Headers, a body and an AbortSignal go in, a Response comes out`, async () => {
    const fetcher = createConnectingFetch(5_000);
    const response = await fetcher(new URL('/releases?page=2', httpUrl), {
      method: 'POST',
      headers: new Headers({ accept: 'application/vnd.github+json' }),
      body: 'hello',
      signal: AbortSignal.timeout(5_000),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('etag')).toBe('"v1"');
    expect(await response.json()).toEqual({
      method: 'POST',
      url: '/releases?page=2',
      accept: 'application/vnd.github+json',
      received: 'hello',
    });
    // The Agent is made once and reused for later requests.
    expect((await fetcher(`${httpUrl}/again`)).ok).toBe(true);
  });

  it('is what a client given no fetch uses: a POST with its content-length goes through once undici is loaded (and Node’s global dispatcher may be its Agent)', async () => {
    // Loading undici makes its Agent Node's global dispatcher when none is set yet; Node 20's own
    // fetch then fails this request (UND_ERR_INVALID_ARG), which is why no client defaults to it.
    await import('undici');
    const response = await defaultRemoteFetch(`${httpUrl}/v2/repo/blobs/uploads/`, {
      method: 'POST',
      headers: { 'content-length': '0' },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ method: 'POST', url: '/v2/repo/blobs/uploads/', received: '' });
  });

  it('gives up on a TLS handshake that is never answered with undici’s connect timeout', async () => {
    const started = Date.now();
    const error = await createConnectingFetch(300)(`https://127.0.0.1:${silentPort}/`).then(
      () => undefined,
      (caught: unknown) => caught as Error & { cause?: { code?: string } },
    );
    expect(error?.cause?.code).toBe(CONNECT_TIMEOUT_CODE);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
