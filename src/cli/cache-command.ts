// `clusterstack cache size` and `clusterstack cache prune <inputs...> --release-source <src>`
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { ReleaseCache } from '../sources/release-cache.js';
import { formatProblem, InputError } from '../core/problem.js';
import { retryableProblems } from '../plan/plan-report.js';
import { type CliIo, EXIT_OK, RemoteFailureError, UsageError } from './cli-io.js';
import { didYouMean } from '../core/did-you-mean.js';
import { parseCommandLine } from './parse-command-line.js';
import {
  checkCacheDir,
  configFromFlags,
  resolveLocation,
  SOURCE_OPTIONS,
  planFromInputs,
  type SourceFlags,
} from './common-options.js';
import type { Config } from '../config.js';
import { ChartRenderCache } from '../render/chart-render-cache.js';
import { chartRenderKeysOf } from './plan-render-check.js';

export const CACHE_USAGE = `Usage: clusterstack cache size [--cache-dir <dir>] [--json]
       clusterstack cache prune <files or dirs...> --release-source <source> [--cache-dir <dir>] [--json]

size:  how many downloaded releases, extracted charts and plan's ClusterClass renders and values
       verdicts the cache holds, and their bytes.
prune: removes downloaded releases, extracted charts and plan's ClusterClass renders and values
       verdicts that no ClusterStack or Cluster in the inputs uses.

Examples:
  # How much the cache holds
  clusterstack cache size

  # Remove what the quick start's ClusterStack no longer keeps
  clusterstack cache prune examples/quickstart/manifests --release-source examples/quickstart/releases

  # Remove releases downloaded from GitHub that no ClusterStack in fleet/ keeps, in a custom cache
  clusterstack cache prune fleet/ --release-source github:SovereignCloudStack/cluster-stacks --cache-dir /var/cache/clusterstack`;

async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    total += entry.isDirectory() ? await directoryBytes(full) : (await stat(full)).size;
  }
  return total;
}

async function chartDirs(cacheDir: string): Promise<string[]> {
  try {
    return (await readdir(path.join(cacheDir, 'charts'), { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => path.join(cacheDir, 'charts', e.name));
  } catch {
    return [];
  }
}

function mebibytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export async function cacheCommand(args: string[], io: CliIo): Promise<number> {
  const [action, ...rest] = args;
  if (action !== 'size' && action !== 'prune')
    throw new UsageError(
      `cache needs a subcommand: size or prune${action ? ` (not "${action}"${didYouMean(action, ['size', 'prune'])})` : ''}`,
    );
  const { values, positionals } = parseCommandLine(`cache ${action}`, {
    args: rest,
    allowPositionals: action === 'prune',
    options: { ...SOURCE_OPTIONS, json: { type: 'boolean', default: false } },
  });
  const config = configFromFlags(values, io);
  await checkCacheDir(config, values, io);
  const cache = new ReleaseCache(config.cacheDir);
  if (action === 'size') return cacheSize(config, cache, values.json, io);
  return cachePrune(positionals, values, config, cache, io);
}

/** `cache size`: prints what the cache holds, entries and bytes, as text or JSON. */
async function cacheSize(config: Readonly<Config>, cache: ReleaseCache, json: boolean, io: CliIo): Promise<number> {
  const releases = await cache.size();
  const charts = await chartDirs(config.cacheDir);
  const chartBytes = (await Promise.all(charts.map(directoryBytes))).reduce((a, b) => a + b, 0);
  const renders = await new ChartRenderCache(config.cacheDir).list();
  const renderBytes = renders.reduce((sum, entry) => sum + entry.bytes, 0);
  const report = {
    cacheDir: config.cacheDir,
    releases,
    charts: { entries: charts.length, bytes: chartBytes },
    chartRenders: { entries: renders.length, bytes: renderBytes },
  };
  io.stdout(
    json
      ? `${JSON.stringify(report, null, 2)}\n`
      : `${config.cacheDir}: ${releases.entries} releases (${mebibytes(releases.bytes)}), ${charts.length} extracted charts (${mebibytes(chartBytes)}), ${renders.length} ClusterClass renders and values verdicts of plan (${mebibytes(renderBytes)})\n`,
  );
  return EXIT_OK;
}

/** `cache prune`: removes the releases, charts and renders the inputs no longer keep; nothing when the inputs cannot be read whole. */
async function cachePrune(
  positionals: string[],
  values: SourceFlags & { json: boolean },
  config: Readonly<Config>,
  cache: ReleaseCache,
  io: CliIo,
): Promise<number> {
  if (positionals.length === 0 || !values['release-source'])
    throw new UsageError(
      'cache prune needs the inputs (ClusterStacks and Clusters) and --release-source, to know which releases are still kept',
    );
  const location = resolveLocation(values['release-source'], io.cwd, '--release-source');
  const plan = await planFromInputs(positionals, location, config, values, io);
  // What is kept is not known unless the inputs and their sources could all be read: remove nothing.
  const remote = retryableProblems(plan);
  if (remote.length > 0)
    throw new RemoteFailureError(
      `cache prune removed nothing: a release source failed, so what is kept is not known; retry later:\n  ${remote.map(formatProblem).join('\n  ')}`,
    );
  if (plan.problems.length > 0)
    throw new InputError(
      plan.problems,
      `cache prune removed nothing: it reads the inputs to know what is kept, and they have problems; fix them first (clusterstack plan shows them):\n  ${plan.problems.map(formatProblem).join('\n  ')}`,
    );
  const keptTags = new Set(
    plan.resolution.clusterStacks.flatMap((stack) => stack.releases.filter((r) => r.kept).map((r) => r.name)),
  );
  // Cluster API provider releases the inputs render (their tag is the version) stay too.
  for (const provider of plan.providers?.providers ?? []) if (provider.version) keptTags.add(provider.version);
  const removed = await cache.prune((entry) => keptTags.has(entry.tag));
  const keptCharts = new Set<string>();
  for (const release of plan.releases.values()) {
    const content = release.content;
    if (!content) continue;
    for (const dir of [
      content.clusterClassChart.dir,
      content.addons.format === 'legacy' ? content.addons.chart.dir : content.addons.stages[0]?.chart?.dir,
    ]) {
      if (dir?.startsWith(path.join(config.cacheDir, 'charts') + path.sep))
        keptCharts.add(dir.slice(0, path.join(config.cacheDir, 'charts').length + 65));
    }
  }
  const staleCharts = (await chartDirs(config.cacheDir)).filter((dir) => !keptCharts.has(dir));
  for (const dir of staleCharts) await rm(dir, { recursive: true, force: true });
  // plan's ClusterClass renders and values verdicts: those of the kept releases and their Clusters (with the helm plan would use) stay.
  const renderCache = new ChartRenderCache(config.cacheDir);
  const keptRenders = await chartRenderKeysOf(plan, config);
  const staleRenders = (await renderCache.list()).filter((entry) => !keptRenders.has(entry.key));
  for (const entry of staleRenders) await renderCache.remove(entry.key);
  const report = {
    removedReleases: removed.map((entry) => ({ source: entry.sourceKey, tag: entry.tag, bytes: entry.bytes })),
    removedCharts: staleCharts.length,
    removedChartRenders: staleRenders.length,
    keptReleases: [...keptTags].sort(),
  };
  io.stdout(
    values.json
      ? `${JSON.stringify(report, null, 2)}\n`
      : `Removed ${removed.length} releases, ${staleCharts.length} extracted charts and ${staleRenders.length} ClusterClass renders and values verdicts no input uses; ${keptTags.size} releases are kept.\n`,
  );
  return EXIT_OK;
}
