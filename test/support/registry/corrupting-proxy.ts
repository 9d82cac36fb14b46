// A reverse proxy in front of a test registry that flips a byte in the blobs it is told to corrupt:
// what a broken cache, disk or middlebox does, and what digest checks must catch.
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CorruptingProxy {
  /** `127.0.0.1:<port>` */
  host: string;
  /** Blob paths that were served corrupted. */
  corrupted: string[];
  close(): Promise<void>;
}

/** Proxies to `target` (`host:port`); GET responses for paths `shouldCorrupt` accepts get their first byte inverted. */
export async function startCorruptingProxy(
  target: string,
  shouldCorrupt: (path: string) => boolean,
): Promise<CorruptingProxy> {
  const [targetHost, targetPort] = target.split(':');
  const corrupted: string[] = [];
  const server = createServer((incoming, outgoing) => {
    const upstream = httpRequest(
      {
        host: targetHost,
        port: Number(targetPort),
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (answer) => {
        const path = (incoming.url ?? '').split('?')[0] ?? '';
        if (incoming.method !== 'GET' || answer.statusCode !== 200 || !shouldCorrupt(path)) {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
          return;
        }
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const body = Buffer.concat(chunks);
          if (body.length > 0) body[0] = (body[0] ?? 0) ^ 0xff;
          corrupted.push(path);
          outgoing.writeHead(200, answer.headers);
          outgoing.end(body);
        });
      },
    );
    upstream.on('error', () => {
      outgoing.writeHead(502);
      outgoing.end();
    });
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    corrupted,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
