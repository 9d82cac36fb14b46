// Names, labels, finalizers and owner references of the objects the controller writes.
import { createHash } from 'node:crypto';
import {
  API_GROUP,
  type KubeObject,
  LABEL_MANAGED_BY,
  MANAGED_BY_VALUE,
  type OwnerReference,
} from '../../api/types.js';

/** Held on ClusterStacks and ClusterStackReleases until no Cluster uses their releases. */
export const FINALIZER = `${API_GROUP}/finalizer`;
/** The ClusterStack (name) an owned object belongs to. */
export const LABEL_CLUSTER_STACK = `${API_GROUP}/cluster-stack`;
/** The Cluster (name) a ClusterAddon or an Argo CD cluster Secret belongs to. */
export const LABEL_CLUSTER_NAME = `${API_GROUP}/cluster-name`;
export const LABEL_CLUSTER_NAMESPACE = `${API_GROUP}/cluster-namespace`;
/** The full name behind a label value that had to be shortened (`<label key>-name` would not be a valid key; one annotation per label). */
const ANNOTATION_FULL_NAME_PREFIX = `${API_GROUP}/full-`;

/** Label values are at most 63 characters (apimachinery's IsValidLabelValue). */
const MAX_LABEL_VALUE = 63;
const HASH_LENGTH = 10;

/**
 * A valid label value for `value`: itself when it fits, else a prefix and a hash of the whole
 * (`<first 52 characters>-<10 hex>`), so long names still select one object and never fail a create.
 */
export function labelValue(value: string): string {
  if (value.length <= MAX_LABEL_VALUE) return value;
  const hash = createHash('sha256').update(value).digest('hex').slice(0, HASH_LENGTH);
  // The prefix must end in an alphanumeric character before the separator.
  const prefix = value.slice(0, MAX_LABEL_VALUE - HASH_LENGTH - 1).replace(/[^A-Za-z0-9]+$/, '');
  return `${prefix}-${hash}`;
}

/**
 * Labels naming objects (`key: name`), shortened where needed, and annotations holding the full
 * names of those that were shortened (`clusterstack.x-k8s.io/full-<label name>`).
 */
export function nameLabels(names: Record<string, string>): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const labels: Record<string, string> = {};
  const annotations: Record<string, string> = {};
  for (const [key, name] of Object.entries(names)) {
    labels[key] = labelValue(name);
    if (labels[key] !== name) annotations[`${ANNOTATION_FULL_NAME_PREFIX}${key.slice(key.indexOf('/') + 1)}`] = name;
  }
  return { labels, annotations };
}

export function keyOf(object: { metadata: { namespace?: string; name: string } }): string {
  return `${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
}

/** A controller owner reference to `owner` (which must have a uid: it came from the API server). */
export function controllerReference(
  owner: KubeObject | { apiVersion: string; kind: string; metadata: { name: string; uid?: string } },
): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The owner reference of a given kind, if any. */
export function ownerOfKind(
  object: { metadata: { ownerReferences?: OwnerReference[] } },
  kind: string,
): OwnerReference | undefined {
  return (object.metadata.ownerReferences ?? []).find((ref) => ref.kind === kind);
}

export function managedLabels(extra: Record<string, string> = {}): Record<string, string> {
  return { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, ...extra };
}

export function isManagedByUs(object: { metadata: { labels?: Record<string, string> } }): boolean {
  return object.metadata.labels?.[LABEL_MANAGED_BY] === MANAGED_BY_VALUE;
}
