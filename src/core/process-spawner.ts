// Starts child processes from a small long-lived Node process instead of this one. Node's spawn
// forks the calling process, and the fork copies its page tables: 0.13-0.2 ms per MiB of resident
// memory measured here, so a controller with a 250 MiB heap blocks its event loop for tens of
// milliseconds per helm process, and shards that render in parallel serialise on it. The spawner's
// heap is a few MiB, so its forks stay cheap whatever this process holds; outputs come back over
// the IPC channel as they are printed. runProcess keeps every limit (time, silence, abort, output
// bounds) on this side, so a run behaves the same either way.
//
// It is started when this process first needs a child while its resident memory is past
// `minResidentBytes` (below it a direct fork is cheap); until it is ready, and after it died or
// failed to start `maxFailures` times within `failureWindowMs`, children are started directly. It
// dies with this process (the channel closes, it kills its children and exits), stops itself after
// `idleMs` without work, and a run in flight when it dies fails as 'lost' (retry): the next run
// starts it again. One process-wide instance (`processSpawner()`) serves helm and git alike, so a
// process runs at most one spawner whatever starts its children.
import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { Writable } from 'node:stream';
import { ProcessError, spawnDirectly, type SpawnedChild, type StartChild } from './run-process.js';
import { SPAWNER_PROGRAM } from './spawner-program.js';

export interface ProcessSpawnerOptions {
  /** Start the spawner only once this process's resident memory reaches this (default 96 MiB); 0: always. */
  minResidentBytes?: number;
  /** Stop the spawner after this long without a child running (default 60 s); the next run starts it again. */
  idleMs?: number;
  /** After this many unexpected exits or failed starts within `failureWindowMs`, children are started directly for good (default 3). */
  maxFailures?: number;
  /** Failures older than this no longer count (default 10 min): a rare death in a long-lived process never adds up to the fallback. */
  failureWindowMs?: number;
  /** Where the spawner's exits and the fallback are told (an operator's log line); default: `onWarning`'s listeners, else a Node process warning. */
  warn?: (message: string) => void;
  /** The clock failures are timed by, in ms (default Date.now). */
  now?: () => number;
}

const DEFAULT_MIN_RESIDENT_BYTES = 96 * 1024 * 1024;
const DEFAULT_IDLE_MS = 60_000;
const DEFAULT_MAX_FAILURES = 3;
const DEFAULT_FAILURE_WINDOW_MS = 10 * 60_000;

/**
 * Spawners with a running process. When this process is about to end by itself, each is closed and
 * waited for: the exit of a child this process waited for counts its CPU, and that of the helm
 * processes it waited for, in this process's children's CPU (/proc stat cutime, `time`), as when
 * helm is started directly; an unwaited spawner would take that CPU with it.
 */
const running = new Set<ProcessSpawner>();
let reapsBeforeExit = false;

/** A message from the spawner (see spawner-program.ts for the protocol). */
type SpawnerMessage =
  | { t: 'ready' }
  | { t: 'out'; id: number; fd: 1 | 2; data: Uint8Array }
  | { t: 'error'; id: number; code?: string; message: string }
  | { t: 'stdin-ack'; id: number; code?: string }
  | { t: 'stdin-close'; id: number }
  | { t: 'close'; id: number; code: number | null; signal: NodeJS.Signals | null };

/** The spawner process while it runs. */
interface Link {
  process: ChildProcess;
  ready: boolean;
  runs: Map<number, RemoteChild>;
}

/** Starts children through a small helper process (see above); `start` is runProcess's `start` option. */
export class ProcessSpawner {
  readonly #minResidentBytes: number;
  readonly #idleMs: number;
  readonly #maxFailures: number;
  readonly #failureWindowMs: number;
  readonly #warn: ((message: string) => void) | undefined;
  readonly #now: () => number;
  readonly #listeners = new Set<(message: string) => void>();
  #link: Link | undefined;
  #starting: Promise<boolean> | undefined;
  /** When each failure that still counts happened. */
  #failures: number[] = [];
  #direct = false;
  #nextId = 1;
  #idleTimer: NodeJS.Timeout | undefined;
  #remoteStarts = 0;

  constructor(options: ProcessSpawnerOptions = {}) {
    this.#minResidentBytes = options.minResidentBytes ?? DEFAULT_MIN_RESIDENT_BYTES;
    this.#idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.#maxFailures = options.maxFailures ?? DEFAULT_MAX_FAILURES;
    this.#failureWindowMs = options.failureWindowMs ?? DEFAULT_FAILURE_WINDOW_MS;
    this.#warn = options.warn;
    this.#now = options.now ?? Date.now;
  }

