// A random kill -9 timed inside the killed process itself: a CLI run (test/faults/kill-9.test.ts,
// from its publish lock) or a controller (test/controller/controller-kill.test.ts, from its cache
// directory's controller.pid, which it holds for its whole life: for it every kill is 'mid-publish',
// and the test reads from its log how far it got). Loaded with `node --import` (cli-process.ts and
// controller-process.ts bundle it beside the CLI), it starts a worker thread that watches for the
// process's own lock and SIGKILLs the process a given delay after it appears. The test worker's
// event loop is shared with the other kill tests and lags at load, so a kill timed there landed
// after the run had already finished; a thread of the run's own, woken by the kernel (inotify) and
// not blocked by the run's JavaScript, kills where the delay says, at any instruction. The run
// itself starts only once that thread watches (the preload waits for it): at load a thread that
// started late missed a quick run's whole lock ('never-locked'), which could repeat by load alone.
// Whatever happened is written to a report file, because the run's stderr must stay empty. A kill
// -9 of the run alone leaves its children (git) running: the report names them, and the test waits
// for them to end before its next run (orphanedChildrenGone), as a restarted pod starts after all of
// its predecessor's processes are gone. Otherwise an orphaned `git add`, slow at load, staged the
// killed run's files after the next run had put the work tree back, and that run refused them.
import { existsSync, readdirSync, readFileSync, watch, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isMainThread, Worker, workerData } from 'node:worker_threads';
import { readProcStat } from '../../src/core/proc-stat.js';

/** What the test asks for, as JSON in KILL_TIMER_ENV. */
export interface KillTimerPlan {
  /** The directory the lock file appears in (it must exist when the run starts). */
  lockDir: string;
  /** A regular expression the lock file's name matches. */
  lockName: string;
  /** The delay from the lock's appearance to the kill. */
  afterMs: number;
  /** Where the outcome is written: a KillTimerReport as JSON. */
  report: string;
}

/** How a run with a kill timer ended, from its own point of view. */
export type KillTimerReport =
  /** Killed while it still held its lock, `afterMs` after taking it; `children` were running then. */
  | { landed: 'mid-publish'; children: ChildProcessId[] }
  /** Killed after it had released its lock, before it exited. */
  | { landed: 'after-publish'; children: ChildProcessId[] }
  /** It exited first, `lockedMs` after taking its lock (the kill came too late). */
  | { landed: 'after-exit'; lockedMs: number }
  /** It exited without taking a lock this thread saw (the thread watches before the run starts). */
  | { landed: 'never-locked' };

/** A process by its pid and its start time (clock ticks after boot), so that a reused pid is not taken for it. */
interface ChildProcessId {
  pid: number;
  start: string;
}

export const KILL_TIMER_ENV = 'CLUSTERSTACK_TEST_KILL_TIMER';

/** The start time of a live (not zombie) process, from /proc; undefined when it is gone. */
function liveStart(pid: number): string | undefined {
  const stat = readProcStat(pid);
  return stat === undefined || stat.state === 'Z' ? undefined : stat.startTime;
}

