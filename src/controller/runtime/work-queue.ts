// A keyed work queue, as controllers use: watch callbacks add keys, workers reconcile by level.
//
// How the controller uses it (runController in controller.ts): two queues. The stack queue holds
// one key per ClusterStack (`ClusterStack/<ns>/<name>`), added only when a stack's generation or
// release source changes, and its reconcile lists that stack's source. The publish queue holds the
// single `publish` key: every relevant watch event (of any watched kind) calls
// `addBatched('publish', windowMs)` directly, so a burst of changes (a Git sync that touches ten
// stacks) ends in one render-and-commit instead of ten. Other objects get no keys of their own.
import { fullJitterDelay } from '../../core/backoff.js';
import type { Logger } from '../../core/logger.js';
import { systemClock, type Clock, type ClockTimer, type WorkQueue } from './runtime-contract.js';

/**
 * What a handler may return: nothing (done) or a request to look again later. `resync: true` says
 * the run did all its work and the look again is only the periodic resync: it counts as a success,
 * not a requeue.
 */
export type HandlerResult = void | { requeueAfterMs: number; resync?: boolean };

type ReconcileOutcome = 'success' | 'error' | 'requeue';

export interface KeyedWorkQueueOptions {
  /** Keys handled at the same time (a key never runs concurrently with itself). */
  concurrency: number;
  /** Reconciles one key. `signal` aborts when shutdown abandons the run; pass it to child processes. */
  handler: (key: string, signal: AbortSignal) => Promise<HandlerResult>;
  /** First retry delay cap after a failure; doubles per consecutive failure. Default 1 s. */
  baseDelayMs?: number;
  /** Largest retry delay. Default 2 min. */
  maxDelayMs?: number;
  /** [0, 1); injected by tests to pin jitter. */
  random?: () => number;
  clock?: Clock;
  logger?: Logger;
  /** Called after every handler run, e.g. to count reconciles in metrics. */
  onResult?: (key: string, outcome: ReconcileOutcome, durationMs: number) => void;
}

export interface ShutdownOptions {
  /**
   * false: drop waiting keys, let the runs in flight finish (the usual choice: the next leader
   * re-lists and reconciles everything anyway). true: keep running until nothing is waiting,
   * including keys that handlers add meanwhile and batches still in their window (flushed at once);
   * delayed keys (`addAfter`, retries) are dropped.
   */
  drain: boolean;
  /** After this, runs still in flight are abandoned: their signal aborts and shutdown resolves. */
  timeoutMs: number;
}

export interface ShutdownResult {
  /** False when the timeout hit. */
  completed: boolean;
  /** Keys whose runs were still in flight when the timeout hit. */
  abandoned: string[];
}

type State = 'new' | 'running' | 'draining' | 'stopping' | 'stopped';

interface Delayed {
  due: number;
  timer: ClockTimer;
  /** A failure retry holds off new adds (see `add`); a requested requeue does not. */
  backoff: boolean;
}

interface Batch {
  firstAt: number;
  timer: ClockTimer;
  inputsChanged: boolean;
}

export interface AddOptions {
  /** What the key reads really changed (a watch event, not our own write): skip a pending failure backoff. */
  inputsChanged?: boolean;
}

/**
 * The delay before retrying a key that failed `failures` times in a row: "full jitter", a random
 * point in [0, min(max, base * 2^(failures-1))).
 */
export function failureBackoffMs(
  failures: number,
  baseDelayMs: number,
  maxDelayMs: number,
  random: () => number,
): number {
  return fullJitterDelay(failures - 1, { baseDelayMs, maxDelayMs }, random);
}

/** A deduplicating keyed queue with bounded concurrency, failure backoff with jitter and batching. */
export class KeyedWorkQueue implements WorkQueue {
  private readonly ready: string[] = [];
  private readonly readySet = new Set<string>();
  private readonly active = new Map<string, AbortController>();
  /** Keys added while running, and whether any of those adds was an input change. */
  private readonly dirty = new Map<string, boolean>();
  private readonly delayed = new Map<string, Delayed>();
  private readonly batches = new Map<string, Batch>();
  private readonly failures = new Map<string, number>();
  private readonly idleWaiters: Array<() => void> = [];
  private state: State = 'new';
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(private readonly options: KeyedWorkQueueOptions) {
    if (!(options.concurrency >= 1)) throw new Error('work queue: concurrency must be at least 1');
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.baseDelayMs = options.baseDelayMs ?? 1000;
    this.maxDelayMs = options.maxDelayMs ?? 120_000;
  }

