// The environment the tests' CLI launcher (cli-launcher.ts) reads besides the command's own: only the
// tests of its code cache set these (cli-code-cache.test.ts); every other run uses the per-machine
// directory the launcher was built with and logs nothing.

/** Overrides the directory of the code caches. */
export const CODE_CACHE_DIR_ENV = 'CSK_CLI_CODE_CACHE_DIR';
/** A file to which the launcher appends what it did with the cache: `<cache file> none|accepted|rejected|written`. */
export const CODE_CACHE_LOG_ENV = 'CSK_CLI_CODE_CACHE_LOG';
