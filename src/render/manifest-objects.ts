// Turns helm's output into the objects we write: one per file, namespaced where Kubernetes expects
// a namespace, labelled, with stable key order and file names.
import * as yaml from 'js-yaml';
import { LABEL_MANAGED_BY, LABEL_PART_OF, LABEL_VERSION, MANAGED_BY_VALUE, type KubeObject } from '../api/types.js';
import { sortKeysDeep } from './canonical-json.js';

/** Kinds that live outside namespaces, among those charts commonly render. */
const CLUSTER_SCOPED_KINDS = new Set([
  'APIService',
  'CertificateSigningRequest',
  'ClusterIssuer',
  'ClusterRole',
  'ClusterRoleBinding',
  'ComponentStatus',
  'CSIDriver',
  'CSINode',
  'CustomResourceDefinition',
  'FlowSchema',
  'GatewayClass',
  'IngressClass',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
  'MutatingWebhookConfiguration',
  'Namespace',
  'Node',
  'PersistentVolume',
  'PodSecurityPolicy',
  'PriorityClass',
  'PriorityLevelConfiguration',
  'RuntimeClass',
  'StorageClass',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'ValidatingWebhookConfiguration',
  'VolumeAttachment',
  'VolumeSnapshotClass',
  'CiliumClusterwideNetworkPolicy',
  'ClusterClass', // not cluster-scoped: listed below as exception
]);
CLUSTER_SCOPED_KINDS.delete('ClusterClass');

export interface ManifestLabels {
  /** app.kubernetes.io/part-of: the stack (`docker-ferrol-1-30`). */
  partOf: string;
  /** app.kubernetes.io/version: the stack or addon version. */
  version: string;
}

export class ManifestParseError extends Error {
  constructor(readonly origin: string, reason: string) {
    super(`output of ${origin} is not valid YAML: ${reason}`);
    this.name = 'ManifestParseError';
  }
}

/** Splits helm's multi-document output into objects; empty documents and lists are flattened away. */
export function parseRenderedObjects(text: string, origin: string): KubeObject[] {
  let documents: unknown[];
  try {
    documents = yaml.loadAll(text);
  } catch (error) {
    throw new ManifestParseError(origin, (error as { reason?: string }).reason ?? (error as Error).message);
  }
  const objects: KubeObject[] = [];
  const add = (document: unknown): void => {
    if (document === null || document === undefined) return;
    if (typeof document !== 'object' || Array.isArray(document)) throw new ManifestParseError(origin, 'a document is not a Kubernetes object');
    const record = document as Record<string, unknown>;
    if (typeof record.kind === 'string' && record.kind.endsWith('List') && Array.isArray(record.items)) {
      record.items.forEach(add);
      return;
    }
    const metadata = record.metadata as Record<string, unknown> | undefined;
    if (typeof record.apiVersion !== 'string' || typeof record.kind !== 'string' || typeof metadata?.name !== 'string') {
      throw new ManifestParseError(origin, `an object lacks apiVersion, kind or metadata.name: ${JSON.stringify(record).slice(0, 120)}`);
    }
    objects.push(record as KubeObject);
  };
  documents.forEach(add);
  return objects;
}

/** Kinds the same render defines as cluster-scoped through a CustomResourceDefinition. */
export function clusterScopedKindsFrom(objects: KubeObject[]): Set<string> {
  const kinds = new Set<string>();
  for (const object of objects) {
    const spec = (object as { spec?: { scope?: string; names?: { kind?: string } } }).spec;
    if (object.kind === 'CustomResourceDefinition' && spec?.scope === 'Cluster' && spec.names?.kind) kinds.add(spec.names.kind);
  }
  return kinds;
}

export function isNamespaced(kind: string, extraClusterScoped: Set<string>): boolean {
  return !CLUSTER_SCOPED_KINDS.has(kind) && !extraClusterScoped.has(kind);
}

/**
 * Sets the namespace where Kubernetes needs one and the chart left it out (published stacks rely on
 * this), adds our labels, and sorts keys. Never adds Argo CD or Flux tracking labels.
 */
export function normalizeObjects(objects: KubeObject[], defaultNamespace: string, labels: ManifestLabels): KubeObject[] {
  const clusterScoped = clusterScopedKindsFrom(objects);
  return objects.map((original) => {
    const object = structuredClone(original);
    const metadata = object.metadata;
    if (isNamespaced(object.kind, clusterScoped)) {
      if (!metadata.namespace) metadata.namespace = defaultNamespace;
    } else {
      delete metadata.namespace;
    }
    metadata.labels = {
      ...metadata.labels,
      [LABEL_MANAGED_BY]: MANAGED_BY_VALUE,
      [LABEL_PART_OF]: labels.partOf,
      [LABEL_VERSION]: labels.version,
    };
    return sortKeysDeep(object);
  });
}

function slug(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9.-]+/g, '-');
}

/**
 * Stable, unique file names: `<kind>-<name>.yaml`, with the namespace when it is not the directory's
 * default and the API group when two kinds share a name.
 */
export function fileNamesFor(objects: KubeObject[], defaultNamespace: string): string[] {
  const base = objects.map((object) => {
    const namespace = object.metadata.namespace && object.metadata.namespace !== defaultNamespace ? `.${object.metadata.namespace}` : '';
    return `${slug(object.kind)}-${slug(object.metadata.name)}${namespace}`;
  });
  const counts = new Map<string, number>();
  for (const name of base) counts.set(name, (counts.get(name) ?? 0) + 1);
  const withGroup = base.map((name, index) => {
    if ((counts.get(name) ?? 0) < 2) return name;
    const group = objects[index]!.apiVersion.includes('/') ? objects[index]!.apiVersion.split('/')[0]! : 'core';
    return `${name}.${slug(group)}`;
  });
  const seen = new Map<string, number>();
  return withGroup.map((name) => {
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    return `${count > 1 ? `${name}-${count}` : name}.yaml`;
  });
}

/** YAML for one object: keys already sorted, no line folding, no anchors. */
export function serializeObject(object: KubeObject): string {
  return yaml.dump(object, { lineWidth: -1, noRefs: true, sortKeys: true, quotingType: '"' });
}
