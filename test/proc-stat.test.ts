import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { parseProcStat, readProcStat } from '../src/core/proc-stat.js';

describe('proc-stat', () => {
  it('reads the fields after the command name, whatever the name holds', () => {
    // A command name may hold spaces and parentheses; the fields after its last ')' are plain.
    const line =
      '4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 75 12 3 20 0 8 0 987654 1000000 500 18446744073709551615\n';
    expect(parseProcStat(4242, line)).toEqual({
      pid: 4242,
      command: 'a (b) c',
      state: 'S',
      parent: 17,
      cpuSeconds: 3.25,
      waitedChildrenCpuSeconds: 0.15,
      startTime: '987654',
    });
  });

  it('reads this process, and names a child apart from a later process with its pid by its start time', async () => {
    const self = readProcStat(process.pid)!;
    expect(self).toMatchObject({ pid: process.pid, parent: process.ppid, state: 'R' });
    expect(self.cpuSeconds).toBeGreaterThan(0);

    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const stat = readProcStat(child.pid!)!;
      expect(stat).toMatchObject({ command: 'sleep', parent: process.pid });
      expect(Number(stat.startTime)).toBeGreaterThanOrEqual(Number(self.startTime));
      expect(readProcStat(child.pid!)!.startTime).toBe(stat.startTime);
    } finally {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    // Reaped: gone from /proc.
    expect(readProcStat(child.pid!)).toBeUndefined();
  });
});
