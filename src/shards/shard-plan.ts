// What one shard renders of a plan made from the whole fleet. Every shard plans with every
// ClusterStack and every Cluster (reading is cheap), so a stack's shard keeps each release some
// Cluster of any shard uses, and a Cluster's shard can load that release for its addons. Then:
//   - releases (the ClusterClass side) are rendered by the stack's shard;
//   - addons are rendered by the Cluster's shard.
// A Cluster or a ClusterStack that moved to another shard is handed over: the shard that published
// it before keeps rendering it (the output never disappears between the two) until both
//   1. the new shard's subtree publishes it (all its kept releases, for a stack), and
//   2. no engine object of its wiring would be pruned when the old shard drops it: each is marked
//      against pruning (the old shard's wiring carries the marks while it hands over, see
//      handover-marks.ts) or already applied by another shard's root.
// Only then does the old shard drop it.
// Pure: the caller reads the previous tree's published state, what the other shards publish and the live wiring.
import type { Plan } from '../plan/build-plan.js';
import type { Provenance } from '../output/provenance.js';
import type { PublishedState } from '../output/published-state.js';
import { shardOwns, type ShardScope } from './shard-scope.js';

/** What a shard's subtree publishes: Clusters' addons and releases, each `namespace/name`. */
export interface ShardHoldings {
  clusters: Set<string>;
  releases: Set<string>;
}

/** The Clusters (addons) and releases a (shard's) provenance records as published. */
export function publishedHoldings(provenance: Provenance | undefined): ShardHoldings {
  const holdings: ShardHoldings = { clusters: new Set(), releases: new Set() };
  for (const unit of provenance?.units ?? []) {
    if (unit.kind === 'cluster-stage') holdings.clusters.add(`${unit.namespace}/${unit.name}`);
    else if (unit.kind === 'release') holdings.releases.add(`${unit.namespace}/${unit.release}`);
  }
  return holdings;
}

/** What is being handed over: Clusters and ClusterStacks, `namespace/name`. */
export interface Handovers {
  clusters: string[];
  stacks: string[];
}

/**
 * Clusters and ClusterStacks another shard owns whose output this shard's previous tree still
 * holds: each is handed over, so the caller must learn what the other shards already publish.
 */
export function handoversPending(plan: Plan, scope: ShardScope, previous: PublishedState): Handovers {
  const published = publishedHoldings(previous.provenance);
  return {
    clusters: plan.resolution.clusters
      .filter(
        (cluster) =>
          !shardOwns(scope, cluster.cluster) && published.clusters.has(`${cluster.namespace}/${cluster.name}`),
      )
      .map((cluster) => `${cluster.namespace}/${cluster.name}`),
    stacks: plan.resolution.clusterStacks
      .filter(
        (stack) =>
          !shardOwns(scope, stack.stack) &&
          stack.releases.some((release) => published.releases.has(`${stack.namespace}/${release.name}`)),
      )
      .map((stack) => `${stack.namespace}/${stack.name}`),
  };
}

/** Whether any handover is pending (the other shards' subtrees are read only then). */
export function anyHandover(handovers: Handovers): boolean {
  return handovers.clusters.length > 0 || handovers.stacks.length > 0;
}

export interface ShardPlan {
  plan: Plan;
  /** What this shard still renders for another shard until that shard publishes it. */
  handingOver: Handovers;
  /** Handovers done: their new shard publishes them, so this shard drops them now. */
  handedOver: Handovers;
}

/** The live state a handover waits for; undefined members keep every handover going (never a gap). */
export interface HandoverEvidence {
  /** What the other shards' subtrees publish. */
  publishedElsewhere: ShardHoldings | undefined;
  /**
   * Whether the engine objects wiring a Cluster's addons (`cluster ns/name`) or a release
   * (`release ns/name`) may leave this shard's wiring without being pruned. Omitted: no wiring.
   */
  wiringReleased?: (unit: `cluster ${string}` | `release ${string}`) => boolean;
}

/** The shard's part of `plan`, and the state of its handovers. */
export function shardPlan(
  plan: Plan,
  scope: ShardScope,
  previous: PublishedState,
  evidence: HandoverEvidence,
): ShardPlan {
  const pending = handoversPending(plan, scope, previous);
  const elsewhere = evidence.publishedElsewhere;
  const released = evidence.wiringReleased ?? (() => true);
  const handingOver: Handovers = { clusters: [], stacks: [] };
  const handedOver: Handovers = { clusters: [], stacks: [] };
  const keep = new Set<string>();
  for (const cluster of plan.resolution.clusters) {
    const key = `${cluster.namespace}/${cluster.name}`;
    if (shardOwns(scope, cluster.cluster)) keep.add(key);
    else if (pending.clusters.includes(key)) {
      if (elsewhere?.clusters.has(key) && released(`cluster ${key}`)) handedOver.clusters.push(key);
      else {
        handingOver.clusters.push(key);
        keep.add(key);
      }
    }
  }
  const clusters = plan.resolution.clusters.filter((cluster) => keep.has(`${cluster.namespace}/${cluster.name}`));
  const kept = new Set(clusters.map((cluster) => cluster.cluster));
  const clusterStacks = plan.resolution.clusterStacks.map((stack) => {
    if (shardOwns(scope, stack.stack)) return stack;
    const key = `${stack.namespace}/${stack.name}`;
    if (pending.stacks.includes(key)) {
      // Every release the stack keeps is published by its new shard, and no release's wiring would be pruned.
      const releases = stack.releases
        .filter((release) => release.kept)
        .map((release) => `${stack.namespace}/${release.name}`);
      const done =
        elsewhere !== undefined &&
        releases.every((release) => elsewhere.releases.has(release) && released(`release ${release}`));
      if (!done) {
        handingOver.stacks.push(key);
        return stack;
      }
      handedOver.stacks.push(key);
    }
    return { ...stack, publishedByAnotherShard: true as const };
  });
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
