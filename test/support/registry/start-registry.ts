// A real OCI registry for tests: Debian's `docker-registry` (distribution v2) on 127.0.0.1 with its
// own config and storage, anonymous, htpasswd (Basic) or token (Bearer) auth.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startTokenIssuer, type TokenIssuer } from './token-issuer.js';

const REGISTRY_BINARY = '/usr/bin/docker-registry';

export type RegistryAuth = 'none' | 'basic' | 'token';

export interface TestRegistry {
  /** `127.0.0.1:<port>` */
  host: string;
  auth: RegistryAuth;
  username: string;
  password: string;
  /** The token server, in token mode. */
  tokenIssuer?: TokenIssuer;
  stop(): Promise<void>;
}

/** A port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('could not find a free port');
  return address.port;
}

/** Starts a registry and waits until `/v2/` answers. */
/** `readOnly`: storage maintenance mode, where reads work and every upload is refused. */
export async function startRegistry(options: { auth?: RegistryAuth; readOnly?: boolean } = {}): Promise<TestRegistry> {
  const auth = options.auth ?? 'none';
  const dir = await mkdtemp(path.join(os.tmpdir(), 'clusterstack-registry-'));
  const username = 'stack-publisher';
  const password = `secret-${Math.random().toString(36).slice(2)}`;
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  let tokenIssuer: TokenIssuer | undefined;
  let authSection = '';
  if (auth === 'basic') {
    const htpasswd = path.join(dir, 'htpasswd');
    // distribution only accepts bcrypt entries.
    await writeFile(htpasswd, execFileSync('htpasswd', ['-Bbn', username, password], { encoding: 'utf8' }));
    authSection = ['auth:', '  htpasswd:', '    realm: clusterstack-test', `    path: ${htpasswd}`].join('\n');
  } else if (auth === 'token') {
    tokenIssuer = await startTokenIssuer({ dir, username, password });
    authSection = [
      'auth:',
      '  token:',
      `    realm: ${tokenIssuer.realm}`,
      `    service: ${tokenIssuer.service}`,
      `    issuer: ${tokenIssuer.issuer}`,
      `    rootcertbundle: ${tokenIssuer.certFile}`,
    ].join('\n');
  }
  const config = path.join(dir, 'config.yml');
  await writeFile(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: error',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${path.join(dir, 'data')}`,
      ...(options.readOnly
        ? ['  maintenance:', '    readonly:', '      enabled: true']
        : ['  delete:', '    enabled: true']),
      'http:',
      `  addr: ${host}`,
      `  secret: ${password}-http-secret`,
      authSection,
      '',
    ].join('\n'),
  );

  const child = spawn(REGISTRY_BINARY, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  child.once('error', (error) => {
    stderr += String(error);
  });

  const stop = async (): Promise<void> => {
    if (!exited) {
      child.kill('SIGTERM');
      await exit;
    }
    await tokenIssuer?.close();
    await rm(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 10_000;
  for (;;) {
    if (exited) {
      await stop();
      throw new Error(
        `${REGISTRY_BINARY} exited before answering: ${stderr.trim() || 'no output'} (install the Debian package docker-registry)`,
      );
    }
    try {
      await fetch(`http://${host}/v2/`);
      break;
    } catch {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`registry on ${host} did not answer within 10 s: ${stderr.trim()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  return { host, auth, username, password, ...(tokenIssuer ? { tokenIssuer } : {}), stop };
}
