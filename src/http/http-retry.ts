// Retry with exponential backoff and jitter, rate-limit waits and request timeouts for the remote
// release sources (GitHub, OCI). The sources own retrying: client libraries' own retry is disabled.
import { type BackoffSteps, equalJitterDelay } from '../core/backoff.js';
import { currentDeadline, DeadlineExceededError, deadlineErrorOf, sleepWithinDeadline } from './remote-deadline.js';
import { Failure } from '../core/failure.js';

/** How often and how patiently to retry a transient failure. */
export interface RetryPolicy extends BackoffSteps {
  /** Total attempts, the first included. */
  attempts: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  attempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
});

export type Sleep = (ms: number) => Promise<void>;

export const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export interface RetryContext {
  /** 1 for the first attempt. */
  attempt: number;
}

export interface RetryOptions {
  policy?: RetryPolicy;
  sleep?: Sleep;
  random?: () => number;
  /** True when the error is worth another attempt (server errors, network errors, timeouts). */
  isTransient: (error: unknown) => boolean;
  /**
   * How long the server asked us to wait before asking again (a rate limit), or undefined when
   * `error` is no such answer. Waiting it out is not a failed attempt. Throw to give up instead
   * (a wait too long, or a second one).
   */
  serverWaitMs?: (error: unknown) => number | undefined;
  /** The failure in printable words, for the deadline's "last failure" (default: the error's message). */
  describe?: (error: unknown) => string;
  /** Called before each backoff sleep, e.g. to log. */
  onRetry?: (error: unknown, delayMs: number, context: RetryContext) => void;
}

/**
 * Runs `operation` until it succeeds, a non-transient error occurs, or the attempts run out (then
 * the last error is thrown). Waits never outlast the current deadline (remote-deadline.ts); when
 * it ends the operation, the DeadlineExceededError says what failed before it.
 */
export async function withRetry<T>(
  operation: (context: RetryContext) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const policy = options.policy ?? DEFAULT_RETRY_POLICY;
  const sleep = sleepWithinDeadline(options.sleep ?? realSleep);
  const describe = options.describe ?? ((error: unknown) => error);
  const sleepBefore = async (ms: number, failure: unknown): Promise<void> => {
    try {
      await sleep(ms);
    } catch (sleepError) {
      throw sleepError instanceof DeadlineExceededError ? sleepError.after(describe(failure)) : sleepError;
    }
  };
  let lastFailure: unknown;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation({ attempt });
    } catch (error) {
      const current = currentDeadline();
      const deadline = deadlineErrorOf(error) ?? (current?.expired ? current.error : undefined);
      if (deadline) throw lastFailure === undefined ? error : deadline.after(lastFailure);
      const waitMs = options.serverWaitMs?.(error);
      if (waitMs !== undefined) {
        await sleepBefore(waitMs, error);
        attempt -= 1;
        continue;
      }
      if (attempt >= policy.attempts || !options.isTransient(error)) throw error;
      lastFailure = describe(error);
      const delay = equalJitterDelay(attempt - 1, policy, options.random);
      options.onRetry?.(error, delay, { attempt });
      await sleepBefore(delay, error);
    }
  }
}

type HeaderBag = Headers | Record<string, string | number | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const value = headers[name] ?? headers[name.toLowerCase()];
  return value === undefined ? undefined : String(value);
}

/**
 * How long a rate-limited response asks us to wait, in ms, from `Retry-After` (seconds or an HTTP
 * date) or a `x-ratelimit-reset` epoch-seconds header with `x-ratelimit-remaining: 0`; undefined
 * when the response is not a rate limit.
 */
export function rateLimitWaitMs(headers: HeaderBag, now: Date): number | undefined {
  const retryAfter = header(headers, 'retry-after');
  if (retryAfter !== undefined && retryAfter.trim() !== '') {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
    const date = Date.parse(retryAfter);
    if (Number.isFinite(date)) return Math.max(0, date - now.getTime());
  }
  if (header(headers, 'x-ratelimit-remaining') === '0') {
    const reset = Number(header(headers, 'x-ratelimit-reset'));
    if (Number.isFinite(reset)) return Math.max(0, reset * 1000 - now.getTime());
    return Number.POSITIVE_INFINITY;
  }
  return undefined;
}

/** A request that got no answer in time (no headers, or no body bytes for the whole timeout). */
export class RequestTimeoutError extends Failure {
  constructor(
    readonly url: string,
    readonly timeoutMs: number,
  ) {
    super('retry', `no response from ${url} within ${timeoutMs} ms`);
    this.name = 'RequestTimeoutError';
  }
}

const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** A URL safe to print: no userinfo, no query (signed download URLs carry credentials there). */
export function printableUrl(input: string | URL): string {
  try {
    const url = new URL(String(input));
    return `${url.origin}${url.pathname}`;
  } catch {
    return '<invalid url>';
  }
}

/**
 * Wraps `fetch` so that a request fails with RequestTimeoutError when the headers do not arrive
 * within `timeoutMs`, or the body stalls (no bytes) for `timeoutMs`: idle time, so a slow but live
 * download is not cut off by it. What bounds the total (a server trickling one byte a second) is the
 * deadline of the operation the request runs in (remote-deadline.ts): it aborts headers and body
 * alike with a DeadlineExceededError.
 */
export function fetchWithTimeout(fetchImpl: typeof fetch, timeoutMs: number): typeof fetch {
  return async (input, init = {}) => {
    const url = printableUrl(input instanceof Request ? input.url : input);
    const controller = new AbortController();
    // Listeners on the caller's signal and the deadline are removed when the request is over: one
    // deadline outlives hundreds of requests (every page of a listing, every asset).
    const detachers: (() => void)[] = [];
    for (const outer of [init.signal, currentDeadline()?.signal]) {
      if (!outer) continue;
      if (outer.aborted) {
        controller.abort(outer.reason);
        continue;
      }
      const forward = (): void => controller.abort(outer.reason);
      outer.addEventListener('abort', forward, { once: true });
      detachers.push(() => outer.removeEventListener('abort', forward));
    }
    const detach = (): void => {
      for (const remove of detachers.splice(0)) remove();
    };
    const timeout = (): void => controller.abort(new RequestTimeoutError(url, timeoutMs));
    let timer = setTimeout(timeout, timeoutMs);
    let response: Response;
    try {
      response = await fetchImpl(input, { ...init, signal: controller.signal });
    } catch (error) {
      detach();
      throw controller.signal.aborted && controller.signal.reason instanceof Error ? controller.signal.reason : error;
    } finally {
      clearTimeout(timer);
    }
    if (!response.body || NULL_BODY_STATUSES.has(response.status)) {
      detach();
      return response;
    }
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(stream) {
        timer = setTimeout(timeout, timeoutMs);
        try {
          const { done, value } = await reader.read();
          if (done) {
            detach();
            stream.close();
          } else stream.enqueue(value);
        } catch (error) {
          detach();
          stream.error(
            controller.signal.aborted && controller.signal.reason instanceof Error ? controller.signal.reason : error,
          );
        } finally {
          clearTimeout(timer);
        }
      },
      cancel(reason) {
        detach();
        return reader.cancel(reason);
      },
    });
    const wrapped = new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    Object.defineProperty(wrapped, 'url', { value: response.url });
    return wrapped;
  };
}
