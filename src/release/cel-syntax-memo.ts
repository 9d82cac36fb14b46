// What the CEL syntax check said about each wait condition of the releases a run loads, kept across
// runs under the cache directory. Checking one expression is cheap; loading the CEL library to do
// it costs every plan or render ~45 ms of start-up, and the releases (so their expressions) rarely
// change between runs. A verdict is a pure function of the expression and the library, so an entry
// holds the expression itself and is used only for the library file it was made with (its path,
// size, modification time and inode). Verified like the other cache entries: the file records a
// digest over its content and is rewritten whole by a rename; one that does not verify is ignored
// and replaced. Two runs adding different expressions at once may keep only one run's additions:
// the other's are checked again next time.
//
// Layout: <cache root>/cel-syntax.json
import path from 'node:path';
import { conditionSyntaxError } from '../core/addon-wait-conditions.js';
import { compareText } from '../core/compare-text.js';
import { readCacheEntryJson, writeCacheEntryJson } from '../cache/cache-entry-file.js';
import { celLibraryIdentity } from '../cache/cel-library-identity.js';
import { sha256Digest } from './content-digest.js';

export const CEL_SYNTAX_FILE = 'cel-syntax.json';

/** An expression and its verdict: the syntax error, or null when it parses. */
type Verdict = [expression: string, error: string | null];

interface Entry {
  schema: 1;
  library: string;
  verdicts: Verdict[];
  /** sha256 over the JSON of schema, library and verdicts (sorted by expression). */
  digest: string;
}

function entryDigest(library: string, verdicts: Verdict[]): string {
  return sha256Digest(JSON.stringify({ schema: 1, library, verdicts }));
}

/** Verdicts kept at most; past it a save keeps only the expressions this process checked. */
const KEPT_VERDICTS = 1000;

export class CelSyntaxMemo {
  readonly #verdicts: Map<string, string | null>;
  readonly #used = new Set<string>();
  #added = false;

  private constructor(
    private readonly cacheRoot: string,
    private readonly library: string,
    verdicts: Verdict[],
    private readonly compute: (expression: string) => string | undefined,
  ) {
    this.#verdicts = new Map(verdicts);
  }

  /** The memo kept under `cacheRoot` for this library; empty when there is none or it does not verify. */
  static async open(
    cacheRoot: string,
    options: { library?: string; compute?: (expression: string) => string | undefined } = {},
  ): Promise<CelSyntaxMemo> {
    const library = options.library ?? celLibraryIdentity();
    const compute = options.compute ?? conditionSyntaxError;
    const entry = (await readCacheEntryJson(path.join(cacheRoot, CEL_SYNTAX_FILE))) as
      Partial<Entry> | null | undefined;
    const valid =
      entry?.schema === 1 &&
      entry.library === library &&
      Array.isArray(entry.verdicts) &&
      entry.verdicts.every(
        (verdict) =>
          Array.isArray(verdict) &&
          verdict.length === 2 &&
          typeof verdict[0] === 'string' &&
          (verdict[1] === null || typeof verdict[1] === 'string'),
      ) &&
      entry.digest === entryDigest(library, entry.verdicts);
    return new CelSyntaxMemo(cacheRoot, library, valid ? entry.verdicts! : [], compute);
  }

  /** The syntax error of `expression`, or undefined when it parses: remembered, or checked now (and remembered). */
  check(expression: string): string | undefined {
    this.#used.add(expression);
    const known = this.#verdicts.get(expression);
    if (known !== undefined) return known ?? undefined;
    const error = this.compute(expression);
    this.#verdicts.set(expression, error ?? null);
    this.#added = true;
    return error;
  }

  /** Writes the memo when this run checked an expression it did not hold. */
  async save(): Promise<void> {
    if (!this.#added) return;
    const kept =
      this.#verdicts.size > KEPT_VERDICTS
        ? [...this.#verdicts].filter(([expression]) => this.#used.has(expression))
        : [...this.#verdicts];
    const verdicts = kept.sort(([a], [b]) => compareText(a, b));
    const entry: Entry = { schema: 1, library: this.library, verdicts, digest: entryDigest(this.library, verdicts) };
    await writeCacheEntryJson(
      this.cacheRoot,
      path.join(this.cacheRoot, CEL_SYNTAX_FILE),
      path.join(this.cacheRoot, 'tmp'),
      'cel-syntax',
      entry,
    );
    this.#added = false;
  }
}

const opened = new Map<string, Promise<CelSyntaxMemo>>();

/** The memo of `cacheRoot`, opened once per process. */
export function celSyntaxMemo(cacheRoot: string): Promise<CelSyntaxMemo> {
  const key = path.resolve(cacheRoot);
  let memo = opened.get(key);
  if (!memo) {
    memo = CelSyntaxMemo.open(key);
    opened.set(key, memo);
    memo.catch(() => opened.delete(key));
  }
  return memo;
}
