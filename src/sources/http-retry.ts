// Retry with exponential backoff and jitter, rate-limit waits and request timeouts for the remote
// release sources (GitHub, OCI). The sources own retrying: client libraries' own retry is disabled.
import { currentDeadline, DeadlineExceededError, deadlineErrorOf, sleepWithinDeadline } from './remote-deadline.js';

/** How often and how patiently to retry a transient failure. */
export interface RetryPolicy {
  /** Total attempts, the first included. */
  attempts: number;
  /** Delay before the first retry (before jitter); doubles for every further retry. */
  baseDelayMs: number;
  /** Upper bound of one delay. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({ attempts: 4, baseDelayMs: 500, maxDelayMs: 10_000 });

export type Sleep = (ms: number) => Promise<void>;

export const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The delay before retry number `retry` (0 for the first retry): "equal jitter", a random point in
 * the upper half of the exponential step, so delays grow from one retry to the next yet spread
 * clients apart.
 */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.round(step / 2 + random() * (step / 2));
}

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
  /** Called before each backoff sleep, e.g. to log. */
  onRetry?: (error: unknown, delayMs: number, context: RetryContext) => void;
}

/** Runs `operation` until it succeeds, a non-transient error occurs, or the attempts run out (then the last error is thrown). */
export async function withRetry<T>(operation: (context: RetryContext) => Promise<T>, options: RetryOptions): Promise<T> {
  const policy = options.policy ?? DEFAULT_RETRY_POLICY;
  // Backoff never outlasts the operation's total deadline.
  const sleep = sleepWithinDeadline(options.sleep ?? realSleep);
  // When the deadline ends an attempt, the message says what failed before it.
  let lastFailure: unknown;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation({ attempt });
    } catch (error) {
      const deadline = deadlineErrorOf(error);
      if (deadline && lastFailure !== undefined) throw deadline.after(lastFailure);
      if (attempt >= policy.attempts || !options.isTransient(error) || currentDeadline()?.expired) throw error;
      lastFailure = error;
      const delay = backoffDelay(attempt - 1, policy, options.random);
      options.onRetry?.(error, delay, { attempt });
      try {
        await sleep(delay);
      } catch (sleepError) {
        throw sleepError instanceof DeadlineExceededError ? sleepError.after(error) : sleepError;
      }
    }
  }
}

/** HTTP statuses that say "try again later" rather than "your request is wrong". */
export function isTransientStatus(status: number): boolean {
  return status >= 500 || status === 408;
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
export class RequestTimeoutError extends Error {
  readonly failureKind = 'retry' as const;
  constructor(readonly url: string, readonly timeoutMs: number) {
    super(`no response from ${url} within ${timeoutMs} ms`);
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
          stream.error(controller.signal.aborted && controller.signal.reason instanceof Error ? controller.signal.reason : error);
        } finally {
          clearTimeout(timer);
        }
      },
      cancel(reason) {
        detach();
        return reader.cancel(reason);
      },
    });
    const wrapped = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    Object.defineProperty(wrapped, 'url', { value: response.url });
    return wrapped;
  };
}

/** The part of a pino logger the sources use: fields first, then a fixed message. */
export interface SourceLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}
