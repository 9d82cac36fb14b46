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
// Layout: <root>/chart-renders/<sha256 hex of the key>.json
import { readdir, rm, stat } from 'node:fs/promises';
import { readCacheEntryJson, writeCacheEntryJson } from '../sources/cache-entry-file.js';
import path from 'node:path';
import { sha256Digest, sha256Hex } from '../release/content-digest.js';
import { canonicalJson } from '../render/canonical-json.js';
import type { ChartRenderRequest, RenderDependencies } from '../render/render-dependencies.js';

export const CHART_RENDERS_DIR = 'chart-renders';

interface Entry {
  schema: 1;
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
  return sha256Digest(`1\n${key}\n${output}`);
}

/** The key of a render: every input helm's output depends on; `helm` names the binary. */
export function chartRenderKey(request: ChartRenderRequest, helm: string): string {
  return sha256Hex(
    canonicalJson({
      schema: 1,
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

  constructor(cacheRoot: string) {
    this.dir = path.join(cacheRoot, CHART_RENDERS_DIR);
    this.tempDir = path.join(cacheRoot, 'tmp');
  }

  private file(key: string): string {
    return path.join(this.dir, `${key}.json`);
  }

  /** The stored output for `key`, verified; undefined when there is none or it does not verify (then it is removed). */
  async get(key: string): Promise<string | undefined> {
    const entry = (await readCacheEntryJson(this.file(key))) as Partial<Entry> | null | undefined;
    if (entry === undefined) return undefined;
    if (entry?.schema !== 1 || entry.key !== key || typeof entry.output !== 'string' || entry.digest !== entryDigest(key, entry.output)) {
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
    const entry: Entry = { schema: 1, key, output, digest: entryDigest(key, output) };
    await writeCacheEntryJson(this.dir, this.file(key), this.tempDir, 'chart-render', entry);
  }
}

/**
 * `renderChart` through the cache: a stored output when the key matches, else `render` (loaded
 * only then: a warm plan starts no helm and loads none of its code) and the output stored. A cache
 * that cannot be written costs the next run a render, never this run's answer.
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
      const output = await (await render())(request);
      stats.rendered += 1;
      if (key !== undefined) await cache.put(key, output).catch(() => undefined);
      return output;
    },
  };
}
