// The clusterstack.x-k8s.io/v1alpha1 API: a superset of the cluster-stack-operator's v1alpha1, so
// existing ClusterStack specs load unchanged. Fields marked "ours" are optional additions.

export const API_GROUP = 'clusterstack.x-k8s.io';
export const API_VERSION_NAME = 'v1alpha1';
export const API_VERSION = `${API_GROUP}/${API_VERSION_NAME}`;
export const CAPI_API_GROUP = 'cluster.x-k8s.io';

/** Labels and annotations this project reads or writes. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const LABEL_PART_OF = 'app.kubernetes.io/part-of';
export const MANAGED_BY_VALUE = 'clusterstack-gitops';
/** Per-stack release source as an annotation, for specs that must stay byte-identical to CSO's. */
export const ANNOTATION_RELEASE_SOURCE = 'clusterstack.x-k8s.io/release-source';

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  generateName?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

/** corev1.ObjectReference, as CSO uses it for providerRef and clusterRef. */
export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

/** The Cluster API condition shape (clusterv1.Condition). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  severity?: 'Error' | 'Warning' | 'Info' | '';
  reason?: string;
  message?: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** What every Kubernetes object has. */
export interface TypedObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
}

/** Any Kubernetes object, unstructured. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

export interface ClusterStackSpec {
  provider: string;
  name: string;
  /** Kubernetes major.minor, e.g. "1.30". */
  kubernetesVersion: string;
  /** `stable` (default), `custom` (hash builds) or a named pre-release channel such as `alpha`. */
  channel?: string;
  /** Versions (dot form) to keep available, e.g. ["v1", "v2"]. */
  versions?: string[];
  /** Take the newest matching release automatically. Defaults to true. */
  autoSubscribe?: boolean;
  /** No provider integration: releases are usable without a provider release object. Defaults to false. */
  noProvider?: boolean;
  /** The <Provider>ClusterStackReleaseTemplate; required unless noProvider. */
  providerRef?: ObjectReference;
  /** Ours: where this stack's releases come from (github:owner/repo, oci://registry/repo or a directory). */
  releaseSource?: string;
  /** Ours: values applied on top of a legacy release's cluster-addon values. */
  addonValues?: Record<string, unknown>;
  /** Ours: values per addon stage (multi-stage releases), applied on top of the stage's overwrite.yaml. */
  addonStageValues?: Record<string, Record<string, unknown>>;
}

type ClusterStackReleasePhase =
  | ''
  | 'downloading release assets'
  | 'provider-specific work'
  | 'applying objects'
  | 'rendering manifests'
  | 'publishing manifests'
  | 'done';

export interface ClusterStackReleaseSummary {
  name: string;
  ready: boolean;
  phase: ClusterStackReleasePhase;
  message?: string;
}

export interface ClusterStackStatus {
  latestRelease?: string;
  summary?: ClusterStackReleaseSummary[];
  /** Comma-separated versions, as CSO prints them. */
  usableVersions?: string;
  conditions?: Condition[];
  observedGeneration?: number;
}

export interface ClusterStack {
  apiVersion: typeof API_VERSION;
  kind: 'ClusterStack';
  metadata: ObjectMeta;
  spec: ClusterStackSpec;
  status?: ClusterStackStatus;
}

/** One managed object and whether the GitOps engine has it in sync. */
export interface ResourceStatus {
  group?: string;
  version?: string;
  kind: string;
  namespace?: string;
  name: string;
  status?: 'synced' | 'not-synced' | '';
  error?: string;
}

interface ClusterStackReleaseSpec {
  providerRef?: ObjectReference;
}

export interface ClusterStackReleaseStatus {
  resources?: ResourceStatus[];
  /** Kubernetes version with patch level, from the release's metadata.yaml, e.g. "1.30.4". */
  kubernetesVersion?: string;
  ready?: boolean;
  conditions?: Condition[];
  observedGeneration?: number;
}

export interface ClusterStackRelease {
  apiVersion: typeof API_VERSION;
  kind: 'ClusterStackRelease';
  metadata: ObjectMeta;
  spec?: ClusterStackReleaseSpec;
  status?: ClusterStackReleaseStatus;
}

interface ClusterAddonSpec {
  /** The ClusterClass (release) last rendered for the Cluster. */
  clusterStack?: string;
  /** The clusterAddon version last rendered. */
  version?: string;
  clusterRef?: ObjectReference;
  /** CSO's current lifecycle hook; kept for compatibility. */
  hook?: string;
}

export interface ClusterAddonStageStatus {
  name: string;
  action?: 'apply' | 'delete';
  phase?: string;
  synced?: boolean;
  /** The release whose addons the stage's directory holds. */
  release?: string;
  /** The commit (or digest) in which the stage's files last changed: what the lifecycle hooks compare the engine's applied revision with. */
  revision?: string;
}

/** The last outcome of one Cluster API lifecycle hook for the Cluster, as the runtime extension answered it. */
export interface ClusterAddonHookStatus {
  /** BeforeClusterUpgrade, AfterControlPlaneInitialized or AfterClusterUpgrade. */
  name: string;
  /** The release whose addons the hook waited for. */
  release: string;
  outcome: 'Succeeded' | 'Waiting' | 'TimedOut';
  /** What the hook answered: what it waits for, or what it never confirmed. */
  message: string;
  /** When the wait started (RFC 3339). */
  since: string;
}

export interface ClusterAddonStatus {
  resources?: ResourceStatus[];
  stages?: ClusterAddonStageStatus[];
  /** One entry per lifecycle hook called for the Cluster, kept across controller restarts. */
  hooks?: ClusterAddonHookStatus[];
  ready?: boolean;
  conditions?: Condition[];
  observedGeneration?: number;
}

export interface ClusterAddon {
  apiVersion: typeof API_VERSION;
  kind: 'ClusterAddon';
  metadata: ObjectMeta;
  spec: ClusterAddonSpec;
  status?: ClusterAddonStatus;
}

/**
 * The parts of a CAPI Cluster we read (v1beta1 or v1beta2: read the class and references through
 * capi-cluster.ts, never these fields directly); everything else is kept as-is for values templates.
 */
export interface CapiCluster extends KubeObject {
  kind: 'Cluster';
  spec?: {
    /** v1beta1 `class`/`classNamespace`, v1beta2 `classRef: {name, namespace}`. */
    topology?: {
      class?: string;
      classNamespace?: string;
      classRef?: { name?: string; namespace?: string };
      version?: string;
      [key: string]: unknown;
    };
    /** v1beta1 `{apiVersion, kind, name, namespace}`, v1beta2 `{apiGroup, kind, name}`. */
    controlPlaneRef?: ObjectReference & { apiGroup?: string };
    infrastructureRef?: ObjectReference & { apiGroup?: string };
    controlPlaneEndpoint?: { host?: string; port?: number };
    [key: string]: unknown;
  };
}

const DEFAULT_CHANNEL = 'stable';

/** The spec with CSO's defaults applied (channel stable, autoSubscribe true, noProvider false). */
export function withSpecDefaults(
  spec: ClusterStackSpec,
): Required<Pick<ClusterStackSpec, 'channel' | 'autoSubscribe' | 'noProvider' | 'versions'>> & ClusterStackSpec {
  return {
    ...spec,
    channel: spec.channel ?? DEFAULT_CHANNEL,
    autoSubscribe: spec.autoSubscribe ?? true,
    noProvider: spec.noProvider ?? false,
    versions: spec.versions ?? [],
  };
}
