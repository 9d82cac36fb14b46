// What `plan` rendered with helm, kept across runs under the cache directory: plan renders each
// kept release's ClusterClass chart to find objects two releases render differently, and the same
// inputs give the same output, so a later plan of unchanged releases needs no helm at all.
//
// The key is everything the output depends on: the chart's content digest (an archive's digest,
// or a directory's tree digest), the release name, namespace, Kubernetes version, the values (as
// canonical JSON), whether CRDs are included, and the helm binary (path, size, modification time,
// inode). A changed chart, values or helm is another key and renders again. Verified like the
// release cache: each entry records a digest over its key and output, checked on every read; a
// damaged or foreign entry is removed and the chart rendered. Entries appear by an atomic rename.
// Only successful renders are stored; a failing chart fails again, with helm's message, each time.
//
// No Secret value rests here: what is stored (and what a render through the cache returns, so
// a cached and a fresh answer read alike) has every secret object reduced to its identity and a
// digest (secret-value-digests.ts); an output with a document that does not decode is not stored.
// The files are 0600 in 0700 directories (private-cache-file.ts). Schema 1 stored helm's output
// as it was: a `chart-renders/` that others may read is from then, and is emptied on first use.
//
// Plan also evaluates every values template, to name the Clusters render withholds for them: the
// verdicts (ok, or the failure's message) are kept beside the renders, keyed by the template, its
// origin, the objects it reads, the Kubernetes version and helm. Never the values themselves: plan
// renders no addon chart.
//
// Layout: <root>/chart-renders/<sha256 hex of the key>.json
import { readdir, rm, stat } from 'node:fs/promises';
import { PRIVATE_DIR_MODE } from '../cache/private-cache-file.js';
import { withSecretValueDigests } from './secret-value-digests.js';
import { readCacheEntryJson, writeCacheEntryJson } from '../cache/cache-entry-file.js';
import path from 'node:path';
import { sha256Digest, sha256Hex } from '../release/content-digest.js';
import { canonicalJson } from './canonical-json.js';
import type {
  ChartRenderRequest,
  RenderDependencies,
  ValuesTemplateItem,
  ValuesTemplateResult,
} from './render-dependencies.js';

export const CHART_RENDERS_DIR = 'chart-renders';

const SCHEMA = 2;

interface Entry {
  schema: typeof SCHEMA;
  /** sha256 of the key material (what the file is named by). */
  key: string;
  output: string;
  /** sha256 over `schema\nkey\noutput`. */
  digest: string;
}

/** How a run used the cache, for the timings line and tests. */
export interface ChartRenderCacheStats {
  /** Outputs read from the cache. */
  hits: number;
  /** Charts helm rendered (and the cache stored). */
  rendered: number;
}

function entryDigest(key: string, output: string): string {
  return sha256Digest(`${SCHEMA}\n${key}\n${output}`);
}

/** The key of a render: every input helm's output depends on; `helm` names the binary. */
export function chartRenderKey(request: ChartRenderRequest, helm: string): string {
  return sha256Hex(
    canonicalJson({
      schema: SCHEMA,
      helm,
      chart: request.chart.digest,
      releaseName: request.releaseName,
      namespace: request.namespace,
      kubeVersion: request.kubeVersion,
      apiVersions: request.apiVersions ?? [],
      values: request.values ?? [],
      includeCrds: request.includeCrds ?? false,
    }),
  );
}

export class ChartRenderCache {
  private readonly dir: string;
  private readonly tempDir: string;
  private opened: Promise<void> | undefined;

  constructor(cacheRoot: string) {
    this.dir = path.join(cacheRoot, CHART_RENDERS_DIR);
    this.tempDir = path.join(cacheRoot, 'tmp');
  }

  /** Empties a `chart-renders/` others may read: an earlier version wrote it, with Secrets as helm rendered them. */
  private open(): Promise<void> {
    this.opened ??= stat(this.dir).then(
      async (info) => {
        if ((info.mode & 0o777 & ~PRIVATE_DIR_MODE) !== 0) await rm(this.dir, { recursive: true, force: true });
      },
      () => undefined,
    );
    return this.opened;
  }

  private file(key: string): string {
    return path.join(this.dir, `${key}.json`);
  }

  /** The stored output for `key`, verified; undefined when there is none or it does not verify (then it is removed). */
  async get(key: string): Promise<string | undefined> {
    await this.open();
    const entry = (await readCacheEntryJson(this.file(key))) as Partial<Entry> | null | undefined;
    if (entry === undefined) return undefined;
    if (
      entry?.schema !== SCHEMA ||
      entry.key !== key ||
      typeof entry.output !== 'string' ||
      entry.digest !== entryDigest(key, entry.output)
    ) {
      await rm(this.file(key), { force: true });
      return undefined;
    }
    return entry.output;
  }

  /** Every stored entry's key and size (not verified), for `cache size` and `cache prune`. */
  async list(): Promise<{ key: string; bytes: number }[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const entries: { key: string; bytes: number }[] = [];
    for (const name of names.filter((file) => /^[0-9a-f]{64}\.json$/.test(file)).sort()) {
      const info = await stat(path.join(this.dir, name)).catch(() => undefined);
      if (info) entries.push({ key: name.slice(0, 64), bytes: info.size });
    }
    return entries;
  }

  /** Removes the entry of `key`, if there is one. */
  async remove(key: string): Promise<void> {
    await rm(this.file(key), { force: true });
  }

