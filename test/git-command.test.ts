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
    const git = new GitCommand(await mkdtemp(path.join(os.tmpdir(), 'git-command-')), {
      author: { name: 't', email: 't@example.test' },
      env: { PATH: process.env.PATH ?? '' },
      idleTimeoutMs: 1_000,
    });
    const started = Date.now();
    const failure = await git.run(['ls-remote', url], 'listing the remote').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(PublishError);
    expect((failure as PublishError).message).toMatch(
      /listing the remote failed: git printed nothing for 1 s and was stopped/,
    );
    expect((failure as PublishError).retryable).toBe(true);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("feeds a long input through backpressure without piling listeners on git's stdin (no MaxListenersExceededWarning)", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const git = new GitCommand(await mkdtemp(path.join(os.tmpdir(), 'git-command-')), {
        author: { name: 't', email: 't@example.test' },
        env: { PATH: process.env.PATH ?? '' },
      });
      // 8 MiB in 64 KiB writes to a reader that takes 64 KiB at a time with a pause (a git alias
      // running the shell): each write fills the pipe, so the writer waits for drain over a hundred times.
      const piece = Buffer.alloc(65_536, 'x');
      const pieces = Array.from({ length: 128 }, () => piece);
      const slowReader = `alias.slowread=!sh -c 'n=0; while [ "$(dd bs=65536 count=1 2>/dev/null | wc -c)" -gt 0 ]; do n=$((n+1)); sleep 0.002; done; echo $n'`;
      const reads = await git.runWithInput(['-c', slowReader, 'slowread'], pieces, 'reading slowly');
      expect(Number(reads.trim())).toBeGreaterThan(11);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => `${warning.name}: ${warning.message}`)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
