// Node's own compile cache for the CLI's modules (module.enableCompileCache, Node 22.1 and later):
// a command's later runs take V8's bytecode of our modules and packages from disk instead of
// compiling them again, which is most of what a short command's start costs. On Node 20 there is
// none, and nothing happens. Modules main.ts imports statically are compiled before this runs;
// everything a command loads after (run-cli.js and all it imports) is cached.
import nodeModule from 'node:module';
import os from 'node:os';
import path from 'node:path';

/** Node's compile cache under the user's cache (Node's own NODE_COMPILE_CACHE wins); never throws, a no-op before Node 22.1. */
export function enableCompileCache(env: NodeJS.ProcessEnv): void {
  const enable = (nodeModule as { enableCompileCache?: (cacheDir?: string) => unknown }).enableCompileCache;
  if (!enable) return;
  try {
    // Node says in its result when the directory cannot be made or written: a slower start, no more.
    enable(compileCacheDir(env));
  } catch {
    // The same: a command never fails for its cache of compiled code.
  }
}

/**
 * XDG_CACHE_HOME (else ~/.cache)/clusterstack-gitops/node-compile-cache: the user's cache, beside
 * clusterstack's default cache directory and not in CLUSTERSTACK_CACHE_DIR, whose contents
 * `clusterstack cache` reports and prunes.
 */
function compileCacheDir(env: NodeJS.ProcessEnv): string {
  const cacheHome = env['XDG_CACHE_HOME'] || path.join(os.homedir(), '.cache');
  return path.join(cacheHome, 'clusterstack-gitops', 'node-compile-cache');
}
