// The record a rendered tree carries of itself (provenance.json): its units with their digests, what
// was withheld and why. It is how the next render knows what it may reuse, how change summaries and
// the controller's status know what is where, and how the mass-deletion guard counts what would go.
import type { ClusterRequestsRecord } from './cluster-requests-record.js';
import type { HelmHookRecord, HookPlacement } from './helm-hooks-record.js';

/**
 * Version of how objects are written. Part of every digest, so a tree written by an older version
 * (format 1 re-serialized helm's output and changed its meaning) is rendered again, never reused.
 */
export const OUTPUT_FORMAT = 2;

export interface WithheldEntry {
  /** A provider's name is `<Kind>/<name>` (e.g. `InfrastructureProvider/docker`); a layer's is its cluster. */
  kind: 'release' | 'cluster' | 'provider' | 'layer';
  namespace: string;
  /** The release, or the cluster (also for a layer). */
  name: string;
  /** The layer (kind `layer`): withheld for this cluster only. */
  layer?: string;
  reason: string;
  /** True when the previous output was kept in place of a new one. */
  previousKept: boolean;
}

/** One directory of output and the digests that decide whether it must be rendered again. */
export interface UnitRecord {
  dir: string;
  kind: 'release' | 'cluster-stage' | 'cluster-layer';
  namespace: string;
  /** The release name, or the cluster name. */
  name: string;
  release: string;
  stage?: string;
  order?: number;
  addonVersion?: string;
  /** An addon layer unit: what the wiring needs to order, gate and hold it. */
  layer?: LayerRecord;
  /** Digest of everything that goes into the values template and the chart. */
  inputDigest: string;
  /** Digest of chart, evaluated values and Kubernetes version. */
  renderDigest: string;
  files: string[];
  /**
   * Objects of this unit written elsewhere, by the unit's own file name: the path in the tree of
   * the one copy (a release's object several releases render lives in `management/<ns>/shared/`;
   * an object two stages of a cluster render alike lives in the earlier stage). Together with
   * `files` it is everything the unit renders, so an unchanged unit can be reused whole.
   */
  shared?: Record<string, string>;
  /** What the render of this unit is worth a look for (duplicate keys, unknown scopes, dropped Secrets). */
  notes?: string[];
  /** Secrets written SOPS-encrypted (--secrets encrypt), with the digest of each file as written, so a hand edit is noticed. */
  secrets?: EncryptedSecretRecord[];
  /**
   * The program that rendered the files (`helm v4.3.1`), kept while they are reused: helm versions
   * may differ in output (see docs/helm.md), so the tree says which one wrote each unit.
   */
  renderedWith?: string;
  /** The helm hook objects the chart rendered and what became of each (helm-hooks-record.ts); absent when none. */
  hooks?: HelmHookRecord[];
}

/** One SOPS-encrypted Secret of a unit: its file, its object, the digest of what was written, who can decrypt it. */
export interface EncryptedSecretRecord {
  file: string;
  namespace: string;
  name: string;
  /** sha256 of the encrypted file as written. */
  digest: string;
  recipients: string[];
}

/** An object several units render, written once: where, and which units render it (reference counting). */
export interface SharedObjectRecord {
  /** Path of its one copy in the tree. */
  path: string;
  /** Identity after namespace placement; `group` is '' for the core group, `namespace` '' when cluster-scoped. */
  group: string;
  /** API version of the written copy (`v1alpha1`), for status entries. */
  version: string;
  kind: string;
  namespace: string;
  name: string;
  /** The releases (management side) or stages (addon side, as `<cluster dir>/<stage>`) rendering it, sorted. */
  renderedBy: string[];
}

/**
 * An object of a workload cluster moving between two of its addon directories (stage or layer):
 * for one render it stays in its old directory, marked so that neither Flux nor Argo CD prunes it,
 * and the next render writes it in its new one (src/render/addon-moves.ts).
 */
export interface AddonHandoverRecord {
  /** Path of the marked copy, in the old directory. */
  path: string;
  /** The old directory (the unit that applied it so far) and the new one. */
  from: string;
  to: string;
  /** Its file name in the new directory (listed in that unit's `shared` meanwhile). */
  file: string;
  /** sha256 of the new directory's own text for it, without the marks. */
  digest: string;
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

/** An addon layer as rendered for one cluster. */
export interface LayerRecord {
  name: string;
  version: string;
  hold: boolean;
  /** Layers applied and ready before this one, on the same cluster. */
  dependsOn: { layer: string; version: string }[];
  /** Applied after the cluster stack's own addon stages. */
  afterStack: boolean;
  /** Longest chain of layers before it (Argo CD sync waves). */
  depth: number;
  /** From the AddonsLayer (Kraan's interval and timeout), when set. */
  interval?: string;
  timeout?: string;
}

/** One Cluster API provider's directory (management/providers/<kind>-<name>): what was rendered, from where. */
export interface ProviderRecord {
  dir: string;
  /** CoreProvider, InfrastructureProvider, ... */
  kind: string;
  namespace: string;
  name: string;
  /** The version rendered; when `pinned` is false it was the newest, and later renders keep it (the lock). */
  version: string;
  pinned: boolean;
  /** The Cluster API contract of that version (its metadata.yaml release series). */
  contract: string;
  source: string;
  /** Digest of the release's metadata.yaml and components. */
  digest: string;
  inputDigest: string;
  /** `group/Kind` of the CRDs it installs: what a removal would orphan. */
  kinds: string[];
  files: string[];
  notes?: string[];
  /**
   * cert-manager only (kind `CertManager`): the objects whose readiness the wiring waits for before
   * any provider is applied (its Deployments, the webhook among them, and its CRDs).
   */
  healthChecks?: { apiVersion: string; kind: string; namespace?: string; name: string }[];
}

export interface Provenance {
  generator: 'clusterstack-gitops';
  format: typeof OUTPUT_FORMAT;
  inputDigest: string;
  inputs: { kind: string; namespace: string; name: string; digest: string }[];
  releases: { name: string; source: string; digest: string }[];
  units: UnitRecord[];
  withheld: WithheldEntry[];
  /** Objects several kept releases render (management side), each written once; absent when none. */
  sharedObjects?: SharedObjectRecord[];
  /** Addon objects in the middle of a move between two directories of one cluster; absent when none. */
  addonHandovers?: AddonHandoverRecord[];
  /** Values templates that failed, by unit and input digest: unchanged inputs fail again without helm. */
  valuesFailures: { dir: string; inputDigest: string; reason: string }[];
  /** Cluster API providers (present only when the inputs hold provider objects, or held them before). */
  providers?: ProviderRecord[];
  /** With a scheduler configuration: which ClusterRequest holds which generated Cluster. */
  clusterRequests?: ClusterRequestsRecord;
  /** How the units' helm hooks are laid out; absent in trees written before hooks were handled (their units render again). */
  helmHooks?: HookPlacement;
}
