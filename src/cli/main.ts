#!/usr/bin/env node
// The `clusterstack` command.
import { runCli } from './run-cli.js';

const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  isTty: Boolean(process.stderr.isTTY),
});
process.exitCode = code;
