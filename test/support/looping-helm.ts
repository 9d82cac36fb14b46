// The cases whose template loops on purpose (a chart or values template that never ends, to show the
// time limit stops it) leave a real helm spinning a core until the limit kills it: eight loops a run
// of 1 to 3 s each, CPU taken from the files running beside them on two cores. `whileLoopingHelmYields`
// runs such a case with a watcher that moves every helm below this process that has spent more CPU
// than any helm of these cases does when it ends (most about 0.05 CPU-s, the most seen 0.17, by
// process accounting) to the lowest scheduling priority, nice 19, on every thread. The helm still
// loops, for real, on cycles no other process wants (under Linux's scheduler a nice-19 thread gets
// about 1.5% of a core beside one at nice 0), and the limit still stops it at the same wall-clock
// time; a helm that ends on its own never reaches the threshold.
import { readdirSync } from 'node:fs';
import os from 'node:os';
import { readProcStat, type ProcStat } from '../../src/core/proc-stat.js';

/** CPU-seconds after which a helm of these cases counts as looping: three times the most the others take. */
const LOOPING_CPU_SECONDS = 0.5;
const POLL_MS = 100;

/** Every process now, as /proc says. */
function processes(): ProcStat[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => readProcStat(Number(entry)) ?? []); // gone between the listing and the read
}

/** Whether `stat` descends from `ancestor`, by the parent links of `byPid`. */
function descendsFrom(stat: ProcStat, ancestor: number, byPid: Map<number, ProcStat>): boolean {
  for (let parent = stat.parent, depth = 0; parent > 1 && depth < 16; depth++) {
    if (parent === ancestor) return true;
    parent = byPid.get(parent)?.parent ?? 0;
  }
  return false;
}

/** Sets nice 19 on every thread of `pid` (Linux's setpriority acts on one thread; Go's threads inherit it only from then on). */
function lowerEveryThread(pid: number): void {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return; // it ended
  }
  for (const thread of threads) {
    try {
      if (os.getPriority(Number(thread)) !== 19) os.setPriority(Number(thread), 19);
    } catch {
      // the thread ended
    }
  }
}

/** One look: every helm below this process past the threshold gets nice 19 on its threads. */
function lowerLoopingHelms(): void {
  const stats = processes();
  const byPid = new Map(stats.map((stat) => [stat.pid, stat]));
  for (const stat of stats)
    if (stat.command === 'helm' && stat.cpuSeconds >= LOOPING_CPU_SECONDS && descendsFrom(stat, process.pid, byPid))
      lowerEveryThread(stat.pid);
}

/** Runs `run` while every helm below this process that loops is moved to nice 19 (see the top of this file). */
export async function whileLoopingHelmYields<T>(run: () => Promise<T>): Promise<T> {
  const watcher = setInterval(lowerLoopingHelms, POLL_MS);
  try {
    return await run();
  } finally {
    clearInterval(watcher);
  }
}