  /** Stores `output` for `key`, replacing what was there in one rename. */
  async put(key: string, output: string): Promise<void> {
    await this.open();
    const entry: Entry = { schema: SCHEMA, key, output, digest: entryDigest(key, output) };
    await writeCacheEntryJson(this.dir, this.file(key), this.tempDir, 'chart-render', entry);
  }
}

/**
 * `renderChart` through the cache: a stored output when the key matches, else `render` (loaded
 * only then: a warm plan starts no helm and loads none of its code) and the output stored. Either
 * way the answer holds digests in place of secret objects' content (withSecretValueDigests). A
 * cache that cannot be written costs the next run a render, never this run's answer.
 */
export function cachedRenderChart(
  cache: ChartRenderCache,
  helmIdentity: () => Promise<string | undefined>,
  render: () => Promise<RenderDependencies['renderChart']>,
): { renderChart: RenderDependencies['renderChart']; stats: () => ChartRenderCacheStats } {
  const stats: ChartRenderCacheStats = { hits: 0, rendered: 0 };
  let identity: Promise<string | undefined> | undefined;
  return {
    stats: () => ({ ...stats }),
    renderChart: async (request) => {
      identity ??= helmIdentity();
      const helm = await identity;
      // No helm to name: nothing can be matched or stored; rendering reports why helm is missing.
      const key = helm === undefined ? undefined : chartRenderKey(request, helm);
      const stored = key === undefined ? undefined : await cache.get(key).catch(() => undefined);
      if (stored !== undefined) {
        stats.hits += 1;
        return stored;
      }
      const rendered = await (await render())(request);
      stats.rendered += 1;
      const output = withSecretValueDigests(rendered);
      if (output === undefined) return rendered;
      if (key !== undefined) await cache.put(key, output).catch(() => undefined);
      return output;
    },
  };
}

/** The key of a values template's verdict: the template, its origin, the objects it reads, the Kubernetes version and `helm`. */
export function valuesVerdictKey(item: ValuesTemplateItem, kubeVersion: string, helm: string): string {
  return sha256Hex(
    canonicalJson({
      schema: SCHEMA,
      verdict: 'values-template',
      helm,
      origin: item.origin,
      template: item.template,
      context: item.context,
      kubeVersion,
    }),
  );
}

/** A stored verdict: the failure as evaluateValues gave it, or ok. */
type Verdict = { ok: true } | { ok: false; missingField?: string; message: string };

function verdictOf(text: string): Verdict | undefined {
  try {
    const verdict = JSON.parse(text) as Partial<{ ok: boolean; missingField: unknown; message: unknown }>;
    if (verdict.ok === true) return { ok: true };
    if (verdict.ok === false && typeof verdict.message === 'string')
      return {
        ok: false,
        message: verdict.message,
        ...(typeof verdict.missingField === 'string' ? { missingField: verdict.missingField } : {}),
      };
  } catch {
    // not a verdict: evaluated again
  }
  return undefined;
}

/**
 * `evaluateValues` for plan through the cache: stored verdicts where the keys match, `evaluate`
 * (loaded only then) for the rest in one call, their verdicts stored. Plan renders no addon chart,
 * so only verdicts are kept and answered: an item that evaluates answers with empty values.
 */
export function cachedValuesVerdicts(
  cache: ChartRenderCache,
  helmIdentity: () => Promise<string | undefined>,
  evaluate: () => Promise<RenderDependencies['evaluateValues']>,
): { evaluateValues: RenderDependencies['evaluateValues']; stats: () => ChartRenderCacheStats } {
  const stats: ChartRenderCacheStats = { hits: 0, rendered: 0 };
  let identity: Promise<string | undefined> | undefined;
  const answer = (id: string, verdict: Verdict): ValuesTemplateResult =>
    verdict.ok
      ? { id, ok: true, values: {} }
      : {
          id,
          ok: false,
          message: verdict.message,
          error: new Error(verdict.message),
          ...(verdict.missingField ? { missingField: verdict.missingField } : {}),
        };
  return {
    stats: () => ({ ...stats }),
    evaluateValues: async (items, kubeVersion) => {
      identity ??= helmIdentity();
      const helm = await identity;
      const keys = items.map((item) => (helm === undefined ? undefined : valuesVerdictKey(item, kubeVersion, helm)));
      const stored = await Promise.all(
        keys.map(async (key) =>
          key === undefined ? undefined : verdictOf((await cache.get(key).catch(() => undefined)) ?? ''),
        ),
      );
      const missing = items.filter((_, index) => stored[index] === undefined);
      stats.hits += items.length - missing.length;
      stats.rendered += missing.length;
      const evaluated = missing.length > 0 ? await (await evaluate())(missing, kubeVersion) : [];
      const byId = new Map(evaluated.map((result) => [result.id, result]));
      return Promise.all(
        items.map(async (item, index) => {
          const known = stored[index];
          if (known) return answer(item.id, known);
          const result = byId.get(item.id);
          if (!result)
            return {
              id: item.id,
              ok: false,
              message: 'values template was not evaluated',
              error: new Error('values template was not evaluated'),
            };
          const verdict: Verdict = result.ok
            ? { ok: true }
            : {
                ok: false,
                message: result.message,
                ...(result.missingField ? { missingField: result.missingField } : {}),
              };
          // A template stopped at the time limit may pass under a larger one: not remembered, as in render.
          const lasting = result.ok || !result.timedOut;
          if (keys[index] !== undefined && lasting)
            await cache.put(keys[index]!, JSON.stringify(verdict)).catch(() => undefined);
          return result;
        }),
      );
    },
  };
}
