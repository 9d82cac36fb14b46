// A total deadline for one remote operation: listing a release source, fetching one release,
// pushing one artifact. Idle timeouts alone never end a server that keeps sending one byte a second,
// and retries multiply every per-attempt limit; this one covers headers, bodies, retries and waits.
//
// The deadline travels with the async context (AsyncLocalStorage) rather than as a parameter: the
// requests it must end are made deep inside octokit and our retry loops, and every one of them goes
// through `fetchWithTimeout` and the deadline-aware sleep, which read it here.
import { AsyncLocalStorage } from 'node:async_hooks';
import { Failure } from '../core/failure.js';

/** A remote operation that ran out of its total time; retrying later may work (exit code 3). */
export class DeadlineExceededError extends Failure {
  constructor(
    readonly what: string,
    readonly totalMs: number,
    lastFailure?: string,
    options?: { cause?: unknown },
  ) {
    super(
      'retry',
      `${what} did not finish within ${formatDuration(totalMs)}${lastFailure ? ` (last failure: ${lastFailure})` : ''}; that is the total time allowed for one remote operation (--remote-timeout or CLUSTERSTACK_REMOTE_TIMEOUT)`,
      options,
    );
    this.name = 'DeadlineExceededError';
  }

  /** The same deadline, reached while waiting to retry `failure`: the message says what kept failing. */
  after(failure: unknown): DeadlineExceededError {
    return new DeadlineExceededError(
      this.what,
      this.totalMs,
      failure instanceof Error ? failure.message : String(failure),
      { cause: failure },
    );
  }
}

/** `1500 ms`, `30 s`, `5 min`: short and exact enough for messages. */
function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000 || ms % 60_000 !== 0) return `${Math.round(ms / 100) / 10} s`;
  return `${ms / 60_000} min`;
}

export class RemoteDeadline {
  readonly signal: AbortSignal;
  readonly error: DeadlineExceededError;
  private readonly expiresAt: number;
  private readonly timer: NodeJS.Timeout;

  constructor(
    what: string,
    readonly totalMs: number,
  ) {
    const controller = new AbortController();
    this.signal = controller.signal;
    this.error = new DeadlineExceededError(what, totalMs);
    this.expiresAt = Date.now() + totalMs;
    this.timer = setTimeout(() => controller.abort(this.error), totalMs);
    // A pending deadline must not keep a finished CLI alive.
    this.timer.unref();
  }

  remainingMs(): number {
    return Math.max(0, this.expiresAt - Date.now());
  }

  get expired(): boolean {
    return this.signal.aborted;
  }

  dispose(): void {
    clearTimeout(this.timer);
  }
}

const ambient = new AsyncLocalStorage<RemoteDeadline>();

/** The deadline of the remote operation this code runs in, if any. */
export function currentDeadline(): RemoteDeadline | undefined {
  return ambient.getStore();
}

/**
 * Runs `operation` under a total deadline of `totalMs`. Nested inside an operation whose deadline
 * comes sooner, the outer one stays in force: an inner step never extends the whole.
 */
export async function withDeadline<T>(what: string, totalMs: number, operation: () => Promise<T>): Promise<T> {
  const outer = ambient.getStore();
  if (outer && outer.remainingMs() <= totalMs) return operation();
  const deadline = new RemoteDeadline(what, totalMs);
  try {
    return await ambient.run(deadline, operation);
  } finally {
    deadline.dispose();
  }
}

/** The DeadlineExceededError behind `error` (client libraries wrap it in causes), if that is what it is. */
export function deadlineErrorOf(error: unknown): DeadlineExceededError | undefined {
  for (
    let current = error, depth = 0;
    current instanceof Error && depth < 6;
    current = (current as { cause?: unknown }).cause, depth++
  ) {
    if (current instanceof DeadlineExceededError) return current;
  }
  return undefined;
}

/**
 * Wraps a sleep so that it never runs past the current deadline: a wait that would end after it
 * fails at once with the deadline's error, instead of sleeping only to fail afterwards.
 */
export function sleepWithinDeadline(sleep: (ms: number) => Promise<void>): (ms: number) => Promise<void> {
  return async (ms) => {
    const deadline = currentDeadline();
    if (deadline && (deadline.expired || ms >= deadline.remainingMs())) throw deadline.error;
    await sleep(ms);
    if (deadline?.expired) throw deadline.error;
  };
}
