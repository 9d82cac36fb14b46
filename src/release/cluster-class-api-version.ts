// The Cluster API version a release's ClusterClass is written in, read from its cluster-class
// chart's templates before anything renders: Clusters made for the stack (ClusterRequests) are
// written in that version, so a v1beta2 stack gets v1beta2 Clusters with `topology.classRef`.
// Templates are not YAML until helm renders them, so each document is searched for the two
// literal lines Cluster API stacks carry (`kind: ClusterClass`, `apiVersion: cluster.x-k8s.io/<v>`).
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_CLUSTER_API_VERSION } from '../api/capi-cluster.js';

const KIND_LINE = /^kind:\s*["']?ClusterClass["']?\s*(?:#.*)?$/m;
const API_VERSION_LINE = /^apiVersion:\s*["']?(cluster\.x-k8s\.io\/v1(?:alpha|beta)?\d*)["']?\s*(?:#.*)?$/m;

/** The apiVersion of the ClusterClass among the chart's templates; the default when none names one literally. */
export async function clusterClassApiVersion(chartDir: string): Promise<string> {
  const dir = path.join(chartDir, 'templates');
  let files: string[];
  try {
    files = (await readdir(dir, { withFileTypes: true, recursive: true }))
      .filter((entry) => entry.isFile() && /\.(ya?ml|tpl)$/.test(entry.name))
      .map((entry) => path.join(entry.parentPath, entry.name))
      .sort();
  } catch {
    return DEFAULT_CLUSTER_API_VERSION;
  }
  for (const file of files) {
    const found = clusterClassApiVersionIn(await readFile(file, 'utf8'));
    if (found) return found;
  }
  return DEFAULT_CLUSTER_API_VERSION;
}

/** The apiVersion of the first ClusterClass document of a template text, if it names one literally. */
export function clusterClassApiVersionIn(text: string): string | undefined {
  for (const document of text.split(/^---.*$/m)) {
    if (!KIND_LINE.test(document)) continue;
    const version = API_VERSION_LINE.exec(document)?.[1];
    if (version) return version;
  }
  return undefined;
}
