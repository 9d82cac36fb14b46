// Objects of our kinds with every field of src/api/types.ts filled in, typed against the types so
// they stay realistic: the real API server must store each, spec and status, dropping nothing
// (test/real-server-validation.test.ts); crds.test.ts compares the schemas with the types field by field.
import type { ClusterAddon, ClusterStack, ClusterStackRelease } from '../../src/api/types.js';
import { API_VERSION } from '../../src/api/types.js';

type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends Array<infer U> ? Array<DeepPartial<U>> : T[K] extends object ? DeepPartial<T[K]> : T[K];
};

export const fullClusterStack: DeepPartial<ClusterStack> = {
  apiVersion: API_VERSION,
  kind: 'ClusterStack',
  metadata: { name: 'openstack-scs-1-32', namespace: 'default' },
  spec: {
    provider: 'openstack',
    name: 'scs',
    kubernetesVersion: '1.32',
    channel: 'alpha',
    versions: ['v1-alpha.5', 'v2-alpha.0'],
    autoSubscribe: false,
    noProvider: false,
    providerRef: {
      apiVersion: 'infrastructure.clusterstack.x-k8s.io/v1alpha1',
      kind: 'OpenStackClusterStackReleaseTemplate',
      name: 'scs-images',
      namespace: 'cluster-stacks',
      uid: '0b8c5a8e-2f4e-4a53-9d1e-3f2a7c1d9e11',
      resourceVersion: '1234',
      fieldPath: 'spec.template',
    },
    releaseSource: 'oci://registry.scs.community/kaas/cluster-stacks',
    addonValues: { cilium: { hubble: { enabled: true } }, replicas: 2 },
    addonStageValues: { cni: { ipam: { mode: 'kubernetes' } }, 'metrics-server': {} },
  },
  status: {
    latestRelease: 'openstack-scs-1-32-v2-alpha-0',
    usableVersions: 'v1-alpha.5, v2-alpha.0',
    summary: [
      { name: 'openstack-scs-1-32-v1-alpha-5', ready: true, phase: 'done' },
      {
        name: 'openstack-scs-1-32-v2-alpha-0',
        ready: false,
        phase: 'provider-specific work',
        message: 'waiting for node images',
      },
    ],
    conditions: [
      {
        type: 'Ready',
        status: 'False',
        severity: 'Info',
        reason: 'ReleasesNotReady',
        message: '1 of 2 releases ready',
        lastTransitionTime: '2024-05-06T07:08:09Z',
        observedGeneration: 3,
      },
    ],
    observedGeneration: 3,
  },
};

export const fullClusterStackRelease: DeepPartial<ClusterStackRelease> = {
  apiVersion: API_VERSION,
  kind: 'ClusterStackRelease',
  metadata: { name: 'docker-ferrol-1-27-v3', namespace: 'default' },
  spec: {
    providerRef: {
      apiVersion: 'infrastructure.clusterstack.x-k8s.io/v1alpha1',
      kind: 'DockerClusterStackRelease',
      name: 'docker-ferrol-1-27-v3',
    },
  },
  status: {
    kubernetesVersion: '1.27.3',
    ready: true,
    resources: [
      {
        group: 'cluster.x-k8s.io',
        version: 'v1beta1',
        kind: 'ClusterClass',
        namespace: 'cluster',
        name: 'docker-ferrol-1-27-v3',
        status: 'synced',
      },
      {
        version: 'v1',
        kind: 'ConfigMap',
        namespace: 'cluster',
        name: 'values',
        status: 'not-synced',
        error: 'Application is OutOfSync',
      },
      { kind: 'Namespace', name: 'cluster', status: '' },
    ],
    conditions: [
      {
        type: 'ManifestsPublished',
        status: 'True',
        reason: 'Published',
        message: 'published at 3f2a7c1',
        lastTransitionTime: '2024-05-06T07:08:09.123Z',
      },
      { type: 'Ready', status: 'True', lastTransitionTime: '2024-05-06T07:08:09+02:00', observedGeneration: 1 },
    ],
    observedGeneration: 1,
  },
};

export const fullClusterAddon: DeepPartial<ClusterAddon> = {
  apiVersion: API_VERSION,
  kind: 'ClusterAddon',
  metadata: { name: 'cluster-addon-bravo', namespace: 'default' },
  spec: {
    clusterRef: { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', name: 'bravo', namespace: 'cluster-stacks' },
    clusterStack: 'docker-ferrol-1-30-v2',
    version: 'v2',
    hook: 'AfterControlPlaneInitialized',
  },
  status: {
    resources: [
      {
        group: 'apps',
        version: 'v1',
        kind: 'Deployment',
        namespace: 'kube-system',
        name: 'metrics-server',
        status: 'synced',
      },
    ],
    stages: [
      { name: 'cni', action: 'apply', phase: 'done', synced: true },
      { name: 'metrics-server', action: 'delete', phase: 'waiting for precondition', synced: false },
    ],
    hooks: [
      {
        name: 'AfterControlPlaneInitialized',
        release: 'docker-ferrol-1-30-v2',
        outcome: 'Succeeded',
        message: 'addons of release docker-ferrol-1-30-v2 are applied and healthy',
        since: '2024-05-06T07:08:09.123Z',
      },
    ],
    ready: false,
    conditions: [{ type: 'Ready', status: 'Unknown', severity: '', lastTransitionTime: '2024-05-06T07:08:09Z' }],
    observedGeneration: 2,
  },
};
