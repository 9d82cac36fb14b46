// The CRDs' CEL rules (src/api/crd-rules.ts) as the CLI and the controller check inputs with them:
// the rules are read from our crds/ folder, the one source, and each verdict is remembered. Loading
// the CEL library costs a plan ~45 ms of start-up, and a run's ClusterStacks rarely change between
// runs, so a verdict (the problems, usually none) is kept under the cache directory, keyed by the
// object as the rules can see it, for the CRD texts and the library it was made with: a second
// plan of unchanged inputs neither parses the CRDs nor loads CEL. Verified like the other cache
// entries: a digest over the content, rewritten whole by a rename; one that does not verify is
// ignored and replaced. Without a cache directory (the controller), verdicts live in memory.
//
// Layout: <cache root>/crd-rule-verdicts.json
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CrdRuleChecker, crdRuleChecker } from '../api/crd-rules.js';
import { readCacheEntryJson, writeCacheEntryJson } from '../cache/cache-entry-file.js';
import { celLibraryIdentity } from '../cache/cel-library-identity.js';
import { compareText } from '../core/compare-text.js';
import type { Problem } from '../core/problem.js';

export const CRD_RULE_VERDICTS_FILE = 'crd-rule-verdicts.json';
const MARKER = 'clusterstack.x-k8s.io_clusterstacks.yaml';

/**
 * Our crds/ folder, found by walking up from this module: the same answer from dist/src/inputs
 * (built), src/inputs (tsx), a bundle or an installed package (package.json "files" ships crds).
 */
function findCrdDir(moduleUrl: string = import.meta.url): string {
  for (let dir = path.dirname(fileURLToPath(moduleUrl)); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'crds', MARKER))) return path.join(dir, 'crds');
    if (path.dirname(dir) === dir)
      throw new Error(
        `clusterstack's crds/ folder (${MARKER}) was not found above ${fileURLToPath(moduleUrl)}; reinstall the package`,
      );
  }
}

/** The texts of the CRD files in `crdDir`, by file name. */
export function readCrdTexts(crdDir: string = findCrdDir()): string[] {
  return readdirSync(crdDir)
    .filter((name) => name.startsWith('clusterstack.x-k8s.io_') && name.endsWith('.yaml'))
    .sort(compareText)
    .map((name) => readFileSync(path.join(crdDir, name), 'utf8'));
}

type Verdict = [input: string, problems: Problem[]];

interface Entry {
  schema: 1;
  /** The CEL library and the CRD texts the verdicts were made with. */
  rules: string;
  verdicts: Verdict[];
  /** sha256 over the JSON of schema, rules and verdicts. */
  digest: string;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const entryDigest = (rules: string, verdicts: Verdict[]): string =>
  sha256(JSON.stringify({ schema: 1, rules, verdicts }));

/** Verdicts kept at most; past it a save keeps only the objects this process checked. */
const KEPT_VERDICTS = 1000;

/**
 * What a rule can see of an object: everything but metadata, of which CEL sees only name and
 * generateName (the API server hides the rest from rules at the root).
 */
function ruleInput(kind: string, object: Record<string, unknown>): string {
  const metadata = (object.metadata ?? {}) as Record<string, unknown>;
  return JSON.stringify([kind, { ...object, metadata: { name: metadata.name, generateName: metadata.generateName } }]);
}

export class CrdRuleVerdicts {
  readonly #verdicts: Map<string, Problem[]>;
  readonly #used = new Set<string>();
  #added = false;

  private constructor(
    private readonly cacheRoot: string | undefined,
    private readonly rules: string,
    verdicts: Verdict[],
    private readonly compute: CrdRuleChecker,
  ) {
    this.#verdicts = new Map(verdicts);
  }

  /** The verdicts kept under `cacheRoot` for these CRDs and this library (none kept, or none that verify: empty). */
  static async open(cacheRoot: string, crdTexts: readonly string[] = readCrdTexts()): Promise<CrdRuleVerdicts> {
    const rules = sha256(JSON.stringify([celLibraryIdentity(), ...crdTexts]));
    const compute = crdRuleChecker(crdTexts);
    const entry = (await readCacheEntryJson(path.join(cacheRoot, CRD_RULE_VERDICTS_FILE)).catch(() => undefined)) as
      Partial<Entry> | null | undefined;
    const valid =
      entry?.schema === 1 &&
      entry.rules === rules &&
      Array.isArray(entry.verdicts) &&
      entry.verdicts.every(
        (verdict) =>
          Array.isArray(verdict) && verdict.length === 2 && typeof verdict[0] === 'string' && Array.isArray(verdict[1]),
      ) &&
      entry.digest === entryDigest(rules, entry.verdicts);
    return new CrdRuleVerdicts(cacheRoot, rules, valid ? entry.verdicts! : [], compute);
  }

  /** Verdicts kept in memory only, for a long-running process (the controller). */
  static inMemory(crdTexts: readonly string[] = readCrdTexts()): CrdRuleVerdicts {
    return new CrdRuleVerdicts(undefined, '', [], crdRuleChecker(crdTexts));
  }

  /** Checks an object against its CRD's rules: the remembered verdict, or the rules evaluated now (and remembered). */
  readonly check: CrdRuleChecker = (kind, object) => {
    const input = ruleInput(kind, object);
    this.#used.add(input);
    const known = this.#verdicts.get(input);
    if (known) return known.map((problem) => ({ ...problem }));
    const problems = this.compute(kind, object);
    // In memory only (the controller, for its lifetime): stacks edited many times leave old specs behind.
    if (this.cacheRoot === undefined && this.#verdicts.size >= KEPT_VERDICTS) this.#verdicts.clear();
    this.#verdicts.set(input, problems);
    this.#added = true;
    return problems.map((problem) => ({ ...problem }));
  };

  /** Writes the verdicts when this run made one it did not hold (and has a cache directory). */
  async save(): Promise<void> {
    if (!this.#added || this.cacheRoot === undefined) return;
    if (this.#verdicts.size > KEPT_VERDICTS)
      for (const input of [...this.#verdicts.keys()]) if (!this.#used.has(input)) this.#verdicts.delete(input);
    const verdicts = [...this.#verdicts].sort(([a], [b]) => compareText(a, b));
    const entry: Entry = { schema: 1, rules: this.rules, verdicts, digest: entryDigest(this.rules, verdicts) };
    await writeCacheEntryJson(
      this.cacheRoot,
      path.join(this.cacheRoot, CRD_RULE_VERDICTS_FILE),
      path.join(this.cacheRoot, 'tmp'),
      'crd-rule-verdicts',
      entry,
    );
    this.#added = false;
  }
}