  /** Keys ready to run (not counting runs in flight, delayed keys or open batches). */
  get depth(): number {
    return this.ready.length;
  }

  /** Keys running now. */
  get inFlight(): readonly string[] {
    return [...this.active.keys()];
  }

  /** Consecutive failures of a key (0 after a success). */
  failureCount(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Starts the workers; keys added before are kept and run now. */
  start(): void {
    if (this.state !== 'new') return;
    this.state = 'running';
    this.pump();
  }

  /**
   * Queues a key to run as soon as a worker is free. A key already waiting is not queued twice; a
   * key running now runs once more afterwards. A key waiting out a failure backoff keeps waiting
   * (the retry reads the latest state anyway, and a reconciler whose failure writes status would
   * otherwise retrigger itself without pause), unless `inputsChanged`: a real change of what the
   * key reads is worth a look now, and the failure count stays, so the next failure still backs
   * off further.
   */
  add(key: string, options: AddOptions = {}): void {
    if (this.state === 'stopping' || this.state === 'stopped') return;
    const delayed = this.delayed.get(key);
    if (delayed?.backoff && !options.inputsChanged) return;
    if (delayed) this.cancelDelayed(key);
    if (this.active.has(key)) {
      this.dirty.set(key, Boolean(this.dirty.get(key) || options.inputsChanged));
      return;
    }
    if (this.readySet.has(key)) return;
    this.ready.push(key);
    this.readySet.add(key);
    this.pump();
  }

  /** Queues a key after a delay; of two pending delays the earlier wins. */
  addAfter(key: string, delayMs: number): void {
    this.schedule(key, delayMs, false);
  }

  /**
   * Collects adds of `key` and runs it once when no add came for `windowMs`, or at the latest
   * `maxWaitMs` after the first add of the burst (so a steady trickle cannot postpone it forever).
   * The batch counts as `inputsChanged` when any of its adds did.
   */
  addBatched(key: string, windowMs: number, maxWaitMs = windowMs * 10, options: AddOptions = {}): void {
    if (this.state === 'stopping' || this.state === 'stopped') return;
    if (this.state === 'draining') return this.add(key, options);
    const now = this.clock.now();
    const open = this.batches.get(key);
    if (open) this.clock.clearTimeout(open.timer);
    const firstAt = open?.firstAt ?? now;
    const inputsChanged = Boolean(open?.inputsChanged || options.inputsChanged);
    const due = Math.min(now + windowMs, firstAt + maxWaitMs);
    const timer = this.clock.setTimeout(
      () => {
        this.batches.delete(key);
        this.add(key, { inputsChanged });
      },
      Math.max(0, due - now),
    );
    this.batches.set(key, { firstAt, timer, inputsChanged });
  }

  /** Stops taking work; resolves when runs in flight are done (or abandoned after the timeout). */
  async shutdown(options: ShutdownOptions): Promise<ShutdownResult> {
    if (this.state === 'stopped') return { completed: true, abandoned: [] };
    for (const key of [...this.delayed.keys()]) this.cancelDelayed(key);
    const batched = [...this.batches.entries()];
    for (const [, batch] of batched) this.clock.clearTimeout(batch.timer);
    this.batches.clear();
    if (options.drain) {
      this.state = 'draining';
      for (const [key] of batched) this.add(key);
      this.pump();
    } else {
      this.state = 'stopping';
      this.ready.splice(0);
      this.readySet.clear();
      this.dirty.clear();
    }

    let timer: ClockTimer | undefined;
    const idle = new Promise<boolean>((resolve) => this.whenIdle(() => resolve(true)));
    const timedOut = new Promise<boolean>((resolve) => {
      timer = this.clock.setTimeout(() => resolve(false), options.timeoutMs);
      // Only a limit for a run that hangs: it must not keep the process alive by itself. A leader that
      // lost its lease stops its queues without waiting for them (the run in flight waits on an API
      // server that stopped answering), and its process must exit at once, not after this timeout.
      (timer as { unref?: () => void }).unref?.();
    });
    const completed = await Promise.race([idle, timedOut]);
    if (timer !== undefined) this.clock.clearTimeout(timer);
    const abandoned = completed ? [] : [...this.active.keys()];
    for (const controller of this.active.values()) controller.abort(new Error('work queue shut down'));
    this.state = 'stopped';
    this.idleWaiters.splice(0);
    this.ready.splice(0);
    this.readySet.clear();
    this.dirty.clear();
    for (const key of [...this.delayed.keys()]) this.cancelDelayed(key);
    return { completed, abandoned };
  }

  private schedule(key: string, delayMs: number, backoff: boolean): void {
    if (this.state !== 'new' && this.state !== 'running') return;
    if (delayMs <= 0 && !backoff) return this.add(key);
    if (this.readySet.has(key)) return;
    const due = this.clock.now() + delayMs;
    const existing = this.delayed.get(key);
    // A pending failure retry governs until it fires; among plain requeues the earlier wins.
    if (existing?.backoff && !backoff) return;
    if (existing && !backoff && existing.due <= due) return;
    if (existing) this.cancelDelayed(key);
    const timer = this.clock.setTimeout(
      () => {
        this.delayed.delete(key);
        this.add(key);
      },
      Math.max(0, delayMs),
    );
    this.delayed.set(key, { due, timer, backoff });
  }

  private cancelDelayed(key: string): void {
    const delayed = this.delayed.get(key);
    if (!delayed) return;
    this.clock.clearTimeout(delayed.timer);
    this.delayed.delete(key);
  }

  private pump(): void {
    if (this.state === 'running' || this.state === 'draining') {
      while (this.active.size < this.options.concurrency && this.ready.length > 0) {
        const key = this.ready.shift() as string;
        this.readySet.delete(key);
        this.run(key);
      }
    }
    this.checkIdle();
  }

  private run(key: string): void {
    const controller = new AbortController();
    this.active.set(key, controller);
    const startedAt = this.clock.now();
    Promise.resolve()
      .then(() => this.options.handler(key, controller.signal))
      .then(
        (result) => this.finished(key, startedAt, result ?? undefined, undefined),
        (error: unknown) =>
          this.finished(key, startedAt, undefined, error ?? new Error('handler rejected without a reason')),
      );
  }

  private finished(
    key: string,
    startedAt: number,
    result: { requeueAfterMs: number; resync?: boolean } | undefined,
    error: unknown,
  ): void {
    const durationMs = this.clock.now() - startedAt;
    this.active.delete(key);
    const wasDirty = this.dirty.has(key);
    const changedMeanwhile = this.dirty.get(key) === true;
    this.dirty.delete(key);
    let outcome: ReconcileOutcome;
    if (error !== undefined) {
      outcome = 'error';
      const failures = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, failures);
      const delayMs = failureBackoffMs(failures, this.baseDelayMs, this.maxDelayMs, this.random);
      this.options.logger?.warn(
        { key, failures, retryInMs: delayMs, err: error },
        'reconcile failed; retrying after backoff',
      );
      // The retry also covers adds that arrived during the run (the dirty mark), unless one of them
      // changed the inputs: the failed run may not have seen that change.
      this.schedule(key, delayMs, true);
      if (changedMeanwhile) this.add(key, { inputsChanged: true });
    } else {
      this.failures.delete(key);
      if (result && result.requeueAfterMs > 0) {
        outcome = result.resync ? 'success' : 'requeue';
        this.schedule(key, result.requeueAfterMs, false);
      } else {
        outcome = 'success';
      }
      if (wasDirty) this.add(key);
    }
    try {
      this.options.onResult?.(key, outcome, durationMs);
    } catch (hookError) {
      this.options.logger?.error({ key, err: hookError }, 'work queue result hook failed');
    }
    this.pump();
  }

  private whenIdle(callback: () => void): void {
    this.idleWaiters.push(callback);
    this.checkIdle();
  }

  private checkIdle(): void {
    if (this.active.size > 0 || (this.state === 'draining' && this.ready.length > 0)) return;
    if (this.state !== 'draining' && this.state !== 'stopping') return;
    for (const waiter of this.idleWaiters.splice(0)) waiter();
  }
}
