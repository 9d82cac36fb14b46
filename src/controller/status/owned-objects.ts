// Names, labels, finalizers and owner references of the objects the controller writes.
import { API_GROUP, API_VERSION, type KubeObject, LABEL_MANAGED_BY, MANAGED_BY_VALUE, type OwnerReference } from '../../api/types.js';

/** Held on ClusterStacks and ClusterStackReleases until no Cluster uses their releases. */
export const FINALIZER = `${API_GROUP}/finalizer`;
/** The ClusterStack (name) an owned object belongs to. */
export const LABEL_CLUSTER_STACK = `${API_GROUP}/cluster-stack`;
/** The Cluster (name) a ClusterAddon or an Argo CD cluster Secret belongs to. */
export const LABEL_CLUSTER_NAME = `${API_GROUP}/cluster-name`;
export const LABEL_CLUSTER_NAMESPACE = `${API_GROUP}/cluster-namespace`;

export const CLUSTER_STACK_RELEASE_KIND = 'ClusterStackRelease';
export const CLUSTER_ADDON_KIND = 'ClusterAddon';

export function keyOf(object: { metadata: { namespace?: string; name: string } }): string {
  return `${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
}

/** A controller owner reference to `owner` (which must have a uid: it came from the API server). */
export function controllerReference(owner: KubeObject | { apiVersion: string; kind: string; metadata: { name: string; uid?: string } }): OwnerReference {
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid ?? '', controller: true, blockOwnerDeletion: true };
}

export function isOwnedBy(object: { metadata: { ownerReferences?: OwnerReference[] } }, owner: { kind: string; metadata: { uid?: string; name: string } }): boolean {
  return (object.metadata.ownerReferences ?? []).some((ref) => ref.kind === owner.kind && (owner.metadata.uid ? ref.uid === owner.metadata.uid : ref.name === owner.metadata.name));
}

/** The owner reference of a given kind, if any. */
export function ownerOfKind(object: { metadata: { ownerReferences?: OwnerReference[] } }, kind: string): OwnerReference | undefined {
  return (object.metadata.ownerReferences ?? []).find((ref) => ref.kind === kind);
}

export function managedLabels(extra: Record<string, string> = {}): Record<string, string> {
  return { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, ...extra };
}

export function isManagedByUs(object: { metadata: { labels?: Record<string, string> } }): boolean {
  return object.metadata.labels?.[LABEL_MANAGED_BY] === MANAGED_BY_VALUE;
}

export { API_VERSION };
