// Pure validation of our objects: returns every problem at once, each with its field path and a
// sentence saying what to do.
//
// The CRDs' CEL rules are checked by the CRDs themselves (crd-rules.ts, handed in as a checker):
// providerRef unless noProvider, the release-name length, the channel name and the versions'
// channel are said only there. The hand checks here are what CEL rules do not say: the schema's
// types, required fields, patterns and limits, and unknown fields (which the API server drops
// silently, where a person meant something).
import type { Problem } from '../core/problem.js';
import { parseStackVersion } from '../core/stack-version.js';
import type { CrdRuleChecker } from './crd-rules.js';
import { API_VERSION, type ClusterStack } from './types.js';
import { MAX_NESTING_DEPTH } from '../yaml/kube-yaml.js';

/**
 * The most versions a ClusterStack lists (the CRD's maxItems): the API server refuses a CEL rule
 * over a list whose cost it cannot bound.
 */
export const MAX_VERSIONS = 100;

const SEGMENT = /^[a-z0-9]+$/;
const KUBERNETES_MINOR = /^\d+\.\d+$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const TOP_LEVEL_FIELDS = ['apiVersion', 'kind', 'metadata', 'spec', 'status'];
const CLUSTER_STACK_SPEC_FIELDS = [
  'provider',
  'name',
  'kubernetesVersion',
  'channel',
  'versions',
  'autoSubscribe',
  'noProvider',
  'providerRef',
  'releaseSource',
  'addonValues',
  'addonStageValues',
];
const OBJECT_REFERENCE_FIELDS = ['apiVersion', 'kind', 'name', 'namespace', 'uid', 'resourceVersion', 'fieldPath'];
const CLUSTER_STACK_RELEASE_SPEC_FIELDS = ['providerRef'];
const CLUSTER_ADDON_SPEC_FIELDS = ['clusterStack', 'version', 'clusterRef', 'hook'];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unknownFields(value: Record<string, unknown>, known: string[], path: string, problems: Problem[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      problems.push({
        path: path ? `${path}.${key}` : key,
        message: `is not a field of this object; known fields are ${known.join(', ')} (check the spelling)`,
      });
    }
  }
}

function validateMetadata(object: Record<string, unknown>, problems: Problem[]): void {
  const metadata = object.metadata;
  if (!isRecord(metadata)) {
    problems.push({ path: 'metadata', message: 'is required, with at least a name' });
    return;
  }
  if (typeof metadata.name !== 'string' || !DNS_SUBDOMAIN.test(metadata.name) || metadata.name.length > 253) {
    problems.push({
      path: 'metadata.name',
      message: `must be a lowercase DNS name (letters, digits, "-", "."), found ${JSON.stringify(metadata.name ?? null)}`,
    });
  }
  if (
    metadata.namespace !== undefined &&
    (typeof metadata.namespace !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(metadata.namespace))
  ) {
    problems.push({
      path: 'metadata.namespace',
      message: `must be a namespace name, found ${JSON.stringify(metadata.namespace)}`,
    });
  }
}

function validateReference(value: unknown, path: string, problems: Problem[], required: string[]): void {
  if (!isRecord(value)) {
    problems.push({ path, message: 'must be an object reference with apiVersion, kind and name' });
    return;
  }
  unknownFields(value, OBJECT_REFERENCE_FIELDS, path, problems);
  for (const field of required) {
    if (typeof value[field] !== 'string' || value[field] === '')
      problems.push({ path: `${path}.${field}`, message: 'is required' });
  }
}

function validateTypeMeta(object: Record<string, unknown>, kind: string, problems: Problem[]): void {
  if (object.apiVersion !== API_VERSION)
    problems.push({
      path: 'apiVersion',
      message: `must be ${API_VERSION}, found ${JSON.stringify(object.apiVersion ?? null)}`,
    });
  if (object.kind !== kind) problems.push({ path: 'kind', message: `must be ${kind}` });
  unknownFields(object, TOP_LEVEL_FIELDS, '', problems);
  validateMetadata(object, problems);
}

/**
 * Levels of nodes in `value` as Kubernetes counts them (the object one, each value inside it one
 * more, a scalar too), walked without recursion and stopped once past `limit`.
 */
function nestingDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 1]];
  while (pending.length > 0 && deepest <= limit) {
    const [item, depth] = pending.pop()!;
    deepest = Math.max(deepest, depth);
    if (item !== null && typeof item === 'object')
      for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return deepest;
}

