// The record a rendered tree carries of itself (provenance.json): its units with their digests, what
// was withheld and why. It is how the next render knows what it may reuse, how change summaries and
// the controller's status know what is where, and how the mass-deletion guard counts what would go.
import type { ClusterRequestsRecord } from './cluster-requests-record.js';
import type { RenderedTree } from './rendered-tree.js';
import { PROVENANCE_FILE } from './tree-layout.js';

/**
 * Version of how objects are written. Part of every digest, so a tree written by an older version
 * (format 1 re-serialized helm's output and changed its meaning) is rendered again, never reused.
 */
export const OUTPUT_FORMAT = 2;

export interface WithheldEntry {
  /** A provider's name is `<Kind>/<name>` (e.g. `InfrastructureProvider/docker`). */
  kind: 'release' | 'cluster' | 'provider';
  namespace: string;
  name: string;
  reason: string;
  /** True when the previous output was kept in place of a new one. */
  previousKept: boolean;
}

/** One directory of output and the digests that decide whether it must be rendered again. */
export interface UnitRecord {
  dir: string;
  kind: 'release' | 'cluster-stage';
  namespace: string;
  /** The release name, or the cluster name. */
  name: string;
  release: string;
  stage?: string;
  order?: number;
  addonVersion?: string;
  /** Digest of everything that goes into the values template and the chart. */
  inputDigest: string;
  /** Digest of chart, evaluated values and Kubernetes version. */
  renderDigest: string;
  files: string[];
  /** What the render of this unit is worth a look for (duplicate keys, unknown scopes, dropped Secrets). */
  notes?: string[];
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
}

export interface Provenance {
  generator: 'clusterstack-gitops';
  format: typeof OUTPUT_FORMAT;
  inputDigest: string;
  inputs: { kind: string; namespace: string; name: string; digest: string }[];
  releases: { name: string; source: string; digest: string }[];
  units: UnitRecord[];
  withheld: WithheldEntry[];
  /** Values templates that failed, by unit and input digest: unchanged inputs fail again without helm. */
  valuesFailures: { dir: string; inputDigest: string; reason: string }[];
  /** Cluster API providers (present only when the inputs hold provider objects, or held them before). */
  providers?: ProviderRecord[];
  /** With a scheduler configuration: which ClusterRequest holds which generated Cluster. */
  clusterRequests?: ClusterRequestsRecord;
}

/** The provenance record of a tree, if it has a readable one (a damaged record reads as none). */
export function readProvenance(tree: RenderedTree): Provenance | undefined {
  const text = tree.get(PROVENANCE_FILE);
  if (!text) return undefined;
  try {
    return JSON.parse(text) as Provenance;
  } catch {
    return undefined;
  }
}
