/** The resource types the fake serves, and the discovery documents that describe them. */
import type { KubeObject } from './kube-object.js';
import { RBAC_RESOURCES } from './rbac.js';
import { fieldInvalid, fieldRequired, badRequest, type StatusCause } from './status.js';

/** What a test (or a CRD) declares to make a kind servable. */
export interface ResourceDefinition {
  /** '' for the core group. */
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  statusSubresource?: boolean;
  singular?: string;
  shortNames?: string[];
  /** Discovery names this version the group's preferredVersion (default: the group's first version). */
  preferred?: boolean;
}

/**
 * A servable resource. Built-in kinds behave differently from custom resources on a real server,
 * and controllers trip over exactly those differences, so the fake keeps them.
 */
export interface ResourceType {
  group: string;
  version: string;
  apiVersion: string;
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  statusSubresource: boolean;
  shortNames: string[];
  /**
   * Custom resources: generation is tracked, PUT needs metadata.resourceVersion, strategic merge
   * patch is refused (415), list items keep apiVersion/kind, a body without apiVersion/kind is refused.
   */
  custom: boolean;
  /** Discovery names this version the group's preferredVersion. */
  preferred?: boolean;
  /** Normalises an object before it is stored (e.g. Secret stringData folded into data). */
  prepare?: (obj: KubeObject) => void;
  /** Field errors that the real server's validation would report (422). */
  validate?: (obj: KubeObject) => StatusCause[];
}

/** `v1` for the core group, `<group>/<version>` otherwise. */
function apiVersionOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

/** Completes a definition with the derived names; `builtin` selects built-in behaviour. */
function toResourceType(
  def: ResourceDefinition,
  builtin = false,
  extra: Pick<ResourceType, 'prepare' | 'validate'> = {},
): ResourceType {
  return {
    group: def.group,
    version: def.version,
    apiVersion: apiVersionOf(def.group, def.version),
    kind: def.kind,
    listKind: `${def.kind}List`,
    plural: def.plural,
    singular: def.singular ?? def.kind.toLowerCase(),
    namespaced: def.namespaced,
    statusSubresource: def.statusSubresource ?? false,
    shortNames: def.shortNames ?? [],
    ...(def.preferred ? { preferred: true } : {}),
    custom: !builtin,
    ...extra,
  };
}

function prepareSecret(obj: KubeObject): void {
  // The real server folds write-only stringData into base64 data and never returns it.
  const stringData = obj['stringData'] as Record<string, string> | undefined;
  const data = { ...((obj['data'] as Record<string, string> | undefined) ?? {}) };
  for (const [key, value] of Object.entries(data)) {
    if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) {
      throw badRequest(`Secret in version "v1" cannot be handled as a Secret: illegal base64 data for key "${key}"`);
    }
  }
  if (stringData) {
    for (const [key, value] of Object.entries(stringData))
      data[key] = Buffer.from(String(value), 'utf8').toString('base64');
    delete obj['stringData'];
  }
  if (Object.keys(data).length > 0) obj['data'] = data;
  obj['type'] ??= 'Opaque';
}

function prepareNamespace(obj: KubeObject): void {
  const name = obj.metadata.name ?? '';
  obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': name };
  const status = (obj['status'] as Record<string, unknown> | undefined) ?? {};
  obj['status'] = { ...status, phase: obj.metadata.deletionTimestamp ? 'Terminating' : 'Active' };
}

function validateEventsV1(obj: KubeObject): StatusCause[] {
  // events.k8s.io/v1 is strict where core/v1 events are lax; a recorder that forgets these fails only in a real cluster.
  const causes: StatusCause[] = [];
  for (const field of ['eventTime', 'reportingController', 'reportingInstance', 'action', 'reason']) {
    if (obj[field] === undefined || obj[field] === null || obj[field] === '') causes.push(fieldRequired(field));
  }
  const type = obj['type'];
  if (type !== 'Normal' && type !== 'Warning')
    causes.push({
      reason: 'FieldValueNotSupported',
      field: 'type',
      message: `type: Unsupported value: ${JSON.stringify(type ?? '')}: supported values: "Normal", "Warning"`,
    });
  return causes;
}

function validateCoreEvent(obj: KubeObject): StatusCause[] {
  const involved = obj['involvedObject'] as { namespace?: string } | undefined;
  if (involved?.namespace && involved.namespace !== obj.metadata.namespace) {
    return [fieldInvalid('involvedObject.namespace', involved.namespace, 'does not match event.namespace')];
  }
  return [];
}

