// Every remote read ends: a server that sends its headers and then one byte a second, or never
// finishes a TLS handshake, fails within the configured time with exit code 3 (retry later), and
// nothing is written. The time is the remote's: from its first request (or connection) to the
// client's giving up, as the server saw it. The run around it (reading the inputs before, the report
// after) is not what the deadline bounds, and on a loaded machine it took seconds of its own.
import { readdir } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyExampleReleasesAsArchives, EXAMPLE_MANIFESTS, runClusterstack, tempDir } from '../support/cli.js';
import { type FakeGitHub, startFakeGitHub } from '../support/fake-github/index.js';

const LIMITS = ['--remote-timeout', '2s', '--read-timeout', '1500ms', '--connect-timeout', '500ms'];

/** The limit the remote's part of a run must end within: the 2 s deadline, and room for a loaded machine's lag. */
const GIVEN_UP_MS = 8_000;

/** A request or connection as the server saw it (performance.now() ms; `closedAt` unset while open). */
interface Opened {
  startedAt: number;
  closedAt?: number;
}

/**
 * From the first of `opened` to the last closing: how long the client kept at the remote. Waits
 * for the server to see every one closed (the client's closing reaches it a moment after the run
 * returns); the limit only stops a stuck test. None opened is 0: the client gave up before the slow
 * server had its request (at load 40 the 2 s went by before it was sent; the message still names
 * the deadline).
 */
