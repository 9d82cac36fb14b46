#!/usr/bin/env node
// The `clusterstack` command. Everything else loads after the first mark, so the timings line
// (CLUSTERSTACK_TIMINGS=1) tells node's own start apart from loading our modules.
//
// Inputs nested deeper than Node's default stack reads (src/yaml/kube-yaml.ts) make the command run
// again, whole, on a worker thread of this same file with a deep stack (deep-stack.ts); only such
// runs pay for the thread. The controller, which meets objects as they come, runs there from the
// start: a long-running process pays for it once.
import './v8-tuning.js';
import { endPhase } from './phase-timings.js';
import type { CliIo } from './cli-io.js';
import { enableCompileCache } from './compile-cache.js';
import { DEEP_STACK_MARK } from './deep-stack-mark.js';
import { exitIfStillAlive, trackClientRequests } from './finished-command.js';

endPhase('node');
// Before the command's modules load (all of them dynamically, below), so that Node 22.1+ caches them.
enableCompileCache(process.env);
// From the start, so that a request the command abandons (one to a server that stopped answering) is known at its end.
const requests = trackClientRequests();
// No top-level await: the tests' bundle of this file is CommonJS, loaded through a V8 code cache
// (test/support/cli-bundle.ts), which a module with top-level await cannot be. The promise's
// rejection is unhandled as a top-level await's was: node prints it and exits with 1.
void main();

/** Runs the command line (here, or on the deep-stack thread), then lets the process end with its code. */
async function main(): Promise<void> {
  // The deep-stack thread is started with a marker argument, so that a normal run does not load
  // node:worker_threads to ask (the thread's own data says the rest).
  const thread = process.argv[2] === DEEP_STACK_MARK ? await import('node:worker_threads') : undefined;
  const workerData =
    thread && !thread.isMainThread
      ? (thread.workerData as { deepStack?: boolean; argv: string[]; isTty: boolean } | undefined)
      : undefined;
  const deep = workerData?.deepStack === true;
  const parentPort = thread?.parentPort;
  const argv = deep ? workerData!.argv : process.argv.slice(2);
  const [{ runCli }, { workingDirectoryGone }] = await Promise.all([import('./run-cli.js'), import('./cli-io.js')]);
  if (deep) {
    (await import('../yaml/kube-yaml.js')).useDeepStack();
    (await import('./deep-stack.js')).receiveForwardedSignals(parentPort!);
  }
  const isTty = deep ? workerData!.isTty : Boolean(process.stderr.isTTY);
  const io: CliIo = {
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
    isTty,
    ...(deep
      ? {}
      : {
          rerunOnDeepStack: async () =>
            (await import('./deep-stack.js')).runOnDeepStack(new URL(import.meta.url), argv, isTty),
        }),
  };
  const code =
    deep || argv[0] !== 'controller' || !workingDirectoryReadable()
      ? await runCli(argv, io)
      : await (await import('./deep-stack.js')).runOnDeepStack(new URL(import.meta.url), argv, isTty);

  // A command that returned is done: what it left open must not keep the process alive, above all a
  // controller that stopped after losing its lease and must exit so that Kubernetes restarts it. The
  // requests it abandoned are let go; anything else still open is a leak, which the backstop names. On
  // the deep-stack thread the backstop ends the thread (deep-stack.ts ends it only later).
  requests.abandon();
  if (deep) parentPort!.postMessage({ code });
  else process.exitCode = code;
  exitIfStillAlive(code, (text) => void process.stderr.write(text));
}

/** A thread cannot start in a removed directory: then the command runs here, and says what is wrong. */
function workingDirectoryReadable(): boolean {
  try {
    process.cwd();
    return true;
  } catch {
    return false;
  }
}
