// The CAPI Cluster written for ClusterRequests, in the Cluster API version of the stack's ClusterClass
// (v1beta1 `topology.class`, v1beta2 `topology.classRef`): the mapped stack's ClusterClass and exactly its
// Kubernetes version (CAPI's webhook refuses a version the class's release does not carry), the
// template's namespace, labels and annotations, openMCP's delete-without-requests label, and labels
// naming the purpose and every request the cluster serves. That is the minimal valid topology
// Cluster (the ClusterClass's defaults do the rest); a purpose's `clusterstack.clusterSpecs` entry
// adds clusterNetwork and the topology's controlPlane, workers and variables.
import { DEFAULT_CLUSTER_API_VERSION, usesClassRef } from '../api/capi-cluster.js';
import { API_GROUP, type CapiCluster } from '../api/types.js';
import { sha256Hex } from '../release/content-digest.js';
import { DELETE_WITHOUT_REQUESTS_LABEL, type ScheduledCluster } from './schedule-requests.js';

/** Marks a Cluster as created for requests (value: the purpose); Clusters without it are people's. */
export const REQUESTED_PURPOSE_LABEL = `${API_GROUP}/requested-purpose`;
/** One label per request served: `request.clusterstack.x-k8s.io/<namespace>.<name>: "true"`. */
const REQUEST_LABEL_PREFIX = `request.${API_GROUP}/`;
/** Every request served, `namespace/name`, comma-separated (labels may be shortened; this is not). */
const REQUESTS_ANNOTATION = `${API_GROUP}/cluster-requests`;
const PROFILE_ANNOTATION = `${API_GROUP}/cluster-profile`;

const MAX_LABEL_NAME = 63;

/** The label name of a request: `<namespace>.<name>`, shortened with a hash beyond 63 characters. */
function requestLabelName(request: string): string {
  const name = request.replace('/', '.');
  if (name.length <= MAX_LABEL_NAME) return name;
  return `${name.slice(0, 52).replace(/[^A-Za-z0-9]+$/, '')}-${sha256Hex(name).slice(0, 10)}`;
}

/** The Cluster object for a scheduled cluster. */
export function requestedClusterObject(cluster: ScheduledCluster): CapiCluster {
  const { labels, annotations } = cluster.template.template.metadata;
  const version = cluster.release.kubernetesVersion.startsWith('v')
    ? cluster.release.kubernetesVersion
    : `v${cluster.release.kubernetesVersion}`;
  const apiVersion = cluster.release.clusterApiVersion ?? DEFAULT_CLUSTER_API_VERSION;
  const classNamespace = cluster.stackNamespace !== cluster.namespace ? { namespace: cluster.stackNamespace } : {};
  // The stack's ClusterClass version decides the Cluster's: v1beta2 names the class in classRef.
  const topology: NonNullable<NonNullable<CapiCluster['spec']>['topology']> = usesClassRef(apiVersion)
    ? { classRef: { name: cluster.release.className, ...classNamespace }, version }
    : {
        class: cluster.release.className,
        ...(classNamespace.namespace ? { classNamespace: classNamespace.namespace } : {}),
        version,
      };
  const extra = cluster.template.clusterSpec;
  if (extra?.topology?.controlPlane) topology['controlPlane'] = extra.topology.controlPlane;
  if (extra?.topology?.workers) topology['workers'] = extra.topology.workers;
  if (extra?.topology?.variables) topology['variables'] = extra.topology.variables;
  const spec: NonNullable<CapiCluster['spec']> = extra?.clusterNetwork
    ? { clusterNetwork: extra.clusterNetwork, topology }
    : { topology };
  return {
    apiVersion,
    kind: 'Cluster',
    metadata: {
      name: cluster.name,
      namespace: cluster.namespace,
      labels: {
        ...labels,
        [DELETE_WITHOUT_REQUESTS_LABEL]: labels[DELETE_WITHOUT_REQUESTS_LABEL] ?? 'true',
        [REQUESTED_PURPOSE_LABEL]: cluster.purpose,
        ...Object.fromEntries(
          cluster.requests.map((request) => [`${REQUEST_LABEL_PREFIX}${requestLabelName(request)}`, 'true']),
        ),
      },
      annotations: {
        ...annotations,
        [PROFILE_ANNOTATION]: cluster.profile,
        [REQUESTS_ANNOTATION]: cluster.requests.join(','),
      },
    },
    spec,
  };
}
