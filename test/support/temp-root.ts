// Vitest global setup: every temporary directory a test run makes (mkdtemp under os.tmpdir(), by
// the tests and by the processes they start with the inherited environment) goes into one
// directory for the run, removed when the run ends, so test runs do not pile up under /tmp.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export default function setup(): () => void {
  const root = mkdtempSync(path.join(os.tmpdir(), 'csk-test-run-'));
  // Workers start after global setup and inherit it; os.tmpdir() reads TMPDIR on every call.
  process.env.TMPDIR = root;
  return () => rmSync(root, { recursive: true, force: true });
}
