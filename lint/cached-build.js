// Runs the TypeScript build (`npm run build`, which `npm ci` runs as `prepare`) with its output kept
// per machine: a clean clone (CI's `.ci/run`) otherwise type-checks and emits every file from cold,
// about 15 CPU-s, for a dist/ that another clone of the same sources on this machine already built.
// The kept copy is keyed by everything the output depends on: the compiler options (tsconfig.json),
// the locked packages (package-lock.json: TypeScript's version and the @types it reads) and the path
// and content of every file under the folders tsconfig.json includes. Any change to one of them is a
// miss, and a miss runs the build as before; a hit replaces dist/ with the kept copy, so no file of
// an older build is left beside it. A failed build keeps nothing, and so never hides an error.
//
// Usage: node lint/cached-build.js -- <command> <args...>
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import console from 'node:console';
import process from 'node:process';

const OUTPUT = 'dist';
/** How many builds a machine keeps: a few branches' worth, each about 6 MB. */
const KEPT_BUILDS = 4;

const [separator, command, ...args] = process.argv.slice(2);
if (separator !== '--' || command === undefined) {
  console.error('usage: node lint/cached-build.js -- <command> <args...>');
  process.exit(2);
}

const machineCache = path.join(
  process.env.CLUSTERSTACK_BUILD_CACHE ?? path.join(os.homedir(), '.cache', 'clusterstack-gitops', 'build'),
);

/** The folders tsconfig.json's `include` globs start at (`src/**\/*.ts` -> `src`). */
function includedRoots() {
  const tsconfig = JSON.parse(readFileSync('tsconfig.json', 'utf8'));
  return [...new Set((tsconfig.include ?? []).map((glob) => glob.split('/')[0]))].sort();
}

/** Every file under `dir`, as paths relative to the clone, in a fixed order. */
function filesUnder(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((entry) => {
      const child = path.join(dir, entry.name);
      if (entry.isDirectory()) return filesUnder(child);
      return entry.isFile() ? [child] : [];
    });
}

/** The hash of the build's inputs and of the command that builds them. */
function inputKey() {
  const hash = createHash('sha256');
  const add = (label, content) => {
    hash.update(`${label}\0${content.length}\0`);
    hash.update(content);
  };
  add('command', [command, ...args].join('\0'));
  for (const file of ['tsconfig.json', 'package-lock.json', ...includedRoots().flatMap(filesUnder)]) {
    add(file, readFileSync(file));
  }
  return hash.digest('hex').slice(0, 32);
}

/** Drops the least recently used kept builds beyond KEPT_BUILDS, and what interrupted runs left staged. */
function pruneKeptBuilds() {
  const entries = readdirSync(machineCache, { withFileTypes: true }).filter((entry) => entry.isDirectory());
  const hourAgo = Date.now() - 3_600_000;
  for (const entry of entries.filter((entry) => entry.name.startsWith('.staging-'))) {
    const dir = path.join(machineCache, entry.name);
    if (statSync(dir).mtimeMs < hourAgo) rmSync(dir, { recursive: true, force: true });
  }
  const kept = entries
    .filter((entry) => !entry.name.startsWith('.'))
    .map((entry) => ({
      dir: path.join(machineCache, entry.name),
      used: statSync(path.join(machineCache, entry.name)).mtimeMs,
    }))
    .sort((a, b) => b.used - a.used);
  for (const { dir } of kept.slice(KEPT_BUILDS)) rmSync(dir, { recursive: true, force: true });
}

const key = inputKey();
const keptBuild = path.join(machineCache, key);
if (restoreKeptBuild()) {
  console.log(`build: ${OUTPUT}/ of these sources is kept on this machine (${key}); not built again`);
  process.exit(0);
}

/** Replaces dist/ with the kept build of these inputs; false when there is none (or it cannot be read). */
function restoreKeptBuild() {
  if (!existsSync(path.join(keptBuild, OUTPUT))) return false;
  try {
    rmSync(OUTPUT, { recursive: true, force: true });
    cpSync(path.join(keptBuild, OUTPUT), OUTPUT, { recursive: true });
    // Marks it recently used, so that pruning drops older builds first.
    const now = new Date();
    utimesSync(keptBuild, now, now);
    return true;
  } catch (error) {
    console.error(`warning: could not use the kept build in ${keptBuild} (${error.code ?? error.message}); building`);
    rmSync(OUTPUT, { recursive: true, force: true });
    return false;
  }
}

const result = spawnSync(command, args, { stdio: 'inherit', shell: false });
if (result.error) {
  console.error(`build: could not run ${command}: ${result.error.message}`);
  process.exit(1);
}
if (result.status !== 0) process.exit(result.status ?? 1);

// Copied aside first and renamed into place, so that a concurrent or interrupted run never finds
// half a build under the key. Keeping it is only a saving: the build itself has succeeded.
const staging = path.join(machineCache, `.staging-${process.pid}`);
try {
  mkdirSync(machineCache, { recursive: true });
  rmSync(staging, { recursive: true, force: true });
  cpSync(OUTPUT, path.join(staging, OUTPUT), { recursive: true });
  if (existsSync(keptBuild)) rmSync(staging, { recursive: true, force: true });
  else renameSync(staging, keptBuild);
  pruneKeptBuilds();
} catch (error) {
  try {
    rmSync(staging, { recursive: true, force: true });
  } catch {
    // Nothing was staged where nothing can be written.
  }
  console.error(
    `warning: could not keep the build in ${machineCache} (${error.code ?? error.message}); set CLUSTERSTACK_BUILD_CACHE to a directory this user may write`,
  );
}
