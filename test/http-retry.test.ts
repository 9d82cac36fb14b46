import { describe, expect, it } from 'vitest';
import { withRetry } from '../src/http/http-retry.js';
import { DeadlineExceededError, withDeadline } from '../src/http/remote-deadline.js';

const policy = { attempts: 3, baseDelayMs: 100, maxDelayMs: 1000 };

function failing(errors: unknown[]): { operation: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    operation: async () => {
      const error = errors[calls++];
      if (error !== undefined) throw error;
      return 'done';
    },
    calls: () => calls,
  };
}

describe('withRetry', () => {
  it('retries transient failures with growing, jittered delays and returns the first success', async () => {
    const slept: number[] = [];
    const { operation, calls } = failing([new Error('503'), new Error('503')]);
    const result = await withRetry(operation, {
      policy,
      sleep: async (ms) => void slept.push(ms),
      random: () => 0,
      isTransient: () => true,
    });
    expect(result).toBe('done');
    expect(calls()).toBe(3);
    // Equal jitter with random() = 0: half of each doubling step.
    expect(slept).toEqual([50, 100]);
  });

  it('gives up after the attempts with the last error, and at once on a permanent one', async () => {
    const last = new Error('third');
    const transient = failing([new Error('first'), new Error('second'), last]);
    await expect(
      withRetry(transient.operation, { policy, sleep: async () => undefined, isTransient: () => true }),
    ).rejects.toBe(last);
    const permanent = failing([new Error('404')]);
    await expect(
      withRetry(permanent.operation, { policy, sleep: async () => undefined, isTransient: () => false }),
    ).rejects.toThrow('404');
    expect(permanent.calls()).toBe(1);
  });

  it('waits out a server-requested wait without counting it as an attempt', async () => {
    const slept: number[] = [];
    const rateLimited = Object.assign(new Error('429'), { waitMs: 5000 });
    const { operation, calls } = failing([rateLimited, new Error('503'), new Error('503')]);
    const result = await withRetry(operation, {
      policy,
      sleep: async (ms) => void slept.push(ms),
      random: () => 0,
      isTransient: (error) => (error as Error).message === '503',
      serverWaitMs: (error) => (error as { waitMs?: number }).waitMs,
    });
    expect(result).toBe('done');
    expect(calls()).toBe(4);
    expect(slept).toEqual([5000, 50, 100]);
  });

  it('ends a backoff that would outlast the deadline with the deadline error naming the last failure', async () => {
    const { operation } = failing([new Error('HTTP 503 at https://host/path?token=x')]);
    const error = await withDeadline('listing releases', 1000, () =>
      withRetry(operation, {
        policy: { attempts: 3, baseDelayMs: 5000, maxDelayMs: 5000 },
        sleep: async () => undefined,
        random: () => 0,
        isTransient: () => true,
        describe: () => 'HTTP 503',
      }),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as Error).message).toContain('(last failure: HTTP 503)');
    expect((error as Error).message).not.toContain('token=x');
  });
});
