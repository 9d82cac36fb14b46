import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GitCommand, isMissingRemoteRef } from '../gitops/git-command.js';
import { PublishError } from '../gitops/publish-error.js';
import { ProcessSpawner, processSpawner } from '../src/core/process-spawner.js';

const spawners: ProcessSpawner[] = [];
afterEach(() => {
  for (const spawner of spawners.splice(0)) spawner.stop();
});

/**
 * How git is started in a case: directly (a spawner that never starts, below its memory mark), or
 * through a spawner process that is running; `check` then says the git processes went through it.
 */
const STARTS = [
  ['directly', async () => new ProcessSpawner({ minResidentBytes: Number.MAX_SAFE_INTEGER })],
  [
    'through the process spawner',
    async () => {
      const spawner = new ProcessSpawner({ minResidentBytes: 0, warn: () => undefined });
      spawners.push(spawner);
      expect(await spawner.ready()).toBe(true);
      return spawner;
    },
  ],
] as const;

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

  it.each(STARTS)(
    'stops a git process that has been silent for the idle limit, as a retryable failure (%s)',
    async (how, made) => {
      const spawner = await made();
      const git = new GitCommand(await mkdtemp(path.join(os.tmpdir(), 'git-command-')), {
        author: { name: 't', email: 't@example.test' },
        env: { PATH: process.env.PATH ?? '' },
        idleTimeoutMs: 1_000,
        spawner,
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
      expect(spawner.remoteStarts).toBe(how === 'directly' ? 0 : 1);
    },
  );

  it('fails a git run whose spawner process died as retryable, naming the step, and runs the next one', async () => {
    const spawner = (await STARTS[1][1]()) as ProcessSpawner;
    const dir = await mkdtemp(path.join(os.tmpdir(), 'git-command-'));
    const git = new GitCommand(dir, {
      author: { name: 't', email: 't@example.test' },
      env: { PATH: process.env.PATH ?? '' },
      spawner,
    });
    const connections = sockets.length;
    const listing = git.run(['ls-remote', url], 'listing the remote').then(
      () => undefined,
      (error: unknown) => error,
    );
    // Killed once git runs (it has reached the silent remote), not after a guess at how long that takes.
    const deadline = Date.now() + 60_000;
    while (sockets.length === connections) {
      expect(Date.now(), 'git to reach the remote').toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    process.kill(spawner.pid!, 'SIGKILL');
    const failure = await listing;
    expect(failure).toBeInstanceOf(PublishError);
    expect(failure).toMatchObject({
      kind: 'unavailable',
      message: 'listing the remote failed: git was stopped: the spawner process that started it was killed (SIGKILL)',
    });
    expect((failure as PublishError).retryable).toBe(true);
    expect(await git.run(['init', '-q', '.'], 'creating the repository')).toBe('');
  });

  it("starts git from this process's spawner by default, the one helm starts from", async () => {
    const shared = processSpawner();
    expect(processSpawner()).toBe(shared);
    expect(await shared.ready()).toBe(true);
    try {
      const before = shared.remoteStarts;
      const git = new GitCommand(await mkdtemp(path.join(os.tmpdir(), 'git-command-')), {
        author: { name: 't', email: 't@example.test' },
        env: { PATH: process.env.PATH ?? '' },
      });
      expect((await git.run(['--version'], 'asking the version')).startsWith('git version')).toBe(true);
      expect(shared.remoteStarts).toBe(before + 1);
    } finally {
      shared.stop();
    }
  });

  it.each(STARTS)(
    'gives back the bytes of `git cat-file --batch` as git wrote them (a tree holds binary ids), and throws when git fails (%s)',
    async (how, made) => {
      const spawner = await made();
      const dir = await mkdtemp(path.join(os.tmpdir(), 'git-command-'));
      const git = new GitCommand(dir, {
        author: { name: 't', email: 't@example.test' },
        env: { PATH: process.env.PATH ?? '' },
        spawner,
      });
      await git.run(['init', '--quiet'], 'git init');
      const blob = (
        await git.runWithInput(['hash-object', '-w', '--stdin'], [Buffer.from('é\n')], 'git hash-object')
      ).trim();
      const tree = (
        await git.runWithInput(['mktree'], [Buffer.from(`100644 blob ${blob}\tfile\n`)], 'git mktree')
      ).trim();
      const output = await git.runWithInputBytes(['cat-file', '--batch'], `${tree}\n${blob}\n`, 'git cat-file');
      const treeBody = Buffer.concat([Buffer.from('100644 file\0'), Buffer.from(blob, 'hex')]);
      expect(output).toEqual(
        Buffer.concat([
          Buffer.from(`${tree} tree ${treeBody.length}\n`),
          treeBody,
          Buffer.from(`\n${blob} blob 3\n`),
          Buffer.from('é\n\n'),
        ]),
      );
      await expect(git.runWithInputBytes(['cat-file', '--no-such-flag'], '', 'git cat-file')).rejects.toThrow(
        /git cat-file/,
      );
      expect(spawner.remoteStarts).toBe(how === 'directly' ? 0 : 5);
    },
  );

  it.each(STARTS)(
    "feeds a long input through backpressure without piling listeners on git's stdin (no MaxListenersExceededWarning, %s)",
    async (how, made) => {
      const spawner = await made();
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => void warnings.push(warning);
      process.on('warning', onWarning);
      try {
        const git = new GitCommand(await mkdtemp(path.join(os.tmpdir(), 'git-command-')), {
          author: { name: 't', email: 't@example.test' },
          env: { PATH: process.env.PATH ?? '' },
          spawner,
        });
        // 8 MiB in 64 KiB writes to a reader that takes 64 KiB at a time with a pause (a git alias
        // running node): each write fills the pipe, so the writer waits for drain over a hundred times.
        const piece = Buffer.alloc(65_536, 'x');
        const pieces = Array.from({ length: 128 }, () => piece);
        // It prints how many reads it took and how many bytes came: all of them, through either path. One
        // process: a shell loop of dd, wc and sleep per read started about 340 processes per case.
        const reader = [
          "const fs = require('fs'), piece = Buffer.alloc(65536), pause = new Int32Array(new SharedArrayBuffer(4));",
          'let reads = 0, total = 0, got;',
          'while ((got = fs.readSync(0, piece, 0, piece.length, null)) > 0) { reads++; total += got; Atomics.wait(pause, 0, 0, 2); }',
          "console.log(reads + ' ' + total);",
        ].join(' ');
        const slowReader = `alias.slowread=!${process.execPath} -e "${reader}"`;
        const [reads, bytes] = (await git.runWithInput(['-c', slowReader, 'slowread'], pieces, 'reading slowly'))
          .trim()
          .split(' ')
          .map(Number);
        expect(reads).toBeGreaterThan(11);
        expect(bytes).toBe(128 * 65_536);
        expect(spawner.remoteStarts).toBe(how === 'directly' ? 0 : 1);
        await new Promise((resolve) => setImmediate(resolve));
        expect(warnings.map((warning) => `${warning.name}: ${warning.message}`)).toEqual([]);
      } finally {
        process.off('warning', onWarning);
      }
    },
  );
});

describe('isMissingRemoteRef', () => {
  it("tells a fetch of a branch the remote lacks from a remote that is not there, by git's own words", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'csk-missing-ref-'));
    const author = { name: 'Clusterstack Bot', email: 'bot@example.com' };
    const git = new GitCommand(dir, { author, env: { PATH: process.env.PATH, HOME: dir } });
    await git.run(['init', '--quiet', '--bare', 'remote.git'], 'git init');
    await git.run(['init', '--quiet', 'clone'], 'git init');
    const clone = new GitCommand(path.join(dir, 'clone'), { author, env: { PATH: process.env.PATH, HOME: dir } });
    const fetch = (url: string): Promise<unknown> =>
      clone
        .run(['fetch', '--quiet', url, '+refs/heads/main:refs/remotes/origin/main'], 'git fetch')
        .catch((error: unknown) => error);
    const missing = await fetch(path.join(dir, 'remote.git'));
    expect(missing).toBeInstanceOf(PublishError);
    expect(isMissingRemoteRef(missing, 'refs/heads/main')).toBe(true);
    expect(isMissingRemoteRef(missing, 'refs/heads/other')).toBe(false);
    const nowhere = await fetch(path.join(dir, 'no-such.git'));
    expect(nowhere).toBeInstanceOf(PublishError);
    expect(isMissingRemoteRef(nowhere, 'refs/heads/main')).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });
});
