// A controller shard's identity, Flux's way: a name and a label selector. A ClusterStack, a Cluster
// or a Cluster API provider object belongs to the shard whose selector its labels match, so moving
// one Cluster to another shard is a label change in Git (declarative, one object at a time), and an
// operator who runs Flux's `--watch-label-selector` shards reads the same idea here. The main shard
// selects what carries no shard label (`!sharding.clusterstack.x-k8s.io/key`). Argo CD's ordinal and
// hash were the alternative: a change of the replica count would move most of the fleet at once, and
// which shard holds a Cluster could not be read from the Cluster. Pure.
import { type LabelSelector, matchesLabelSelector, parseLabelSelector } from '../core/label-selector.js';

/** The label whose value names a Cluster's (or ClusterStack's) shard. */
export const SHARD_LABEL = 'sharding.clusterstack.x-k8s.io/key';
/** The directory, under the output's path, that holds one subtree per shard. */
export const SHARDS_DIR = 'shards';

export interface ShardScope {
  /** A DNS label: part of the subtree path, the Lease name and the wiring's names. */
  name: string;
  selector: LabelSelector;
  /** As given, for logs and messages. */
  selectorText: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * The shard of `--shard` and `--shard-selector` (both or neither; undefined when neither). Throws an
 * Error naming the flag, the value and what to give instead.
 */
export function parseShardScope(name: string | undefined, selectorText: string | undefined): ShardScope | undefined {
  if (name === undefined && selectorText === undefined) return undefined;
  if (name === undefined || selectorText === undefined) {
    throw new Error(
      `--shard and --shard-selector go together: give both (e.g. --shard shard1 --shard-selector ${SHARD_LABEL}=shard1, or --shard main --shard-selector '!${SHARD_LABEL}' for the shard of unlabelled objects)`,
    );
  }
  if (name.length > 40 || !DNS_LABEL.test(name))
    throw new Error(
      `--shard must be a lowercase DNS label of at most 40 characters (it names the shard's directory, Lease and wiring), not "${name}"`,
    );
  let selector: LabelSelector;
  try {
    selector = parseLabelSelector(selectorText);
  } catch (error) {
    throw new Error(`--shard-selector "${selectorText}": ${(error as Error).message}`, { cause: error });
  }
  if ((selector.matchExpressions ?? []).length === 0)
    throw new Error(
      `--shard-selector must select part of the fleet, e.g. ${SHARD_LABEL}=${name}; an empty selector would make every shard publish everything`,
    );
  return { name, selector, selectorText };
}

/** Whether the object (by its labels) belongs to the shard. */
export function shardOwns(scope: ShardScope, object: { metadata: { labels?: Record<string, string> } }): boolean {
  return matchesLabelSelector(scope.selector, object.metadata.labels);
}

/** The shard's subtree inside the repository: `<path>/shards/<shard>` (the publisher manages only it). */
export function shardSubtree(outputPath: string, shard: string): string {
  const base = outputPath.replace(/^\/+|\/+$/g, '');
  return base === '' ? `${SHARDS_DIR}/${shard}` : `${base}/${SHARDS_DIR}/${shard}`;
}

/** The directory holding every shard's subtree, read to see which shard publishes what. */
export function shardsRoot(outputPath: string): string {
  const base = outputPath.replace(/^\/+|\/+$/g, '');
  return base === '' ? SHARDS_DIR : `${base}/${SHARDS_DIR}`;
}

/** A per-shard name (Lease, wiring root): `<base>-<shard>`, so two shards never share one object. */
export function shardObjectName(base: string, shard: string): string {
  return `${base}-${shard}`;
}
