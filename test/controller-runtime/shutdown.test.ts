import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { Clock, ClockTimer } from '../../src/controller/runtime/runtime-contract.js';
import { onShutdownSignals, signalExitCode, type SignalTarget } from '../../src/controller/runtime/shutdown.js';
import { recordingLogger } from '../support/test-logger.js';

/** Stands in for `process`: signals are emitted by the test, exit codes recorded. */
class FakeProcess extends EventEmitter implements SignalTarget {
  readonly exits: number[] = [];
  exit(code: number): void {
    this.exits.push(code);
  }
}

/** Timers that fire only when the test calls fire(). */
class HeldClock implements Clock {
  readonly timers = new Map<number, { ms: number; callback: () => void }>();
  private seq = 0;
  now(): number {
    return 0;
  }
  setTimeout(callback: () => void, ms: number): ClockTimer {
    this.timers.set(++this.seq, { ms, callback });
    return this.seq;
  }
  clearTimeout(timer: ClockTimer): void {
    this.timers.delete(timer as number);
  }
  fire(): void {
    for (const [id, timer] of [...this.timers]) {
      this.timers.delete(id);
      timer.callback();
    }
  }
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('onShutdownSignals', () => {
  it('runs the handler once on the first signal, then exits 0', async () => {
    const proc = new FakeProcess();
    const clock = new HeldClock();
    const gate = deferred();
    const calls: string[] = [];
    onShutdownSignals(
      async (signal) => {
        calls.push(signal);
        await gate.promise;
      },
      { timeoutMs: 30_000, process: proc, clock },
    );
    proc.emit('SIGTERM', 'SIGTERM');
    await settle();
    expect(calls).toEqual(['SIGTERM']);
    expect(proc.exits).toEqual([]);
    expect([...clock.timers.values()].map((t) => t.ms)).toEqual([30_000]);
    gate.resolve();
    await settle();
    expect(proc.exits).toEqual([0]);
    expect(clock.timers.size).toBe(0);
  });

  it('exits at once on a second signal', async () => {
    const proc = new FakeProcess();
    const calls: string[] = [];
    onShutdownSignals(
      async (signal) => {
        calls.push(signal);
        await new Promise(() => undefined);
      },
      { timeoutMs: 30_000, process: proc, clock: new HeldClock() },
    );
    proc.emit('SIGTERM', 'SIGTERM');
    proc.emit('SIGINT', 'SIGINT');
    await settle();
    expect(calls).toEqual(['SIGTERM']);
    expect(proc.exits).toEqual([130]);
    expect(signalExitCode('SIGTERM')).toBe(143);
  });

  it('exits 1 and aborts the handler when the timeout hits', async () => {
    const proc = new FakeProcess();
    const clock = new HeldClock();
    let abort: AbortSignal | undefined;
    onShutdownSignals(
      async (_signal, signal) => {
        abort = signal;
        await new Promise(() => undefined);
      },
      { timeoutMs: 10_000, process: proc, clock },
    );
    proc.emit('SIGINT', 'SIGINT');
    await settle();
    clock.fire();
    expect(abort?.aborted).toBe(true);
    expect(proc.exits).toEqual([1]);
  });

  it('exits 1 when the handler fails, and removes its listeners when disposed', async () => {
    const proc = new FakeProcess();
    const { logger, entries } = recordingLogger();
    const dispose = onShutdownSignals(
      async () => {
        throw new Error('queue did not stop');
      },
      { timeoutMs: 10_000, process: proc, clock: new HeldClock(), logger },
    );
    expect(proc.listenerCount('SIGTERM')).toBe(1);
    proc.emit('SIGTERM', 'SIGTERM');
    await settle();
    expect(proc.exits).toEqual([1]);
    expect(entries.filter((entry) => entry.level === 'error').map((entry) => entry.message)).toEqual([
      'shutdown failed; exiting',
    ]);
    dispose();
    expect(proc.listenerCount('SIGTERM') + proc.listenerCount('SIGINT')).toBe(0);
  });
});
