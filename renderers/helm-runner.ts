// The one place that starts helm, through the process runner (src/core/run-process.ts): a scrubbed
// environment with runner-owned Helm directories, a bound on processes in flight, a time limit per
// process, and (given a ProcessSpawner) forks from a small helper process rather than this one.
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_HELM_TIMEOUTS } from '../src/config.js';
import { cpuBudget } from './cpu-budget.js';
import { HelmNotFoundError, HelmTimeoutError, HELM_HOW_TO } from './helm-errors.js';
import { RankedSlots } from '../src/core/ranked-slots.js';
import type { ProcessSpawner } from '../src/core/process-spawner.js';
import { ProcessError, runProcess, type ProcessResult, type StartChild } from '../src/core/run-process.js';
import { decodeUtf8Strict, type TextEncodingError } from '../src/yaml/text-encoding.js';
import { makePrivateDir } from '../src/cache/private-cache-file.js';

export interface HelmProcessResult {
  exitCode: number;
  stdout: string;
  /** Set when stdout is not valid UTF-8 (a template printing a binary file): `stdout` then holds U+FFFD there. */
  stdoutEncodingError?: TextEncodingError;
  stderr: string;
  /** From spawn to exit: the process's own time, without any wait for a slot. */
  elapsedMs: number;
}

export interface SpawnHelmOptions {
  /** The complete environment of the child; nothing is inherited. */
  env: Record<string, string>;
  cwd?: string;
  timeoutMs: number;
  /** What the process does ("rendering docker-ferrol-1-30"), for the timeout message. */
  purpose: string;
  /** The flag and variable that set `timeoutMs`, for the timeout message (default: the chart limit's). */
  timeoutSetting?: string;
  /** Written to the child's standard input, which is then closed (none: an empty input). */
  stdin?: string;
  /** Starts the process (default: Node's spawn from this process). */
  start?: StartChild;
}

export const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * Go runtime settings for the short-lived helm processes. The runner already keeps as many of them
 * in flight as the CPUs can take, so each gets one processor (no GC threads competing with the
 * other renders), and a garbage collector that runs at a heap nine times the live data instead of
 * twice: a process that exits after half a second wastes most of its collections. Measured on a
 * CNI-sized chart (20 renders in a row): about a fifth less CPU than Go's defaults, and 4-7%
 * less than GOGC=400, with the same peak memory (about 65 MiB); switching the collector off saves no
 * more and lets a large chart's memory grow without bound.
 */
export const HELM_GO_RUNTIME: Readonly<Record<string, string>> = { GOMAXPROCS: '1', GOGC: '800' };

/** The priority of values evaluations: before any chart, since charts wait for their values. */
export const VALUES_PRIORITY = Number.NEGATIVE_INFINITY;

/**
 * Runs helm once and collects its output. Resolves with the exit code whatever it is (lint exits 1
 * on findings, which callers parse); rejects only when helm cannot start or runs out of time.
 */
export async function spawnHelm(
  binary: string,
  args: readonly string[],
  options: SpawnHelmOptions,
): Promise<HelmProcessResult> {
  let result: ProcessResult;
  try {
    result = await runProcess(binary, args, {
      env: options.env,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      timeoutMs: options.timeoutMs,
      input: options.stdin,
      ...(options.start ? { start: options.start } : {}),
    });
  } catch (error) {
    if (error instanceof ProcessError && error.reason === 'timed-out')
      throw new HelmTimeoutError(options.purpose, options.timeoutMs, options.timeoutSetting);
    if (
      error instanceof ProcessError &&
      error.reason === 'not-started' &&
      (error.code === 'ENOENT' || error.code === 'EACCES' || error.code === 'ENOEXEC')
    ) {
      throw new HelmNotFoundError(`helm could not be started from ${binary} (${error.code}): ${HELM_HOW_TO}`, binary);
    }
    throw error;
  }
  const output = decodeUtf8Strict(result.stdout);
  return {
    exitCode: result.exitCode,
    stdout: output.text,
    ...(output.error ? { stdoutEncodingError: output.error } : {}),
    stderr: result.stderr.toString('utf8'),
    elapsedMs: result.elapsedMs,
  };
}

