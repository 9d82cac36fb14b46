// The delays between attempts, in one place: exponential steps capped at a maximum, with jitter so
// that many clients (or many keys) that failed together do not all come back at the same instant.
// Pure arithmetic; the loops that sleep live with their I/O (withRetry, the informers, the queue).

/** The first step and the largest step of an exponential backoff. */
export interface BackoffSteps {
  /** The step before the first retry; doubles for every further retry. */
  baseDelayMs: number;
  /** Upper bound of one step. */
  maxDelayMs: number;
}

function step(retry: number, steps: BackoffSteps): number {
  return Math.min(steps.maxDelayMs, steps.baseDelayMs * 2 ** Math.max(0, retry));
}

/**
 * The delay before retry number `retry` (0 for the first): "equal jitter", a random point in the
 * upper half of the step, so delays grow from one retry to the next yet spread clients apart.
 */
export function equalJitterDelay(retry: number, steps: BackoffSteps, random: () => number = Math.random): number {
  const cap = step(retry, steps);
  return Math.round(cap / 2 + random() * (cap / 2));
}

/**
 * The delay before retry number `retry` (0 for the first): "full jitter", a random point in
 * [0, step), the widest spread, for a work queue where many keys may fail at once.
 */
export function fullJitterDelay(retry: number, steps: BackoffSteps, random: () => number = Math.random): number {
  return Math.floor(random() * step(retry, steps));
}
