// Runs the CLI as a real process (node + tsx, no build step): for what an in-process run cannot
// show, such as kill -9, a mount namespace, or the process's peak memory.
import { type ChildProcess, spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const MAIN = path.join(REPO_ROOT, 'src/cli/main.ts');

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
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

export interface CliProcessOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** A command the CLI runs under (unshare, a shell). */
  prefix?: string[];
  /** Flags for node itself, before the CLI's. */
  nodeArgs?: string[];
}

/** The command line that starts the CLI: `prefix` wraps it (e.g. unshare), `nodeArgs` go to node. */
export function cliCommand(args: string[], prefix: string[] = [], nodeArgs: string[] = []): { command: string; args: string[] } {
  const node = [process.execPath, ...nodeArgs, '--import', 'tsx', MAIN, ...args];
  return prefix.length > 0 ? { command: prefix[0]!, args: [...prefix.slice(1), ...node] } : { command: node[0]!, args: node.slice(1) };
}

export interface StartedCli {
  child: ChildProcess;
  done: Promise<ProcessResult>;
}

/** Starts the CLI; `done` resolves when it exits (by itself or by a signal). */
export function startCli(args: string[], options: CliProcessOptions = {}): StartedCli {
  const { command, args: argv } = cliCommand(args, options.prefix, options.nodeArgs);
  const child = spawn(command, argv, { cwd: options.cwd ?? REPO_ROOT, env: cliEnvironment(options.env), stdio: ['ignore', 'pipe', 'pipe'] });
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
export function runCliProcess(args: string[], options: CliProcessOptions = {}): Promise<ProcessResult> {
  return startCli(args, options).done;
}