  /** Tells `listener` the spawner's exits and the fallback (instead of a Node process warning) until the returned function is called. */
  onWarning(listener: (message: string) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Starts a child: through the spawner once it is ready, directly before that and after it failed for good. */
  readonly start: StartChild = (program, args, options) => {
    const link = this.#link;
    if (link?.ready && link.process.connected) return this.#startRemote(link, program, args, options);
    if (!this.#direct && process.memoryUsage.rss() >= this.#minResidentBytes) void this.ready();
    return spawnDirectly(program, args, options);
  };

  /** The spawner's process id while it runs (for tests and diagnostics). */
  get pid(): number | undefined {
    return this.#link?.process.pid;
  }

  /** Children started through the spawner so far. */
  get remoteStarts(): number {
    return this.#remoteStarts;
  }

  /** True once the spawner failed `maxFailures` times within the window: children are started directly from then on. */
  get fellBack(): boolean {
    return this.#direct;
  }

  /** Starts the spawner unless it runs; resolves true once it takes children, false when it could not start. */
  ready(): Promise<boolean> {
    if (this.#direct) return Promise.resolve(false);
    if (this.#link?.ready) return Promise.resolve(true);
    this.#starting ??= new Promise<boolean>((resolve) => {
      // Its own environment is empty (each child gets its own): no NODE_OPTIONS such as a loader or
      // a heap size meant for this process.
      const child = spawn(process.execPath, ['-e', SPAWNER_PROGRAM], {
        env: {},
        // Its own output is not read: a crash report could quote a request, and requests carry
        // arguments and environments, where credentials may be.
        stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
        serialization: 'advanced',
        windowsHide: true,
      });
      const link: Link = { process: child, ready: false, runs: new Map() };
      this.#link = link;
      running.add(this);
      if (!reapsBeforeExit) {
        reapsBeforeExit = true;
        process.on('beforeExit', () => {
          for (const spawner of running) spawner.#closeAndWait();
        });
      }
      // The spawner keeps this process alive only while it starts (a short wait for whoever awaits
      // it) and while runs are in flight, as directly spawned children would.
      child.unref();
      let ended = false;
      const end = (how: string): void => {
        if (ended) return;
        ended = true;
        this.#ended(link, how);
        resolve(false);
      };
      child.on('error', (error: NodeJS.ErrnoException) => end(`could not be started (${error.code ?? error.message})`));
      child.on('exit', (code, signal) => end(signal ? `was killed (${signal})` : `exited with status ${code}`));
      child.on('message', (message: SpawnerMessage) => {
        if (message.t !== 'ready') return this.#received(link, message);
        link.ready = true;
        this.#starting = undefined;
        if (link.runs.size === 0) child.channel?.unref();
        this.#idleSoon(link);
        resolve(true);
      });
    });
    return this.#starting;
  }

  /** Stops the spawner (its runs in flight end as lost); the next run past the memory mark starts it again. */
  stop(): void {
    const link = this.#link;
    if (!link) return;
    this.#starting = undefined;
    this.#release(link, 'the spawner process that started it was stopped');
    link.process.kill('SIGKILL');
  }

  /** Closes an idle spawner and keeps this process alive until it exited (see `running`). */
  #closeAndWait(): void {
    const link = this.#link;
    running.delete(this);
    if (!link || link.runs.size > 0) return;
    this.#link = undefined;
    clearTimeout(this.#idleTimer);
    link.process.ref();
    if (link.process.connected) link.process.disconnect();
    else link.process.kill('SIGKILL');
    // A spawner that does not exit on its own does not hold this process for long.
    setTimeout(() => link.process.kill('SIGKILL'), 2000).unref();
  }

  #startRemote(
    link: Link,
    program: string,
    args: readonly string[],
    options: { cwd?: string; env: Readonly<Record<string, string>> },
  ): SpawnedChild {
    const id = this.#nextId++;
    const child = new RemoteChild(
      id,
      program,
      (message) => this.#send(link, message),
      () => this.#untrack(link, id),
    );
    if (link.runs.size === 0) {
      clearTimeout(this.#idleTimer);
      // A run in flight keeps this process alive, as a directly spawned child would.
      link.process.channel?.ref();
    }
    link.runs.set(id, child);
    this.#remoteStarts += 1;
    this.#send(link, { t: 'spawn', id, program, args: [...args], cwd: options.cwd, env: { ...options.env } });
    return child;
  }

  #send(link: Link, message: Record<string, unknown>): void {
    // A closed channel: the exit handler fails the runs in flight.
    if (link.process.connected) link.process.send(message, undefined, undefined, () => undefined);
  }

  #received(link: Link, message: Exclude<SpawnerMessage, { t: 'ready' }>): void {
    const child = link.runs.get(message.id);
    if (child) child.receive(message);
  }

