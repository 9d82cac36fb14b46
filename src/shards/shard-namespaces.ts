// One namespace's ClusterStacks in one shard. Objects several releases of a namespace render alike
// live once in `management/<ns>/shared/`, wired by one Kustomization (or Application) per namespace
// whose name is the same in every shard's wiring: two shards holding stacks of one namespace would
// both publish and apply it, each from its own subtree. A shard cannot see another shard's selector,
// but it sees every stack and which are not its own: a namespace with both is split. Pure.
import type { ClusterStack } from '../api/types.js';
import { namespaceOf } from '../release/resolve-releases.js';
import { SHARD_LABEL, shardOwns, type ShardScope } from './shard-scope.js';

/**
 * For each of the shard's stacks in a namespace that other shards' stacks share: what is wrong and
 * what to do, by `namespace/name`. Empty when every namespace is whole.
 */
export function splitNamespaceProblems(scope: ShardScope, stacks: readonly ClusterStack[]): Map<string, string> {
  const byNamespace = new Map<string, { ours: ClusterStack[]; theirs: ClusterStack[] }>();
  for (const stack of stacks) {
    const namespace = namespaceOf(stack);
    const entry = byNamespace.get(namespace) ?? { ours: [], theirs: [] };
    (shardOwns(scope, stack) ? entry.ours : entry.theirs).push(stack);
    byNamespace.set(namespace, entry);
  }
  const problems = new Map<string, string>();
  for (const [namespace, { ours, theirs }] of byNamespace) {
    if (ours.length === 0 || theirs.length === 0) continue;
    const others = theirs
      .map((stack) => `${stack.metadata.name} (${SHARD_LABEL}=${stack.metadata.labels?.[SHARD_LABEL] ?? 'unset'})`)
      .sort()
      .join(', ');
    for (const stack of ours)
      problems.set(
        `${namespace}/${stack.metadata.name}`,
        `metadata.labels: this ClusterStack is in shard ${scope.name} (--shard-selector ${scope.selectorText}) but ClusterStack(s) ${others} of namespace ${namespace} are not; the namespace's shared objects (management/${namespace}/shared/) and their wiring object have one name, so two shards would publish them. Give every ClusterStack of namespace ${namespace} the same ${SHARD_LABEL} label`,
      );
  }
  return problems;
}
