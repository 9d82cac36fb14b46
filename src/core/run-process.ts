// The one place that starts child processes (helm, git): an argument array, never a shell; the
// complete environment given, nothing inherited; input streamed as the child takes it; a limit on
// the whole run and on silence; killed when the caller aborts; output captured within bounds. Its
// own messages name the program only, never arguments or environment, where credentials may be.
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
}

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
export type ProcessFailureReason = 'not-started' | 'timed-out' | 'idle' | 'aborted' | 'output-too-large';

const KIND_OF_REASON: Record<ProcessFailureReason, FailureKind> = {
  // A program that is missing or not executable is a setting of the machine to fix.
  'not-started': 'fix-input',
  'timed-out': 'retry',
  idle: 'retry',
  aborted: 'retry',
  'output-too-large': 'fix-input',
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
    const maxOutput = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const maxError = options.maxErrorBytes ?? DEFAULT_MAX_ERROR_BYTES;
    const child = spawn(program, [...args], {
      shell: false,
      cwd: options.cwd,
      env: { ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr: Buffer[] = [];
    let stderrBytes = 0;
    let settled = false;
    let idleTimer: NodeJS.Timeout | undefined;
    const totalTimer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(
            () =>
              stop(
                new ProcessError(
                  'timed-out',
                  program,
                  `${name} ran longer than ${formatSeconds(options.timeoutMs!)} and was stopped`,
                ),
              ),
            options.timeoutMs,
          );
    const onAbort = (): void =>
      stop(new ProcessError('aborted', program, `${name} was stopped: the run was cancelled`));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(totalTimer);
      clearTimeout(idleTimer);
      options.signal?.removeEventListener('abort', onAbort);
      return true;
    };
    const stop = (error: ProcessError): void => {
      if (!finish()) return;
      child.kill('SIGKILL');
      child.stdout.destroy();
      child.stderr.destroy();
      child.stdin.destroy();
      reject(error);
    };
    const heardFrom = (): void => {
      if (options.idleTimeoutMs === undefined || settled) return;
      clearTimeout(idleTimer);
      idleTimer = setTimeout(
        () =>
          stop(
            new ProcessError(
              'idle',
              program,
              `${name} printed nothing for ${formatSeconds(options.idleTimeoutMs!)} and was stopped`,
            ),
          ),
        options.idleTimeoutMs,
      );
    };
    heardFrom();
    child.stdout.on('data', (chunk: Buffer) => {
      heardFrom();
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxOutput)
        stop(
          new ProcessError(
            'output-too-large',
            program,
            `${name} printed more than ${Math.round(maxOutput / 1024 / 1024)} MiB and was stopped`,
          ),
        );
      else stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      heardFrom();
      stderr.push(chunk);
      stderrBytes += chunk.length;
      if (stderrBytes > 2 * maxError) {
        const kept = Buffer.concat(stderr).subarray(-maxError);
        [stderr, stderrBytes] = [[kept], kept.length];
      }
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (!finish()) return;
      // Node's message carries internal frames and, for a missing directory, blames the program.
      const because = error.code === 'ENOENT' ? 'not found' : (error.code ?? error.message);
      reject(
        new ProcessError('not-started', program, `${name} could not be started (${because})`, error.code, {
          cause: error,
        }),
      );
    });
    child.on('close', (code, signal) => {
      if (!finish()) return;
      const errorText = Buffer.concat(stderr);
      resolve({
        exitCode: code ?? (signal ? 128 : 1),
        signal,
        stdout: Buffer.concat(stdout),
        stderr: errorText.length > maxError ? errorText.subarray(-maxError) : errorText,
        elapsedMs: performance.now() - started,
      });
    });
    // A child that exits without reading its input closes the pipe: its exit status says why.
    child.stdin.on('error', () => undefined);
    writeInput(child.stdin, options.input).catch((error: unknown) => {
      // The input could not be produced: the run stops, and the caller hears why.
      if (!finish()) return;
      child.kill('SIGKILL');
      reject(error);
    });
  });
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