/** Every problem of a ClusterStack, the CRD's rules checked by `checkRules`, or an empty list when it is valid. */
export function validateClusterStack(object: unknown, checkRules: CrdRuleChecker): Problem[] {
  const problems: Problem[] = [];
  if (!isRecord(object)) return [{ message: 'a ClusterStack must be a YAML mapping' }];
  // The YAML reader refuses this for files; an object from an API server (which refuses it on write)
  // or a library caller gets here unchecked, and helm would be handed its values.
  if (nestingDepth(object, MAX_NESTING_DEPTH) > MAX_NESTING_DEPTH)
    return [
      {
        path: 'spec',
        message: `nests collections more than ${MAX_NESTING_DEPTH} levels deep, which Kubernetes refuses ("exceeded max depth of ${MAX_NESTING_DEPTH}"): flatten spec.addonStageValues`,
      },
    ];
  validateTypeMeta(object, 'ClusterStack', problems);
  const spec = object.spec;
  if (!isRecord(spec)) {
    problems.push({ path: 'spec', message: 'is required, with provider, name and kubernetesVersion' });
    return problems;
  }
  unknownFields(spec, CLUSTER_STACK_SPEC_FIELDS, 'spec', problems);
  validateStackIdentity(spec, problems);
  validateStackVersions(spec, problems);
  validateStackSwitches(spec, problems);
  validateAddonValues(spec, problems);
  problems.push(...checkRules('ClusterStack', object));
  return problems;
}

/** What release tags are made of: provider, name and Kubernetes minor. */
function validateStackIdentity(spec: Record<string, unknown>, problems: Problem[]): void {
  for (const field of ['provider', 'name'] as const) {
    const value = spec[field];
    if (typeof value !== 'string' || value === '') {
      problems.push({ path: `spec.${field}`, message: 'is required' });
    } else if (value.includes('-')) {
      problems.push({
        path: `spec.${field}`,
        message: `"${value}" contains "-", which release tags use as separator; use letters and digits only (e.g. ${value.replaceAll('-', '')})`,
      });
    } else if (!SEGMENT.test(value)) {
      problems.push({ path: `spec.${field}`, message: `"${value}" must be lowercase letters and digits only` });
    }
  }

  const kubernetesVersion = spec.kubernetesVersion;
  if (typeof kubernetesVersion !== 'string' || !KUBERNETES_MINOR.test(kubernetesVersion)) {
    const found = JSON.stringify(kubernetesVersion ?? null);
    problems.push({
      path: 'spec.kubernetesVersion',
      message: `must be a Kubernetes major.minor in quotes such as "1.30", found ${found}`,
    });
  }
}

/** The channel and the pinned versions, as far as the CRD's rules do not say already. */
function validateStackVersions(spec: Record<string, unknown>, problems: Problem[]): void {
  // Which names are channels is the CRD's rule; a value that is no string at all is the schema's type.
  if (spec.channel !== undefined && typeof spec.channel !== 'string') {
    problems.push({
      path: 'spec.channel',
      message: `must be a channel name such as stable, custom or alpha, found ${JSON.stringify(spec.channel)}`,
    });
  }
  if (spec.versions === undefined) return;
  if (!Array.isArray(spec.versions)) {
    problems.push({ path: 'spec.versions', message: 'must be a list of versions such as [v1, v2]' });
  } else if (spec.versions.length > MAX_VERSIONS) {
    problems.push({
      path: 'spec.versions',
      message: `lists ${spec.versions.length} versions; keep at most ${MAX_VERSIONS} (the CRD's limit, which bounds the cost of its CEL rules)`,
    });
  } else {
    spec.versions.forEach((version: unknown, index) => {
      const path = `spec.versions[${index}]`;
      if (typeof version !== 'string') {
        problems.push({ path, message: `must be a version string such as v1, found ${JSON.stringify(version)}` });
        return;
      }
      // The form of a version is the schema's pattern; its channel, the CRD's rule.
      try {
        parseStackVersion(version);
      } catch (error) {
        problems.push({ path, message: (error as Error).message });
      }
    });
  }
}