export interface HelmRunnerOptions {
  /** A helm binary, as resolveHelmBinary returned it. */
  binary: string;
  /** Owned by the runner: Helm's home, cache, config and data directories and per-call temp dirs live here. */
  workDir: string;
  /** PATH for the child (from the config module); defaults to the system directories. */
  pathEnv?: string;
  /** Helm processes in flight at most; defaults to the CPUs this process may use (cpu-budget.ts). */
  concurrency?: number;
  /** Per process unless a run says otherwise; defaults to the chart render limit (DEFAULT_HELM_TIMEOUTS). */
  timeoutMs?: number;
  /** Starts helm from this small process rather than this one (none: directly). */
  spawner?: ProcessSpawner;
}

export interface HelmRunOptions {
  purpose: string;
  cwd?: string;
  /** Written to helm's standard input (`-f -` reads values from it). */
  stdin?: string;
  timeoutMs?: number;
  /** The flag and variable that set this run's `timeoutMs`, named when it runs out. */
  timeoutSetting?: string;
  /** Among calls waiting for a slot, the lowest starts first (default 0); equal ones in arrival order. */
  priority?: number;
}

/** Starts helm processes for the renderers: bounded, counted, isolated from the user's Helm setup. */
export class HelmRunner {
  readonly binary: string;
  readonly workDir: string;
  readonly concurrency: number;
  readonly timeoutMs: number;
  readonly #pathEnv: string;
  readonly #slots: RankedSlots;
  readonly #spawner: ProcessSpawner | undefined;
  #prepared: Promise<Record<string, string>> | undefined;
  #spawned = 0;
  #inFlight = 0;
  #maxInFlight = 0;

  constructor(options: HelmRunnerOptions) {
    this.binary = options.binary;
    this.workDir = path.resolve(options.workDir);
    this.concurrency = Math.max(1, Math.floor(options.concurrency ?? cpuBudget()));
    this.timeoutMs = options.timeoutMs ?? DEFAULT_HELM_TIMEOUTS.chartMs;
    this.#pathEnv = options.pathEnv ?? DEFAULT_PATH;
    this.#slots = new RankedSlots(this.concurrency);
    this.#spawner = options.spawner;
  }

  /** Helm processes started so far (for metrics and benchmarks). */
  get processesSpawned(): number {
    return this.#spawned;
  }

  /** Helm processes running now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** The most helm processes that ever ran at once. */
  get maxInFlight(): number {
    return this.#maxInFlight;
  }

  /** Runs `helm <args>` once a slot is free for it (see `priority`); see spawnHelm for what resolves and what rejects. */
  async run(args: readonly string[], options: HelmRunOptions): Promise<HelmProcessResult> {
    const env = await this.#environment();
    return this.#slots.run(options.priority ?? 0, async () => {
      this.#spawned += 1;
      this.#inFlight += 1;
      this.#maxInFlight = Math.max(this.#maxInFlight, this.#inFlight);
      try {
        return await spawnHelm(this.binary, args, {
          env,
          cwd: options.cwd ?? path.join(this.workDir, 'tmp'),
          timeoutMs: options.timeoutMs ?? this.timeoutMs,
          purpose: options.purpose,
          ...(options.timeoutSetting ? { timeoutSetting: options.timeoutSetting } : {}),
          ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
          ...(this.#spawner ? { start: this.#spawner.start } : {}),
        });
      } finally {
        this.#inFlight -= 1;
      }
    });
  }

  /** Gives `fn` a fresh directory under the runner's work dir and removes it afterwards, whatever happens. */
  async withTempDir<T>(prefix: string, fn: (dir: string) => Promise<T>): Promise<T> {
    await this.#environment();
    const dir = await mkdtemp(path.join(this.workDir, 'tmp', `${prefix}-`));
    try {
      return await fn(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * Only PATH, HOME, Helm's three directories and the Go runtime settings above: no KUBECONFIG (helm template must never reach a
   * cluster), no HELM_KUBEVERSION or other HELM_* settings from the user's shell, no proxies.
   */
  #environment(): Promise<Record<string, string>> {
    this.#prepared ??= (async () => {
      const dirs = {
        HOME: path.join(this.workDir, 'home'),
        HELM_CACHE_HOME: path.join(this.workDir, 'cache'),
        HELM_CONFIG_HOME: path.join(this.workDir, 'config'),
        HELM_DATA_HOME: path.join(this.workDir, 'data'),
      };
      await Promise.all([...Object.values(dirs), path.join(this.workDir, 'tmp')].map((dir) => makePrivateDir(dir)));
      return { PATH: this.#pathEnv, ...dirs, ...HELM_GO_RUNTIME };
    })();
    this.#prepared.catch(() => (this.#prepared = undefined));
    return this.#prepared;
  }
}
