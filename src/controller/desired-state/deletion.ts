// Which Clusters still use a release or a stack: the one check that holds deletions back. It reads
// the live Clusters directly rather than the resolution, so it holds even for a stack or release the
// resolution no longer knows about.
import { clusterClassOf } from '../../api/capi-cluster.js';
import type { CapiCluster, ClusterStack } from '../../api/types.js';
import { formatReleaseTag, parseClusterClassName, type ReleaseTag } from '../../core/release-tag.js';
import { namespaceOf, releaseMatchesStack } from '../../release/resolve-releases.js';
import { compareText } from '../../core/compare-text.js';

interface ClusterRelease {
  key: string;
  namespace: string;
  release: string;
  tag: ReleaseTag;
}

function releaseOfCluster(cluster: CapiCluster): ClusterRelease | undefined {
  const named = clusterClassOf(cluster);
  if (named.kind !== 'class') return undefined;
  let tag: ReleaseTag;
  try {
    tag = parseClusterClassName(named.name);
  } catch {
    return undefined;
  }
  return {
    key: `${namespaceOf(cluster)}/${cluster.metadata.name}`,
    namespace: named.namespace,
    release: formatReleaseTag(tag),
    tag,
  };
}

/** Clusters (`ns/name`, sorted) whose class names release `release` in `namespace`. */
export function clustersUsingRelease(namespace: string, release: string, clusters: CapiCluster[]): string[] {
  return clusters
    .map(releaseOfCluster)
    .filter(
      (used): used is ClusterRelease => used !== undefined && used.namespace === namespace && used.release === release,
    )
    .map((used) => used.key)
    .sort();
}

/** Clusters (`ns/name`, sorted) whose class names any release of `stack`. */
export function clustersUsingStack(
  stack: ClusterStack,
  clusters: CapiCluster[],
): { cluster: string; release: string }[] {
  const namespace = namespaceOf(stack);
  return clusters
    .map(releaseOfCluster)
    .filter(
      (used): used is ClusterRelease =>
        used !== undefined && used.namespace === namespace && releaseMatchesStack(used.tag, stack),
    )
    .map((used) => ({ cluster: used.key, release: used.release }))
    .sort((a, b) => compareText(a.cluster, b.cluster));
}

/** The message of a held deletion: which Clusters, and what to do. */
export function deletionBlockedMessage(what: string, users: { cluster: string; release: string }[]): string {
  const list = users.map((user) => `${user.cluster} (${user.release})`).join(', ');
  return `deletion of ${what} is held: Cluster${users.length === 1 ? '' : 's'} ${list} still use${users.length === 1 ? 's' : ''} it; move ${users.length === 1 ? 'it' : 'them'} to a class of another release or delete ${users.length === 1 ? 'it' : 'them'}, and the deletion completes`;
}