/** The switches and references: autoSubscribe, noProvider, providerRef, releaseSource. */
function validateStackSwitches(spec: Record<string, unknown>, problems: Problem[]): void {
  for (const field of ['autoSubscribe', 'noProvider'] as const) {
    if (spec[field] !== undefined && typeof spec[field] !== 'boolean') {
      problems.push({ path: `spec.${field}`, message: `must be true or false, found ${JSON.stringify(spec[field])}` });
    }
  }
  // Whether providerRef must be there is the CRD's rule; what it must hold, the schema's.
  if (spec.providerRef !== undefined && spec.providerRef !== null)
    validateReference(spec.providerRef, 'spec.providerRef', problems, ['apiVersion', 'kind', 'name']);
  if (spec.releaseSource !== undefined && (typeof spec.releaseSource !== 'string' || spec.releaseSource === '')) {
    problems.push({
      path: 'spec.releaseSource',
      message: 'must be a source such as github:owner/repo, oci://registry/repo or a directory',
    });
  }
}

/** Helm values for the addons: one mapping for all, and one per stage. */
function validateAddonValues(spec: Record<string, unknown>, problems: Problem[]): void {
  if (spec.addonValues !== undefined && !isRecord(spec.addonValues)) {
    problems.push({ path: 'spec.addonValues', message: 'must be a mapping of Helm values' });
  }
  if (spec.addonStageValues === undefined) return;
  if (!isRecord(spec.addonStageValues)) {
    problems.push({ path: 'spec.addonStageValues', message: 'must map stage names to mappings of Helm values' });
    return;
  }
  for (const [stage, values] of Object.entries(spec.addonStageValues)) {
    if (!isRecord(values))
      problems.push({ path: `spec.addonStageValues.${stage}`, message: 'must be a mapping of Helm values' });
  }
}

/** Every problem of a ClusterStackRelease, the CRD's rules checked by `checkRules`. */
export function validateClusterStackRelease(object: unknown, checkRules: CrdRuleChecker): Problem[] {
  const problems: Problem[] = [];
  if (!isRecord(object)) return [{ message: 'a ClusterStackRelease must be a YAML mapping' }];
  validateTypeMeta(object, 'ClusterStackRelease', problems);
  if (object.spec !== undefined) {
    if (!isRecord(object.spec)) problems.push({ path: 'spec', message: 'must be a mapping' });
    else {
      unknownFields(object.spec, CLUSTER_STACK_RELEASE_SPEC_FIELDS, 'spec', problems);
      if (object.spec.providerRef !== undefined)
        validateReference(object.spec.providerRef, 'spec.providerRef', problems, ['kind', 'name']);
    }
  }
  problems.push(...checkRules('ClusterStackRelease', object));
  return problems;
}

/** Every problem of a ClusterAddon, the CRD's rules checked by `checkRules`. */
export function validateClusterAddon(object: unknown, checkRules: CrdRuleChecker): Problem[] {
  const problems: Problem[] = [];
  if (!isRecord(object)) return [{ message: 'a ClusterAddon must be a YAML mapping' }];
  validateTypeMeta(object, 'ClusterAddon', problems);
  if (!isRecord(object.spec)) {
    problems.push({ path: 'spec', message: 'is required, with clusterRef' });
    return problems;
  }
  unknownFields(object.spec, CLUSTER_ADDON_SPEC_FIELDS, 'spec', problems);
  if (object.spec.clusterRef !== undefined)
    validateReference(object.spec.clusterRef, 'spec.clusterRef', problems, ['name']);
  for (const field of ['clusterStack', 'version', 'hook'] as const) {
    if (object.spec[field] !== undefined && typeof object.spec[field] !== 'string')
      problems.push({ path: `spec.${field}`, message: 'must be a string' });
  }
  problems.push(...checkRules('ClusterAddon', object));
  return problems;
}

/** Two ClusterStacks in one namespace for the same provider, name, Kubernetes minor and channel fight over releases. */
export function findDuplicateStacks(stacks: ClusterStack[]): Problem[] {
  const seen = new Map<string, ClusterStack>();
  const problems: Problem[] = [];
  for (const stack of stacks) {
    const { provider, name, kubernetesVersion } = stack.spec;
    const key = [
      stack.metadata.namespace ?? 'default',
      provider,
      name,
      kubernetesVersion,
      stack.spec.channel ?? 'stable',
    ].join('/');
    const first = seen.get(key);
    if (first) {
      problems.push({
        object: `ClusterStack ${stack.metadata.namespace ?? 'default'}/${stack.metadata.name}`,
        message: `duplicates ClusterStack ${first.metadata.name} (same provider ${provider}, name ${name}, Kubernetes ${kubernetesVersion} and channel ${stack.spec.channel ?? 'stable'}); keep one and merge their spec.versions`,
      });
    } else {
      seen.set(key, stack);
    }
  }
  return problems;
}