async function heldOpenMs(opened: () => Opened[]): Promise<number> {
  const limit = Date.now() + 60_000;
  while (opened().some((one) => one.closedAt === undefined)) {
    if (Date.now() > limit) throw new Error(`the remote's requests were never all closed: ${JSON.stringify(opened())}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const all = opened();
  return all.length === 0
    ? 0
    : Math.max(...all.map((one) => one.closedAt!)) - Math.min(...all.map((one) => one.startedAt));
}

async function renderWithLimits(args: string[]): Promise<{ code: number; stderr: string; out: string }> {
  const out = path.join(await tempDir(), 'out');
  const result = await runClusterstack([
    'render',
    EXAMPLE_MANIFESTS,
    ...args,
    ...LIMITS,
    '--output',
    out,
    '--cache-dir',
    await tempDir(),
  ]);
  return { code: result.code, stderr: result.stderr, out };
}

async function nothingWritten(out: string): Promise<void> {
  await expect(readdir(out)).rejects.toThrow();
}

/** Headers at once, then one byte every 200 ms, for as long as the client listens; noted in `opened`. */
function trickle(res: import('node:http').ServerResponse, body: string, opened: Opened[]): void {
  const one: Opened = { startedAt: performance.now() };
  opened.push(one);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
  res.flushHeaders();
  let sent = 0;
  const timer = setInterval(() => {
    if (sent >= body.length || res.destroyed) return clearInterval(timer);
    res.write(body[sent]);
    sent += 1;
  }, 200);
  res.on('close', () => {
    clearInterval(timer);
    one.closedAt = performance.now();
  });
}

function listen(server: Server | import('node:net').Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

describe('GitHub that trickles', () => {
  let github: FakeGitHub;
  beforeAll(async () => {
    github = await startFakeGitHub();
    await github.addReleasesFromDirectory('example', 'stacks', await copyExampleReleasesAsArchives());
  });
  afterAll(() => github.close());
  /** The trickled answers of the requests after the first `from`. */
  const trickledSince = (from: number): Opened[] =>
    github.requests.slice(from).flatMap((request) => (request.trickled ? [request.trickled] : []));
  /** The render of the stacks the fake GitHub holds, under the file's limits. */
  const renderFromGitHub = () =>
    renderWithLimits(['--release-source', 'github:example/stacks', '--github-api-url', github.apiUrl]);

  it('fails the release listing within the total deadline, with exit code 3', async () => {
    github.clearFaults();
    github.addFault({
      server: 'api',
      pathIncludes: '/releases',
      times: Number.POSITIVE_INFINITY,
      fault: { trickle: true, intervalMs: 200 },
    });
    const before = github.requests.length;
    const result = await renderFromGitHub();
    github.clearFaults();
    expect(result.code).toBe(3);
    expect(await heldOpenMs(() => trickledSince(before))).toBeLessThan(GIVEN_UP_MS);
    expect(result.stderr).toMatch(/nothing was rendered or written: a release source failed; retry later/);
    expect(result.stderr).toMatch(
      /listing the releases of example\/stacks .* did not finish within 2 s.*--remote-timeout/,
    );
    await nothingWritten(result.out);
  });

  it('fails a trickling asset download within the total deadline, with exit code 3', async () => {
    github.clearFaults();
    github.addFault({ server: 'download', times: Number.POSITIVE_INFINITY, fault: { trickle: true, intervalMs: 200 } });
    const before = github.requests.length;
    const result = await renderFromGitHub();
    github.clearFaults();
    expect(result.code).toBe(3);
    expect(await heldOpenMs(() => trickledSince(before))).toBeLessThan(GIVEN_UP_MS);
    expect(result.stderr).toMatch(
      /downloading release docker-ferrol-1-30-v\d of example\/stacks .* did not finish within 2 s/,
    );
    await nothingWritten(result.out);
  });
});

describe('an OCI registry that trickles or never shakes hands', () => {
  let registry: Server;
  let registryPort: number;
  let silent: import('node:net').Server;
  let silentPort: number;
  const sockets = new Set<Socket>();
  /** The trickled tag lists, and the connections to the silent server. */
  let trickled: Opened[] = [];
  let connections: Opened[] = [];
  beforeAll(async () => {
    registry = createHttpServer((req, res) => {
      if (req.url === '/v2/' || req.url === '/v2') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
        return;
      }
      trickle(
        res,
        JSON.stringify({
          name: 'stacks',
          tags: ['docker-ferrol-1-30-v1', 'docker-ferrol-1-30-v2', 'docker-ferrol-1-30-v3'],
        }),
        trickled,
      );
    });
    registryPort = await listen(registry);
    // Accepts TCP connections and says nothing: a TLS handshake never completes.
    silent = createTcpServer((socket) => {
      const one: Opened = { startedAt: performance.now() };
      connections.push(one);
      // Reads (and drops) the client's hello, only so that its closing is seen: a paused socket never sees the end.
      socket.resume();
      sockets.add(socket);
      socket.on('close', () => {
        one.closedAt = performance.now();
        sockets.delete(socket);
      });
    });
    silentPort = await listen(silent);
  });
  afterAll(async () => {
    registry.closeAllConnections();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => registry.close(resolve));
    await new Promise((resolve) => silent.close(resolve));
  });

  it('fails a trickling tag list within the total deadline, with exit code 3', async () => {
    trickled = [];
    const result = await renderWithLimits([
      '--release-source',
      `oci://127.0.0.1:${registryPort}/stacks`,
      '--plain-http',
    ]);
    expect(result.code).toBe(3);
    expect(await heldOpenMs(() => trickled)).toBeLessThan(GIVEN_UP_MS);
    expect(result.stderr).toMatch(
      new RegExp(`registry 127\\.0\\.0\\.1:${registryPort}, repository stacks: .* did not finish within 2 s`),
    );
    await nothingWritten(result.out);
  });

  it('gives up on a connection that never completes its TLS handshake, naming the connect timeout', async () => {
    connections = [];
    const result = await renderWithLimits(['--release-source', `oci://127.0.0.1:${silentPort}/stacks`]);
    expect(result.code).toBe(3);
    expect(await heldOpenMs(() => connections)).toBeLessThan(GIVEN_UP_MS);
    expect(result.stderr).toMatch(/did not accept a connection in time \(UND_ERR_CONNECT_TIMEOUT; --connect-timeout/);
    await nothingWritten(result.out);
  });
});

describe('timeout settings', () => {
  it('refuses a duration that is not one, naming the flag (exit code 2)', async () => {
    const result = await runClusterstack([
      'render',
      EXAMPLE_MANIFESTS,
      '--release-source',
      'github:a/b',
      '--output',
      path.join(await tempDir(), 'o'),
      '--remote-timeout',
      'soon',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /--remote-timeout \/ CLUSTERSTACK_REMOTE_TIMEOUT must be a duration such as 500ms, 2s or 5m, not "soon"/,
    );
    const fromEnv = await runClusterstack(['plan', EXAMPLE_MANIFESTS, '--release-source', 'github:a/b'], {
      env: { CLUSTERSTACK_CONNECT_TIMEOUT: '0' },
    });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toMatch(/--connect-timeout \/ CLUSTERSTACK_CONNECT_TIMEOUT must be at least 1 ms/);
  });
});
