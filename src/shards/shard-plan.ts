// What one shard renders of a plan made from the whole fleet. Every shard plans with every
// ClusterStack and every Cluster (reading is cheap), so a stack's shard keeps each release some
// Cluster of any shard uses, and a Cluster's shard can load that release for its addons. Then:
//   - releases (the ClusterClass side) are rendered by the stack's shard only;
//   - addons are rendered by the Cluster's shard, and by the shard that published them before until
//     the Cluster's shard has published them too (a handover: the output never disappears between
//     the two). Only then does the old shard drop them.
// Pure: the caller reads the previous tree's published state and which Clusters the other shards publish.
import type { Plan } from '../plan/build-plan.js';
import type { Provenance } from '../output/provenance.js';
import type { PublishedState } from '../output/published-state.js';
import { shardOwns, type ShardScope } from './shard-scope.js';

/** `namespace/name` of every Cluster whose addons a (shard's) provenance records as published. */
export function publishedClusters(provenance: Provenance | undefined): Set<string> {
  const keys = new Set<string>();
  for (const unit of provenance?.units ?? [])
    if (unit.kind === 'cluster-stage') keys.add(`${unit.namespace}/${unit.name}`);
  return keys;
}

/**
 * Clusters another shard owns whose addons this shard's previous tree still holds: each is handed
 * over, so the caller must learn which of them their new shard already publishes.
 */
export function clustersToHandOver(plan: Plan, scope: ShardScope, previous: PublishedState): string[] {
  const published = publishedClusters(previous.provenance);
  return plan.resolution.clusters
    .filter((cluster) => !shardOwns(scope, cluster.cluster) && published.has(`${cluster.namespace}/${cluster.name}`))
    .map((cluster) => `${cluster.namespace}/${cluster.name}`);
}

export interface ShardPlan {
  plan: Plan;
  /** Another shard's Clusters this one still renders until that shard publishes them. */
  handingOver: string[];
  /** Handovers done: their new shard publishes them, so this shard drops them now. */
  handedOver: string[];
}

/**
 * The shard's part of `plan`. `publishedElsewhere` holds the Clusters the other shards' trees
 * publish (read only when clustersToHandOver is not empty; undefined keeps every handover going).
 */
export function shardPlan(
  plan: Plan,
  scope: ShardScope,
  previous: PublishedState,
  publishedElsewhere: ReadonlySet<string> | undefined,
): ShardPlan {
  const pending = new Set(clustersToHandOver(plan, scope, previous));
  const handingOver: string[] = [];
  const handedOver: string[] = [];
  const keep = new Set<string>();
  for (const cluster of plan.resolution.clusters) {
    const key = `${cluster.namespace}/${cluster.name}`;
    if (shardOwns(scope, cluster.cluster)) keep.add(key);
    else if (pending.has(key)) {
      if (publishedElsewhere?.has(key)) handedOver.push(key);
      else {
        handingOver.push(key);
        keep.add(key);
      }
    }
  }
  const clusters = plan.resolution.clusters.filter((cluster) => keep.has(`${cluster.namespace}/${cluster.name}`));
  const kept = new Set(clusters.map((cluster) => cluster.cluster));
  const clusterStacks = plan.resolution.clusterStacks.map((stack) =>
    shardOwns(scope, stack.stack) ? stack : { ...stack, publishedByAnotherShard: true as const },
  );
  return {
    plan: {
      ...plan,
      inputs: { ...plan.inputs, clusters: plan.inputs.clusters.filter((sourced) => kept.has(sourced.object)) },
      resolution: { ...plan.resolution, clusterStacks, clusters },
    },
    handingOver,
    handedOver,
  };
}
