// What a Cluster API Cluster names, read alike from every version Cluster API serves:
// cluster.x-k8s.io/v1beta1 names its ClusterClass in `spec.topology.class` (and `classNamespace`),
// v1beta2 in `spec.topology.classRef` ({name, namespace}); v1beta1 references its control plane and
// infrastructure cluster with `{apiVersion, kind, name, namespace}`, v1beta2 with
// `{apiGroup, kind, name}` (always in the Cluster's namespace). Everything that reads a Cluster's
// class or references goes through here, so no reader knows one version only.

/** What a Cluster says about its ClusterClass. */
export type ClusterClassReading =
  /** No `spec.topology`: not a topology Cluster, not ours. */
  | { kind: 'none' }
  /** The class and the namespace it is looked up in (the Cluster's unless named); `path` is the field that names it. */
  | { kind: 'class'; name: string; namespace: string; path: string }
  /** A topology that names no usable class: `path` is the field, `message` says what is wrong there. */
  | { kind: 'invalid'; path: string; message: string };

/** A control plane or infrastructure cluster a Cluster references. */
export interface ClusterReference {
  /** The API group ('' for the core group); undefined when the reference names neither apiVersion nor apiGroup. */
  group?: string;
  /** The apiVersion, when the reference names one (v1beta1 does; v1beta2 names the group only). */
  apiVersion?: string;
  kind: string;
  name: string;
  namespace: string;
}

interface ClusterLike {
  apiVersion?: unknown;
  metadata: { namespace?: string | undefined };
  spec?: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How a YAML value reads in a message: its type, and short scalars as they are. */
function describeValue(value: unknown): string {
  if (Array.isArray(value)) return `a list (${JSON.stringify(value).slice(0, 60)})`;
  if (isRecord(value)) return 'a mapping';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 60))}`;
  return `${typeof value === 'number' ? 'the number' : typeof value === 'boolean' ? 'the boolean' : 'the value'} ${String(value)}`;
}

/** The Cluster API version a stack whose ClusterClass version cannot be read is taken to use (every stack before Cluster API 1.11). */
export const DEFAULT_CLUSTER_API_VERSION = 'cluster.x-k8s.io/v1beta1';

/** Whether a Cluster of this apiVersion names its class with `classRef` (v1beta2 and later) rather than `class`. */
export function usesClassRef(apiVersion: unknown): boolean {
  const version =
    typeof apiVersion === 'string' && apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : '';
  return !(version === 'v1beta1' || version.startsWith('v1alpha'));
}

/** The ClusterClass a Cluster names (v1beta1 `topology.class`, v1beta2 `topology.classRef`), or why it names none it can use. */
export function clusterClassOf(cluster: ClusterLike): ClusterClassReading {
  const spec = isRecord(cluster.spec) ? cluster.spec : {};
  const topology = spec['topology'];
  if (topology === undefined || topology === null) return { kind: 'none' };
  const ownNamespace = cluster.metadata.namespace ?? 'default';
  if (!isRecord(topology))
    return {
      kind: 'invalid',
      path: 'spec.topology',
      message: `is ${describeValue(topology)}; it must be a mapping that names the ClusterClass (${usesClassRef(cluster.apiVersion) ? 'classRef.name' : 'class'}) and the Kubernetes version`,
    };
  // An object without apiVersion (a runtime hook's request may carry one so) is read by the field it has.
  const byRef =
    typeof cluster.apiVersion === 'string' && cluster.apiVersion.includes('/')
      ? usesClassRef(cluster.apiVersion)
      : topology['classRef'] !== undefined;
  if (byRef) {
    const ref = topology['classRef'];
    const hint =
      typeof topology['class'] === 'string'
        ? `; ${String(cluster.apiVersion)} names it in spec.topology.classRef.name (spec.topology.class is v1beta1's field)`
        : '';
    if (ref === undefined || ref === null)
      return {
        kind: 'invalid',
        path: 'spec.topology.classRef',
        message: `is missing: a Cluster with spec.topology must name its ClusterClass in classRef.name${hint}`,
      };
    if (!isRecord(ref))
      return {
        kind: 'invalid',
        path: 'spec.topology.classRef',
        message: `is ${describeValue(ref)}; it must be a mapping with name (and namespace)`,
      };
    return readClass(
      ref['name'],
      ref['namespace'],
      'spec.topology.classRef.name',
      'spec.topology.classRef.namespace',
      ownNamespace,
      hint,
    );
  }
  const hint =
    topology['classRef'] !== undefined
      ? `; ${String(cluster.apiVersion)} names it in spec.topology.class (spec.topology.classRef is v1beta2's field)`
      : '';
  return readClass(
    topology['class'],
    topology['classNamespace'],
    'spec.topology.class',
    'spec.topology.classNamespace',
    ownNamespace,
    hint,
  );
}

function readClass(
  name: unknown,
  namespace: unknown,
  path: string,
  namespacePath: string,
  ownNamespace: string,
  hint: string,
): ClusterClassReading {
  if (name === undefined || name === null || name === '')
    return {
      kind: 'invalid',
      path,
      message: `is missing: a Cluster with spec.topology must name its ClusterClass here${hint}`,
    };
  if (typeof name !== 'string')
    return { kind: 'invalid', path, message: `is ${describeValue(name)}; it must be the ClusterClass name, a string` };
  if (namespace !== undefined && namespace !== null && namespace !== '' && typeof namespace !== 'string')
    return {
      kind: 'invalid',
      path: namespacePath,
      message: `is ${describeValue(namespace)}; it must be a namespace name, a string`,
    };
  return {
    kind: 'class',
    name,
    namespace: typeof namespace === 'string' && namespace !== '' ? namespace : ownNamespace,
    path,
  };
}

/**
 * The object a Cluster's `spec.controlPlaneRef` or `spec.infrastructureRef` names, in either
 * version's shape; undefined when the reference is absent or names no kind and name.
 */
export function clusterReference(
  cluster: ClusterLike,
  field: 'controlPlaneRef' | 'infrastructureRef',
): ClusterReference | undefined {
  const ref = isRecord(cluster.spec) ? cluster.spec[field] : undefined;
  if (
    !isRecord(ref) ||
    typeof ref['kind'] !== 'string' ||
    typeof ref['name'] !== 'string' ||
    ref['kind'] === '' ||
    ref['name'] === ''
  )
    return undefined;
  const apiVersion = typeof ref['apiVersion'] === 'string' && ref['apiVersion'] !== '' ? ref['apiVersion'] : undefined;
  const group =
    apiVersion !== undefined
      ? apiVersion.includes('/')
        ? apiVersion.slice(0, apiVersion.indexOf('/'))
        : ''
      : typeof ref['apiGroup'] === 'string'
        ? ref['apiGroup']
        : undefined;
  // v1beta2's ContractVersionedObjectReference has no namespace: the object lives beside the Cluster.
  const namespace =
    typeof ref['namespace'] === 'string' && ref['namespace'] !== ''
      ? ref['namespace']
      : (cluster.metadata.namespace ?? 'default');
  return {
    ...(group !== undefined ? { group } : {}),
    ...(apiVersion !== undefined ? { apiVersion } : {}),
    kind: ref['kind'],
    name: ref['name'],
    namespace,
  };
}
