// How many CPUs this process may keep busy: the cores it may run on, or fewer when its cgroup has a
// CPU quota (a container's `resources.limits.cpu`). Node's os.availableParallelism() sees only the
// cores, so in a pod limited to 2 CPUs on a 16-core node it says 16; helm processes sized by it
// would only queue for the quota, each holding its memory (tens of MiB) under the pod's limit.
import { readFileSync } from 'node:fs';
import os from 'node:os';

type ReadText = (file: string) => string | undefined;

const readText: ReadText = (file) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

/** The quota in CPUs (fractional), or undefined when there is none or it cannot be read. */
function cgroupQuota(read: ReadText): number | undefined {
  // cgroup v2: "<quota> <period>" or "max <period>", at the root of the container's cgroup namespace.
  const v2 = read('/sys/fs/cgroup/cpu.max')?.trim().split(/\s+/);
  if (v2 && v2.length === 2) {
    const [quota, period] = v2.map(Number);
    return v2[0] !== 'max' && quota! > 0 && period! > 0 ? quota! / period! : undefined;
  }
  // cgroup v1: a quota of -1 means none.
  const quota = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')?.trim());
  const period = Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')?.trim());
  return quota > 0 && period > 0 ? quota / period : undefined;
}

/** Whole CPUs this process may use: at least 1, never more than its cores. */
export function cpuBudget(read: ReadText = readText, cores: number = os.availableParallelism()): number {
  const quota = cgroupQuota(read);
  return Math.max(1, quota === undefined ? cores : Math.min(cores, Math.ceil(quota)));
}
