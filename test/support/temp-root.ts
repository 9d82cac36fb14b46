// Vitest global setup: every temporary directory a test run makes (mkdtemp under os.tmpdir(), by
// the tests and by the processes they start with the inherited environment) goes into one
// directory for the run, removed when the run ends, so test runs do not pile up under /tmp.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Set to the run's directory by the first setup of a run: the others find it there. */
const RUN_ROOT = 'CSK_TEST_RUN_ROOT';

export default function setup(): (() => void) | undefined {
  // Vitest runs a global setup once for the root and once for each project of vitest.config.ts:
  // one directory serves them all, instead of one nested in the other per project (five deep, whose
  // long paths reached the engines' logs and Flux's error messages).
  if (process.env[RUN_ROOT] !== undefined) return undefined;
  const root = mkdtempSync(path.join(os.tmpdir(), 'csk-test-run-'));
  // Workers start after global setup and inherit it; os.tmpdir() reads TMPDIR on every call.
  process.env.TMPDIR = root;
  process.env[RUN_ROOT] = root;
  return () => {
    rmSync(root, { recursive: true, force: true });
    delete process.env[RUN_ROOT];
  };
}
