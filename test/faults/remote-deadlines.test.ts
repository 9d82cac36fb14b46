// Every remote read ends: a server that sends its headers and then one byte a second, or never
// finishes a TLS handshake, fails within the configured time with exit code 3 (retry later), and
// nothing is written.
import { readdir } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyExampleReleasesAsArchives, EXAMPLE_MANIFESTS, runClusterstack, tempDir } from '../support/cli.js';
import { type FakeGitHub, startFakeGitHub } from '../support/fake-github/index.js';

const LIMITS = ['--remote-timeout', '2s', '--read-timeout', '1500ms', '--connect-timeout', '500ms'];

async function renderTimed(args: string[]): Promise<{ code: number; stderr: string; ms: number; out: string }> {
  const out = path.join(await tempDir(), 'out');
  const started = Date.now();
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
  return { code: result.code, stderr: result.stderr, ms: Date.now() - started, out };
}

async function nothingWritten(out: string): Promise<void> {
  await expect(readdir(out)).rejects.toThrow();
}

/** Headers at once, then one byte every 200 ms, for as long as the client listens. */
function trickle(res: import('node:http').ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
  res.flushHeaders();
  let sent = 0;
  const timer = setInterval(() => {
    if (sent >= body.length || res.destroyed) return clearInterval(timer);
    res.write(body[sent]);
    sent += 1;
  }, 200);
  res.on('close', () => clearInterval(timer));
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

  it('fails the release listing within the total deadline, with exit code 3', async () => {
    github.clearFaults();
    github.addFault({
      server: 'api',
      pathIncludes: '/releases',
      times: Number.POSITIVE_INFINITY,
      fault: { trickle: true, intervalMs: 200 },
    });
    const result = await renderTimed(['--release-source', 'github:example/stacks', '--github-api-url', github.apiUrl]);
    github.clearFaults();
    expect(result.code).toBe(3);
    expect(result.ms).toBeLessThan(8_000);
    expect(result.stderr).toMatch(/nothing was rendered or written: a release source failed; retry later/);
    expect(result.stderr).toMatch(
      /listing the releases of example\/stacks .* did not finish within 2 s.*--remote-timeout/,
    );
    await nothingWritten(result.out);
  });

  it('fails a trickling asset download within the total deadline, with exit code 3', async () => {
    github.clearFaults();
    github.addFault({ server: 'download', times: Number.POSITIVE_INFINITY, fault: { trickle: true, intervalMs: 200 } });
    const result = await renderTimed(['--release-source', 'github:example/stacks', '--github-api-url', github.apiUrl]);
    github.clearFaults();
    expect(result.code).toBe(3);
    expect(result.ms).toBeLessThan(8_000);
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
      );
    });
    registryPort = await listen(registry);
    // Accepts TCP connections and says nothing: a TLS handshake never completes.
    silent = createTcpServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
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
    const result = await renderTimed(['--release-source', `oci://127.0.0.1:${registryPort}/stacks`, '--plain-http']);
    expect(result.code).toBe(3);
    expect(result.ms).toBeLessThan(8_000);
    expect(result.stderr).toMatch(
      new RegExp(`registry 127\\.0\\.0\\.1:${registryPort}, repository stacks: .* did not finish within 2 s`),
    );
    await nothingWritten(result.out);
  });

  it('gives up on a connection that never completes its TLS handshake, naming the connect timeout', async () => {
    const result = await renderTimed(['--release-source', `oci://127.0.0.1:${silentPort}/stacks`]);
    expect(result.code).toBe(3);
    expect(result.ms).toBeLessThan(8_000);
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
