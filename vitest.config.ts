import { defineConfig } from 'vitest/config';
import { HELM_SUITES, matrixHelms } from './test/support/helm-matrix.js';
import SlowFilesFirst from './test/support/slow-files-first.js';

// The suites that depend on helm's behaviour run once per pinned helm (test/engines/versions.json),
// that helm first on PATH; the rest run once, on the newest one.
const helms = matrixHelms();
const newest = helms[helms.length - 1]!;
const onPath = (binDir: string) => ({ PATH: `${binDir}:${process.env.PATH ?? ''}` });

export default defineConfig({
  test: {
    // One temporary directory per run, removed at the end (test/support/temp-root.ts); the helms built.
    globalSetup: ['test/support/temp-root.ts', 'test/support/helm-engines-setup.ts'],
    // Generous: real helm, git and controller processes on a loaded machine take many times their
    // quiet time; a wait ends on what it waits for, so a limit only stops a stuck test.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // Real helm, git and registry processes: two cores, keep the pool small.
    maxWorkers: 2,
    // The slowest files start first (test/support/slow-files-first.ts): none is left to run alone at the end.
    sequence: { sequencer: SlowFilesFirst },
    projects: [
      ...helms.map((helm) => ({
        extends: true as const,
        test: { name: `helm ${helm.version}`, include: HELM_SUITES, env: onPath(helm.binDir) },
      })),
      {
        extends: true as const,
        test: {
          name: `rest on helm ${newest.version}`,
          include: ['test/**/*.test.ts'],
          exclude: HELM_SUITES,
          env: onPath(newest.binDir),
        },
      },
    ],
  },
});
