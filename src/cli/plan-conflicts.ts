// `plan`'s notes on kept releases a render would withhold for rendering an object an older kept
// release renders differently: the ClusterClass side of every kept release rendered (nothing
// written), through a cache of those renders under the cache directory (plan/chart-render-cache.ts),
// so a plan of unchanged releases starts no helm. With fewer than two kept releases no object can
// be rendered twice and nothing is rendered. Without a usable helm the check is skipped with a
// warning; the plan itself stands.
import path from 'node:path';
import type { Config } from '../config.js';
import type { Plan } from '../plan/build-plan.js';

export interface ReleaseConflictNotes {
  conflicts: { namespace: string; release: string; reason: string }[];
  /** Why the check could not run, if it could not. */
  warnings: string[];
  /** How the check went, for the timings line: `3 charts, 3 from cache`. */
  summary: string;
}

/** No usable helm: the check did not run (not a problem of a chart, which the check passes over). */
class HelmMissingError extends Error {
  override name = 'HelmMissingError';
}

export async function releaseConflictNotes(plan: Plan, config: Readonly<Config>): Promise<ReleaseConflictNotes> {
  const loaded = [...plan.releases.values()].filter((release) => release.content).length;
  if (loaded < 2) return { conflicts: [], warnings: [], summary: `${loaded} kept release, nothing to compare` };
  const [{ checkReleaseConflicts }, { cachedRenderChart, ChartRenderCache }, { helmBinaryIdentity }] = await Promise.all([
    import('../render/check-release-conflicts.js'),
    import('../plan/chart-render-cache.js'),
    import('../../renderers/helm-binary.js'),
  ]);
  const helmOptions = { ...(config.helmBinary ? { configured: config.helmBinary } : {}), pathEnv: config.pathEnv };
  const renderer = cachedRenderChart(
    new ChartRenderCache(config.cacheDir),
    () => helmBinaryIdentity(helmOptions),
    async () => {
      const [{ createHelmDependencies }, { HelmNotFoundError }] = await Promise.all([import('../../renderers/helm-dependencies.js'), import('../../renderers/helm-errors.js')]);
      const { renderChart } = createHelmDependencies({ ...helmOptions, workDir: path.join(config.cacheDir, 'helm') });
      return async (request) => {
        try {
          return await renderChart(request);
        } catch (error) {
          // A chart helm refuses is the render's to report; no helm at all means nothing was checked.
          if (error instanceof HelmNotFoundError) throw new HelmMissingError(error.message);
          throw error;
        }
      };
    },
  );
  try {
    const conflicts = await checkReleaseConflicts(plan, { renderChart: renderer.renderChart });
    const { hits, rendered } = renderer.stats();
    return { conflicts, warnings: [], summary: `${hits + rendered} charts, ${hits} from cache` };
  } catch (error) {
    return { conflicts: [], warnings: [`objects shared between releases were not checked: ${(error as Error).message}`], summary: 'not checked' };
  }
}

/**
 * The cache keys of the renders this plan's shared-object check uses (with the helm it would use):
 * what `cache prune` keeps of `chart-renders/`.
 */
export async function chartRenderKeysOf(plan: Plan, config: Readonly<Config>): Promise<Set<string>> {
  const [{ planUnits }, { chartRenderKey }, { helmBinaryIdentity }] = await Promise.all([import('../render/render-units.js'), import('../plan/chart-render-cache.js'), import('../../renderers/helm-binary.js')]);
  const helm = await helmBinaryIdentity({ ...(config.helmBinary ? { configured: config.helmBinary } : {}), pathEnv: config.pathEnv });
  if (helm === undefined) return new Set();
  const units = planUnits(plan, { secrets: 'allow' }).units.filter((unit) => unit.record.kind === 'release');
  return new Set(units.map((unit) => chartRenderKey({ releaseName: unit.releaseName, chart: unit.chart, namespace: unit.renderNamespace, kubeVersion: unit.kubeVersion, apiVersions: unit.apiVersions, values: unit.values, includeCrds: unit.includeCrds }, helm)));
}
