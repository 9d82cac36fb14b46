// The one place that starts child processes (helm, git): an argument array, never a shell; the
// complete environment given, nothing inherited; input streamed as the child takes it; a limit on
// the whole run and on silence; killed when the caller aborts; output captured within bounds. Its
// own messages name the program only, never arguments or environment, where credentials may be.
// The child is forked here or, through the `start` option, by a small spawner process
// (src/core/process-spawner.ts); the limits and messages are the same either way.
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { Failure, type FailureKind } from './failure.js';

export interface RunProcessOptions {
  /** The complete environment of the child; nothing is inherited. */
  env: Readonly<Record<string, string>>;
  cwd?: string;
  /** Written to standard input, which is then closed; an iterable is written piece by piece as the child reads. None: an empty input. */
  input?: string | Buffer | Iterable<Buffer>;
  /** The run is stopped (SIGKILL) after this long in all. */
  timeoutMs?: number;
  /** The run is stopped when it prints nothing, on either stream, for this long (a remote that hangs or trickles). */
  idleTimeoutMs?: number;
  /** Aborting stops the run. */
  signal?: AbortSignal;
  /** Standard output beyond this stops the run (default 512 MiB). */
  maxOutputBytes?: number;
  /** Standard error keeps its last this many bytes (default 1 MiB): the end is where programs say what failed. */
  maxErrorBytes?: number;
  /** Starts the child (default: Node's spawn, from this process); see ProcessSpawner for one that forks from a small process. */
  start?: StartChild;
}

/** What runProcess needs of a started child: Node's ChildProcess, or one started by a spawner process. */
export interface SpawnedChild {
  readonly stdin: Writable;
  readonly stdout: ChildOutput;
  readonly stderr: ChildOutput;
  /** 'error': the child could not start (or, a ProcessError, was lost); 'close': it ended and its outputs are read. */
  on(event: 'error', listener: (error: NodeJS.ErrnoException) => void): unknown;
  on(event: 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
  kill(signal: NodeJS.Signals): boolean;
}

/** One output stream of a child. */
interface ChildOutput {
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  destroy(): unknown;
}

/** Starts `program` with exactly `env`, its three streams piped; never through a shell. */
export type StartChild = (
  program: string,
  args: readonly string[],
  options: { cwd?: string; env: Readonly<Record<string, string>> },
) => SpawnedChild;

/** Node's spawn, from this process: the fork copies this process's page tables, so it costs more the larger the heap. */
export const spawnDirectly: StartChild = (program, args, options) =>
  spawn(program, [...args], {
    shell: false,
    cwd: options.cwd,
    env: { ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    windowsHide: true,
  });

export interface ProcessResult {
  /** The exit status; 128 when a signal ended the process, 1 when neither is known. */
  exitCode: number;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
  /** From start to exit. */
  elapsedMs: number;
}

/** Why a run did not end by itself. */
export type ProcessFailureReason = 'not-started' | 'timed-out' | 'idle' | 'aborted' | 'output-too-large' | 'lost';

const KIND_OF_REASON: Record<ProcessFailureReason, FailureKind> = {
  // A program that is missing or not executable is a setting of the machine to fix.
  'not-started': 'fix-input',
  'timed-out': 'retry',
  idle: 'retry',
  aborted: 'retry',
  'output-too-large': 'fix-input',
  // The process that started the child went away (src/core/process-spawner.ts); the next run starts another.
  lost: 'retry',
};

/** A run that could not start or was stopped; callers turn it into their own failure with the step's words. */
export class ProcessError extends Failure {
  constructor(
    readonly reason: ProcessFailureReason,
    /** The program's file name, as given to runProcess. */
    readonly program: string,
    message: string,
    /** The operating system's code when the program could not start (ENOENT, EACCES, ...). */
    readonly code?: string,
    options?: { cause?: unknown },
  ) {
    super(KIND_OF_REASON[reason], message, options);
    this.name = 'ProcessError';
  }
}

const DEFAULT_MAX_OUTPUT_BYTES = 512 * 1024 * 1024;
const DEFAULT_MAX_ERROR_BYTES = 1024 * 1024;
// Small input pieces go out together, this much at a time.
const INPUT_BATCH_BYTES = 65_536;

/**
 * Runs `program` once and collects its output. Resolves with the exit status whatever it is
 * (callers decide what a non-zero status means); rejects with a ProcessError only when the program
 * cannot start, runs out of time, falls silent, is aborted or prints more than the bound.
 */
export function runProcess(
  program: string,
  args: readonly string[],
  options: RunProcessOptions,
): Promise<ProcessResult> {
  const name = path.basename(program);
  if (options.signal?.aborted)
    return Promise.reject(new ProcessError('aborted', program, `${name} was not started: the run was cancelled`));
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = (options.start ?? spawnDirectly)(program, args, {
      env: options.env,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    });
    const watch = new ChildWatch(child, program, options, reject);
    const stdout = new BoundedOutput(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
    const stderr = new OutputTail(options.maxErrorBytes ?? DEFAULT_MAX_ERROR_BYTES);
    child.stdout.on('data', (chunk: Buffer) => {
      watch.heardFrom();
      if (!stdout.add(chunk))
        watch.stop(
          new ProcessError(
            'output-too-large',
            program,
            `${name} printed more than ${Math.round(stdout.maxBytes / 1024 / 1024)} MiB and was stopped`,
          ),
        );
    });
    child.stderr.on('data', (chunk: Buffer) => {
      watch.heardFrom();
      stderr.add(chunk);
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (!watch.finish()) return;
      if (error instanceof ProcessError) {
        // Started elsewhere and lost there: nothing is left to kill, and the error says why.
        reject(error);
        return;
      }
      // Node's message carries internal frames and, for a missing directory, blames the program.
      const because = error.code === 'ENOENT' ? 'not found' : (error.code ?? error.message);
      reject(
        new ProcessError('not-started', program, `${name} could not be started (${because})`, error.code, {
          cause: error,
        }),
      );
    });
    child.on('close', (code, signal) => {
      if (!watch.finish()) return;
      resolve({
        exitCode: code ?? (signal ? 128 : 1),
        signal,
        stdout: stdout.bytes(),
        stderr: stderr.bytes(),
        elapsedMs: performance.now() - started,
      });
    });
    // A child that exits without reading its input closes the pipe: its exit status says why.
    child.stdin.on('error', () => undefined);
    writeInput(child.stdin, options.input).catch((error: unknown) => {
      // The input could not be produced: the run stops, and the caller hears why.
      if (!watch.finish()) return;
      child.kill('SIGKILL');
      reject(error);
    });
  });
}

/**
 * The limits on one child's run (in all, in silence, the caller's abort), and its settling: once,
 * whatever comes first, with every timer and listener removed.
 */
class ChildWatch {
  private readonly name: string;
  private settled = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly totalTimer: NodeJS.Timeout | undefined;
  private readonly onAbort = (): void =>
    this.stop(new ProcessError('aborted', this.program, `${this.name} was stopped: the run was cancelled`));