/** This process's children now (Linux: /proc/self/task/<tid>/children). */
function ownChildren(): ChildProcessId[] {
  const tasks = existsSync('/proc/self/task') ? readdirSync('/proc/self/task') : [];
  const pids = tasks.flatMap((task) =>
    readFileSync(`/proc/self/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  );
  return pids.flatMap((pid) => {
    const start = liveStart(pid);
    return start === undefined ? [] : [{ pid, start }];
  });
}

/**
 * Resolves once the children a killed run left (its report's) have all ended; rejects naming them
 * after `limitMs`, which only stops a stuck test.
 */
export async function orphanedChildrenGone(report: KillTimerReport, limitMs = 120_000): Promise<void> {
  const children = 'children' in report ? report.children : [];
  const deadline = Date.now() + limitMs;
  const running = () => children.filter((child) => liveStart(child.pid) === child.start);
  while (running().length > 0) {
    if (Date.now() > deadline)
      throw new Error(`the killed run's children still run after ${limitMs} ms: ${JSON.stringify(running())}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Marks the thread this module starts, apart from any the CLI starts (they load the module too). */
const THREAD_MARK = 'clusterstack-kill-timer';

interface ThreadData {
  mark: typeof THREAD_MARK;
  plan: KillTimerPlan;
  /** [when the lock was seen (epoch ms, 0: not yet), 1 once the process is exiting]. */
  shared: Float64Array;
  /** Set to 1 (and notified) once the thread watches the lock directory: the run waits for it. */
  watching: Int32Array;
}

/** How long the run waits for its timer thread to watch: only a stuck thread takes this long. */
const WATCH_WAIT_MS = 120_000;

/** Whether the lock file `name` in the plan's directory is held by this process. */
function heldByUs(plan: KillTimerPlan, name: string): boolean {
  try {
    return JSON.parse(readFileSync(path.join(plan.lockDir, name), 'utf8')).pid === process.pid;
  } catch {
    // Not there, or created and not yet written (its content comes with the next event).
    return false;
  }
}

function runThread({ plan, shared, watching }: ThreadData): void {
  const name = new RegExp(plan.lockName);
  let ourLock: string | undefined;
  const startClock = (file: string): void => {
    ourLock = file;
    shared[0] = Date.now();
    watcher.close();
    setTimeout(() => {
      if (shared[1] === 1) return;
      const landed = heldByUs(plan, file) ? 'mid-publish' : 'after-publish';
      writeFileSync(plan.report, JSON.stringify({ landed, children: ownChildren() } satisfies KillTimerReport));
      process.kill(process.pid, 'SIGKILL');
    }, plan.afterMs);
  };
  // A stale lock of an earlier killed run may be there already: only one naming this process counts.
  const watcher = watch(plan.lockDir, (_event, file) => {
    if (ourLock === undefined && file !== null && name.test(file) && heldByUs(plan, file)) startClock(file);
  });
  // A lock taken before the watch began would send no event (the run waits for this thread, so none should be).
  const taken = readdirSync(plan.lockDir).find((file) => name.test(file) && heldByUs(plan, file));
  if (taken !== undefined && ourLock === undefined) startClock(taken);
  Atomics.store(watching, 0, 1);
  Atomics.notify(watching, 0);
}

if (isMainThread) {
  const spec = process.env[KILL_TIMER_ENV];
  // Not for the processes the CLI starts (they inherit its environment).
  delete process.env[KILL_TIMER_ENV];
  if (spec !== undefined) {
    const plan = JSON.parse(spec) as KillTimerPlan;
    const shared = new Float64Array(new SharedArrayBuffer(16));
    const watching = new Int32Array(new SharedArrayBuffer(4));
    const data: ThreadData = { mark: THREAD_MARK, plan, shared, watching };
    // Unreferenced: a run that finishes before its kill exits as it would without the timer.
    new Worker(new URL(import.meta.url), { workerData: data, execArgv: [] }).unref();
    // The run starts once the thread watches (a thread runs while this one waits), so that no lock escapes it.
    if (Atomics.wait(watching, 0, 0, WATCH_WAIT_MS) === 'timed-out')
      throw new Error(`kill timer: its thread did not start watching ${plan.lockDir} within ${WATCH_WAIT_MS} ms`);
    process.on('exit', () => {
      shared[1] = 1;
      const report: KillTimerReport =
        shared[0] === 0 ? { landed: 'never-locked' } : { landed: 'after-exit', lockedMs: Date.now() - shared[0]! };
      writeFileSync(plan.report, JSON.stringify(report));
    });
  }
} else if ((workerData as ThreadData | undefined)?.mark === THREAD_MARK) {
  runThread(workerData as ThreadData);
}
