// The CPU budget that sizes helm's processes in flight (renderers/cpu-budget.ts): a cgroup's quota
// wins over the cores it may run on, rounded up, never above them, never below one.
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { cpuBudget } from '../renderers/cpu-budget.js';

/** A reader over the given files; every other file is absent. */
const files = (contents: Record<string, string>) => (file: string) => contents[file];
const V2 = '/sys/fs/cgroup/cpu.max';
const V1_QUOTA = '/sys/fs/cgroup/cpu/cpu.cfs_quota_us';
const V1_PERIOD = '/sys/fs/cgroup/cpu/cpu.cfs_period_us';

describe('cpuBudget', () => {
  it('follows a cgroup v2 quota (a pod limited to 2 CPUs on a 16-core node), rounding up', () => {
    expect(cpuBudget(files({ [V2]: '200000 100000\n' }), 16)).toBe(2);
    expect(cpuBudget(files({ [V2]: '150000 100000\n' }), 16)).toBe(2);
    expect(cpuBudget(files({ [V2]: '10000 100000\n' }), 16)).toBe(1);
  });

  it('is the cores without a quota, or with one larger than the cores', () => {
    expect(cpuBudget(files({ [V2]: 'max 100000\n' }), 16)).toBe(16);
    expect(cpuBudget(files({ [V2]: '800000 100000\n' }), 4)).toBe(4);
    expect(cpuBudget(files({}), 6)).toBe(6);
  });

  it('reads a cgroup v1 quota, where -1 means none', () => {
    expect(cpuBudget(files({ [V1_QUOTA]: '50000\n', [V1_PERIOD]: '100000\n' }), 8)).toBe(1);
    expect(cpuBudget(files({ [V1_QUOTA]: '300000\n', [V1_PERIOD]: '100000\n' }), 8)).toBe(3);
    expect(cpuBudget(files({ [V1_QUOTA]: '-1\n', [V1_PERIOD]: '100000\n' }), 8)).toBe(8);
  });

  it('falls back to the cores on anything it cannot read as a quota, and is never below one', () => {
    expect(cpuBudget(files({ [V2]: 'garbage\n' }), 3)).toBe(3);
    expect(cpuBudget(files({ [V2]: 'abc 100000\n' }), 3)).toBe(3);
    expect(cpuBudget(files({ [V2]: '200000 0\n' }), 3)).toBe(3);
    expect(cpuBudget(files({}), 0)).toBe(1);
  });

  it('on this machine: at least one, at most its cores', () => {
    const budget = cpuBudget();
    expect(budget).toBeGreaterThanOrEqual(1);
    expect(budget).toBeLessThanOrEqual(os.availableParallelism());
  });
});
