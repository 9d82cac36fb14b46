// Runs the built CLI (`dist/src/cli/main.js`, what a user runs after `npm run build`) as a separate
// process for the benchmarks: wall time from spawn to exit, and the peak memory of the node process
// itself (not of the helm processes it starts), reported by a preload module at exit.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readProcStat } from '../../src/core/proc-stat.js';

const CLI_ENTRY = path.resolve('dist/src/cli/main.js');

export interface CliRun {
  ms: number;
  code: number | null;
  stdout: string;
  stderr: string;
  /** Peak resident memory of the CLI's node process, MiB. */
  maxRssMiB: number;
  /** CPU time (user + system) of the node process and of the helm processes it waited for, ms: honest where the machine is shared. */
  cpuMs: { node: number; children: number };
  /** Of the node process's CPU, the part spent in the kernel (creating files, starting processes), ms. */
  nodeSystemMs: number;
}

let preload: Promise<string> | undefined;

/** A module node loads before the CLI: writes the process's peak RSS and CPU times to CSK_BENCH_RSS_FILE at exit. */
function rssPreload(): Promise<string> {
  preload ??= (async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'csk-bench-rss-'));
    const file = path.join(dir, 'rss.mjs');
    await writeFile(
      file,
      // The live heap: what is left after a full collection (global.gc exists with --expose-gc only).
      "import { writeFileSync } from 'node:fs';\nprocess.on('exit', () => { if (!process.env.CSK_BENCH_RSS_FILE) return; const u = process.resourceUsage(); let live = 0; if (typeof globalThis.gc === 'function') { globalThis.gc(); live = process.memoryUsage().heapUsed; } writeFileSync(process.env.CSK_BENCH_RSS_FILE, JSON.stringify({ maxRSS: u.maxRSS, cpuUs: u.userCPUTime + u.systemCPUTime, systemUs: u.systemCPUTime, liveHeap: live })); });\n",
    );
    return file;
  })();
  return preload;
}

/** CPU time of every child process this process has waited for, and theirs (Linux /proc/self/stat), ms. */
export function childrenCpuMs(): number {
  return readProcStat(process.pid)!.waitedChildrenCpuSeconds * 1000;
}

export function assertCliBuilt(): void {
  if (!existsSync(CLI_ENTRY)) throw new Error(`${CLI_ENTRY} is missing: run npm run build before npm run bench`);
}

/** Runs `clusterstack <args>` to its end. */
async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  const rssDir = await mkdtemp(path.join(os.tmpdir(), 'csk-bench-rss-'));
  const rssFile = path.join(rssDir, 'rss');
  const childrenBefore = childrenCpuMs();
  const start = performance.now();
  const child = spawn(process.execPath, ['--import', await rssPreload(), CLI_ENTRY, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), ...env, CSK_BENCH_RSS_FILE: rssFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const ms = performance.now() - start;
  const usage = JSON.parse(await readFile(rssFile, 'utf8').catch(() => '{"maxRSS":0,"cpuUs":0}')) as {
    maxRSS: number;
    cpuUs: number;
    systemUs?: number;
  };
  await rm(rssDir, { recursive: true, force: true });
  const nodeMs = usage.cpuUs / 1000;
  return {
    ms,
    code,
    stdout,
    stderr,
    maxRssMiB: usage.maxRSS / 1024,
    cpuMs: { node: nodeMs, children: Math.max(0, childrenCpuMs() - childrenBefore - nodeMs) },
    nodeSystemMs: (usage.systemUs ?? 0) / 1000,
  };
}

/** Runs the CLI and fails the benchmark (with its stderr) when it does not exit 0. */
export async function runCliOk(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  const run = await runCli(args, env);
  if (run.code !== 0) throw new Error(`clusterstack ${args.join(' ')} exited ${run.code}:\n${run.stderr}`);
  return run;
}

/** A long-running CLI process (the controller): `stop()` sends SIGTERM and reports its peak memory once it exited. */
export interface CliProcess {
  /** The newest output (log lines and stderr). */
  readonly stderr: () => string;
  stop(): Promise<{ code: number | null; maxRssMiB: number; cpuMs: number; liveHeapMiB: number }>;
}

/** Starts `clusterstack <args>` (the built CLI) and leaves it running; `nodeFlags` go to node before the CLI. */
export async function startCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  logFile?: string,
  nodeFlags: string[] = [],
): Promise<CliProcess> {
  const rssDir = await mkdtemp(path.join(os.tmpdir(), 'csk-bench-rss-'));
  const rssFile = path.join(rssDir, 'rss');
  // CSK_BENCH_NODE_ARGS: node flags for the process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` (not allowed in NODE_OPTIONS).
  const nodeArgs = process.env.CSK_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(
    process.execPath,
    [...nodeFlags, '--expose-gc', ...nodeArgs, '--import', await rssPreload(), CLI_ENTRY, ...args],
    {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), ...env, CSK_BENCH_RSS_FILE: rssFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  // The log (pino writes to stdout) and stderr, the newest 64 KiB: what a failed benchmark shows.
  let stderr = '';
  const keep = (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-65_536));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  if (logFile) child.stdout.pipe(createWriteStream(logFile));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  return {
    stderr: () => stderr,
    async stop() {
      child.kill('SIGTERM');
      const code = await exited;
      const usage = JSON.parse(await readFile(rssFile, 'utf8').catch(() => '{"maxRSS":0,"cpuUs":0}')) as {
        maxRSS: number;
        cpuUs: number;
        liveHeap?: number;
      };
      await rm(rssDir, { recursive: true, force: true });
      return {
        code,
        maxRssMiB: usage.maxRSS / 1024,
        cpuMs: usage.cpuUs / 1000,
        liveHeapMiB: (usage.liveHeap ?? 0) / 1048576,
      };
    },
  };
}
