// Runs a tool with its --cache file kept per machine, not per clone (`npm run lint`: ESLint): a clean
// clone (CI's `.ci/run`) otherwise linted every file from cold, about 15 CPU-s. ESLint keys its cache
// entries by the file's absolute path, so the kept copy stores the clone's root as a placeholder and
// each run swaps in its own root: a second clone at another path finds the entries of the first. An
// entry is reused only while the file's content hash and the hash of ESLint's config match
// (`--cache-strategy content`; eslint.config.js puts the rules' code and the locked plugin versions
// in that hash), so a changed file or rule is linted again, and cached problems are reported again:
// the cache saves work, never a finding. (Prettier hashes the absolute path into each entry's options
// hash, which no placeholder can fix: lint/format-check.js keeps its own cache.)
//
// Usage: node lint/machine-cache.js <name> <clone's cache file> -- <command> <args...>
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import console from 'node:console';
import process from 'node:process';

const ROOT_MARK = '<clone root>';

const [name, cacheFile, separator, command, ...args] = process.argv.slice(2);
if (name === undefined || cacheFile === undefined || separator !== '--' || command === undefined) {
  console.error('usage: node lint/machine-cache.js <name> <cache file> -- <command> <args...>');
  process.exit(2);
}

const machineCache = path.join(
  process.env.CLUSTERSTACK_LINT_CACHE ?? path.join(os.homedir(), '.cache', 'clusterstack-gitops', 'lint'),
  name,
);
const localCache = path.resolve(cacheFile);
// Only a string that starts with the root (a JSON string's opening quote, then the root and a
// separator) is a path of this clone; the root as written inside a JSON string.
const rootInJson = JSON.stringify(process.cwd() + path.sep).slice(0, -1);
const markInJson = JSON.stringify(ROOT_MARK + path.sep).slice(0, -1);

/** Returns the file's text, or undefined when there is none yet. */
function readIfPresent(file) {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Writes the file whole or not at all: another clone may be reading or writing it at the same time. */
function writeWhole(file, text) {
  mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

let kept;
try {
  kept = readIfPresent(machineCache);
} catch {
  // No usable kept copy: the tool starts from cold, as without one.
}
if (kept !== undefined && readIfPresent(localCache) === undefined) {
  writeWhole(localCache, kept.split(markInJson).join(rootInJson));
}

const run = spawnSync(command, args, { stdio: 'inherit' });
if (run.error !== undefined) {
  console.error(`${command}: ${run.error.message}`);
  process.exit(3);
}

const written = readIfPresent(localCache);
try {
  if (written !== undefined) writeWhole(machineCache, written.split(rootInJson).join(markInJson));
} catch (error) {
  // Only a later run's speed depends on it: say so, and keep the tool's verdict.
  console.error(
    `warning: could not keep the ${name} cache in ${machineCache} (${error.code ?? error.message}); set CLUSTERSTACK_LINT_CACHE to a directory this user may write`,
  );
}
process.exit(run.status ?? 1);
