import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { TEST_GO_RUNTIME } from './test/support/go-runtime.js';
import { HELM_SUITES, matrixHelms } from './test/support/helm-matrix.js';
import { moduleCacheDir } from './test/support/module-cache.js';
import { SHARED_WORKER_FILES } from './test/support/shared-worker-files.js';
import SlowFilesFirst from './test/support/slow-files-first.js';

// The suites that depend on helm's behaviour run once per pinned helm (test/engines/versions.json),
// that helm first on PATH; the rest run once, on the newest one. The files of SHARED_WORKER_FILES
// share worker processes (test/support/shared-worker-files.ts says which may); every other file
// runs in a fresh one.
//
// Fresh processes, not Vitest's threads pool (worker_threads), although most isolated files keep to what a
// thread needs: no process.chdir, no signal sent to or awaited by the test's own process (its pid is Vitest's
// main process; signals reach no thread), no process.exit (it ends only the thread), clean-up in afterAll or
// afterEach rather than on the process's 'exit' (a thread is terminated, which emits none), and nothing named by
// process.pid alone (threads share it). A thread spares a file its process start, about 0.06 CPU-s (a file of
// pure tests: 0.20 CPU-s forked, 0.14 in a thread), but every process the file starts itself is then forked
// from Vitest's main process, which holds every thread's heap (660-770 MB at three threads), and a fork costs
// its parent about 0.03 ms of CPU per MB (measured: 2.6 ms at 150 MB, 7 ms at 350, 19 ms at 650; a forked
// worker peaks near 200 MB). The isolated files (29 runs: the helm suites once per helm) start 1,656 processes themselves (git and
// git-http-backend above all; 0 to 729 a file): session 18 measured them in threads and forked, alternately
// (load 5-43; the second threads run at the higher load), at 71.7 and 72.2 CPU-s against 63.7 and 65.6 for
// Vitest's main process and its workers.
// A thread pays only for a file that starts next to no processes; none of the isolated files is such a file
// with enough tests to matter.
const helms = matrixHelms();
const newest = helms[helms.length - 1]!;
// Every Go program the tests start runs with the Go runtime of test/support/go-runtime.ts.
const withHelm = (binDir: string) => ({ PATH: `${binDir}:${process.env.PATH ?? ''}`, ...TEST_GO_RUNTIME });
const moduleCache = moduleCacheDir(path.dirname(fileURLToPath(import.meta.url)));

export default defineConfig({
  test: {
    // One temporary directory per run, removed at the end (test/support/temp-root.ts); the helms built;
    // real API servers shared by the controller tests, started when a file first asks for one; the
    // management server and Flux shared by the real-Flux files, started when the first one joins.
    globalSetup: [
      'test/support/temp-root.ts',
      'test/support/helm-engines-setup.ts',
      'test/support/real-kube-api-broker.ts',
      'test/support/real-flux-world-setup.ts',
      'test/support/cli-bundle-setup.ts',
    ],
    // Generous: real helm, git and controller processes on a loaded machine take many times their
    // quiet time; a wait ends on what it waits for, so a limit only stops a stuck test.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // Three files at a time on two cores: a file spends much of its time waiting (on Flux's own
    // timers, a Lease, a killed process, a child's output), and while one worker imports its next
    // file the other two keep the cores busy. With two, only one file ran for about 40% of a run.
    maxWorkers: 3,
    // The modules Vitest transformed, kept per machine and clone (test/support/module-cache.ts): Vitest's
    // main process took about 2 CPU-s instead of 4 for the same 18 files once they were there.
    ...(moduleCache === undefined ? {} : { experimental: { fsModuleCache: true, fsModuleCachePath: moduleCache } }),
    // The slowest files start first (test/support/slow-files-first.ts): none is left to run alone at the end.
    // Asked to shuffle (`--sequence.shuffle`, `--sequence.shuffle.files`), Vitest's own sequencer orders
    // the files: a sequencer set here wins over the flag, and the files would run unshuffled.
    sequence: process.argv.some((arg) => arg.startsWith('--sequence.shuffle')) ? {} : { sequencer: SlowFilesFirst },
    projects: [
      ...helms.map((helm) => ({
        extends: true as const,
        test: { name: `helm ${helm.version}`, include: HELM_SUITES, env: withHelm(helm.binDir) },
      })),
      {
        extends: true as const,
        test: {
          name: `shared workers on helm ${newest.version}`,
          include: SHARED_WORKER_FILES,
          isolate: false,
          env: withHelm(newest.binDir),
        },
      },
      {
        extends: true as const,
        test: {
          name: `rest on helm ${newest.version}`,
          include: ['test/**/*.test.ts'],
          exclude: [...HELM_SUITES, ...SHARED_WORKER_FILES],
          env: withHelm(newest.binDir),
        },
      },
    ],
  },
});
