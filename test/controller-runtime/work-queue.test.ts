import { describe, expect, it } from 'vitest';
import type { Clock, ClockTimer } from '../../src/controller/runtime/runtime-contract.js';
import {
  KeyedWorkQueue,
  failureBackoffMs,
  type HandlerResult,
  type KeyedWorkQueueOptions,
} from '../../src/controller/runtime/work-queue.js';

/** A clock whose time only moves when the test says so; timers fire in due order. */
class ManualClock implements Clock {
  private time = 0;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; callback: () => void }>();

  now(): number {
    return this.time;
  }

  setTimeout(callback: () => void, ms: number): ClockTimer {
    const id = ++this.seq;
    this.timers.set(id, { at: this.time + ms, callback });
    return id;
  }

  clearTimeout(timer: ClockTimer): void {
    this.timers.delete(timer as number);
  }

  /** Delays from now of the pending timers, soonest first. */
  pending(): number[] {
    return [...this.timers.values()].map((t) => t.at - this.time).sort((a, b) => a - b);
  }

  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await settle();
      const next = [...this.timers.entries()].sort(([, a], [, b]) => a.at - b.at)[0];
      if (!next || next[1].at > end) break;
      this.timers.delete(next[0]);
      this.time = next[1].at;
      next[1].callback();
    }
    this.time = end;
    await settle();
  }
}

