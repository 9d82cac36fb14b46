#!/usr/bin/env node
// The `clusterstack` command. Everything else loads after the first mark, so the timings line
// (CLUSTERSTACK_TIMINGS=1) tells node's own start apart from loading our modules.
import { endPhase } from './phase-timings.js';

endPhase('node');
const { runCli } = await import('./run-cli.js');
const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  isTty: Boolean(process.stderr.isTTY),
});
process.exitCode = code;
