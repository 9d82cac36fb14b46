// Where things live in the rendered tree: the one place that knows the layout. Everything that
// reads or writes paths (render, change summaries, wiring, the controller's status and sync
// feedback, the mass-deletion guard, Git history) asks here.
//
//   README.md, provenance.json
//   management/<namespace>/<release>/...           one unit per kept release (ClusterClass side)
//   management/<namespace>/shared/...              objects several kept releases render, written once
//   clusters/<namespace>/<cluster>/<stage>/...     one unit per addon stage of a workload cluster
//   clusters/<namespace>/<cluster>/layers/<layer>/ one unit per addon layer (AddonsLayer) of a cluster
//   <unit>/helm-hooks/<pre|post>-w<weight>/          a unit's helm install hooks, for engines that order them (Flux)
//   management/providers/<kind>-<name>/...         one Cluster API provider's components
//   management/providers/cert-manager/...          cert-manager, the providers' prerequisite (when declared)
//   management/_cluster-requests/profiles/...      ClusterProfiles (with --scheduler-config)
//   management/_cluster-requests/clusters/<ns>/... Clusters created for ClusterRequests

export const PROVENANCE_FILE = 'provenance.json';
export const README_FILE = 'README.md';
export const KUSTOMIZATION_FILE = 'kustomization.yaml';
export const MANAGEMENT_DIR = 'management';
export const CLUSTERS_DIR = 'clusters';
/** Below a cluster's directory: its addon layers, one directory each. */
const LAYERS_DIR = 'layers';
/** Cluster API providers, beside the stacks' namespaces (a ClusterStack may not live in a namespace of this name). */
export const PROVIDERS_DIR = `${MANAGEMENT_DIR}/providers`;

/** The directory of a Cluster API provider's components: `management/providers/<kind>-<name>`. */
export function providerDir(kind: string, name: string): string {
  return `${PROVIDERS_DIR}/${kind.toLowerCase()}-${name}`;
}

/** cert-manager's components, when the CoreProvider declares them: applied before every provider. */
export const CERT_MANAGER_DIR = `${PROVIDERS_DIR}/cert-manager`;

/**
 * ClusterProfiles and the Clusters made for ClusterRequests: management side, but no release unit.
 * A `_` cannot start a namespace name, so this never meets `management/<namespace>`.
 */
export const CLUSTER_REQUESTS_DIR = `${MANAGEMENT_DIR}/_cluster-requests`;

/** The file of a ClusterProfile (cluster-scoped, one per ClusterStack). */
export function clusterProfileFile(profile: string): string {
  return `${CLUSTER_REQUESTS_DIR}/profiles/clusterprofile-${profile}.yaml`;
}

/** The file of a CAPI Cluster created for ClusterRequests. */
export function requestedClusterFile(namespace: string, cluster: string): string {
  return `${CLUSTER_REQUESTS_DIR}/clusters/${namespace}/cluster-${cluster}.yaml`;
}

const REQUESTED_CLUSTERS_PREFIX = `${CLUSTER_REQUESTS_DIR}/clusters/`;
const REQUESTED_CLUSTER_FILE = new RegExp(`^${CLUSTER_REQUESTS_DIR}/clusters/([^/]+)/cluster-([^/]+)\\.yaml$`);

/** The Cluster a file of `management/_cluster-requests/clusters/` holds; undefined for other files (every path of a tree passes here). */
export function requestedClusterOfPath(file: string): { namespace: string; name: string } | undefined {
  if (!file.startsWith(REQUESTED_CLUSTERS_PREFIX)) return undefined;
  const match = REQUESTED_CLUSTER_FILE.exec(file);
  return match ? { namespace: match[1]!, name: match[2]! } : undefined;
}

function inClusterRequestsDir(file: string): boolean {
  return file === CLUSTER_REQUESTS_DIR || file.startsWith(`${CLUSTER_REQUESTS_DIR}/`);
}
/** sops' configuration at the root of the tree: a user's file, read for --secrets encrypt and kept in every render. */
export const SOPS_CONFIG_FILE = '.sops.yaml';

/**
 * Below a unit's directory: its helm install hooks, one directory per phase and weight, applied on
 * their own before or after the unit (helm-hooks-record.ts). A unit's files never have a `/` in their
 * name otherwise, so this cannot meet an object file.
 */
const HELM_HOOKS_DIR = 'helm-hooks';

/** The directory, relative to its unit's, of the hooks of one phase and weight: `helm-hooks/pre-w-5`. */
export function helmHookDir(phase: 'pre' | 'post', weight: number): string {
  return `${HELM_HOOKS_DIR}/${phase}-w${weight}`;
}

/** Whether a path lies in a unit's helm hook directories (`<unit>/helm-hooks/...`). */
function isHelmHookPath(file: string): boolean {
  const unitDir = unitDirOf(`${file}/x`);
  return unitDir !== undefined && file.slice(unitDir.length + 1).split('/')[0] === HELM_HOOKS_DIR;
}

/** The unit directory of a release's ClusterClass side. */
export function releaseDir(namespace: string, release: string): string {
  return `${MANAGEMENT_DIR}/${namespace}/${release}`;
}