  constructor(
    private readonly child: SpawnedChild,
    private readonly program: string,
    private readonly options: RunProcessOptions,
    private readonly reject: (error: unknown) => void,
  ) {
    this.name = path.basename(program);
    const { timeoutMs } = options;
    this.totalTimer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(
            () =>
              this.stop(
                new ProcessError(
                  'timed-out',
                  program,
                  `${this.name} ran longer than ${formatSeconds(timeoutMs)} and was stopped`,
                ),
              ),
            timeoutMs,
          );
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.heardFrom();
  }

  /** The child printed something: the silence limit starts again. */
  heardFrom(): void {
    const { idleTimeoutMs } = this.options;
    if (idleTimeoutMs === undefined || this.settled) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(
      () =>
        this.stop(
          new ProcessError(
            'idle',
            this.program,
            `${this.name} printed nothing for ${formatSeconds(idleTimeoutMs)} and was stopped`,
          ),
        ),
      idleTimeoutMs,
    );
  }

  /** Settles the run: true the first time only, so one outcome wins. */
  finish(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.totalTimer);
    clearTimeout(this.idleTimer);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    return true;
  }

  /** Kills the child and rejects with `error`, unless the run has settled already. */
  stop(error: ProcessError): void {
    if (!this.finish()) return;
    this.child.kill('SIGKILL');
    this.child.stdout.destroy();
    this.child.stderr.destroy();
    this.child.stdin.destroy();
    this.reject(error);
  }
}

/** Standard output, all of it up to a bound. */
class BoundedOutput {
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(readonly maxBytes: number) {}

  /** Keeps `chunk`; false, keeping nothing, once the output has grown past the bound. */
  add(chunk: Buffer): boolean {
    this.size += chunk.length;
    if (this.size > this.maxBytes) return false;
    this.chunks.push(chunk);
    return true;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** Standard error's last bytes: trimmed as it grows, so a chatty program costs at most twice the bound. */
class OutputTail {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly maxBytes: number) {}

  add(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size > 2 * this.maxBytes) {
      const kept = Buffer.concat(this.chunks).subarray(-this.maxBytes);
      [this.chunks, this.size] = [[kept], kept.length];
    }
  }

  bytes(): Buffer {
    const text = Buffer.concat(this.chunks);
    return text.length > this.maxBytes ? text.subarray(-this.maxBytes) : text;
  }
}

/** Writes `input` to `stdin` as the child takes it, then closes it; stops quietly when the child closes it first. */
async function writeInput(stdin: Writable, input: RunProcessOptions['input']): Promise<void> {
  if (input === undefined || typeof input === 'string' || Buffer.isBuffer(input)) {
    if (input === undefined) stdin.end();
    else stdin.end(input);
    return;
  }
  let closed = false;
  stdin.on('close', () => (closed = true));
  const write = async (chunk: Buffer): Promise<void> => {
    if (closed || stdin.destroyed || stdin.write(chunk)) return;
    // Whichever comes first removes the other: a big input waits for drain thousands of times,
    // and a `close` listener left behind each time piles up on the one stdin (Node warns at 11).
    await new Promise<void>((resolve) => {
      const done = (): void => {
        stdin.off('drain', done);
        stdin.off('close', done);
        resolve();
      };
      stdin.once('drain', done);
      stdin.once('close', done);
    });
  };
  let pending: Buffer[] = [];
  let size = 0;
  for (const piece of input) {
    if (closed || stdin.destroyed) return;
    pending.push(piece);
    size += piece.length;
    if (size < INPUT_BATCH_BYTES) continue;
    await write(Buffer.concat(pending));
    [pending, size] = [[], 0];
  }
  if (size > 0) await write(Buffer.concat(pending));
  if (!closed && !stdin.destroyed) stdin.end();
}

function formatSeconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}
