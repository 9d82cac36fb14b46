import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One temporary directory per run, removed at the end (test/support/temp-root.ts).
    globalSetup: ['test/support/temp-root.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Real helm, git and registry processes: two cores, keep the pool small.
    maxWorkers: 2,
  },
});
