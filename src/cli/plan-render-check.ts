// `plan`'s look at what a render would withhold (src/render/foresee-withholds.ts): the ClusterClass
// side of every kept release rendered (nothing written) and every values template evaluated, both
// through a cache under the cache directory (render/chart-render-cache.ts), so a plan of unchanged
// releases and Clusters starts no helm. Without a usable helm the check is skipped with a warning;
// the plan itself stands.
import path from 'node:path';
import type { Config } from '../config.js';
import type { Plan } from '../plan/build-plan.js';
import type { Foresight } from '../render/foresee-withholds.js';
import type { RenderDependencies } from '../render/render-dependencies.js';
import { Failure } from '../core/failure.js';

export interface PlanRenderCheck {
  /** What render would withhold; undefined when the check could not run. */
  foresight?: Foresight;
  /** Why the check could not run, if it could not. */
  warnings: string[];
  /** How the check went, for the timings line: `3 charts, 3 from cache`. */
  summary: string;
}

/** No usable helm: the check did not run (not a problem of a chart, which the check reports). */
class HelmMissingError extends Failure {
  constructor(message: string) {
    super('internal', message);
  }
  override name = 'HelmMissingError';
}

/** Runs the check with helm (through plan's chart-render cache); a missing helm is a warning, not a failure. */
export async function planRenderCheck(plan: Plan, config: Readonly<Config>): Promise<PlanRenderCheck> {
  const [{ foreseeWithholds }, { cachedRenderChart, cachedValuesVerdicts, ChartRenderCache }, { helmBinaryIdentity }] =
    await Promise.all([
      import('../render/foresee-withholds.js'),
      import('../render/chart-render-cache.js'),
      import('../../renderers/helm-binary.js'),
    ]);
  const helmOptions = { ...(config.helmBinary ? { configured: config.helmBinary } : {}), pathEnv: config.pathEnv };
  // Helm's code loads on first use: a plan whose charts are all cached and that has no values template loads none of it.
  const loadHelm = async (): Promise<{ deps: RenderDependencies; missing: (error: unknown) => never }> => {
    const [{ createHelmDependencies }, { HelmNotFoundError }] = await Promise.all([
      import('../../renderers/helm-dependencies.js'),
      import('../../renderers/helm-errors.js'),
    ]);
    const deps = createHelmDependencies({
      ...helmOptions,
      workDir: path.join(config.cacheDir, 'helm'),
      timeouts: config.helmTimeouts,
    });
    // A chart helm refuses is the check's to report; no helm at all means nothing was checked.
    const missing = (error: unknown): never => {
      throw error instanceof HelmNotFoundError ? new HelmMissingError(error.message) : error;
    };
    return { deps, missing };
  };
  let helm: ReturnType<typeof loadHelm> | undefined;
  const cache = new ChartRenderCache(config.cacheDir);
  const identity = (): Promise<string | undefined> => helmBinaryIdentity(helmOptions);
  const renderer = cachedRenderChart(cache, identity, async () => {
    const { deps, missing } = await (helm ??= loadHelm());
    return (request) => deps.renderChart(request).catch(missing);
  });
  const values = cachedValuesVerdicts(cache, identity, async () => {
    const { deps, missing } = await (helm ??= loadHelm());
    return (items, kubeVersion) => deps.evaluateValues(items, kubeVersion).catch(missing);
  });
  try {
    const foresight = await foreseeWithholds(plan, {
      renderChart: renderer.renderChart,
      evaluateValues: values.evaluateValues,
    });
    const charts = renderer.stats();
    const templates = values.stats();
    return {
      foresight,
      warnings: [],
      summary: `${charts.hits + charts.rendered} charts, ${charts.hits} from cache; ${templates.hits + templates.rendered} values templates, ${templates.hits} from cache`,
    };
  } catch (error) {
    // Helm's output nested deeper than this thread reads (kube-yaml.ts DeepNestingError): not the
    // check's to give up on; the CLI runs plan again on a thread with a deep stack (run-cli.ts).
    if ((error as { needsDeepStack?: unknown } | null)?.needsDeepStack === true) throw error;
    // Helm missing, or failing for another reason than a chart or template (a timeout): plan still answers.
    return {
      warnings: [`what render would withhold was not checked: ${(error as Error).message}`],
      summary: 'not checked',
    };
  }
}

/**
 * The cache keys of the renders and values verdicts this plan's render check uses (with the helm
 * it would use): what `cache prune` keeps of `chart-renders/`.
 */
export async function chartRenderKeysOf(plan: Plan, config: Readonly<Config>): Promise<Set<string>> {
  const [{ planUnits }, { layerUnits }, { chartRenderKey, valuesVerdictKey }, { helmBinaryIdentity }] =
    await Promise.all([
      import('../render/render-units.js'),
      import('../render/layer-units.js'),
      import('../render/chart-render-cache.js'),
      import('../../renderers/helm-binary.js'),
    ]);
  const helm = await helmBinaryIdentity({
    ...(config.helmBinary ? { configured: config.helmBinary } : {}),
    pathEnv: config.pathEnv,
  });
  if (helm === undefined) return new Set();
  const units = [...planUnits(plan, { secrets: 'allow' }).units, ...layerUnits(plan, 'allow').units];
  return new Set(
    units.flatMap((unit) => [
      ...(unit.record.kind === 'release'
        ? [
            chartRenderKey(
              {
                releaseName: unit.releaseName,
                chart: unit.chart,
                namespace: unit.renderNamespace,
                kubeVersion: unit.kubeVersion,
                apiVersions: unit.apiVersions,
                values: unit.values,
                includeCrds: unit.includeCrds,
              },
              helm,
            ),
          ]
        : []),
      ...(unit.template
        ? [
            valuesVerdictKey(
              {
                id: unit.record.dir,
                origin: unit.template.origin,
                template: unit.template.text,
                context: unit.template.context,
              },
              unit.kubeVersion,
              helm,
            ),
          ]
        : []),
    ]),
  );
}
