// One process's line of /proc/<pid>/stat (Linux, proc(5)), read for what the publish lock needs to
// tell a live holder from a reused pid (its start time) and what the tests watch their children by.
import { readFileSync } from 'node:fs';

/** Clock ticks per second as /proc counts times (USER_HZ: 100 on every Linux port). */
const USER_HZ = 100;

export interface ProcStat {
  pid: number;
  /** The command name (field 2): the executable's name, at most 15 characters. */
  command: string;
  /** The state (field 3): R running, S sleeping, Z zombie, T stopped, ... */
  state: string;
  /** The parent's pid (field 4). */
  parent: number;
  /** utime + stime (fields 14 and 15), in seconds. */
  cpuSeconds: number;
  /** cutime + cstime (fields 16 and 17): the CPU of the children it waited for, and theirs, in seconds. */
  waitedChildrenCpuSeconds: number;
  /** When it started, in clock ticks after boot (field 22), as the kernel prints it: with the pid, it names one process. */
  startTime: string;
}

/** Parses a /proc/<pid>/stat line. */
export function parseProcStat(pid: number, line: string): ProcStat {
  // The command name may hold spaces and parentheses: the fields after its last ')' are plain.
  const close = line.lastIndexOf(')');
  const fields = line.slice(close + 2).split(' ');
  return {
    pid,
    command: line.slice(line.indexOf('(') + 1, close),
    state: fields[0]!,
    parent: Number(fields[1]),
    cpuSeconds: (Number(fields[11]) + Number(fields[12])) / USER_HZ,
    waitedChildrenCpuSeconds: (Number(fields[13]) + Number(fields[14])) / USER_HZ,
    startTime: fields[19]!,
  };
}

/** Process `pid` as /proc says now, or undefined when it is gone (or there is no /proc). */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(pid, readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}
