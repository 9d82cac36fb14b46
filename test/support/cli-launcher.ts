// The tests' CLI entry (main.cjs in the run's bundle directory, cli-bundle.ts): runs the CLI bundle
// beside it through a V8 code cache. Compiling the 7.8 MB bundle is about a third of what a short
// CLI process spends; with the bytecode of a run before it taken from the cache, a start compiles
// only what that run did not. Node 20 has no compile cache for ES modules (module.enableCompileCache
// is 22.1's), so the bundle is CommonJS and compiled here with vm.Script and its cachedData.
//
// One cache file per machine, per bundle content, node version and V8 flags, and per command and
// thread (a `--version` compiles little, a controller's deep-stack thread most of the bundle, and
// each accepts only what it needs): made by the first process that finds none or finds it rejected
// (foreign, corrupt, or made by another node), once it has run a while, and written whole by rename.
// Nothing about the cache can fail the command: a cache that cannot be read, used or written is
// compiling as if there were none.
import {
  appendFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';
// The bundle sets these V8 flags first thing, and V8 accepts a cache only under the flags it was made
// with: set here before compiling, the producer's and every consumer's are the same.
import '../../src/cli/v8-tuning.js';
import { DEEP_STACK_MARK } from '../../src/cli/deep-stack-mark.js';
import { CODE_CACHE_DIR_ENV, CODE_CACHE_LOG_ENV } from './cli-code-cache-env.js';

// Node 20's V8 checks a cache's checksum only when asked: without this, a cache damaged on disk
// was taken and the process died in V8's deserializer (SIGTRAP). Asked, it rejects it (adler32, about
// a millisecond for a 1.5 MB cache). Before any compile, for the same flag hash in every process.
setFlagsFromString('--verify-snapshot-checksum');

// Set by cli-bundle.ts when it builds this launcher.
declare const CSK_BUNDLE_FILE: string;
declare const CSK_BUNDLE_HASH: string;
declare const CSK_CODE_CACHE_DIR: string;

/** A process still running this long after its start writes its cache then (a controller), else at its exit. */
const PRODUCE_AFTER_MS = 5000;
/** Cache files of bundles not rebuilt for this long are removed when a new one is written. */
const STALE_AFTER_MS = 7 * 24 * 3600_000;

const bundleFile = path.join(__dirname, CSK_BUNDLE_FILE);
const cacheDir = process.env[CODE_CACHE_DIR_ENV] || CSK_CODE_CACHE_DIR;
const cacheFile = path.join(
  cacheDir,
  `${CSK_BUNDLE_HASH}-${process.version}-${process.arch}-${flagsKey(process.execArgv)}-${role()}.v8cache`,
);

// esbuild writes ASCII (escaping the rest), read as latin1 without decoding.
const source = readFileSync(bundleFile, 'latin1');
const cachedData = readCache();
const script = new Script(source, { filename: bundleFile, ...(cachedData ? { cachedData } : {}) });
const found = cachedData === undefined ? 'none' : script.cachedDataRejected === true ? 'rejected' : 'accepted';
log(found);
if (found !== 'accepted') produceLater();
// The bundle is one function (cli-bundle.ts): CommonJS's module scope, and import.meta.url, which our
// code reads to find its package.json, crds/ and helm, and the deep-stack thread to start this entry again.
const run = script.runInThisContext() as (
  exports: object,
  require: NodeJS.Require,
  module: { exports: object },
  filename: string,
  dirname: string,
  importMetaUrl: string,
) => void;
const bundleModule = { exports: {} };
run(
  bundleModule.exports,
  createRequire(bundleFile),
  bundleModule,
  bundleFile,
  __dirname,
  pathToFileURL(__filename).href,
);

function readCache(): Buffer | undefined {
  try {
    return readFileSync(cacheFile);
  } catch {
    return undefined;
  }
}

/** Writes this process's cache once it has compiled what its run needs: after a while, or at its exit. */
function produceLater(): void {
  let produced = false;
  const produce = (): void => {
    if (produced) return;
    produced = true;
    const staging = `${cacheFile}.${process.pid}-${Math.random().toString(16).slice(2)}`;
    try {
      const data = script.createCachedData();
      mkdirSync(cacheDir, { recursive: true });
      writeFileSync(staging, data);
      renameSync(staging, cacheFile);
      log('written');
      removeStale();
    } catch {
      // A cache that cannot be written (another user's directory, a full disk) is only slower starts.
      try {
        rmSync(staging, { force: true });
      } catch {
        // Not even looked at: nothing of ours is there.
      }
    }
  };
  process.once('exit', produce);
  setTimeout(produce, PRODUCE_AFTER_MS).unref();
}

/** One line, `<cache file> <what>`, to the log file the environment names, if any. */
function log(what: string): void {
  const file = process.env[CODE_CACHE_LOG_ENV];
  if (file) appendFileSync(file, `${path.basename(cacheFile)} ${what}\n`);
}

function removeStale(): void {
  const now = Date.now();
  for (const name of readdirSync(cacheDir)) {
    const file = path.join(cacheDir, name);
    try {
      if (now - statSync(file).mtimeMs > STALE_AFTER_MS) rmSync(file, { force: true });
    } catch {
      // Removed by another process meanwhile.
    }
  }
}

/** Which run this is, for the cache: the command, and whether on the deep-stack thread (main.ts). */
function role(): string {
  const deep = process.argv[2] === DEEP_STACK_MARK;
  const command = deep
    ? // Loaded only on that thread, as main.ts does.
      (
        (createRequire(__filename)('node:worker_threads') as typeof import('node:worker_threads')).workerData as {
          argv?: string[];
        }
      )?.argv?.[0]
    : process.argv[2];
  const name = command !== undefined && /^[a-z][a-z0-9-]{0,40}$/.test(command) ? command : 'other';
  return deep ? `deep-${name}` : name;
}

/**
 * Node's flags that may change compiled code (V8's, --stack-size, ...), as a short digest; the
 * preloads (--import, --require: the kill timer) do not, and their paths change with every run.
 */
function flagsKey(execArgv: string[]): string {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    if (/^(--import|--require|-r|--loader|--experimental-loader)$/.test(arg)) i++;
    else if (!/^(--import|--require|--loader|--experimental-loader)=/.test(arg)) kept.push(arg);
  }
  if (kept.length === 0) return 'plain';
  // FNV-1a: a name, not a security boundary (V8 checks the flags itself).
  let hash = 0x811c9dc5;
  for (const char of kept.join('\0')) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  return hash.toString(16);
}
