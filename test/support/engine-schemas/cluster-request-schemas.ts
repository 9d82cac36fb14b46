// Schema facts for the objects the ClusterRequests feature writes: CAPI's Cluster
// (cluster.x-k8s.io/v1beta1, read from core/config/crd/bases/cluster.x-k8s.io_clusters.yaml of
// kubernetes-sigs/cluster-api: topology requires class and version, classNamespace is a DNS label)
// and openMCP's ClusterProfile (clusters.openmcp.cloud/v1alpha1, from
// api/crds/manifests/clusters.openmcp.cloud_clusterprofiles.yaml of openmcp-project/openmcp-operator:
// providerRef, providerConfigRef and supportedVersions[{version (min length 5), deprecated}] required).
import { any, arr, bool, int, kindFacts, obj, str, type KindFacts } from './schema-facts.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const localObjectReference = obj({ name: str() }, ['name']);

const topology = obj(
  {
    class: str({ pattern: /^.{1,253}$/ }),
    classNamespace: str({ pattern: DNS_LABEL }),
    version: str({ pattern: /^.{1,256}$/ }),
    rolloutAfter: str(),
    controlPlane: any,
    workers: any,
    variables: any,
  },
  ['class', 'version'],
);

// v1beta2 (Cluster API 1.11+): the class is named by classRef {name (required), namespace}.
const v1beta2Topology = obj(
  {
    classRef: obj({ name: str({ pattern: /^.{1,253}$/ }), namespace: str({ pattern: DNS_LABEL }) }, ['name']),
    version: str({ pattern: /^.{1,256}$/ }),
    controlPlane: any,
    workers: any,
    variables: any,
  },
  ['classRef', 'version'],
);

export const CLUSTER_API_SCHEMAS: readonly KindFacts[] = [
  kindFacts(
    'cluster.x-k8s.io/v1beta1',
    'Cluster',
    'kubernetes-sigs/cluster-api core/config/crd/bases/cluster.x-k8s.io_clusters.yaml (v1beta1)',
    {
      spec: obj({
        paused: bool,
        clusterNetwork: any,
        controlPlaneEndpoint: obj({ host: str(), port: int }),
        controlPlaneRef: any,
        infrastructureRef: any,
        topology,
        availabilityGates: any,
      }),
    },
    ['spec'],
  ),
  kindFacts(
    'cluster.x-k8s.io/v1beta2',
    'Cluster',
    'kubernetes-sigs/cluster-api config/crd/bases/cluster.x-k8s.io_clusters.yaml (v1beta2)',
    {
      spec: obj({
        paused: bool,
        clusterNetwork: any,
        controlPlaneEndpoint: obj({ host: str(), port: int }),
        controlPlaneRef: any,
        infrastructureRef: any,
        topology: v1beta2Topology,
        availabilityGates: any,
      }),
    },
    ['spec'],
  ),
];

export const OPENMCP_SCHEMAS: readonly KindFacts[] = [
  kindFacts(
    'clusters.openmcp.cloud/v1alpha1',
    'ClusterProfile',
    'openmcp-project/openmcp-operator api/crds/manifests/clusters.openmcp.cloud_clusterprofiles.yaml',
    {
      spec: obj(
        {
          providerRef: localObjectReference,
          providerConfigRef: localObjectReference,
          supportedVersions: arr(obj({ version: str({ pattern: /^.{5,}$/ }), deprecated: bool }, ['version'])),
        },
        ['providerRef', 'providerConfigRef', 'supportedVersions'],
      ),
    },
    ['spec'],
  ),
];
