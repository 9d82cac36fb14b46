// The layer part of a plan: reads every layer's source (from the repository holding the inputs)
// and decides per Cluster which layers render (resolve-layers.ts). Problems here are the inputs'
// (a source outside the repository, a cycle): the render stops on them like on any bad input.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { AddonsLayer } from '../api/addons-layer.js';
import { InputError, type Problem } from '../core/problem.js';
import type { ClusterResolution } from '../release/resolve-releases.js';
import type { SourcedObject } from '../inputs/parse-manifests.js';
import type { ReleaseContent } from '../release/load-release.js';
import { type LayerSource, loadLayerSource } from './load-layer-source.js';
import type { LayerChartFetcher } from '../sources/helm-chart-source.js';
import { ReleaseSourceError } from '../release/release-source.js';
import { UnsafeArchiveError } from '../release/safe-extract.js';
import { type LayerClusterInput, type LayerResolution, resolveLayers } from './resolve-layers.js';

export interface LayerPlan {
  layers: AddonsLayer[];
  /** Each usable layer's source, by layer name. */
  sources: Map<string, LayerSource>;
  /** Why a layer's chart could not be fetched (repository down, unknown version, digest mismatch, unsafe archive): withheld for its Clusters. */
  sourceFailures: Map<string, string>;
  resolution: LayerResolution;
  problems: Problem[];
}

/** The stage directories of a release's addons (a layer may not be named like one). */
function addonStagesOf(content: ReleaseContent | undefined): string[] {
  if (!content) return [];
  return content.addons.format === 'legacy' ? ['cluster-addon'] : content.addons.stages.map((stage) => stage.name);
}

/** The repository a layer's `./path` is relative to: `root` when given, else the Git work tree holding the layer's file, else that file's directory. */
function layerRootOf(layer: SourcedObject<AddonsLayer>, root: string | undefined): string {
  if (root !== undefined) return root;
  const file = layer.source.replace(/:\d+$/, '');
  const dir = path.dirname(path.resolve(file));
  for (let at = dir; ; at = path.dirname(at)) {
    if (existsSync(path.join(at, '.git'))) return at;
    if (path.dirname(at) === at) break;
  }
  return dir;
}

export async function planLayers(
  layers: SourcedObject<AddonsLayer>[],
  clusters: ClusterResolution[],
  /** The loaded release a Cluster uses, if any. */
  contentOf: (cluster: ClusterResolution) => ReleaseContent | undefined,
  root: string | undefined,
  /** Fetches charts from repositories (`spec.source.chart`). */
  fetchChart?: LayerChartFetcher,
): Promise<LayerPlan | undefined> {
  if (layers.length === 0) return undefined;
  const problems: Problem[] = [];
  const sources = new Map<string, LayerSource>();
  const sourceFailures = new Map<string, string>();
  for (const sourced of layers) {
    const name = sourced.object.metadata.name;
    const chart = sourced.object.spec.source.chart;
    if (chart) {
      // A repository that fails (down, a version it lacks, content that does not verify) withholds this layer alone.
      try {
        if (!fetchChart)
          throw new ReleaseSourceError(
            'unavailable',
            'charts from repositories cannot be fetched here (no chart fetcher)',
          );
        sources.set(name, { kind: 'chart', chart: await fetchChart(chart, name) });
      } catch (error) {
        if (!(
          error instanceof ReleaseSourceError ||
          error instanceof UnsafeArchiveError ||
          error instanceof InputError
        ))
          throw error;
        sourceFailures.set(name, `its chart could not be fetched: ${error.message}`);
      }
      continue;
    }
    try {
      sources.set(sourced.object.metadata.name, await loadLayerSource(sourced.object, layerRootOf(sourced, root)));
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      problems.push(
        ...error.problems.map((problem) => ({
          ...problem,
          source: problem.source ? `${sourced.source}: ${problem.source}` : sourced.source,
        })),
      );
    }
  }
  const inputs: LayerClusterInput[] = clusters
    .filter((cluster) => cluster.managed)
    .map((cluster) => {
      const content = contentOf(cluster);
      const input: LayerClusterInput = {
        namespace: cluster.namespace,
        name: cluster.name,
        cluster: cluster.cluster,
        stages: addonStagesOf(content),
      };
      const withheld =
        cluster.problems.length > 0
          ? cluster.problems.map((problem) => problem.message).join('; ')
          : !content
            ? `release ${cluster.release ?? '?'} could not be loaded`
            : undefined;
      if (withheld) input.stackWithheld = withheld;
      return input;
    });
  const objects = layers.map((sourced) => sourced.object);
  const resolution = resolveLayers(objects, inputs);
  for (const problem of resolution.problems) {
    const name = problem.object?.replace(/^AddonsLayer /, '');
    const origin = layers.find((sourced) => sourced.object.metadata.name === name)?.source;
    problems.push(origin ? { ...problem, source: origin } : problem);
  }
  return { layers: objects, sources, sourceFailures, resolution, problems };
}