/** Lets promise callbacks and handler continuations run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function aQueue(
  handler: (key: string, signal: AbortSignal) => Promise<HandlerResult>,
  options: Partial<KeyedWorkQueueOptions> = {},
) {
  const clock = new ManualClock();
  const queue = new KeyedWorkQueue({
    concurrency: 1,
    handler,
    baseDelayMs: 100,
    maxDelayMs: 1000,
    random: () => 0.5,
    clock,
    ...options,
  });
  return { queue, clock };
}

describe('KeyedWorkQueue', () => {
  it('runs a key added several times while waiting only once', async () => {
    const runs: string[] = [];
    const { queue } = aQueue(async (key) => void runs.push(key));
    for (const key of ['a', 'b', 'a', 'a', 'b']) queue.add(key);
    expect(queue.depth).toBe(2);
    queue.start();
    await settle();
    expect(runs).toEqual(['a', 'b']);
    expect(queue.depth).toBe(0);
  });

  it('runs a key added during its run once more afterwards, never concurrently with itself', async () => {
    const gates: Array<ReturnType<typeof deferred>> = [];
    let running = 0;
    let maxRunning = 0;
    const { queue } = aQueue(
      async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        const gate = deferred();
        gates.push(gate);
        await gate.promise;
        running--;
      },
      { concurrency: 4 },
    );
    queue.start();
    queue.add('a');
    await settle();
    expect(gates).toHaveLength(1);
    queue.add('a');
    queue.add('a');
    await settle();
    expect(gates).toHaveLength(1);
    gates[0]?.resolve();
    await settle();
    expect(gates).toHaveLength(2);
    gates[1]?.resolve();
    await settle();
    expect(gates).toHaveLength(2);
    expect(maxRunning).toBe(1);
  });

  it('runs at most `concurrency` keys at once', async () => {
    const gates = new Map<string, ReturnType<typeof deferred>>();
    const { queue } = aQueue(
      async (key) => {
        const gate = deferred();
        gates.set(key, gate);
        await gate.promise;
      },
      { concurrency: 2 },
    );
    queue.start();
    for (const key of ['a', 'b', 'c', 'd']) queue.add(key);
    await settle();
    expect([...gates.keys()]).toEqual(['a', 'b']);
    expect(queue.inFlight).toEqual(['a', 'b']);
    expect(queue.depth).toBe(2);
    gates.get('b')?.resolve();
    await settle();
    expect([...gates.keys()]).toEqual(['a', 'b', 'c']);
  });

  it('retries a failing key with exponential backoff and full jitter, and resets after a success', async () => {
    let failing = true;
    const runs: number[] = [];
    const results: string[] = [];
    const { queue, clock } = aQueue(
      async () => {
        runs.push(clock.now());
        if (failing) throw new Error('remote unavailable');
      },
      { random: () => 0.999, onResult: (_key, outcome) => results.push(outcome) },
    );
    queue.start();
    queue.add('a');
    await settle();
    // Caps: 100, 200, 400, 800, then maxDelayMs 1000; random 0.999 picks just under each cap.
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      delays.push(clock.pending()[0] as number);
      await clock.advance(clock.pending()[0] as number);
    }
    expect(delays).toEqual([99, 199, 399, 799, 999, 999]);
    expect(queue.failureCount('a')).toBe(7);
    expect(results.every((r) => r === 'error')).toBe(true);

    failing = false;
    await clock.advance(clock.pending()[0] as number);
    expect(queue.failureCount('a')).toBe(0);
    expect(clock.pending()).toEqual([]);
    failing = true;
    queue.add('a');
    await settle();
    expect(clock.pending()).toEqual([99]);
  });

  it('keeps every backoff delay within [0, cap) whatever the random source gives', () => {
    for (const r of [0, 0.25, 0.5, 0.999999]) {
      for (let failures = 1; failures <= 12; failures++) {
        const cap = Math.min(1000, 100 * 2 ** (failures - 1));
        const delay = failureBackoffMs(failures, 100, 1000, () => r);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThan(cap);
      }
    }
    expect(failureBackoffMs(3, 100, 1000, () => 0.5)).toBe(200);
  });

  it('does not let new adds skip a pending failure retry', async () => {
    let runs = 0;
    const { queue, clock } = aQueue(async () => {
      runs++;
      throw new Error('broken');
    });
    queue.start();
    queue.add('a');
    await settle();
    expect(runs).toBe(1);
    // A failing reconcile that writes status would otherwise retrigger itself at once.
    queue.add('a');
    queue.add('a');
    await settle();
    expect(runs).toBe(1);
    expect(clock.pending()).toEqual([50]);
    await clock.advance(50);
    expect(runs).toBe(2);
  });

  it('runs a key in backoff at once when its inputs changed, and keeps counting its failures', async () => {
    const runs: number[] = [];
    const { queue, clock } = aQueue(async () => {
      runs.push(clock.now());
      throw new Error('broken');
    });
    queue.start();
    queue.add('a');
    await settle();
    await clock.advance(10);
    queue.add('a', { inputsChanged: true });
    await settle();
    expect(runs).toEqual([0, 10]);
    expect(queue.failureCount('a')).toBe(2);
    // Still backing off for adds that are not input changes (its own status writes, resyncs).
    expect(clock.pending()).toEqual([100]);
    queue.add('a');
    await settle();
    expect(runs).toEqual([0, 10]);
    // A batched change skips the backoff too, once its window closes.
    queue.addBatched('a', 20, undefined, { inputsChanged: true });
    await clock.advance(20);
    expect(runs).toEqual([0, 10, 30]);
  });

  it('reruns a failed key at once when its inputs changed while it ran', async () => {
    const gate = deferred();
    const runs: number[] = [];
    const { queue, clock } = aQueue(async () => {
      runs.push(clock.now());
      if (runs.length === 1) {
        await gate.promise;
        throw new Error('broken');
      }
    });
    queue.start();
    queue.add('a');
    await settle();
    queue.add('a', { inputsChanged: true });
    gate.resolve();
    await settle();
    await settle();
    expect(runs).toEqual([0, 0]);
  });

  it('requeues after the delay a handler asks for, and an add runs the key sooner', async () => {
    const runs: number[] = [];
    const { queue, clock } = aQueue(async (): Promise<HandlerResult> => {
      runs.push(clock.now());
      return { requeueAfterMs: 5000 };
    });
    queue.start();
    queue.add('a');
    await settle();
    await clock.advance(5000);
    expect(runs).toEqual([0, 5000]);
    await clock.advance(1000);
    queue.add('a');
    await settle();
    expect(runs).toEqual([0, 5000, 6000]);
    // The earlier timer was replaced, not doubled.
    expect(clock.pending()).toEqual([5000]);
  });

  it('counts a run that only schedules its resync as a success, and a requested look again as a requeue', async () => {
    const outcomes: string[] = [];
    let answer: HandlerResult = { requeueAfterMs: 5000, resync: true };
    const { queue, clock } = aQueue(async () => answer, { onResult: (_key, outcome) => outcomes.push(outcome) });
    queue.start();
    queue.add('a');
    await settle();
    answer = { requeueAfterMs: 500 };
    await clock.advance(5000);
    answer = undefined;
    await clock.advance(500);
    expect(outcomes).toEqual(['success', 'requeue', 'success']);
    // The resync is still scheduled, like any requeue.
    answer = { requeueAfterMs: 5000, resync: true };
    queue.add('a');
    await settle();
    expect(clock.pending()).toEqual([5000]);
  });

  it('keeps the earlier of two addAfter delays', async () => {
    const runs: number[] = [];
    const { queue, clock } = aQueue(async () => void runs.push(clock.now()));
    queue.start();
    queue.addAfter('a', 300);
    queue.addAfter('a', 100);
    queue.addAfter('a', 200);
    await clock.advance(1000);
    expect(runs).toEqual([100]);
  });

  it('turns a burst of batched adds into one run', async () => {
    const runs: number[] = [];
    const { queue, clock } = aQueue(async () => void runs.push(clock.now()));
    queue.start();
    for (let i = 0; i < 10; i++) {
      queue.addBatched('publish', 200);
      await clock.advance(10);
    }
    expect(runs).toEqual([]);
    await clock.advance(1000);
    // Debounced: 200 ms after the last add (at 90 ms).
    expect(runs).toEqual([290]);
  });

  it('runs a batch at the latest maxWaitMs after its first add, even under a steady trickle', async () => {
    const runs: number[] = [];
    const { queue, clock } = aQueue(async () => void runs.push(clock.now()));
    queue.start();
    for (let i = 0; i < 30; i++) {
      queue.addBatched('publish', 100, 500);
      await clock.advance(50);
    }
    await clock.advance(1000);
    expect(runs[0]).toBe(500);
    expect(runs.length).toBeGreaterThanOrEqual(2);
  });

  it('batches adds that arrive while the batched key runs into one more run', async () => {
    const gates: Array<ReturnType<typeof deferred>> = [];
    const { queue, clock } = aQueue(async () => {
      const gate = deferred();
      gates.push(gate);
      await gate.promise;
    });
    queue.start();
    queue.addBatched('publish', 100);
    await clock.advance(100);
    expect(gates).toHaveLength(1);
    for (let i = 0; i < 5; i++) queue.addBatched('publish', 100);
    await clock.advance(100);
    gates[0]?.resolve();
    await settle();
    expect(gates).toHaveLength(2);
    gates[1]?.resolve();
    await clock.advance(1000);
    expect(gates).toHaveLength(2);
  });

  describe('shutdown', () => {
    it('without drain lets the run in flight finish and drops waiting keys', async () => {
      const gate = deferred();
      const runs: string[] = [];
      const { queue, clock } = aQueue(async (key) => {
        runs.push(key);
        if (key === 'publish') await gate.promise;
      });
      queue.start();
      queue.add('publish');
      queue.add('b');
      queue.addAfter('c', 10);
      await settle();
      let result: unknown;
      const done = queue.shutdown({ drain: false, timeoutMs: 1000 }).then((r) => (result = r));
      queue.add('d');
      await settle();
      expect(result).toBeUndefined();
      gate.resolve();
      await done;
      expect(result).toEqual({ completed: true, abandoned: [] });
      await clock.advance(100);
      expect(runs).toEqual(['publish']);
    });

    it('abandons a run that outlives the timeout and aborts its signal', async () => {
      let signal: AbortSignal | undefined;
      const { queue, clock } = aQueue(async (_key, s) => {
        signal = s;
        await new Promise(() => undefined);
      });
      queue.start();
      queue.add('publish');
      await settle();
      const done = queue.shutdown({ drain: false, timeoutMs: 500 });
      await clock.advance(500);
      expect(await done).toEqual({ completed: false, abandoned: ['publish'] });
      expect(signal?.aborted).toBe(true);
    });

    it('with drain runs waiting keys, keys added meanwhile and open batches', async () => {
      const runs: string[] = [];
      const { queue } = aQueue(async (key) => {
        runs.push(key);
        if (key === 'ClusterStack/default/a') queue.addBatched('publish', 10_000);
      });
      queue.add('ClusterStack/default/a');
      queue.add('ClusterStack/default/b');
      queue.addBatched('other', 10_000);
      queue.start();
      const result = await queue.shutdown({ drain: true, timeoutMs: 1000 });
      expect(result.completed).toBe(true);
      expect(runs.sort()).toEqual(['ClusterStack/default/a', 'ClusterStack/default/b', 'other', 'publish']);
    });

    it('resolves at once when nothing runs', async () => {
      const { queue } = aQueue(async () => undefined);
      queue.start();
      expect(await queue.shutdown({ drain: true, timeoutMs: 1000 })).toEqual({ completed: true, abandoned: [] });
    });
  });
});
