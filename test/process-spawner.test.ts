// The process spawner, on real processes: children started through it behave as runProcess's own
// (status, outputs, environment, directory, limits, abort, bounds), its children are killed when a
// run stops, a spawner that dies fails only its runs in flight and is started again (or, after
// repeated failures, children start directly), and it never outlives or holds up its parent.
import { spawn } from 'node:child_process';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { failureKindOf } from '../src/core/failure.js';
import { ProcessSpawner, processSpawner } from '../src/core/process-spawner.js';
import { ProcessError, runProcess, type RunProcessOptions, type StartChild } from '../src/core/run-process.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const spawners: ProcessSpawner[] = [];

/** A spawner that starts whatever this process's memory, ready before the test uses it. */
async function readySpawner(options: ConstructorParameters<typeof ProcessSpawner>[0] = {}): Promise<ProcessSpawner> {
  const spawner = new ProcessSpawner({ minResidentBytes: 0, warn: () => undefined, ...options });
  spawners.push(spawner);
  expect(await spawner.ready()).toBe(true);
  return spawner;
}

const node = (spawner: ProcessSpawner, script: string, extra: Partial<RunProcessOptions> = {}) =>
  runProcess(process.execPath, ['-e', script], { env, start: spawner.start, ...extra });

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Limits that only stop a stuck test: each wait ends as soon as what it waits for happens.
async function gone(pid: number, timeoutMs = 60_000): Promise<boolean> {
  expect(Number.isInteger(pid) && pid > 0).toBe(true);
  const deadline = Date.now() + timeoutMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

async function until(check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    expect(Date.now()).toBeLessThan(deadline);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

afterEach(() => {
  for (const spawner of spawners.splice(0)) spawner.stop();
});

describe('ProcessSpawner', () => {
  it('runs a child as runProcess does directly: status, outputs, input, only the given environment, directory', async () => {
    const spawner = await readySpawner();
    const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'csk-spawner-')));
    const script =
      'let input = ""; process.stdin.on("data", (c) => (input += c)); process.stdin.on("end", () => {' +
      ' process.stdout.write(JSON.stringify({ input, cwd: process.cwd(), env: Object.keys(process.env).sort() }));' +
      ' process.stderr.write("err"); process.exit(3); })';
    const options = { env: { ONLY: 'this' }, cwd: dir, input: 'in' };
    const direct = await runProcess(process.execPath, ['-e', script], options);
    const spawned = await runProcess(process.execPath, ['-e', script], { ...options, start: spawner.start });
    expect(spawner.remoteStarts).toBe(1);
    expect(spawned.exitCode).toBe(3);
    expect(JSON.parse(spawned.stdout.toString())).toEqual({ input: 'in', cwd: dir, env: ['ONLY'] });
    expect({ ...spawned, elapsedMs: 0 }).toEqual({ ...direct, elapsedMs: 0 });
    // The child is the spawner's, not this process's.
    const parent = await node(spawner, 'process.stdout.write(String(process.ppid))');
    expect(Number(parent.stdout.toString())).toBe(spawner.pid);
  });

  it('says a program that is not there could not be started, as directly', async () => {
    const spawner = await readySpawner();
    const error = await runProcess('/nonexistent/helm', ['--token', 'secret'], { env, start: spawner.start }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({
      reason: 'not-started',
      code: 'ENOENT',
      message: 'helm could not be started (not found)',
    });
  });

  it('kills the child in the spawner when the run runs out of time, or falls silent', async () => {
    const spawner = await readySpawner();
    const pids: number[] = [];
    // Each child prints its pid, then sleeps; the message names the program, never its arguments.
    // Both limits leave a loaded machine's node start-up (a second or two) time to print the pid
    // first; the case waits them out, so not more.
    const sleeper = 'process.stdout.write(String(process.pid)); setTimeout(() => {}, 60_000) /* secret-token */';
    const noting: StartChild = (program, args, options) => {
      const child = spawner.start(program, args, options);
      child.stdout.on('data', (chunk) => pids.push(Number(chunk.toString())));
      return child;
    };
    const [timedOut, silent] = await Promise.all(
      [{ timeoutMs: 3_000 }, { idleTimeoutMs: 3_000 }].map((limit) =>
        node(spawner, sleeper, { ...limit, start: noting }).catch((caught: unknown) => caught),
      ),
    );
    expect(timedOut).toBeInstanceOf(ProcessError);
    expect(timedOut).toMatchObject({ reason: 'timed-out', message: 'node ran longer than 3 s and was stopped' });
    expect(failureKindOf(timedOut)).toBe('retry');
    expect(silent).toMatchObject({ reason: 'idle', message: 'node printed nothing for 3 s and was stopped' });
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(await gone(pid)).toBe(true);
    expect(spawner.remoteStarts).toBe(2);
  });

  it('kills the child when the caller aborts, and refuses a run already aborted', async () => {
    const spawner = await readySpawner();
    const controller = new AbortController();
    let childPid = 0;
    const running = runProcess(
      process.execPath,
      ['-e', 'process.stdout.write(String(process.pid)); setTimeout(() => {}, 60_000)'],
      {
        env,
        start: (program, args, options) => {
          const child = spawner.start(program, args, options);
          child.stdout.on('data', (chunk) => {
            childPid = Number(chunk.toString());
            controller.abort();
          });
          return child;
        },
        signal: controller.signal,
      },
    );
    await expect(running).rejects.toMatchObject({
      reason: 'aborted',
      message: 'node was stopped: the run was cancelled',
    });
    expect(childPid).toBeGreaterThan(0);
    expect(await gone(childPid)).toBe(true);
    await expect(node(spawner, '0', { signal: controller.signal })).rejects.toMatchObject({ reason: 'aborted' });
  });

  it('carries a large output and a large piecewise input whole, and stops an output past its bound', async () => {
    const spawner = await readySpawner();
    // 24 MiB of varying bytes: every chunk in order, none lost or doubled.
    const big = await node(
      spawner,
      'const b = Buffer.alloc(24 * 1024 * 1024); for (let i = 0; i < b.length; i++) b[i] = (i * 7) % 251; process.stdout.write(b)',
    );
    expect(big.stdout.length).toBe(24 * 1024 * 1024);
    expect(big.stdout.every((byte, i) => byte === (i * 7) % 251)).toBe(true);
    const pieces = function* (): Iterable<Buffer> {
      for (let i = 0; i < 4000; i++) yield Buffer.from(`${String(i).padStart(999, 'x')}\n`);
    };
    const echoed = await node(
      spawner,
      'process.stdin.pipe(require("node:crypto").createHash("sha256")).setEncoding("hex").on("data", (d) => process.stdout.write(d))',
      {
        input: pieces(),
      },
    );
    const { createHash } = await import('node:crypto');
    expect(echoed.stdout.toString()).toBe(
      createHash('sha256')
        .update(Buffer.concat([...pieces()]))
        .digest('hex'),
    );
    await expect(
      node(spawner, 'process.stdout.write("y".repeat(5000))', { maxOutputBytes: 1000 }),
    ).rejects.toMatchObject({
      reason: 'output-too-large',
    });
    const tail = await node(spawner, 'process.stderr.write("a".repeat(5000) + "the reason")', { maxErrorBytes: 100 });
    expect(tail.stderr.toString()).toBe(`${'a'.repeat(90)}the reason`);
  });

  it('fails the runs of a spawner that dies as lost (retry), says so, and starts another for the next run', async () => {
    const warnings: string[] = [];
    const spawner = await readySpawner({ warn: (message) => warnings.push(message) });
    const first = spawner.pid!;
    // The child prints its pid once it runs: the spawner is killed under a running child, which
    // outlives it (it is this test's to end).
    let childPid = 0;
    let lost: Promise<unknown> = Promise.resolve();
    const printed = new Promise<void>((resolve) => {
      const running = node(spawner, 'process.stdout.write(String(process.pid)); setTimeout(() => {}, 60_000)', {
        start: (program, args, options) => {
          const child = spawner.start(program, args, options);
          child.stdout.on('data', (chunk) => {
            childPid = Number(chunk.toString());
            resolve();
          });
          return child;
        },
      });
      lost = running.catch((caught: unknown) => caught);
    });
    await printed;
    process.kill(first, 'SIGKILL');
    const error = await lost;
    if (alive(childPid)) process.kill(childPid, 'SIGKILL');
    expect(error).toBeInstanceOf(ProcessError);
    expect(error).toMatchObject({
      reason: 'lost',
      message: 'node was stopped: the spawner process that started it was killed (SIGKILL)',
    });
    expect(failureKindOf(error)).toBe('retry');
    expect(warnings).toEqual([
      'The process spawner was killed (SIGKILL) (failure 1 of 3 within 10 minutes); it is started again for the next run; 1 run(s) in flight failed and are retried',
    ]);
    // The next run does not wait: it starts directly while another spawner starts.
    const meanwhile = await node(spawner, 'process.stdout.write("direct")');
    expect(meanwhile.stdout.toString()).toBe('direct');
    expect(await spawner.ready()).toBe(true);
    expect(spawner.pid).not.toBe(first);
    const after = await node(spawner, 'process.stdout.write(String(process.ppid))');
    expect(Number(after.stdout.toString())).toBe(spawner.pid);
    expect(spawner.remoteStarts).toBe(2);
  });

  it('starts children directly for good after repeated failures within the window, and says so once', async () => {
    const warnings: string[] = [];
    const spawner = await readySpawner({ maxFailures: 2, warn: (message) => warnings.push(message) });
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const pid = spawner.pid!;
      process.kill(pid, 'SIGKILL');
      expect(await gone(pid)).toBe(true);
      // Each death is told once the spawner has taken it in (not a guessed 100 ms later).
      await until(() => warnings.length === attempt + 1);
      if (attempt === 0) expect(await spawner.ready()).toBe(true);
    }
    expect(spawner.fellBack).toBe(true);
    expect(warnings[1]).toBe(
      "The process spawner was killed (SIGKILL); that was failure 2 within 10 minutes, so child processes (helm, git) are started directly from now on, each costing time that grows with this process's memory",
    );
    expect(await spawner.ready()).toBe(false);
    const direct = await node(spawner, 'process.stdout.write(String(process.ppid))');
    expect(Number(direct.stdout.toString())).toBe(process.pid);
    expect(spawner.remoteStarts).toBe(0);
    expect(warnings).toHaveLength(2);
  });

  it('counts only the failures within the window: deaths further apart never add up to the fallback', async () => {
    const warnings: string[] = [];
    let now = 0;
    const spawner = await readySpawner({
      maxFailures: 2,
      failureWindowMs: 600_000,
      now: () => now,
      warn: (message) => warnings.push(message),
    });
    const killAt = async (at: number): Promise<void> => {
      now = at;
      const pid = spawner.pid!;
      const told = warnings.length;
      process.kill(pid, 'SIGKILL');
      expect(await gone(pid)).toBe(true);
      // Each death is told once the spawner has taken it in (not a guessed 100 ms later).
      await until(() => warnings.length === told + 1);
    };
    // Three deaths, each 10 minutes after the one before: every one is the first in its window.
    for (const at of [0, 600_000, 1_200_000]) {
      await killAt(at);
      expect(spawner.fellBack).toBe(false);
      expect(await spawner.ready()).toBe(true);
    }
    expect(warnings).toEqual(
      Array(3).fill(
        'The process spawner was killed (SIGKILL) (failure 1 of 2 within 10 minutes); it is started again for the next run',
      ),
    );
    // Two within 10 minutes: the fallback.
    await killAt(1_799_999);
    expect(spawner.fellBack).toBe(true);
    expect(warnings[3]).toMatch(
      /^The process spawner was killed \(SIGKILL\); that was failure 2 within 10 minutes, so/,
    );
    expect(await spawner.ready()).toBe(false);
  });

  it("tells its exits to the listeners given by onWarning until they are removed, and this process's spawner is one", async () => {
    const spawner = new ProcessSpawner({ minResidentBytes: 0 });
    spawners.push(spawner);
    const told: string[] = [];
    const stopTelling = spawner.onWarning((message) => told.push(message));
    expect(await spawner.ready()).toBe(true);
    process.kill(spawner.pid!, 'SIGKILL');
    await until(() => told.length === 1);
    expect(told[0]).toMatch(/^The process spawner was killed \(SIGKILL\) \(failure 1 of 3 within 10 minutes\)/);
    stopTelling();
    // With no listener, a Node process warning (code CLUSTERSTACK_SPAWNER).
    const warnings: (Error & { code?: string })[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      expect(await spawner.ready()).toBe(true);
      process.kill(spawner.pid!, 'SIGKILL');
      await until(() => warnings.length === 1);
      expect(warnings[0]).toMatchObject({ code: 'CLUSTERSTACK_SPAWNER' });
      expect(warnings[0]!.message).toMatch(/\(failure 2 of 3 within 10 minutes\)/);
      expect(told).toHaveLength(1);
    } finally {
      process.off('warning', onWarning);
    }
    expect(processSpawner()).toBe(processSpawner());
  });

  it('starts children directly, and no spawner, while this process is below the memory mark', async () => {
    const spawner = new ProcessSpawner({ minResidentBytes: Number.MAX_SAFE_INTEGER });
    const result = await runProcess(process.execPath, ['-e', 'process.stdout.write(String(process.ppid))'], {
      env,
      start: spawner.start,
    });
    expect(Number(result.stdout.toString())).toBe(process.pid);
    expect(spawner.pid).toBeUndefined();
  });

  it('starts again after a stop, even one that came while it was starting', async () => {
    const spawner = new ProcessSpawner({ minResidentBytes: 0, warn: () => expect.fail('a stop is no failure') });
    spawners.push(spawner);
    const starting = spawner.ready();
    spawner.stop();
    expect(await starting).toBe(false);
    expect(await spawner.ready()).toBe(true);
    const result = await node(spawner, 'process.stdout.write(String(process.ppid))');
    expect(Number(result.stdout.toString())).toBe(spawner.pid);
  });

  it('stops itself when idle, and starts again for the next run past the mark', async () => {
    const spawner = await readySpawner({ idleMs: 300 });
    const first = spawner.pid!;
    await node(spawner, '0');
    expect(await gone(first)).toBe(true);
    expect(spawner.pid).toBeUndefined();
    await node(spawner, '0');
    expect(await spawner.ready()).toBe(true);
    expect(spawner.pid).not.toBe(first);
  });

  // The spawner and runProcess bundled into one module, once for the file: a parent process loads
  // it with plain node, at a fraction of the CPU that compiling the sources through tsx takes.
  const bundleDir = path.resolve('node_modules', '.cache', `process-spawner-parent-${process.pid}`);
  let bundled: Promise<string> | undefined;
  const parentModule = (): Promise<string> =>
    (bundled ??= build({
      stdin: {
        contents:
          "export { ProcessSpawner } from './src/core/process-spawner.ts'; export { runProcess } from './src/core/run-process.ts';",
        resolveDir: path.resolve('.'),
        loader: 'ts',
      },
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      outfile: path.join(bundleDir, 'spawner.mjs'),
      logLevel: 'warning',
    }).then(() => path.join(bundleDir, 'spawner.mjs')));
  afterAll(() => rm(bundleDir, { recursive: true, force: true }));

  // A parent process that loads the spawner and runs `script`. The cases' 180 s limits only stop a
  // stuck test: the bundle, three node processes and 300 ms of CPU took over 60 s at load 50.
  const parentProcess = async (script: string) =>
    spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { ProcessSpawner, runProcess } = await import(${JSON.stringify(await parentModule())});` +
          'const spawner = new ProcessSpawner({ minResidentBytes: 0 }); await spawner.ready();' +
          script,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );

  it("lets its parent end by itself, waited for: its children's CPU counts as the parent's children's", async () => {
    // The child spends 300 ms of CPU; the parent reads its children's CPU (cutime + cstime) as it exits.
    const burn = 'const t = process.cpuUsage(); while (process.cpuUsage(t).user < 300_000);';
    const parent = await parentProcess(
      `const result = await runProcess(process.execPath, ['-e', ${JSON.stringify(burn)}], { env: {}, start: spawner.start });` +
        "const fs = await import('node:fs'); const pid = spawner.pid; process.on('exit', () => {" +
        " const f = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');" +
        ' console.log(JSON.stringify({ code: result.exitCode, pid, remote: spawner.remoteStarts, childrenCpuMs: (Number(f[13]) + Number(f[14])) * 10 })); });',
    );
    let printed = '';
    parent.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    const code = await new Promise((resolve) => parent.on('close', resolve));
    expect(code).toBe(0);
    const report = JSON.parse(printed) as { code: number; pid: number; remote: number; childrenCpuMs: number };
    expect(report).toMatchObject({ code: 0, remote: 1 });
    expect(report.childrenCpuMs).toBeGreaterThanOrEqual(250);
    expect(alive(report.pid)).toBe(false);
  }, 180_000);

  it('dies with its parent, killing its children', async () => {
    const parent = await parentProcess(
      "runProcess('/bin/sh', ['-c', 'echo $$; exec sleep 60'], { env: { PATH: '/usr/bin:/bin' }, start: (p, a, o) => {" +
        ' const child = spawner.start(p, a, o); child.stdout.on("data", (d) => console.log(spawner.pid, String(d).trim())); return child; } });',
    );
    const pids = await new Promise<number[]>((resolve) =>
      parent.stdout.on('data', (chunk: Buffer) => resolve(chunk.toString().trim().split(' ').map(Number))),
    );
    expect(pids).toHaveLength(2);
    parent.kill('SIGKILL');
    for (const pid of pids) expect(await gone(pid)).toBe(true);
  }, 180_000);
});
