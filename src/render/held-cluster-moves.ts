// "Published first" for the Clusters made for requests: the manifest that moves such a Cluster to
// another class is written only in a render that also publishes that class's release and the
// Cluster's addons for it. When either is withheld, the Cluster's previous manifest is kept as it
// was, so the Cluster does not start an upgrade its addons (or its ClusterClass) cannot follow;
// the move is written by the first render that can publish them. Pure.
import { clusterClassOf } from '../api/capi-cluster.js';
import type { CapiCluster } from '../api/types.js';
import { releaseOfClusterClass } from '../core/release-tag.js';
import type { WithheldEntry } from '../output/provenance.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { requestedClusterOfPath } from '../output/tree-layout.js';
import { decodeYamlDocument } from '../yaml/kube-yaml.js';

/** The class a generated Cluster manifest names (requested-clusters.ts writes the stack class's version; capi-cluster.ts reads either). */
function classOf(text: string): { name: string; namespace?: string } | undefined {
  try {
    const object = decodeYamlDocument(text).value as CapiCluster | null;
    if (!object || typeof object !== 'object' || typeof object.metadata !== 'object' || object.metadata === null)
      return undefined;
    const named = clusterClassOf(object);
    return named.kind === 'class' ? { name: named.name, namespace: named.namespace } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The generated Cluster files to write: each one moving its Cluster to another class while that
 * Cluster's addons or the target release are withheld is replaced by the previous file. Returns
 * the files and one note per held move.
 */
export function holdWithheldClusterMoves(
  files: Map<string, string>,
  withheld: readonly WithheldEntry[],
  previous: RenderedTree,
): { files: Map<string, string>; notes: string[] } {
  const notes: string[] = [];
  const result = new Map(files);
  for (const [file, text] of files) {
    const cluster = requestedClusterOfPath(file);
    const before = previous.get(file);
    if (!cluster || before === undefined || before === text) continue;
    const from = classOf(before);
    const to = classOf(text);
    if (!from || !to || from.name === to.name) continue;
    const release = releaseOfClusterClass(to.name);
    const stackNamespace = to.namespace ?? cluster.namespace;
    const reason =
      withheld.find(
        (entry) => entry.kind === 'cluster' && entry.namespace === cluster.namespace && entry.name === cluster.name,
      )?.reason ??
      withheld.find((entry) => entry.kind === 'release' && entry.namespace === stackNamespace && entry.name === release)
        ?.reason;
    if (reason === undefined) continue;
    result.set(file, before);
    notes.push(
      `Cluster ${cluster.namespace}/${cluster.name} (made for requests) stays on class ${from.name}: its move to ${to.name} is written once that release and the Cluster's addons for it publish (${reason})`,
    );
  }
  return { files: result, notes };
}
