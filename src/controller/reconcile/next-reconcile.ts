// What the work queue does after a reconcile, decided by the failure table (src/core/failure.ts)
// from the failures the reconcile met, never from their wording:
//   backoff             (retry, internal)  the reconcile fails: the queue retries with backoff and
//                                          jitter, bounded by its largest delay
//   on-signal           (wait)             the watch event of what it waits for requeues it; the
//   when-inputs-change  (fix-input)        resync looks again, without backoff
// Statuses, conditions and events are written before either, so a person sees the reason at once.
import { FAILURE_REACTIONS, type TypedFailure, Failure } from '../../core/failure.js';

/** A reconcile that did its job but met something worth retrying with backoff (a source, Git, the API). */
export class RetryLaterError extends Failure {
  constructor(message: string) {
    super('retry', message);
    this.name = 'RetryLaterError';
  }
}

/**
 * The requeue after a reconcile that met `failures`: throws RetryLaterError when one of them
 * backs off (naming it, and how many more), else the delay until the next look; `resync` when
 * nothing went wrong and the next look is only the periodic resync (the reconcile succeeded).
 */
export function nextReconcile(
  failures: readonly TypedFailure[],
  delays: { resyncMs: number; soonMs?: number },
): { requeueAfterMs: number; resync?: true } {
  const backingOff = failures.filter((failure) => FAILURE_REACTIONS[failure.kind].requeue === 'backoff');
  if (backingOff.length > 0) {
    const more = backingOff.length > 1 ? ` (and ${backingOff.length - 1} more)` : '';
    throw new RetryLaterError(`${backingOff[0]!.message}${more}`);
  }
  if (failures.length === 0 && delays.soonMs === undefined) return { requeueAfterMs: delays.resyncMs, resync: true };
  return { requeueAfterMs: delays.soonMs ?? delays.resyncMs };
}