  #untrack(link: Link, id: number): void {
    if (!link.runs.delete(id) || link.runs.size > 0) return;
    link.process.channel?.unref();
    this.#idleSoon(link);
  }

  #idleSoon(link: Link): void {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      if (this.#link !== link || link.runs.size > 0) return;
      this.#link = undefined;
      // Closing the channel is the spawner's signal to exit; nothing runs there. Waited for, as
      // before this process exits (see `running`).
      link.process.ref();
      link.process.disconnect();
    }, this.#idleMs);
    this.#idleTimer.unref();
  }

  /** The spawner is gone: its runs are lost; unexpected exits count towards the fallback. */
  #ended(link: Link, how: string): void {
    // Expected: it was stopped or closed, and may already have a successor starting.
    const expected = this.#link !== link;
    if (!expected) [this.#link, this.#starting] = [undefined, undefined];
    if (!this.#link) running.delete(this);
    const lost = link.runs.size;
    this.#release(link, `the spawner process that started it ${how}`);
    if (expected) return;
    const now = this.#now();
    this.#failures = [...this.#failures.filter((at) => now - at < this.#failureWindowMs), now];
    const count = this.#failures.length;
    const within = `within ${formatWindow(this.#failureWindowMs)}`;
    const retried = lost ? `; ${lost} run(s) in flight failed and are retried` : '';
    if (count >= this.#maxFailures) {
      this.#direct = true;
      this.#tell(
        `The process spawner ${how}; that was failure ${count} ${within}, so child processes (helm, git) are started directly from now on, each costing time that grows with this process's memory${retried}`,
      );
    } else {
      this.#tell(
        `The process spawner ${how} (failure ${count} of ${this.#maxFailures} ${within}); it is started again for the next run${retried}`,
      );
    }
  }

  #tell(message: string): void {
    if (this.#warn) this.#warn(message);
    else if (this.#listeners.size > 0) for (const listener of this.#listeners) listener(message);
    else process.emitWarning(message, { code: 'CLUSTERSTACK_SPAWNER' });
  }

  /** Fails every run of `link` as lost. */
  #release(link: Link, why: string): void {
    const runs = [...link.runs.values()];
    link.runs.clear();
    link.process.channel?.unref();
    if (this.#link === link) this.#link = undefined;
    if (!this.#link) running.delete(this);
    for (const run of runs) run.lose(why);
  }
}

let shared: ProcessSpawner | undefined;

/**
 * This process's spawner, made on first use with the default rules: helm and git start their
 * children from it, so a busy process runs one spawner, not one per runner.
 */
export function processSpawner(): ProcessSpawner {
  shared ??= new ProcessSpawner();
  return shared;
}

function formatWindow(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}` : `${Math.round(ms / 1000)} s`;
}

/** A child the spawner started, as runProcess sees it: its streams and events come over the channel. */
class RemoteChild extends EventEmitter implements SpawnedChild {
  readonly stdout = new RemoteOutput();
  readonly stderr = new RemoteOutput();
  readonly stdin: Writable;
  #pendingWrite: ((error?: Error | null) => void) | undefined;
  #closed = false;

  constructor(
    private readonly id: number,
    private readonly program: string,
    private readonly send: (message: Record<string, unknown>) => void,
    private readonly done: () => void,
  ) {
    super();
    const stdin = new Writable({
      // One write in flight, acknowledged once the child's pipe took it: the caller's writes wait
      // for drain as they would on a pipe.
      write: (chunk: Buffer, _encoding, callback) => {
        this.#pendingWrite = callback;
        send({ t: 'stdin', id, data: chunk });
      },
      final: (callback) => {
        send({ t: 'end', id });
        callback();
      },
    });
    stdin.on('error', () => undefined);
    this.stdin = stdin;
  }

  kill(signal: NodeJS.Signals): boolean {
    if (this.#closed) return false;
    this.send({ t: 'kill', id: this.id, signal });
    return true;
  }

  receive(message: SpawnerMessage): void {
    switch (message.t) {
      case 'out':
        (message.fd === 1 ? this.stdout : this.stderr).push(
          Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength),
        );
        return;
      case 'stdin-ack': {
        const callback = this.#pendingWrite;
        this.#pendingWrite = undefined;
        callback?.(message.code ? Object.assign(new Error(`write ${message.code}`), { code: message.code }) : null);
        return;
      }
      case 'stdin-close':
        this.stdin.destroy();
        return;
      case 'error':
        this.emit('error', Object.assign(new Error(message.message), { code: message.code }));
        return;
      case 'close':
        this.#end();
        this.emit('close', message.code, message.signal);
        return;
      case 'ready':
        return;
    }
  }

  /** The spawner went away with this child running: runProcess rejects with a retryable failure. */
  lose(why: string): void {
    if (this.#closed) return;
    this.#end();
    const name = path.basename(this.program);
    this.emit('error', new ProcessError('lost', this.program, `${name} was stopped: ${why}`));
  }

  #end(): void {
    this.#closed = true;
    this.stdin.destroy();
    this.done();
  }
}

/** One output of a remote child: each chunk is handed on as it arrives, in order, until destroyed. */
class RemoteOutput extends EventEmitter {
  #destroyed = false;

  push(chunk: Buffer): void {
    if (!this.#destroyed) this.emit('data', chunk);
  }

  destroy(): void {
    this.#destroyed = true;
  }
}
