// Two runs publishing to one target (an --output directory, a --git work tree, a clone in the cache)
// take turns through a lock file, so neither reports a commit or "nothing changed" that is not
// true. The file is created exclusively and names its holder; a holder that died (same host, its
// process gone or replaced) leaves a stale lock that the next run takes over. A live holder makes
// the next run wait up to a bound, then fail naming the holder.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readProcStat } from '../src/core/proc-stat.js';
import { PublishError } from './publish-error.js';

/** What a lock file says about the run holding it. */
interface LockHolder {
  pid: number;
  hostname: string;
  /** The process's start time as the kernel counts it (Linux), so a reused pid is not mistaken for the holder. */
  processStart?: string;
  since: string;
  command: string;
  /** Unique per acquisition: a run only ever removes its own lock. */
  token: string;
}

export interface PublishLock {
  readonly file: string;
  /** Removes the lock file if it is still ours. */
  release(): Promise<void>;
}

export interface LockOptions {
  /** How long to wait for a live holder; 0 fails at once. */
  timeoutMs: number;
  /** What is locked, for messages (`--output /srv/out`). */
  target: string;
  /** What this run is, recorded for whoever finds the lock (`clusterstack render`). */
  command?: string;
  /** Poll interval while waiting (default 200 ms). */
  pollMs?: number;
}

/** Another live run holds the target; trying again later works (exit code 3). */
export class LockHeldError extends PublishError {
  constructor(message: string) {
    super('conflict', message);
    this.name = 'LockHeldError';
  }
}

// A lock file is written in one small write right after it is created: one still empty or
// unreadable after this long belongs to a run that died in between.
const UNREADABLE_STALE_MS = 30_000;
// The guard serializing take-overs is held for a few file operations.
const TAKEOVER_GUARD_STALE_MS = 10_000;

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function isAlive(holder: LockHolder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: it exists, under another user.
    return errorCode(error) === 'EPERM';
  }
  if (holder.processStart === undefined) return true;
  const start = readProcStat(holder.pid)?.startTime;
  return start === undefined || start === holder.processStart;
}

interface LockFileState {
  raw: string;
  mtimeMs: number;
  holder?: LockHolder;
}

async function readLockFile(file: string): Promise<LockFileState | undefined> {
  try {
    const [raw, info] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    const state: LockFileState = { raw, mtimeMs: info.mtimeMs };
    try {
      const parsed = JSON.parse(raw) as Partial<LockHolder>;
      if (typeof parsed.pid === 'number' && typeof parsed.hostname === 'string' && typeof parsed.token === 'string')
        state.holder = parsed as LockHolder;
    } catch {
      // Unreadable: judged by age below.
    }
    return state;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

function isStale(state: LockFileState, now: number): boolean {
  if (!state.holder) return now - state.mtimeMs > UNREADABLE_STALE_MS;
  // A holder on another host cannot be checked from here: it is trusted until it lets go.
  return state.holder.hostname === os.hostname() && !isAlive(state.holder);
}

function describeHolder(state: LockFileState): string {
  const holder = state.holder;
  if (!holder) return 'a run whose lock file is unreadable';
  return `${holder.command || 'a run'} (pid ${holder.pid} on ${holder.hostname}, since ${holder.since})`;
}

/** Removes a stale lock file, unless another run took it over meanwhile (guarded by a directory). */
async function takeOver(file: string, stale: LockFileState): Promise<void> {
  const guard = `${file}.takeover`;
  try {
    await mkdir(guard);
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error;
    const info = await stat(guard).catch(() => undefined);
    if (info && Date.now() - info.mtimeMs > TAKEOVER_GUARD_STALE_MS) await rmdir(guard).catch(() => {});
    return;
  }
  try {
    const current = await readLockFile(file);
    if (current && current.raw === stale.raw && current.mtimeMs === stale.mtimeMs) await unlink(file).catch(() => {});
  } finally {
    await rmdir(guard).catch(() => {});
  }
}

/**
 * Takes the lock `file` (creating its directory), waiting up to `timeoutMs` for a live holder and
 * taking over from a dead one. Throws LockHeldError naming the holder when the wait runs out.
 */
export async function acquirePublishLock(file: string, options: LockOptions): Promise<PublishLock> {
  const holder: LockHolder = {
    pid: process.pid,
    hostname: os.hostname(),
    since: new Date().toISOString(),
    command: options.command ?? 'clusterstack',
    token: randomBytes(12).toString('hex'),
  };
  const start = readProcStat(process.pid)?.startTime;
  if (start !== undefined) holder.processStart = start;
  const content = `${JSON.stringify(holder)}\n`;
  const waitUntil = Date.now() + options.timeoutMs;
  const pollMs = options.pollMs ?? 200;
  for (;;) {
    try {
      await writeFile(file, content, { flag: 'wx', mode: 0o644 });
      return { file, release: () => releaseLock(file, holder.token) };
    } catch (error) {
      if (errorCode(error) === 'ENOENT') {
        await mkdir(path.dirname(file), { recursive: true });
        continue;
      }
      if (errorCode(error) !== 'EEXIST')
        throw new PublishError(
          'unavailable',
          `cannot create the lock ${file} for ${options.target}: ${(error as Error).message}`,
          { cause: error },
        );
    }
    const state = await readLockFile(file);
    if (state === undefined) continue;
    if (isStale(state, Date.now())) {
      await takeOver(file, state);
      continue;
    }
    const left = waitUntil - Date.now();
    if (left <= 0) {
      throw new LockHeldError(
        `${options.target} is in use by ${describeHolder(state)}; ${options.timeoutMs > 0 ? `waited ${Math.round(options.timeoutMs / 1000)} s. ` : ''}` +
          `Try again when it has finished, or wait longer with --lock-timeout. If no such run exists, remove ${file}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, left)));
  }
}

async function releaseLock(file: string, token: string): Promise<void> {
  const state = await readLockFile(file).catch(() => undefined);
  if (state?.holder?.token === token) await unlink(file).catch(() => {});
}
