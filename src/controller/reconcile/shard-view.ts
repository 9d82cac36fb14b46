// What a shard writes back to the API server: statuses, ClusterStackReleases and provider releases of
// its own ClusterStacks, ClusterAddons of its own Clusters. It still reads every Cluster (which
// Clusters use a release decides whether that release may go), but never writes, nor deletes,
// another shard's objects: with N shards each object has exactly one writer.
import type { ClusterStack, KubeObject } from '../../api/types.js';
import { namespaceOf } from '../../release/resolve-releases.js';
import type { Plan } from '../../plan/build-plan.js';
import { shardOwns, type ShardScope } from '../../shards/shard-scope.js';
import { ownerOfKind } from '../desired-state/owned-objects.js';
import type { LiveObjects } from '../desired-state/status-inputs.js';

/** The shard's part of a plan for status: its stacks' resolutions and its Clusters only. */
export function shardStatusPlan(plan: Plan, scope: ShardScope): Plan {
  const clusters = plan.resolution.clusters.filter((cluster) => shardOwns(scope, cluster.cluster));
  const clusterStacks = plan.resolution.clusterStacks.filter(
    (stack) => !stack.publishedByAnotherShard && shardOwns(scope, stack.stack),
  );
  return { ...plan, resolution: { ...plan.resolution, clusters, clusterStacks } };
}

/** Whether `object`'s owner of `kind` (a ClusterStack or a Cluster) is one of `owners` (`namespace/name`). */
function controlledByOneOf(object: KubeObject, kind: string, owners: ReadonlySet<string>): boolean {
  const owner = ownerOfKind(object, kind);
  return owner !== undefined && owners.has(`${namespaceOf(object)}/${owner.name}`);
}

/**
 * The live objects a shard may write: its stacks, the ClusterStackReleases and provider releases
 * they control, the ClusterAddons its Clusters control, its Cluster API provider objects. Every
 * Cluster stays (read: which release is in use), as do provider templates (read only).
 */
export function shardLive(live: LiveObjects, scope: ShardScope): LiveObjects {
  const stacks = live.stacks.filter((stack) => shardOwns(scope, stack));
  const ownStacks = new Set(stacks.map((stack: ClusterStack) => `${namespaceOf(stack)}/${stack.metadata.name}`));
  const ownClusters = new Set(
    live.clusters
      .filter((cluster) => shardOwns(scope, cluster))
      .map((cluster) => `${namespaceOf(cluster)}/${cluster.metadata.name}`),
  );
  return {
    ...live,
    stacks,
    releases: live.releases.filter((release) =>
      controlledByOneOf(release as unknown as KubeObject, 'ClusterStack', ownStacks),
    ),
    addons: live.addons.filter((addon) => controlledByOneOf(addon as unknown as KubeObject, 'Cluster', ownClusters)),
    providerReleases: live.providerReleases.filter((release) => controlledByOneOf(release, 'ClusterStack', ownStacks)),
    ...(live.capiProviders
      ? { capiProviders: live.capiProviders.filter((provider) => shardOwns(scope, provider)) }
      : {}),
  };
}
