// The one process runner, on real child processes (node itself, so no tool needs installing):
// exit status, input, the limits, abort, bounded capture, and messages that never carry arguments.
import { describe, expect, it } from 'vitest';
import { failureKindOf } from '../src/core/failure.js';
import { ProcessError, runProcess } from '../src/core/run-process.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const node = (
  script: string,
  extra: {
    input?: string | Iterable<Buffer>;
    timeoutMs?: number;
    idleTimeoutMs?: number;
    signal?: AbortSignal;
    maxOutputBytes?: number;
    maxErrorBytes?: number;
  } = {},
) => runProcess(process.execPath, ['-e', script], { env, ...extra });

describe('runProcess', () => {
  it('resolves with the exit status, standard output and standard error, whatever the status', async () => {
    const result = await node('process.stdout.write("out"); process.stderr.write("err"); process.exit(3)');
    expect(result.exitCode).toBe(3);
    expect(result.stdout.toString()).toBe('out');
    expect(result.stderr.toString()).toBe('err');
  });

  it('gives the child only the environment it is handed', async () => {
    const result = await runProcess(
      process.execPath,
      ['-e', 'process.stdout.write(JSON.stringify(Object.keys(process.env).sort()))'],
      { env: { ONLY: 'this' } },
    );
    expect(JSON.parse(result.stdout.toString())).toEqual(['ONLY']);
  });

  it('writes a long piecewise input as the child reads it, and closes it', async () => {
    const pieces = function* (): Iterable<Buffer> {
      for (let i = 0; i < 2000; i++) yield Buffer.from(`${'x'.repeat(999)}\n`);
    };
    const result = await node(
      'let n = 0; process.stdin.on("data", (c) => (n += c.length)); process.stdin.on("end", () => process.stdout.write(String(n)))',
      { input: pieces() },
    );
    expect(result.stdout.toString()).toBe(String(2000 * 1000));
  });

  it('closes an empty input, so a child reading it ends', async () => {
    const result = await node('process.stdin.resume(); process.stdin.on("end", () => process.stdout.write("eof"))');
    expect(result.stdout.toString()).toBe('eof');
  });

  it('stops a run over its time limit, as a retryable failure that names the program and not its arguments', async () => {
    const error = await node('setTimeout(() => {}, 60_000) /* secret-token */', { timeoutMs: 200 }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ProcessError);
    expect((error as ProcessError).reason).toBe('timed-out');
    expect((error as ProcessError).message).toBe('node ran longer than 200 ms and was stopped');
    expect(failureKindOf(error)).toBe('retry');
  });

  it('stops a run that falls silent, but not one that keeps printing', async () => {
    const silent = await node('setTimeout(() => {}, 60_000)', { idleTimeoutMs: 200 }).catch(
      (caught: unknown) => caught,
    );
    expect((silent as ProcessError).reason).toBe('idle');
    // Runs 6 s, longer than the limit, never silent for long: its longest silence is its start-up,
    // up to a second or two on a loaded machine, so the limit stays well above that.
    const chatty = await node(
      'let i = 0; const t = setInterval(() => { process.stderr.write("."); if (++i === 24) { clearInterval(t); } }, 250)',
      { idleTimeoutMs: 4000 },
    );
    expect(chatty.exitCode).toBe(0);
    expect(chatty.stderr.toString()).toBe('.'.repeat(24));
  });

  it('kills the child when the caller aborts', async () => {
    const controller = new AbortController();
    const running = node('setTimeout(() => {}, 60_000)', { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await expect(running).rejects.toMatchObject({
      reason: 'aborted',
      message: 'node was stopped: the run was cancelled',
    });
    controller.abort();
    await expect(node('0', { signal: controller.signal })).rejects.toMatchObject({ reason: 'aborted' });
  });

  it('stops a run that prints more than the bound, and keeps only the end of a long standard error', async () => {
    await expect(node('process.stdout.write("y".repeat(5000))', { maxOutputBytes: 1000 })).rejects.toMatchObject({
      reason: 'output-too-large',
    });
    const result = await node('process.stderr.write("a".repeat(5000) + "the reason")', { maxErrorBytes: 100 });
    expect(result.stderr.length).toBe(100);
    expect(result.stderr.toString().endsWith('the reason')).toBe(true);
  });

  it('says a program that is not there could not be started, as an input to fix', async () => {
    const error = await runProcess('/nonexistent/helm', ['--token', 'secret'], { env }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({
      reason: 'not-started',
      code: 'ENOENT',
      message: 'helm could not be started (not found)',
    });
    expect(failureKindOf(error)).toBe('fix-input');
  });
});
