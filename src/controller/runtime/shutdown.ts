// Graceful shutdown on SIGTERM (kubelet) and SIGINT (a terminal): the first signal stops the
// controller in order and exits; a second signal, or the timeout, exits at once.
import { constants } from 'node:os';
import type { Logger } from '../../core/logger.js';
import { systemClock, type Clock } from './runtime-contract.js';

/** The part of `process` this module uses; tests pass an EventEmitter with an `exit` spy. */
export interface SignalTarget {
  on(event: string, listener: (signal: NodeJS.Signals) => void): unknown;
  removeListener(event: string, listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): void;
}

export interface ShutdownSignalOptions {
  signals?: NodeJS.Signals[];
  /** The whole shutdown must finish within this; then the process exits with code 1. */
  timeoutMs: number;
  process?: SignalTarget;
  logger?: Logger;
  clock?: Clock;
}

/** The exit code a shell reports for death by `signal`: 128 + its number (SIGTERM 143, SIGINT 130). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 1);
}

/**
 * Runs `handler` on the first of `signals`, then exits 0 (1 if it failed or outlived `timeoutMs`);
 * `handler`'s signal aborts at the timeout. A second signal exits at once with 128 + its number.
 * Returns a function that removes the listeners.
 *
 * The handler should: stop the informers, shut the queue down (`drain: false`: the publish in
 * flight finishes, or is abandoned at its own, shorter timeout), then stop the leader elector,
 * which releases the lease only after that publish ended, and close the health server.
 */
export function onShutdownSignals(
  handler: (signal: NodeJS.Signals, abort: AbortSignal) => Promise<void>,
  options: ShutdownSignalOptions,
): () => void {
  const target: SignalTarget = options.process ?? process;
  const clock = options.clock ?? systemClock;
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  const log = options.logger;
  let shuttingDown = false;
  let exited = false;
  const exit = (code: number) => {
    if (exited) return;
    exited = true;
    target.exit(code);
  };

  const listener = (signal: NodeJS.Signals) => {
    if (shuttingDown) {
      log?.warn({ signal }, 'second signal; exiting now');
      exit(signalExitCode(signal));
      return;
    }
    shuttingDown = true;
    log?.info({ signal, timeoutMs: options.timeoutMs }, 'shutting down');
    const controller = new AbortController();
    const timer = clock.setTimeout(() => {
      controller.abort(new Error('shutdown timed out'));
      log?.error({ signal, timeoutMs: options.timeoutMs }, 'shutdown timed out; exiting');
      exit(1);
    }, options.timeoutMs);
    Promise.resolve()
      .then(() => handler(signal, controller.signal))
      .then(
        () => {
          clock.clearTimeout(timer);
          log?.info({ signal }, 'shut down');
          exit(0);
        },
        (error: unknown) => {
          clock.clearTimeout(timer);
          log?.error({ signal, err: error }, 'shutdown failed; exiting');
          exit(1);
        },
      );
  };

  for (const signal of signals) target.on(signal, listener);
  return () => {
    for (const signal of signals) target.removeListener(signal, listener);
  };
}
