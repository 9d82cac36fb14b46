// One engine run as a local process: its output to a log file (read back when it fails), stopped
// with SIGTERM and, if it does not go, SIGKILL; and killed when the test worker exits, so no run
// leaves an etcd or API server behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { TEST_GO_RUNTIME } from '../go-runtime.js';

export interface LocalProcess {
  name: string;
  pid: number;
  logFile: string;
  /** Whether it has exited. */
  exited(): boolean;
  /** The end of its log, for error messages. */
  logTail(lines?: number): string;
  /** Stops it and waits until it is gone. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash; resolves once it is gone. */
  kill(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts `binary args...` with its stdout and stderr appended to `logFile`. */
export function startLocalProcess(
  name: string,
  binary: string,
  args: string[],
  logFile: string,
  env: NodeJS.ProcessEnv = process.env,
): LocalProcess {
  const log = openSync(logFile, 'a');
  const child = spawn(binary, args, { stdio: ['ignore', log, log], env: { ...TEST_GO_RUNTIME, ...env } });
  closeSync(log);
  running.add(child);
  let exitedAlready = false;
  const gone = new Promise<void>((resolve) => {
    const done = (): void => {
      exitedAlready = true;
      running.delete(child);
      resolve();
    };
    child.once('exit', done);
    child.once('error', done);
  });
  const logTail = (lines = 30): string => {
    try {
      return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  };
  return {
    name,
    pid: child.pid ?? -1,
    logFile,
    exited: () => exitedAlready,
    logTail,
    async stop() {
      if (exitedAlready) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
    async kill() {
      if (exitedAlready) return;
      child.kill('SIGKILL');
      await gone;
    },
  };
}

/** Polls `check` until it returns true; fails with `what`, and the process's log, when `process` exits or time runs out. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  watched: LocalProcess[],
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const process of watched) {
      if (process.exited())
        throw new Error(
          `${process.name} exited while waiting for ${what}; its log (${process.logFile}) ends:\n${process.logTail()}`,
        );
    }
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) {
      const logs = watched
        .map((process) => `${process.name} (${process.logFile}):\n${lastErrorsAndTail(process)}`)
        .join('\n');
      throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}\n${logs}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A log's last 15 lines, after its last 10 error lines from earlier on: the error behind a timeout is often minutes older than the tail. */
function lastErrorsAndTail(process: LocalProcess): string {
  const tail = process.logTail(15);
  const earlier = process.logTail(Number.MAX_SAFE_INTEGER).split('\n').slice(0, -15);
  const errors = earlier.filter((line) => /\tERROR\t|"level":"error"|^E\d{4} /.test(line)).slice(-10);
  return errors.length === 0 ? tail : `(last errors)\n${errors.join('\n')}\n(last lines)\n${tail}`;
}
