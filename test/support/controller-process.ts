// The controller as a real process, for fault tests that kill it: the bundled CLI (cli-bundle.ts,
// one per test run) spawned in its own process group so that a kill takes its git and helm
// children with it, as a pod's death does. A kill the controller times itself (kill-timer.ts) is
// bundled beside it as a preload.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { cliBundle } from './cli-bundle.js';
import { KILL_TIMER_ENV, type KillTimerPlan } from './kill-timer.js';

/** The bundled CLI's entry file (cli-bundle.ts), built on first use; kill-timer.js is beside it. */
export function bundleCli(): string {
  return cliBundle();
}

export interface ControllerProcess {
  readonly child: ChildProcess;
  /** Log lines (pino JSON) so far. */
  readonly lines: Record<string, unknown>[];
  /** Lines on stdout that are not JSON (there should be none). */
  readonly unparsed: string[];
  readonly stderr: string[];
  /** Resolves with the first log line matching, or rejects after `timeoutMs` or when the process ends. */
  waitForLine(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** SIGKILL to the whole process group; resolves once the process is gone. */
  killHard(): Promise<void>;
  /** SIGTERM; resolves with the exit code. */
  terminate(): Promise<number | null>;
  readonly exited: Promise<number | null>;
}

export interface SpawnControllerOptions {
  /** A kill -9 the controller times itself, from its own lock's appearance (kill-timer.ts, preloaded). */
  killTimer?: KillTimerPlan;
}

/** Starts `node <bundle> controller <args>` with exactly `env` (and the kill timer's plan, when given). */
export function spawnController(
  bundle: string,
  args: string[],
  env: Record<string, string>,
  options: SpawnControllerOptions = {},
): ControllerProcess {
  const { killTimer } = options;
  const preload = killTimer ? ['--import', path.join(path.dirname(bundle), 'kill-timer.js')] : [];
  const child = spawn(process.execPath, [...preload, bundle, 'controller', ...args], {
    env: killTimer ? { ...env, [KILL_TIMER_ENV]: JSON.stringify(killTimer) } : env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  const unparsed: string[] = [];
  const stderr: string[] = [];
  const waiters: {
    match: (line: Record<string, unknown>) => boolean;
    resolve: (line: Record<string, unknown>) => void;
  }[] = [];
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        unparsed.push(text);
        continue;
      }
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (!waiter.match(line)) continue;
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    unparsed,
    stderr,
    exited,
    waitForLine(match, timeoutMs = 20_000) {
      const seen = lines.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(new Error(`no matching log line within ${timeoutMs} ms; stderr: ${stderr.join('').slice(-2000)}`)),
          timeoutMs,
        );
        const waiter = {
          match,
          resolve: (line: Record<string, unknown>) => {
            clearTimeout(timer);
            resolve(line);
          },
        };
        waiters.push(waiter);
        void exited.then((code) => {
          clearTimeout(timer);
          reject(
            new Error(`the controller exited (${code}) before the log line; stderr: ${stderr.join('').slice(-2000)}`),
          );
        });
      });
    },
    async killHard() {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
      await exited;
    },
    async terminate() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
