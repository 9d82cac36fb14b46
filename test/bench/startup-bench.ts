// Start-up of the CLI process a user runs: `clusterstack --help` and `plan` on the quick-start
// inputs, beside bare `node -e 0` as the floor on this machine. `plan` runs with a cold cache (a new
// cache directory each run: charts extracted, ClusterClass charts rendered by helm) and a warm one
// (the renders render/chart-render-cache.ts kept), each with the breakdown the CLI prints under
// CLUSTERSTACK_TIMINGS=1: node's own start, loading the command's modules, and the command's phases.
// "start-up" is the time until the command begins its own work.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { assertCliBuilt, type CliRun, runCliOk } from './cli-runs.js';

const TARGET_MS = 250;
const RUNS = 5;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** `node -e 0` in the environment the CLI runs get (NODE_EXTRA_CA_CERTS alone adds ~60 ms to any node start). */
function nodeFloorMs(times = RUNS): number {
  const runs: number[] = [];
  for (let index = 0; index < times; index += 1) {
    const start = performance.now();
    spawnSync(process.execPath, ['-e', '0'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir() },
    });
    runs.push(performance.now() - start);
  }
  return median(runs);
}

/** The phases of the CLI's `timings:` line, ms each (notes dropped), in the order printed. */
function phasesOf(run: CliRun): Map<string, number> {
  const line = run.stderr.split('\n').find((text) => text.startsWith('timings: '));
  if (!line) throw new Error(`no timings line on stderr (CLUSTERSTACK_TIMINGS=1):\n${run.stderr}`);
  return new Map([...line.matchAll(/([\w-]+)=(\d+)ms/g)].map((match) => [match[1]!, Number(match[2])]));
}

function notesOf(run: CliRun): string[] {
  const line = run.stderr.split('\n').find((text) => text.startsWith('timings: ')) ?? '';
  return [...line.matchAll(/([\w-]+)=\d+ms \(([^)]*)\)/g)].map((match) => `${match[1]}: ${match[2]}`);
}

interface Measured {
  wallMs: number;
  cpuMs: number;
  phases: Map<string, number>;
  notes: string[];
}

/** `runs` processes; wall, CPU (node and its helm children) and each phase as the median over runs. */
async function measure(
  runs: number,
  args: string[],
  env: () => Promise<NodeJS.ProcessEnv>,
  after?: () => Promise<void>,
): Promise<Measured> {
  const results: CliRun[] = [];
  for (let index = 0; index < runs; index += 1) {
    results.push(await runCliOk(args, { ...(await env()), CLUSTERSTACK_TIMINGS: '1' }));
    await after?.();
  }
  const phases = new Map<string, number>();
  for (const name of phasesOf(results[0]!).keys())
    phases.set(name, median(results.map((run) => phasesOf(run).get(name) ?? 0)));
  return {
    wallMs: median(results.map((run) => run.ms)),
    cpuMs: median(results.map((run) => run.cpuMs.node + run.cpuMs.children)),
    phases,
    notes: notesOf(results[results.length - 1]!),
  };
}

function breakdown(measured: Measured): string {
  return [...measured.phases].map(([name, ms]) => `${name} ${ms}`).join(' | ');
}

function verdict(holds: boolean, text: string): string {
  return `  ${holds ? 'PASS' : 'FAIL'}  ${text}`;
}

export async function benchStartup(): Promise<void> {
  assertCliBuilt();
  console.log(`\n== CLI start-up (median of ${RUNS} processes each; ms) ==`);
  const example = path.resolve('examples/quickstart');
  const planArgs = [
    'plan',
    path.join(example, 'manifests'),
    '--release-source',
    path.join(example, 'releases'),
    '--json',
  ];
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'csk-bench-startup-'));
  try {
    const floor = nodeFloorMs();
    const help = await measure(RUNS, ['--help'], async () => ({
      CLUSTERSTACK_CACHE_DIR: path.join(scratch, 'help-cache'),
    }));
    // Cold: a new cache directory for every run, removed after it.
    let coldDir = '';
    const cold = await measure(
      RUNS,
      planArgs,
      async () => {
        coldDir = await mkdtemp(path.join(scratch, 'cold-'));
        return { CLUSTERSTACK_CACHE_DIR: coldDir };
      },
      () => rm(coldDir, { recursive: true, force: true }),
    );
    // Warm: one cache directory, filled by a first run that is not counted.
    const warmEnv = async (): Promise<NodeJS.ProcessEnv> => ({
      CLUSTERSTACK_CACHE_DIR: path.join(scratch, 'warm-cache'),
    });
    await runCliOk(planArgs, await warmEnv());
    const warm = await measure(RUNS, planArgs, warmEnv);

    console.log(`  node -e 0:                         ${floor.toFixed(0)} (the floor on this machine)`);
    console.log(`  clusterstack --help:               ${help.wallMs.toFixed(0)} wall, ${help.cpuMs.toFixed(0)} CPU`);
    console.log(
      `  clusterstack plan (quick start), cold cache: ${cold.wallMs.toFixed(0)} wall, ${cold.cpuMs.toFixed(0)} CPU (node + helm)`,
    );
    console.log(`      ${breakdown(cold)}`);
    for (const note of cold.notes) console.log(`      ${note}`);
    console.log(
      `  clusterstack plan (quick start), warm cache: ${warm.wallMs.toFixed(0)} wall, ${warm.cpuMs.toFixed(0)} CPU`,
    );
    console.log(`      ${breakdown(warm)}`);
    for (const note of warm.notes) console.log(`      ${note}`);
    const startUp = warm.phases.get('start-up') ?? Number.NaN;
    console.log(verdict(help.wallMs <= TARGET_MS, `--help within ${TARGET_MS} ms: ${help.wallMs.toFixed(0)} ms`));
    console.log(
      verdict(
        startUp <= TARGET_MS,
        `plan starts (until the command begins its own work) within ${TARGET_MS} ms: ${startUp} ms`,
      ),
    );
    console.log(
      verdict(
        warm.wallMs <= TARGET_MS,
        `plan on the quick start, warm cache, within ${TARGET_MS} ms: ${warm.wallMs.toFixed(0)} ms`,
      ),
    );
    console.log(
      verdict(
        cold.wallMs <= TARGET_MS,
        `plan on the quick start, cold cache, within ${TARGET_MS} ms: ${cold.wallMs.toFixed(0)} ms`,
      ),
    );
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
