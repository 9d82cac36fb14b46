// The V8 code cache of the tests' CLI launcher (support/cli-launcher.ts): a process takes the cache
// an earlier one wrote; a cache it cannot use (damaged on disk, made for other code, not a cache at
// all) is ignored and replaced, and the command runs as without one; a changed bundle has its own
// cache, also when it is as long as the old one (V8 itself tells sources apart by length only).
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Script } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from './support/cli.js';
import { BUNDLE, BUNDLE_CACHE, writeBundleAndLauncher } from './support/cli-bundle.js';
import { CODE_CACHE_DIR_ENV, CODE_CACHE_LOG_ENV } from './support/cli-code-cache-env.js';
import { cliEntry, cliEnvironment, removeCliBundle } from './support/cli-process.js';

const execFileAsync = promisify(execFile);
const scratch: string[] = [];
afterAll(async () => {
  await removeCliBundle();
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

interface Launch {
  code: number;
  stdout: string;
  stderr: string;
  /** What the launcher did with the cache, in order (`none`, `accepted`, `rejected`, `written`). */
  cache: string[];
  /** The cache file it used. */
  file: string;
}

/** Runs `node <entry> <args>` with its code caches in `cacheDir`. */
async function launch(entry: string, args: string[], cacheDir: string): Promise<Launch> {
  const log = path.join(cacheDir, '..', `log-${Math.random().toString(16).slice(2)}`);
  let result: { code: number; stdout: string; stderr: string };
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [entry, ...args], {
      env: cliEnvironment({ [CODE_CACHE_DIR_ENV]: cacheDir, [CODE_CACHE_LOG_ENV]: log }),
    });
    result = { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; signal?: string; stdout: string; stderr: string };
    result = { code: failed.code ?? -1, stdout: failed.stdout, stderr: `${failed.signal ?? ''} ${failed.stderr}` };
  }
  const lines = readFileSync(log, 'utf8').trim().split('\n');
  rmSync(log);
  return { ...result, cache: lines.map((line) => line.split(' ')[1]!), file: lines[0]!.split(' ')[0]! };
}

async function cacheDirectory(): Promise<string> {
  const parent = await tempDir('csk-code-cache-');
  scratch.push(parent);
  return path.join(parent, 'caches');
}

describe("the tests' CLI launcher's code cache", { timeout: 120_000 }, () => {
  it('is written by the first process and taken by the next, which prints the same', async () => {
    const entry = await cliEntry();
    const cacheDir = await cacheDirectory();
    const first = await launch(entry, ['--help'], cacheDir);
    expect(first).toMatchObject({ code: 0, stderr: '', cache: ['none', 'written'] });
    expect(first.stdout).toMatch(/^Usage: clusterstack <command>/);
    // Per node version and command.
    expect(first.file).toContain(`-${process.version}-`);
    expect(first.file).toMatch(/-other\.v8cache$/);
    expect(readdirSync(cacheDir)).toEqual([first.file]);

    const second = await launch(entry, ['--help'], cacheDir);
    expect(second).toMatchObject({ code: 0, stdout: first.stdout, stderr: '', cache: ['accepted'], file: first.file });
    // Another command has its own.
    const render = await launch(entry, ['render', '--help'], cacheDir);
    expect(render).toMatchObject({ code: 0, stderr: '', cache: ['none', 'written'] });
    expect(render.file).toMatch(/-render\.v8cache$/);
  });

  it('ignores a damaged, foreign or garbage cache file, runs the command as without one and replaces it', async () => {
    const entry = await cliEntry();
    const cacheDir = await cacheDirectory();
    const made = await launch(entry, ['--help'], cacheDir);
    const file = path.join(cacheDir, made.file);
    const good = readFileSync(file);
    // Damaged inside: Node 20's V8 took such a cache without looking and crashed (SIGTRAP).
    const damaged = Buffer.from(good);
    for (let i = damaged.length >> 1; i < (damaged.length >> 1) + 4000; i++) damaged[i]! ^= 0x5a;
    const foreign = new Script('globalThis.answer = 42;').createCachedData();
    for (const [what, bytes] of [
      ['damaged', damaged],
      ['foreign', foreign],
      ['garbage', Buffer.from('not a code cache')],
      ['cut short', good.subarray(0, good.length >> 1)],
    ] as const) {
      writeFileSync(file, bytes);
      const run = await launch(entry, ['--help'], cacheDir);
      expect(run, what).toMatchObject({ code: 0, stdout: made.stdout, stderr: '', cache: ['rejected', 'written'] });
      expect(readFileSync(file).equals(bytes), what).toBe(false);
      expect(await launch(entry, ['--help'], cacheDir), what).toMatchObject({ code: 0, cache: ['accepted'] });
    }
  });

  it('gives a changed bundle a cache of its own, also at the same length', async () => {
    const entry = await cliEntry();
    const cacheDir = await cacheDirectory();
    const text = readFileSync(path.join(path.dirname(entry), BUNDLE), 'utf8');
    const changed = text.replace('Usage: clusterstack <command>', 'Usage: CLUSTERSTACK <command>');
    expect(changed.length).toBe(text.length);
    // Beside the run's bundle, where its two packages left outside it resolve from node_modules.
    const dir = mkdtempSync(path.join(BUNDLE_CACHE, 'clusterstack-cli-changed-'));
    scratch.push(dir);
    cpSync(path.join(path.dirname(entry), 'kill-timer.js'), path.join(dir, 'kill-timer.js'));
    const changedEntry = writeBundleAndLauncher(dir, changed);

    const original = await launch(entry, ['--help'], cacheDir);
    expect(original.cache).toEqual(['none', 'written']);
    // With the original's cache V8 would run the old text's bytecode: it checks a source's length only.
    const other = await launch(changedEntry, ['--help'], cacheDir);
    expect(other).toMatchObject({ code: 0, stderr: '', cache: ['none', 'written'] });
    expect(other.file).not.toBe(original.file);
    expect(other.stdout).toMatch(/^Usage: CLUSTERSTACK <command>/);
    // Neither replaced the other's.
    expect(await launch(entry, ['--help'], cacheDir)).toMatchObject({ stdout: original.stdout, cache: ['accepted'] });
    expect(await launch(changedEntry, ['--help'], cacheDir)).toMatchObject({
      stdout: other.stdout,
      cache: ['accepted'],
    });
  });
});
