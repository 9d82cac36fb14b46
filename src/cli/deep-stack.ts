// Runs a command line on a worker thread with a stack deep enough for documents nested as deep as
// Kubernetes reads them (10,000 levels): parsing, JSON, structuredClone, digests and YAML writing all
// recurse per level, and Node's default stack (about 1 MB) ends near 1,600. The thread runs the
// CLI's own entry (main.ts), which reads up to that depth there; its output goes to this process's.
import { type MessagePort, Worker } from 'node:worker_threads';
import { signalExitCode } from '../controller/runtime/shutdown.js';
import { FAILURE_REACTIONS } from '../core/failure.js';
import { DEEP_STACK_MARK } from './deep-stack-mark.js';
import { EXIT_BACKSTOP_MS } from './finished-command.js';

/**
 * The worker's stack, in MB. 10,000 levels take about 6 MB on the deepest step measured
 * (structuredClone); the rest is room for the frames of everything between (helm values, walkers).
 * Only reserved address space: pages are used as the stack grows.
 */
export const DEEP_STACK_MB = 256;

/** Runs `argv` on a deep-stack thread started from `entry` (the CLI's main module); resolves with its exit code. */
export function runOnDeepStack(entry: URL, argv: string[], isTty: boolean): Promise<number> {
  return new Promise((resolve) => {
    let code: number | undefined;
    const worker = new Worker(entry, {
      argv: [DEEP_STACK_MARK],
      workerData: { deepStack: true, argv, isTty },
      resourceLimits: { stackSizeMb: DEEP_STACK_MB },
    });
    worker.on('message', (message: { code?: number }) => {
      code = message.code;
      // The thread ends itself once drained, or by its own backstop (main.ts), which says what held it;
      // this one is for a thread too stuck to run even that.
      setTimeout(() => void worker.terminate(), 2 * EXIT_BACKSTOP_MS).unref();
    });
    worker.on('error', (error) => {
      process.stderr.write(
        `error: the run on a deep stack failed: ${error.message}\nThis is a bug in clusterstack: please report it with this output and the command line.\n`,
      );
      code ??= FAILURE_REACTIONS.internal.exitCode;
    });
    // Its output reaches this process's streams before it ends.
    // Signals reach only this thread: the command there (the controller's graceful shutdown) hears them as its own.
    const forward = (signal: NodeJS.Signals) => worker.postMessage({ signal });
    for (const signal of FORWARDED_SIGNALS) process.on(signal, forward);
    // process.exit there (a controller that stopped) ends the thread with its code.
    worker.on('exit', (exitCode) => {
      for (const signal of FORWARDED_SIGNALS) process.off(signal, forward);
      resolve(code ?? exitCode);
    });
  });
}

const FORWARDED_SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/**
 * On the deep-stack thread: signals the parent forwards are emitted on this thread's process, where the
 * command listens for them. A signal nothing listens for yet (a controller still starting, before its
 * graceful shutdown is set up) ends the command as the signal's default action would end a process,
 * with 128 + its number: the parent's forwarding listener would otherwise swallow it.
 */
export function receiveForwardedSignals(port: MessagePort): void {
  port.on('message', (message: { signal?: NodeJS.Signals }) => {
    const { signal } = message;
    if (!signal) return;
    if (process.listenerCount(signal) > 0) process.emit(signal, signal);
    else process.exit(signalExitCode(signal));
  });
  // Listening must not keep a finished command's thread alive.
  port.unref();
}
