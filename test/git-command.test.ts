import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitCommand } from '../gitops/git-command.js';
import { PublishError } from '../gitops/publish-error.js';

describe('GitCommand', () => {
  // A remote that takes the connection and then never says a word.
  let server: Server;
  const sockets: Socket[] = [];
  let url: string;
  beforeAll(async () => {
    server = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/fleet.git`;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('stops a git process that has been silent for the idle limit, as a retryable failure', async () => {
    const git = new GitCommand(await mkdtemp(path.join(os.tmpdir(), 'git-command-')), { author: { name: 't', email: 't@example.test' }, env: { PATH: process.env.PATH ?? '' }, idleTimeoutMs: 1_000 });
    const started = Date.now();
    const failure = await git.run(['ls-remote', url], 'listing the remote').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(PublishError);
    expect((failure as PublishError).message).toMatch(/listing the remote failed: git printed nothing for 1 s and was stopped/);
    expect((failure as PublishError).retryable).toBe(true);
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
