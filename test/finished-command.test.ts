// A finished command's process exits by itself at once, even with a request still waiting on a server
// that never answers (the lease renewal of a controller whose API server froze); a real leak is ended
// by the backstop, which names what held the process. Each case is a real node process.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const MODULE = pathToFileURL(path.resolve('src/cli/finished-command.ts')).href;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** From the script's last stdout line to the process's exit. */
  exitAfterLastLineMs: number;
}

/** Runs `body` (TypeScript, with the module's exports in scope) as its own node process. */
async function runScript(dir: string, name: string, body: string): Promise<Run> {
  const file = path.join(dir, `${name}.mts`);
  await writeFile(file, `import { exitIfStillAlive, trackClientRequests } from ${JSON.stringify(MODULE)};\n${body}\n`);
  return new Promise((resolve) => {
    let lastLineAt = 0;
    const child = execFile(process.execPath, ['--import', 'tsx', file], { timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({
        code: child.exitCode ?? (error ? -1 : 0),
        stdout,
        stderr,
        exitAfterLastLineMs: performance.now() - lastLineAt,
      }),
    );
    child.stdout!.on('data', () => {
      lastLineAt = performance.now();
    });
  });
}

describe('a finished command', { timeout: 120_000 }, () => {
  let dir: string;
  let silent: Server;
  const held: Socket[] = [];
  let port = 0;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'finished-command-'));
    // Accepts connections and never answers, as a SIGSTOPped API server does.
    silent = createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    port = (silent.address() as { port: number }).port;
  });

  afterAll(async () => {
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  /** Script lines: a lease renewal to the server that never answers, connected, its errors going to `onError`. */
  const renewalConnected = (onError: string) =>
    `const pending = request({ host: '127.0.0.1', port: ${port}, path: '/renew', agent: false });
pending.on('error', ${onError});
pending.end();
await new Promise((resolve) => pending.once('socket', (socket) => socket.once('connect', resolve)));`;

  it('exits at once by itself with a request still unanswered, after its last line arrived, without the backstop', async () => {
    const run = await runScript(
      dir,
      'abandoned',
      `import { request } from 'node:http';
const requests = trackClientRequests();
${renewalConnected("(error) => process.stderr.write('request failed: ' + error.message + '\\n')")}
requests.abandon();
process.exitCode = 3;
exitIfStillAlive(3, (text) => void process.stderr.write(text), 30_000);
process.stdout.write(JSON.stringify({ msg: 'Controller stopped' }) + '\\n');`,
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(3);
    expect(run.stdout).toBe('{"msg":"Controller stopped"}\n');
    // Far below the 30 s backstop: nothing but the unanswered request was open.
    expect(run.exitAfterLastLineMs).toBeLessThan(15_000);
  });

  it('the same request not let go would keep the process alive: the backstop ends it and names the socket', async () => {
    const run = await runScript(
      dir,
      'held',
      `import { request } from 'node:http';
${renewalConnected('() => undefined')}
exitIfStillAlive(3, (text) => void process.stderr.write(text), 500);
process.stdout.write('last line\\n');`,
    );
    expect(run.code).toBe(3);
    expect(run.stdout).toBe('last line\n');
    expect(run.stderr).toMatch(
      // (Node lists its stdio pipes too: PipeWrap x2.)
      /^clusterstack: the command finished 500 ms ago, but these still keep the process alive: [^;]*\bTCPSocketWrap\b[^;]*; exiting with 3\.\nThis is a bug in clusterstack/,
    );
  });

  it('a request started after the command returned is let go too', async () => {
    const run = await runScript(
      dir,
      'late',
      `import { request } from 'node:http';
const requests = trackClientRequests();
requests.abandon();
const late = request({ host: '127.0.0.1', port: ${port}, path: '/event', method: 'POST', agent: false });
late.on('error', () => undefined);
late.end();
exitIfStillAlive(0, (text) => void process.stderr.write(text), 30_000);`,
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });
});
