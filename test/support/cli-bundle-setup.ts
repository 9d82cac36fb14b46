// Vitest global setup: names the one directory the run's CLI bundle goes into (cli-bundle.ts; the
// first test file that starts a CLI or controller process builds it there, a run that starts none
// builds nothing) and removes it when the run ends.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { BUNDLE_CACHE, SHARED_BUNDLE_ENV } from './cli-bundle.js';

export default function setup(): (() => void) | undefined {
  // Vitest runs a global setup once for the root and once per project: the first names the directory.
  if (process.env[SHARED_BUNDLE_ENV] !== undefined) return undefined;
  const name = `clusterstack-cli-run-${process.pid}-${randomBytes(4).toString('hex')}`;
  // Workers start after global setup and inherit it.
  process.env[SHARED_BUNDLE_ENV] = path.join(BUNDLE_CACHE, name);
  return () => {
    delete process.env[SHARED_BUNDLE_ENV];
    // The bundle, and any staging directory a worker left when it was stopped mid-build.
    const entries = existsSync(BUNDLE_CACHE) ? readdirSync(BUNDLE_CACHE) : [];
    for (const entry of entries)
      if (entry === name || entry.startsWith(`${name}.`))
        rmSync(path.join(BUNDLE_CACHE, entry), { recursive: true, force: true });
  };
}
