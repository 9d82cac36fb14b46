// Whether a kind lives in a namespace, decided from evidence only: the CustomResourceDefinitions in
// the same render, Kubernetes' built-in kinds, Cluster API's groups and a few CRDs every cluster-stack
// addon set ships. A kind with none of that is left exactly as the chart wrote it (the render report
// says so), because adding a namespace to a cluster-scoped kind is as wrong as leaving one out.
import type { KubeObject } from './types.js';

export type ObjectScope = 'Namespaced' | 'Cluster' | 'Unknown';

/** `group/Kind` (core group empty) of kinds whose scope is known without their CRD. */
const KNOWN_SCOPES = new Map<string, ObjectScope>();
const known = (scope: ObjectScope, group: string, kinds: string[]): void =>
  kinds.forEach((kind) => KNOWN_SCOPES.set(`${group}/${kind}`, scope));

known('Namespaced', '', [
  'Pod',
  'Service',
  'ConfigMap',
  'Secret',
  'ServiceAccount',
  'Endpoints',
  'PersistentVolumeClaim',
  'ReplicationController',
  'LimitRange',
  'ResourceQuota',
  'Event',
  'PodTemplate',
  'Binding',
]);
known('Cluster', '', ['Namespace', 'Node', 'PersistentVolume', 'ComponentStatus']);
known('Namespaced', 'apps', ['Deployment', 'DaemonSet', 'StatefulSet', 'ReplicaSet', 'ControllerRevision']);
known('Namespaced', 'batch', ['Job', 'CronJob']);
known('Namespaced', 'autoscaling', ['HorizontalPodAutoscaler']);
known('Namespaced', 'policy', ['PodDisruptionBudget']);
known('Cluster', 'policy', ['PodSecurityPolicy']);
known('Namespaced', 'networking.k8s.io', ['NetworkPolicy', 'Ingress']);
known('Cluster', 'networking.k8s.io', ['IngressClass', 'IPAddress', 'ServiceCIDR']);
known('Namespaced', 'rbac.authorization.k8s.io', ['Role', 'RoleBinding']);
known('Cluster', 'rbac.authorization.k8s.io', ['ClusterRole', 'ClusterRoleBinding']);
known('Namespaced', 'coordination.k8s.io', ['Lease']);
known('Namespaced', 'discovery.k8s.io', ['EndpointSlice']);
known('Namespaced', 'events.k8s.io', ['Event']);
known('Namespaced', 'storage.k8s.io', ['CSIStorageCapacity']);
known('Cluster', 'storage.k8s.io', [
  'StorageClass',
  'CSIDriver',
  'CSINode',
  'VolumeAttachment',
  'VolumeAttributesClass',
]);
known('Cluster', 'apiextensions.k8s.io', ['CustomResourceDefinition']);
known('Cluster', 'apiregistration.k8s.io', ['APIService']);
known('Cluster', 'admissionregistration.k8s.io', [
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
]);
known('Cluster', 'scheduling.k8s.io', ['PriorityClass']);
known('Cluster', 'node.k8s.io', ['RuntimeClass']);
known('Cluster', 'flowcontrol.apiserver.k8s.io', ['FlowSchema', 'PriorityLevelConfiguration']);
known('Cluster', 'certificates.k8s.io', ['CertificateSigningRequest', 'ClusterTrustBundle']);
known('Namespaced', 'resource.k8s.io', ['ResourceClaim', 'ResourceClaimTemplate']);
known('Cluster', 'resource.k8s.io', ['DeviceClass', 'ResourceSlice']);
// CRDs that addon stages install in workload clusters but whose definitions are not rendered beside
// the objects (the operator creates them at run time, or another stage ships them).
known('Namespaced', 'cilium.io', [
  'CiliumNetworkPolicy',
  'CiliumEndpoint',
  'CiliumNodeConfig',
  'CiliumEnvoyConfig',
  'CiliumLocalRedirectPolicy',
]);
known('Cluster', 'cilium.io', [
  'CiliumClusterwideNetworkPolicy',
  'CiliumLoadBalancerIPPool',
  'CiliumNode',
  'CiliumIdentity',
  'CiliumL2AnnouncementPolicy',
  'CiliumBGPPeeringPolicy',
  'CiliumBGPClusterConfig',
  'CiliumBGPPeerConfig',
  'CiliumBGPAdvertisement',
  'CiliumBGPNodeConfig',
  'CiliumBGPNodeConfigOverride',
  'CiliumEgressGatewayPolicy',
  'CiliumClusterwideEnvoyConfig',
  'CiliumCIDRGroup',
  'CiliumPodIPPool',
]);
known('Namespaced', 'snapshot.storage.k8s.io', ['VolumeSnapshot']);
known('Cluster', 'snapshot.storage.k8s.io', ['VolumeSnapshotClass', 'VolumeSnapshotContent']);
known('Namespaced', 'monitoring.coreos.com', [
  'ServiceMonitor',
  'PodMonitor',
  'PrometheusRule',
  'Probe',
  'Prometheus',
  'Alertmanager',
  'AlertmanagerConfig',
  'PrometheusAgent',
  'ScrapeConfig',
  'ThanosRuler',
]);
known('Namespaced', 'cert-manager.io', ['Certificate', 'CertificateRequest', 'Issuer']);
known('Cluster', 'cert-manager.io', ['ClusterIssuer']);
known('Namespaced', 'gateway.networking.k8s.io', [
  'Gateway',
  'HTTPRoute',
  'GRPCRoute',
  'TCPRoute',
  'TLSRoute',
  'UDPRoute',
  'ReferenceGrant',
]);
known('Cluster', 'gateway.networking.k8s.io', ['GatewayClass']);
known('Namespaced', 'openstack.k-orc.cloud', [
  'Image',
  'Network',
  'Subnet',
  'Port',
  'Router',
  'SecurityGroup',
  'Flavor',
  'Server',
]);
known('Cluster', 'runtime.cluster.x-k8s.io', ['ExtensionConfig']);

/** The API group of an apiVersion (`apps/v1` → `apps`, `v1` → ``). */
export function apiGroup(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** Decides scopes for one render: its own CRDs first, then the known kinds. */
export function scopeResolver(
  objects: readonly KubeObject[],
): (object: Pick<KubeObject, 'apiVersion' | 'kind'>) => ObjectScope {
  const defined = new Map<string, ObjectScope>();
  for (const object of objects) {
    if (object.kind !== 'CustomResourceDefinition' || apiGroup(object.apiVersion) !== 'apiextensions.k8s.io') continue;
    const spec = (object as { spec?: { group?: unknown; scope?: unknown; names?: { kind?: unknown } } }).spec;
    if (typeof spec?.group !== 'string' || typeof spec.names?.kind !== 'string') continue;
    if (spec.scope === 'Namespaced' || spec.scope === 'Cluster')
      defined.set(`${spec.group}/${spec.names.kind}`, spec.scope);
  }
  return (object) => {
    const group = apiGroup(object.apiVersion);
    const key = `${group}/${object.kind}`;
    const scope = defined.get(key) ?? KNOWN_SCOPES.get(key);
    if (scope) return scope;
    // Every Cluster API kind (core, bootstrap, control plane, infrastructure, addons, IPAM) is
    // namespaced, ExtensionConfig aside (listed above).
    if (group === 'cluster.x-k8s.io' || group.endsWith('.cluster.x-k8s.io')) return 'Namespaced';
    return 'Unknown';
  };
}