const CORE: ResourceType[] = [
  toResourceType(
    {
      group: '',
      version: 'v1',
      kind: 'Namespace',
      plural: 'namespaces',
      namespaced: false,
      statusSubresource: true,
      shortNames: ['ns'],
    },
    true,
    { prepare: prepareNamespace },
  ),
  toResourceType({ group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true }, true, {
    prepare: prepareSecret,
  }),
  toResourceType(
    { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, shortNames: ['cm'] },
    true,
  ),
  toResourceType(
    { group: '', version: 'v1', kind: 'Event', plural: 'events', namespaced: true, shortNames: ['ev'] },
    true,
    { validate: validateCoreEvent },
  ),
  toResourceType(
    { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true },
    true,
  ),
  toResourceType(
    { group: 'events.k8s.io', version: 'v1', kind: 'Event', plural: 'events', namespaced: true, shortNames: ['ev'] },
    true,
    { validate: validateEventsV1 },
  ),
  ...RBAC_RESOURCES.map((definition) => toResourceType(definition, true)),
];

/** The CRDs a clusterstack controller meets in a management cluster. */
const DEFAULT_CUSTOM_RESOURCES: ResourceDefinition[] = [
  {
    group: 'cluster.x-k8s.io',
    version: 'v1beta1',
    kind: 'Cluster',
    plural: 'clusters',
    namespaced: true,
    statusSubresource: true,
    shortNames: ['cl'],
  },
  {
    group: 'clusterstack.x-k8s.io',
    version: 'v1alpha1',
    kind: 'ClusterStack',
    plural: 'clusterstacks',
    namespaced: true,
    statusSubresource: true,
    shortNames: ['csk'],
  },
  {
    group: 'clusterstack.x-k8s.io',
    version: 'v1alpha1',
    kind: 'ClusterStackRelease',
    plural: 'clusterstackreleases',
    namespaced: true,
    statusSubresource: true,
    shortNames: ['cskr'],
  },
  {
    group: 'clusterstack.x-k8s.io',
    version: 'v1alpha1',
    kind: 'ClusterAddon',
    plural: 'clusteraddons',
    namespaced: true,
    statusSubresource: true,
    shortNames: ['caddon'],
  },
  {
    group: 'infrastructure.clusterstack.x-k8s.io',
    version: 'v1alpha1',
    kind: 'OpenStackClusterStackReleaseTemplate',
    plural: 'openstackclusterstackreleasetemplates',
    namespaced: true,
  },
  {
    group: 'infrastructure.clusterstack.x-k8s.io',
    version: 'v1alpha1',
    kind: 'OpenStackClusterStackRelease',
    plural: 'openstackclusterstackreleases',
    namespaced: true,
    statusSubresource: true,
  },
  {
    group: 'infrastructure.clusterstack.x-k8s.io',
    version: 'v1alpha1',
    kind: 'OpenStackNodeImageRelease',
    plural: 'openstacknodeimagereleases',
    namespaced: true,
    statusSubresource: true,
  },
  {
    group: 'kustomize.toolkit.fluxcd.io',
    version: 'v1',
    kind: 'Kustomization',
    plural: 'kustomizations',
    namespaced: true,
    statusSubresource: true,
    shortNames: ['ks'],
  },
  {
    group: 'argoproj.io',
    version: 'v1alpha1',
    kind: 'Application',
    plural: 'applications',
    namespaced: true,
    shortNames: ['app', 'apps'],
  },
  {
    group: 'controlplane.cluster.x-k8s.io',
    version: 'v1beta1',
    kind: 'KubeadmControlPlane',
    plural: 'kubeadmcontrolplanes',
    namespaced: true,
    statusSubresource: true,
    shortNames: ['kcp'],
  },
  {
    group: 'infrastructure.cluster.x-k8s.io',
    version: 'v1beta1',
    kind: 'DockerCluster',
    plural: 'dockerclusters',
    namespaced: true,
    statusSubresource: true,
  },
];

const NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** metadata.name rules the real server enforces for nearly every kind (RFC 1123 subdomain). */
export function validateName(name: string): StatusCause[] {
  if (name.length > 253) return [fieldInvalid('metadata.name', name, 'must be no more than 253 characters')];
  if (!NAME_PATTERN.test(name)) {
    return [
      fieldInvalid(
        'metadata.name',
        name,
        `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
      ),
    ];
  }
  return [];
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * metadata.labels rules of the real server (apimachinery's ValidateLabels): a value of at most 63
 * characters, alphanumeric at both ends; a key `[prefix/]name` with a name of at most 63 characters.
 */
export function validateLabels(labels: Record<string, unknown> | undefined): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const [key, value] of Object.entries(labels ?? {})) {
    const slash = key.lastIndexOf('/');
    const prefix = slash < 0 ? undefined : key.slice(0, slash);
    const name = slash < 0 ? key : key.slice(slash + 1);
    if (
      name.length > 63 ||
      !LABEL_NAME.test(name) ||
      (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    ) {
      causes.push(
        fieldInvalid(
          'metadata.labels',
          key,
          "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
      );
    }
    if (typeof value !== 'string') {
      causes.push(fieldInvalid(`metadata.labels`, value, 'label values must be strings'));
      continue;
    }
    if (value.length > 63) causes.push(fieldInvalid('metadata.labels', value, 'must be no more than 63 characters'));
    else if (!LABEL_VALUE.test(value)) {
      causes.push(
        fieldInvalid(
          'metadata.labels',
          value,
          "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
      );
    }
  }
  return causes;
}

/** The set of servable resources, looked up by URL segments or by apiVersion and kind. */
export class ResourceRegistry {
  private readonly types: ResourceType[] = [];

  constructor(custom: ResourceDefinition[]) {
    for (const t of CORE) this.types.push(t);
    for (const def of [...DEFAULT_CUSTOM_RESOURCES, ...custom]) this.register(def);
  }

  /** Adds (or replaces) a custom resource type, as installing a CRD would. */
  register(def: ResourceDefinition): ResourceType {
    const type = toResourceType(def);
    const existing = this.types.findIndex(
      (t) => t.group === type.group && t.version === type.version && t.plural === type.plural,
    );
    if (existing >= 0) this.types.splice(existing, 1, type);
    else this.types.push(type);
    return type;
  }

  byPath(group: string, version: string, plural: string): ResourceType | undefined {
    return this.types.find((t) => t.group === group && t.version === version && t.plural === plural);
  }

  /** Finds a type by apiVersion and kind, plural or short name, as test hooks name them. */
  byApiVersion(apiVersion: string, kindOrPlural: string): ResourceType | undefined {
    const lower = kindOrPlural.toLowerCase();
    return this.types.find(
      (t) =>
        t.apiVersion === apiVersion &&
        (t.kind === kindOrPlural || t.plural === lower || t.singular === lower || t.shortNames.includes(lower)),
    );
  }

  groupVersions(): Array<{ group: string; versions: string[]; preferred?: string }> {
    const groups = new Map<string, string[]>();
    for (const t of this.types) {
      const versions = groups.get(t.group) ?? [];
      if (!versions.includes(t.version)) versions.push(t.version);
      groups.set(t.group, versions);
    }
    return [...groups].map(([group, versions]) => {
      const preferred = this.types.find((t) => t.group === group && t.preferred)?.version;
      return { group, versions, ...(preferred ? { preferred } : {}) };
    });
  }

  inGroupVersion(group: string, version: string): ResourceType[] {
    return this.types.filter((t) => t.group === group && t.version === version);
  }

  all(): readonly ResourceType[] {
    return this.types;
  }
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** `/api/v1` or `/apis/<group>/<version>`: what client-node's KubernetesObjectApi reads to find plurals. */
export function apiResourceList(registry: ResourceRegistry, group: string, version: string): unknown | undefined {
  const types = registry.inGroupVersion(group, version);
  if (types.length === 0) return undefined;
  const resources: unknown[] = [];
  for (const t of types) {
    const entry: Record<string, unknown> = {
      name: t.plural,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: VERBS,
    };
    if (t.shortNames.length > 0) entry['shortNames'] = t.shortNames;
    resources.push(entry);
    if (t.statusSubresource) {
      resources.push({
        name: `${t.plural}/status`,
        singularName: '',
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: ['get', 'patch', 'update'],
      });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersionOf(group, version), resources };
}

function apiGroup(group: string, versions: string[], preferred?: string): unknown {
  const entries = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return {
    name: group,
    versions: entries,
    preferredVersion: entries.find((entry) => entry.version === preferred) ?? entries[0],
  };
}

/** `/apis`: every named group with its versions. */
export function apiGroupList(registry: ResourceRegistry): unknown {
  const groups = registry
    .groupVersions()
    .filter((g) => g.group !== '')
    .map((g) => apiGroup(g.group, g.versions, g.preferred));
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

/** `/apis/<group>`, or undefined for an unknown group. */
export function apiGroupDocument(registry: ResourceRegistry, group: string): unknown | undefined {
  const found = registry.groupVersions().find((g) => g.group === group && group !== '');
  return found
    ? { kind: 'APIGroup', apiVersion: 'v1', ...(apiGroup(found.group, found.versions, found.preferred) as object) }
    : undefined;
}

/** `/api`: the legacy core group's versions. */
export function apiVersions(serverAddress: string): unknown {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

/** `/version`: a plausible current server. */
export const VERSION_INFO = {
  major: '1',
  minor: '31',
  gitVersion: 'v1.31.0-fake',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2024-08-13T00:00:00Z',
  goVersion: 'go1.22.5',
  compiler: 'gc',
  platform: 'linux/amd64',
};
