// `npm test`: `npm run check` (ESLint, knip, Prettier) beside `vitest run`, not before it. The suite
// spends its first 20-30 s mostly waiting (the real API servers and Flux starting, Flux's first
// reconciles) with a core idle; the check's 5-7 CPU-s fit there instead of adding their 5 s of wall in
// front. The check's output is held and printed whole when it ends, so it does not interleave with
// Vitest's lines. Arguments go to Vitest (`npm test -- test/x.test.ts`). The exit code is Vitest's when
// it failed, else the check's: either failing fails `npm test`, and both always run to the end.
import { spawn } from 'node:child_process';
import console from 'node:console';
import path from 'node:path';
import process from 'node:process';

const children = [];
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
  });

/** Starts the command; `exited` resolves with its exit code (1 when it could not start or a signal ended it). */
function start(command, args, options) {
  const child = spawn(command, args, options);
  children.push(child);
  const exited = new Promise((resolve) => {
    child.on('error', (error) => {
      console.error(`${command}: ${error.message}`);
      resolve(1);
    });
    child.on('close', (code) => resolve(code ?? 1));
  });
  return { child, exited };
}

const check = start(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', '--silent', 'check'], {
  stdio: ['ignore', 'pipe', 'pipe'],
});
let checkOutput = '';
for (const stream of [check.child.stdout, check.child.stderr])
  stream.on('data', (chunk) => {
    checkOutput += chunk;
  });
const checked = check.exited.then((code) => {
  process.stdout.write(`\n${checkOutput}npm run check: ${code === 0 ? 'passed' : `failed (exit ${code})`}\n\n`);
  return code;
});
const vitest = path.join('node_modules', 'vitest', 'vitest.mjs');
const tested = start(process.execPath, [vitest, 'run', ...process.argv.slice(2)], { stdio: 'inherit' }).exited;

const [checkCode, testCode] = await Promise.all([checked, tested]);
process.exitCode = testCode !== 0 ? testCode : checkCode;
