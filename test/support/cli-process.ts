// Runs the CLI as a real process: for what an in-process run cannot show, such as kill -9, a mount
// namespace, or the process's peak memory. It runs the bundle of cli-bundle.ts (one per test run).
import { type ChildProcess, spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { cliBundle, REPO_ROOT, removeOwnCliBundle } from './cli-bundle.js';
import { KILL_TIMER_ENV, type KillTimerPlan } from './kill-timer.js';

export { REPO_ROOT };

/** The bundled CLI's entry file (kill-timer.js, a preload, beside it); spawnController runs it too. */
export async function cliEntry(): Promise<string> {
  return cliBundle();
}

/** Removes this process's own bundle when it built one (call from afterAll of a test file that started CLI processes). */
export async function removeCliBundle(): Promise<void> {
  removeOwnCliBundle();
}

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcessOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** A command the CLI runs under (unshare, a shell). */
  prefix?: string[];
  /** Flags for node itself, before the CLI's. */
  nodeArgs?: string[];
  /** A kill -9 the process times itself, from its own lock's appearance (kill-timer.ts). */
  killTimer?: KillTimerPlan;
}

/** The environment a CLI process starts with: the test cache, no developer git config. */
export function cliEnvironment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    CLUSTERSTACK_CACHE_DIR: path.join(os.tmpdir(), 'csk-test-cache'),
    GIT_CONFIG_NOSYSTEM: '1',
    ...extra,
  };
}

/** The command line that starts the CLI: `prefix` wraps it (e.g. unshare), `nodeArgs` go to node. */
export async function cliCommand(
  args: string[],
  prefix: string[] = [],
  nodeArgs: string[] = [],
): Promise<{ command: string; args: string[] }> {
  const node = [process.execPath, ...nodeArgs, await cliEntry(), ...args];
  return prefix.length > 0
    ? { command: prefix[0]!, args: [...prefix.slice(1), ...node] }
    : { command: node[0]!, args: node.slice(1) };
}

export interface StartedCli {
  child: ChildProcess;
  done: Promise<ProcessResult>;
}

/** Starts the CLI; `done` resolves when it exits (by itself or by a signal). */
export async function startCli(args: string[], options: CliProcessOptions = {}): Promise<StartedCli> {
  const { killTimer } = options;
  const nodeArgs = killTimer
    ? [...(options.nodeArgs ?? []), '--import', path.join(path.dirname(await cliEntry()), 'kill-timer.js')]
    : options.nodeArgs;
  const { command, args: argv } = await cliCommand(args, options.prefix, nodeArgs);
  const child = spawn(command, argv, {
    cwd: options.cwd ?? REPO_ROOT,
    env: cliEnvironment(killTimer ? { ...options.env, [KILL_TIMER_ENV]: JSON.stringify(killTimer) } : options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const done = new Promise<ProcessResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

/** Runs the CLI to its end. */
export async function runCliProcess(args: string[], options: CliProcessOptions = {}): Promise<ProcessResult> {
  return (await startCli(args, options)).done;
}
