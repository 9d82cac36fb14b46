// The cluster-api-operator's provider objects (operator.cluster.x-k8s.io/v1alpha2), read as inputs:
// CoreProvider, BootstrapProvider, ControlPlaneProvider, InfrastructureProvider, AddonProvider,
// IPAMProvider and RuntimeExtensionProvider. We render their components into the tree instead of
// letting an operator apply them; the spec is the operator's, unchanged, so existing specs load.
import type { KubeObject } from './types.js';

export const OPERATOR_API_GROUP = 'operator.cluster.x-k8s.io';
export const OPERATOR_API_VERSION = `${OPERATOR_API_GROUP}/v1alpha2`;
/** Label of a selector ConfigMap holding its version (else the ConfigMap's name is the version). */
export const CONFIGMAP_VERSION_LABEL = 'provider.cluster.x-k8s.io/version';
/** Annotation saying a selector ConfigMap's `components` are gzip-compressed in binaryData. */
export const COMPRESSED_ANNOTATION = 'provider.cluster.x-k8s.io/compressed';
/** Ours: on a provider, allows rendering a version lower than the one published before. */
export const ALLOW_DOWNGRADE_ANNOTATION = 'clusterstack.x-k8s.io/allow-downgrade';
/**
 * Ours, on the CoreProvider: cert-manager as a prerequisite of the providers, declared with the two
 * fields of clusterctl's `cert-manager:` configuration (`version`, `url`). Either one declares it.
 */
export const CERT_MANAGER_VERSION_ANNOTATION = 'clusterstack.x-k8s.io/cert-manager-version';
export const CERT_MANAGER_URL_ANNOTATION = 'clusterstack.x-k8s.io/cert-manager-url';
/** clusterctl's default cert-manager URL; its `latest` segment is replaced by the version. */
export const CERT_MANAGER_DEFAULT_URL =
  'https://github.com/cert-manager/cert-manager/releases/latest/cert-manager.yaml';

export interface ProviderKindInfo {
  /** The operator's provider type (OCI file names, ConfigMap names): `core`, `control-plane`, `runtimeextension`, ... */
  type: string;
  /** clusterctl's release asset for the components: `<type>-components.yaml`. */
  componentsAsset: string;
  /** clusterctl's `cluster.x-k8s.io/provider` label value, for a provider named `name`. */
  manifestLabel: (name: string) => string;
}

/** Every provider kind the operator defines, with how clusterctl names its files and labels. */
export const PROVIDER_KINDS: Readonly<Record<string, ProviderKindInfo>> = {
  CoreProvider: { type: 'core', componentsAsset: 'core-components.yaml', manifestLabel: () => 'cluster-api' },
  BootstrapProvider: {
    type: 'bootstrap',
    componentsAsset: 'bootstrap-components.yaml',
    manifestLabel: (name) => `bootstrap-${name}`,
  },
  ControlPlaneProvider: {
    type: 'control-plane',
    componentsAsset: 'control-plane-components.yaml',
    manifestLabel: (name) => `control-plane-${name}`,
  },
  InfrastructureProvider: {
    type: 'infrastructure',
    componentsAsset: 'infrastructure-components.yaml',
    manifestLabel: (name) => `infrastructure-${name}`,
  },
  IPAMProvider: { type: 'ipam', componentsAsset: 'ipam-components.yaml', manifestLabel: (name) => `ipam-${name}` },
  RuntimeExtensionProvider: {
    type: 'runtimeextension',
    componentsAsset: 'runtime-extension-components.yaml',
    manifestLabel: (name) => `runtime-extension-${name}`,
  },
  AddonProvider: { type: 'addon', componentsAsset: 'addon-components.yaml', manifestLabel: (name) => `addon-${name}` },
};

export interface ProviderPatch {
  patch?: string;
  target?: {
    group?: string;
    version?: string;
    kind?: string;
    name?: string;
    namespace?: string;
    labelSelector?: string;
  };
}

interface ProviderContainerSpec {
  name: string;
  imageUrl?: string;
  args?: Record<string, string>;
  env?: Record<string, unknown>[];
  resources?: Record<string, unknown>;
  command?: string[];
}

export interface ProviderDeploymentSpec {
  replicas?: number;
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  affinity?: Record<string, unknown>;
  containers?: ProviderContainerSpec[];
  serviceAccountName?: string;
  imagePullSecrets?: { name?: string }[];
}

export interface ProviderManagerSpec {
  syncPeriod?: string;
  leaderElection?: {
    leaderElect?: boolean;
    resourceName?: string;
    resourceNamespace?: string;
    leaseDuration?: string;
    renewDeadline?: string;
    retryPeriod?: string;
    resourceLock?: string;
  };
  cacheNamespace?: string;
  gracefulShutDown?: string;
  controller?: { groupKindConcurrency?: Record<string, number>; cacheSyncTimeout?: unknown; recoverPanic?: boolean };
  metrics?: { bindAddress?: string; diagnosticsAddress?: string; insecureDiagnostics?: boolean };
  health?: { healthProbeBindAddress?: string; readinessEndpointName?: string; livenessEndpointName?: string };
  webhook?: { port?: number; host?: string; certDir?: string };
  profilerAddress?: string;
  maxConcurrentReconciles?: number;
  verbosity?: number;
  featureGates?: Record<string, boolean>;
  additionalArgs?: Record<string, string>;
}

export interface ProviderSpec {
  version?: string;
  manager?: ProviderManagerSpec;
  deployment?: ProviderDeploymentSpec;
  configSecret?: { name: string; namespace?: string };
  fetchConfig?: {
    url?: string;
    oci?: string;
    selector?: {
      matchLabels?: Record<string, string>;
      matchExpressions?: { key: string; operator: string; values?: string[] }[];
    };
  };
  additionalManifests?: { name: string; namespace?: string };
  manifestPatches?: string[];
  patches?: ProviderPatch[];
  additionalDeployments?: Record<string, { manager?: ProviderManagerSpec; deployment?: ProviderDeploymentSpec }>;
}

/** Any of the seven provider kinds. */
export interface CapiProvider extends KubeObject {
  spec?: ProviderSpec;
  status?: { contract?: string; installedVersion?: string; conditions?: unknown[]; observedGeneration?: number };
}

/** `Kind namespace/name`, as messages name a provider. */
export function describeProvider(provider: KubeObject): string {
  return `${provider.kind} ${provider.metadata.namespace ?? 'default'}/${provider.metadata.name}`;
}
