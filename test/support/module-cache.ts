// Where Vitest keeps the test and source modules it has transformed (its experimental.fsModuleCache):
// per machine, not in node_modules, which `npm ci` removes, so a clean clone transformed every module
// again (about half of Vitest's main process, which turns TypeScript into JavaScript for the workers).
// Vitest keys an entry by the module's absolute path and content, the config and the files it imports,
// and clears the directory when package-lock.json changes; the directory here adds the clone's root
// and its tsconfig files (the transform reads them), so each clone path has its own. An entry or a
// clone's directory not used for two weeks is removed, so edits and old clones do not pile up.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const UNUSED_MS = 14 * 24 * 3600 * 1000;
const PRUNE_EVERY_MS = 24 * 3600 * 1000;
const PRUNED = '.pruned';

/**
 * This clone's directory for Vitest's transformed modules, created; once a day drops the entries and
 * the other clones' directories not used for two weeks. Undefined (the cache off, with a warning) when
 * it cannot be written.
 */
export function moduleCacheDir(root: string): string | undefined {
  const base =
    process.env.CLUSTERSTACK_VITEST_CACHE ?? path.join(os.homedir(), '.cache', 'clusterstack-gitops', 'vitest-modules');
  const key = createHash('sha256').update(root);
  for (const file of ['tsconfig.json', 'tsconfig.test.json']) {
    const full = path.join(root, file);
    if (existsSync(full)) key.update(`\0${file}\0`).update(readFileSync(full));
  }
  const dir = path.join(base, key.digest('hex').slice(0, 16));
  try {
    mkdirSync(dir, { recursive: true });
    const now = new Date();
    utimesSync(dir, now, now);
    pruneOnceADay(base, dir, now.getTime());
    return dir;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    console.warn(
      `warning: Vitest transforms every module again: could not keep them in ${dir} (${code}); set CLUSTERSTACK_VITEST_CACHE to a directory this user may write`,
    );
    return undefined;
  }
}

/** Removes what was not used for UNUSED_MS: other clones' directories (their mtime) and this one's entries (atime, mtime). */
function pruneOnceADay(base: string, dir: string, now: number): void {
  const stamp = path.join(dir, PRUNED);
  if (existsSync(stamp) && now - statSync(stamp).mtimeMs < PRUNE_EVERY_MS) return;
  writeFileSync(stamp, '');
  const unused = (file: string, byRead: boolean): boolean => {
    const stat = statSync(file, { throwIfNoEntry: false });
    if (stat === undefined) return false;
    const used = byRead ? Math.max(stat.atimeMs, stat.mtimeMs) : stat.mtimeMs;
    return now - used > UNUSED_MS;
  };
  for (const name of readdirSync(base)) {
    const other = path.join(base, name);
    if (other !== dir && unused(other, false)) rmSync(other, { recursive: true, force: true });
  }
  // Vitest names an entry by its key's SHA-1 (its _metadata.json stays) and reads it without touching
  // it: the atime (updated at most daily on relatime mounts) says it was read.
  for (const name of readdirSync(dir)) {
    const entry = path.join(dir, name);
    if (/^[0-9a-f]{40}$/.test(name) && unused(entry, true)) rmSync(entry, { force: true });
  }
}
