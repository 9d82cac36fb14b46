#!/usr/bin/env node
// The `clusterstack` command. Everything else loads after the first mark, so the timings line
// (CLUSTERSTACK_TIMINGS=1) tells node's own start apart from loading our modules.
import { endPhase } from './phase-timings.js';

endPhase('node');
const [{ runCli }, { workingDirectoryGone }] = await Promise.all([import('./run-cli.js'), import('./cli-io.js')]);
const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  // Read when a command first needs it: in a deleted directory `--help` and `version` still work, and
  // any other command ends with a message instead of node's uncaught uv_cwd error.
  get cwd(): string {
    try {
      return process.cwd();
    } catch {
      throw workingDirectoryGone();
    }
  },
  isTty: Boolean(process.stderr.isTTY),
});
process.exitCode = code;
// A command that returned is done: whatever handle is still open (a socket, a timer of a library)
// must not keep the process alive, above all a controller that stopped after losing its lease and
// must exit so that Kubernetes restarts it. Unref'd: a process that drains exits at once by itself.
setTimeout(() => process.exit(code), 5000).unref();
