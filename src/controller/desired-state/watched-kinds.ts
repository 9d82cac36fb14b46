// The kinds the controller watches and writes, as the REST API and the informers address them.
import { API_GROUP, API_VERSION_NAME, CAPI_API_GROUP } from '../../api/types.js';
import { OPERATOR_API_GROUP, PROVIDER_KINDS } from '../../api/provider-types.js';
import type { WatchedKind } from '../runtime/runtime-contract.js';
import { ARGO_APPLICATION, FLUX_KUSTOMIZATION } from './sync-state.js';

export const CLUSTER_STACKS: WatchedKind = {
  group: API_GROUP,
  version: API_VERSION_NAME,
  kind: 'ClusterStack',
  plural: 'clusterstacks',
  namespaced: true,
};
export const CLUSTER_STACK_RELEASES: WatchedKind = {
  group: API_GROUP,
  version: API_VERSION_NAME,
  kind: 'ClusterStackRelease',
  plural: 'clusterstackreleases',
  namespaced: true,
};
export const CLUSTER_ADDONS: WatchedKind = {
  group: API_GROUP,
  version: API_VERSION_NAME,
  kind: 'ClusterAddon',
  plural: 'clusteraddons',
  namespaced: true,
};
/** Cluster API Clusters, in whichever version the API server prefers (v1beta2 from Cluster API 1.11 on). */
export const CAPI_CLUSTERS: WatchedKind = {
  group: CAPI_API_GROUP,
  version: 'v1beta1',
  kind: 'Cluster',
  plural: 'clusters',
  namespaced: true,
  preferredVersion: true,
};
export const FLUX_KUSTOMIZATIONS: WatchedKind = { ...FLUX_KUSTOMIZATION, namespaced: true, optional: true };
export const ARGO_APPLICATIONS: WatchedKind = { ...ARGO_APPLICATION, namespaced: true, optional: true };
/** Kraan's addon layers (cluster-scoped); watched only with a layer root (`--layer-root`). */
export const ADDONS_LAYERS: WatchedKind = {
  group: 'kraan.io',
  version: 'v1alpha1',
  kind: 'AddonsLayer',
  plural: 'addonslayers',
  namespaced: false,
  optional: true,
};
/** openMCP's ClusterRequests, watched with a scheduler configuration (optional: its CRD may be missing). */
export const CLUSTER_REQUESTS: WatchedKind = {
  group: 'clusters.openmcp.cloud',
  version: 'v1alpha1',
  kind: 'ClusterRequest',
  plural: 'clusterrequests',
  namespaced: true,
  optional: true,
};

/**
 * The cluster-api-operator's provider kinds: watched when served (optional), rendered into
 * management/providers/, and given a status (never a spec) by us.
 */
export const CAPI_PROVIDER_KINDS: WatchedKind[] = Object.keys(PROVIDER_KINDS).map((kind) => ({
  group: OPERATOR_API_GROUP,
  version: 'v1alpha2',
  kind,
  plural: `${kind.toLowerCase()}s`,
  namespaced: true,
  optional: true,
}));
