// No silent loss of a Cluster: a Cluster still in the inputs whose addons the target's previous tree
// holds, but that the inputs no longer make ours (its class became one that is no cluster stack
// class, or its topology went), is held: withheld with a problem naming its file and field, its
// previous output (and its release, see withhold-units.ts) kept. Only a Cluster deleted from the
// inputs loses its output. Pure: part of deciding a run (src/run-plan), from the published state.
import type { PublishedState } from '../output/published-state.js';
import type { Problem } from '../core/problem.js';
import type { ClusterResolution } from '../release/resolve-releases.js';
import type { Plan } from './build-plan.js';
import { fieldSource } from '../inputs/parse-manifests.js';

/**
 * The plan with every such Cluster made one to withhold (managed, with its problem), and those
 * problems; the plan itself is returned unchanged when there are none.
 */
export function holdPublishedClusters(plan: Plan, published: PublishedState): { plan: Plan; problems: Problem[] } {
  const heldReleases = new Map<string, string>();
  for (const unit of published.units.values())
    if (unit.kind === 'cluster-stage') heldReleases.set(`${unit.namespace}/${unit.name}`, unit.release);
  if (heldReleases.size === 0) return { plan, problems: [] };
  const sources = new Map(plan.inputs.clusters.map((sourced) => [sourced.object, sourced.source]));
  const problems: Problem[] = [];
  const clusters = plan.resolution.clusters.map((cluster): ClusterResolution => {
    const release = heldReleases.get(`${cluster.namespace}/${cluster.name}`);
    if (cluster.managed || release === undefined) return cluster;
    const source = sources.get(cluster.cluster);
    const names =
      cluster.className === undefined
        ? 'names no ClusterClass'
        : `names ${cluster.className}, which is not a cluster stack class`;
    const path = cluster.classField ?? 'spec.topology';
    const problem: Problem = {
      ...(source ? { source: fieldSource(cluster.cluster, source, path) } : {}),
      object: `Cluster ${cluster.namespace}/${cluster.name}`,
      path,
      message: `${names}, but the published tree holds this Cluster's addons (release ${release}); they are kept as they are. Name the class of a cluster stack release again, or delete the Cluster from the inputs to remove its addons`,
    };
    problems.push(problem);
    return { ...cluster, managed: true, problems: [problem] };
  });
  if (problems.length === 0) return { plan, problems };
  return { plan: { ...plan, resolution: { ...plan.resolution, clusters } }, problems };
}