/**
 * The name of the shared directory beside a namespace's release directories. Release tags always
 * hold dashes (`<provider>-<name>-...`), so no release directory can be called this.
 */
export const SHARED_DIR_NAME = 'shared';

/** The directory holding the objects that several kept releases render (written once, never per release). */
export function sharedDir(namespace: string): string {
  return `${MANAGEMENT_DIR}/${namespace}/${SHARED_DIR_NAME}`;
}

/** True for a path inside (or equal to) a namespace's shared directory. */
export function isSharedPath(file: string): boolean {
  const parts = file.split('/');
  return parts[0] === MANAGEMENT_DIR && parts[2] === SHARED_DIR_NAME;
}

/** The directory of a workload cluster (its stages below it). */
export function clusterDir(namespace: string, cluster: string): string {
  return `${CLUSTERS_DIR}/${namespace}/${cluster}`;
}

/** The unit directory of one addon stage of a cluster. */
export function stageDir(namespace: string, cluster: string, stage: string): string {
  return `${clusterDir(namespace, cluster)}/${stage}`;
}

/** The unit directory of one addon layer of a cluster. */
export function layerDir(namespace: string, cluster: string, layer: string): string {
  return `${clusterDir(namespace, cluster)}/${LAYERS_DIR}/${layer}`;
}

/** Whether a path lies in a cluster's layers (`clusters/<ns>/<cluster>/layers/...`). */
export function isLayerPath(file: string): boolean {
  const parts = file.split('/');
  return parts[0] === CLUSTERS_DIR && parts[3] === LAYERS_DIR && parts.length >= 5;
}

/** What a path of the tree belongs to: a release unit or a cluster stage unit; undefined outside units. */
export type TreeUnitPath =
  | { kind: 'release'; dir: string; namespace: string; release: string }
  | { kind: 'cluster-stage'; dir: string; namespace: string; cluster: string; stage: string; clusterDir: string }
  | { kind: 'cluster-layer'; dir: string; namespace: string; cluster: string; layer: string; clusterDir: string };

/** The unit a file (or a unit directory) belongs to. */
export function unitOfPath(file: string): TreeUnitPath | undefined {
  if (inClusterRequestsDir(file)) return undefined;
  const parts = file.split('/');
  if (file.startsWith(`${PROVIDERS_DIR}/`)) return undefined;
  if (parts[0] === MANAGEMENT_DIR && parts.length >= 3) {
    return { kind: 'release', dir: parts.slice(0, 3).join('/'), namespace: parts[1]!, release: parts[2]! };
  }
  if (isLayerPath(file)) {
    return {
      kind: 'cluster-layer',
      dir: parts.slice(0, 5).join('/'),
      namespace: parts[1]!,
      cluster: parts[2]!,
      layer: parts[4]!,
      clusterDir: parts.slice(0, 3).join('/'),
    };
  }
  if (parts[0] === CLUSTERS_DIR && parts.length >= 4 && parts[3] !== LAYERS_DIR) {
    return {
      kind: 'cluster-stage',
      dir: parts.slice(0, 4).join('/'),
      namespace: parts[1]!,
      cluster: parts[2]!,
      stage: parts[3]!,
      clusterDir: parts.slice(0, 3).join('/'),
    };
  }
  return undefined;
}

/** The unit directory a file belongs to (`management/<ns>/<release>`, `clusters/<ns>/<cluster>/<stage>`, `.../layers/<layer>`); undefined for other files. */
export function unitDirOf(file: string): string | undefined {
  if (inClusterRequestsDir(file)) return undefined;
  const parts = file.split('/');
  if (isLayerPath(file)) return parts.length >= 6 ? parts.slice(0, 5).join('/') : undefined;
  // A file, not the directory itself: one level below the unit directory at least.
  if (file.startsWith(`${PROVIDERS_DIR}/`)) return undefined;
  if (parts[0] === MANAGEMENT_DIR && parts.length >= 4) return parts.slice(0, 3).join('/');
  if (parts[0] === CLUSTERS_DIR && parts.length >= 5) return parts.slice(0, 4).join('/');
  return undefined;
}

/**
 * The directories whose kustomization aggregates `dir`'s: `management/` and `management/<ns>/`
 * (all of it goes to one cluster); under `clusters/` only a cluster's own directory aggregates its
 * stages (different clusters are different targets), and nothing aggregates a layer.
 */
export function aggregatingDirs(dir: string): string[] {
  const parts = dir.split('/');
  // A layer is applied on its own (after its dependencies, unless on hold): nothing aggregates it.
  if (isLayerPath(dir)) return [];
  // Hooks are applied on their own, before or after their unit: its kustomization must not list them.
  if (isHelmHookPath(dir)) return [];
  const from = parts[0] === MANAGEMENT_DIR ? 1 : parts[0] === CLUSTERS_DIR ? 3 : parts.length;
  const dirs: string[] = [];
  for (let depth = parts.length - 1; depth >= from; depth -= 1) dirs.push(parts.slice(0, depth).join('/'));
  return dirs;
}
