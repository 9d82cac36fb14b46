// Pure validation of the cluster-api-operator's provider objects (v1alpha2), with the rules its CRDs
// and webhooks enforce (exactly one fetch source, not both patch styles) plus what rendering needs
// (a semantic version). Every field the operator's API defines is accepted, so existing specs load.
import { didYouMean } from '../core/did-you-mean.js';
import { validateLabelSelector } from '../core/label-selector.js';
import { semver } from '../core/semver-functions.js';
import type { Problem } from '../core/problem.js';
import { OPERATOR_API_GROUP, OPERATOR_API_VERSION, PROVIDER_KINDS } from './provider-types.js';

const TOP_LEVEL_FIELDS = ['apiVersion', 'kind', 'metadata', 'spec', 'status'];
const SPEC_FIELDS = [
  'version',
  'manager',
  'deployment',
  'configSecret',
  'fetchConfig',
  'additionalManifests',
  'manifestPatches',
  'patches',
  'additionalDeployments',
];
const FETCH_FIELDS = ['url', 'oci', 'selector'];
const DEPLOYMENT_FIELDS = [
  'replicas',
  'nodeSelector',
  'tolerations',
  'affinity',
  'containers',
  'serviceAccountName',
  'imagePullSecrets',
];
const CONTAINER_FIELDS = ['name', 'imageUrl', 'args', 'env', 'resources', 'command'];
const MANAGER_FIELDS = [
  'syncPeriod',
  'leaderElection',
  'cacheNamespace',
  'gracefulShutDown',
  'controller',
  'metrics',
  'health',
  'webhook',
  'profilerAddress',
  'maxConcurrentReconciles',
  'verbosity',
  'featureGates',
  'additionalArgs',
];
const PATCH_FIELDS = ['patch', 'target'];
const REFERENCE_FIELDS = ['name', 'namespace'];
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unknownFields(value: Record<string, unknown>, known: string[], path: string, problems: Problem[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key))
      problems.push({
        path: path ? `${path}.${key}` : key,
        message: `is not a field of the cluster-api-operator's v1alpha2 API; known fields are ${known.join(', ')} (check the spelling)`,
      });
  }
}

function stringMap(value: unknown, path: string, problems: Problem[], what: string): void {
  if (value === undefined) return;
  if (!isRecord(value) || Object.values(value).some((entry) => typeof entry !== 'string'))
    problems.push({ path, message: `must map names to strings (${what})` });
}

function validateReference(value: unknown, path: string, problems: Problem[]): void {
  if (value === undefined) return;
  if (!isRecord(value) || typeof value.name !== 'string' || value.name === '') {
    problems.push({ path, message: 'must name an object: {name, namespace?}' });
    return;
  }
  unknownFields(value, REFERENCE_FIELDS, path, problems);
}

function validateManager(value: unknown, path: string, problems: Problem[]): void {
  if (value === undefined) return;
  if (!isRecord(value)) {
    problems.push({ path, message: 'must be a mapping (featureGates, verbosity, additionalArgs, ...)' });
    return;
  }
  unknownFields(value, MANAGER_FIELDS, path, problems);
  if (
    value.featureGates !== undefined &&
    (!isRecord(value.featureGates) || Object.values(value.featureGates).some((gate) => typeof gate !== 'boolean'))
  ) {
    problems.push({ path: `${path}.featureGates`, message: 'must map feature gate names to true or false' });
  }
  stringMap(
    value.additionalArgs,
    `${path}.additionalArgs`,
    problems,
    'flag -> value, e.g. "--insecure-diagnostics": "true"',
  );
  for (const field of ['verbosity', 'maxConcurrentReconciles'] as const) {
    const number = value[field];
    if (number !== undefined && (typeof number !== 'number' || !Number.isInteger(number) || number < 0))
      problems.push({
        path: `${path}.${field}`,
        message: `must be a whole number of 0 or more, found ${JSON.stringify(number)}`,
      });
  }
}

function validateDeployment(value: unknown, path: string, problems: Problem[]): void {
  if (value === undefined) return;
  if (!isRecord(value)) {
    problems.push({
      path,
      message: 'must be a mapping (replicas, nodeSelector, tolerations, affinity, containers, ...)',
    });
    return;
  }
  unknownFields(value, DEPLOYMENT_FIELDS, path, problems);
  if (
    value.replicas !== undefined &&
    (typeof value.replicas !== 'number' || !Number.isInteger(value.replicas) || value.replicas < 0)
  ) {
    problems.push({
      path: `${path}.replicas`,
      message: `must be a whole number of 0 or more, found ${JSON.stringify(value.replicas)}`,
    });
  }
  stringMap(value.nodeSelector, `${path}.nodeSelector`, problems, 'label -> value');
  if (value.tolerations !== undefined && !Array.isArray(value.tolerations))
    problems.push({ path: `${path}.tolerations`, message: 'must be a list of tolerations' });
  if (value.containers !== undefined) {
    if (!Array.isArray(value.containers)) {
      problems.push({ path: `${path}.containers`, message: 'must be a list of containers, each with a name' });
      return;
    }
    value.containers.forEach((container: unknown, index) => {
      const at = `${path}.containers[${index}]`;
      if (!isRecord(container) || typeof container.name !== 'string' || container.name === '') {
        problems.push({ path: at, message: 'must have the name of a container of the provider Deployment' });
        return;
      }
      unknownFields(container, CONTAINER_FIELDS, at, problems);
      stringMap(container.args, `${at}.args`, problems, 'flag -> value, e.g. "--v": "4"');
      if (container.imageUrl !== undefined && (typeof container.imageUrl !== 'string' || container.imageUrl === ''))
        problems.push({ path: `${at}.imageUrl`, message: 'must be an image reference' });
      if (
        container.command !== undefined &&
        (!Array.isArray(container.command) || container.command.some((part) => typeof part !== 'string'))
      )
        problems.push({ path: `${at}.command`, message: 'must be a list of strings' });
      if (
        container.env !== undefined &&
        (!Array.isArray(container.env) || container.env.some((env) => !isRecord(env) || typeof env.name !== 'string'))
      )
        problems.push({ path: `${at}.env`, message: 'must be a list of {name, value} entries' });
    });
  }
}

function validateFetchConfig(value: unknown, problems: Problem[]): void {
  if (value === undefined) return;
  if (!isRecord(value)) {
    problems.push({ path: 'spec.fetchConfig', message: 'must be a mapping with one of url, oci or selector' });
    return;
  }
  unknownFields(value, FETCH_FIELDS, 'spec.fetchConfig', problems);
  const given = FETCH_FIELDS.filter((field) => value[field] !== undefined && value[field] !== '');
  if (given.length !== 1) {
    problems.push({
      path: 'spec.fetchConfig',
      message:
        given.length === 0
          ? 'must set exactly one of url, oci or selector'
          : `sets ${given.join(' and ')}; set exactly one of url, oci or selector (as the cluster-api-operator requires)`,
    });
  }
  if (value.url !== undefined && (typeof value.url !== 'string' || !/^https?:\/\//.test(value.url)))
    problems.push({
      path: 'spec.fetchConfig.url',
      message: `must be a URL such as https://github.com/kubernetes-sigs/cluster-api/releases, found ${JSON.stringify(value.url)}`,
    });
  if (value.oci !== undefined && (typeof value.oci !== 'string' || value.oci === ''))
    problems.push({
      path: 'spec.fetchConfig.oci',
      message: 'must be an OCI reference such as registry.example.com/capi-providers/core:v1.8.0',
    });
  if (
    value.selector !== undefined &&
    (!isRecord(value.selector) ||
      (value.selector.matchLabels === undefined && value.selector.matchExpressions === undefined))
  ) {
    problems.push({
      path: 'spec.fetchConfig.selector',
      message: 'must be a label selector with matchLabels or matchExpressions',
    });
  } else if (value.selector !== undefined)
    problems.push(...validateLabelSelector(value.selector, 'spec.fetchConfig.selector'));
}

/** spec.manifestPatches or spec.patches (not both), each in the cluster-api-operator's shape. */
function validatePatches(spec: Record<string, unknown>, problems: Problem[]): void {
  if (spec.manifestPatches !== undefined && spec.patches !== undefined) {
    problems.push({
      path: 'spec.patches',
      message: 'cannot be set together with spec.manifestPatches; choose one (as the cluster-api-operator requires)',
    });
  }
  if (
    spec.manifestPatches !== undefined &&
    (!Array.isArray(spec.manifestPatches) || spec.manifestPatches.some((patch) => typeof patch !== 'string'))
  ) {
    problems.push({ path: 'spec.manifestPatches', message: 'must be a list of YAML merge patches, each a string' });
  }
  if (spec.patches !== undefined) {
    if (!Array.isArray(spec.patches))
      problems.push({ path: 'spec.patches', message: 'must be a list of {patch, target}' });
    else
      spec.patches.forEach((patch: unknown, index) => {
        if (!isRecord(patch) || typeof patch.patch !== 'string')
          problems.push({
            path: `spec.patches[${index}]`,
            message: 'must have a patch (a YAML string: a merge patch or a list of JSON patch operations)',
          });
        else unknownFields(patch, PATCH_FIELDS, `spec.patches[${index}]`, problems);
      });
  }
}

/** spec.additionalDeployments: Deployment names to {manager, deployment}, each checked as spec's own. */
function validateAdditionalDeployments(value: unknown, problems: Problem[]): void {
  if (value === undefined) return;
  if (!isRecord(value)) {
    problems.push({
      path: 'spec.additionalDeployments',
      message: 'must map Deployment names to {manager, deployment}',
    });
    return;
  }
  for (const [name, entry] of Object.entries(value)) {
    if (!isRecord(entry)) {
      problems.push({
        path: `spec.additionalDeployments.${name}`,
        message: 'must be a mapping with manager and/or deployment',
      });
      continue;
    }
    validateManager(entry.manager, `spec.additionalDeployments.${name}.manager`, problems);
    validateDeployment(entry.deployment, `spec.additionalDeployments.${name}.deployment`, problems);
  }
}

/** Every problem of a provider object (any of the seven kinds), or an empty list when it is valid. */
export function validateProvider(object: unknown): Problem[] {
  const problems: Problem[] = [];
  if (!isRecord(object)) return [{ message: 'a provider must be a YAML mapping' }];
  const kind = typeof object.kind === 'string' ? object.kind : '';
  if (!Object.hasOwn(PROVIDER_KINDS, kind)) {
    return [
      {
        path: 'kind',
        message: `${JSON.stringify(object.kind ?? null)} is not a kind of ${OPERATOR_API_GROUP}; known kinds are ${Object.keys(PROVIDER_KINDS).join(', ')}${didYouMean(kind, Object.keys(PROVIDER_KINDS))}`,
      },
    ];
  }
  if (object.apiVersion !== OPERATOR_API_VERSION)
    problems.push({
      path: 'apiVersion',
      message: `must be ${OPERATOR_API_VERSION}, found ${JSON.stringify(object.apiVersion ?? null)}`,
    });
  unknownFields(object, TOP_LEVEL_FIELDS, '', problems);
  const metadata = object.metadata;
  if (!isRecord(metadata) || typeof metadata.name !== 'string' || !DNS_LABEL.test(metadata.name)) {
    problems.push({
      path: 'metadata.name',
      message: `must be a lowercase name (letters, digits, "-"), found ${JSON.stringify(isRecord(metadata) ? (metadata.name ?? null) : null)}`,
    });
  }
  if (
    isRecord(metadata) &&
    metadata.namespace !== undefined &&
    (typeof metadata.namespace !== 'string' || !DNS_LABEL.test(metadata.namespace))
  ) {
    problems.push({
      path: 'metadata.namespace',
      message: `must be a namespace name, found ${JSON.stringify(metadata.namespace)}`,
    });
  }
  const spec = object.spec ?? {};
  if (!isRecord(spec)) {
    problems.push({ path: 'spec', message: 'must be a mapping' });
    return problems;
  }
  unknownFields(spec, SPEC_FIELDS, 'spec', problems);
  if (spec.version !== undefined) {
    if (typeof spec.version !== 'string' || semver.valid(spec.version) === null) {
      problems.push({
        path: 'spec.version',
        message: `must be a semantic version such as v1.8.0, found ${JSON.stringify(spec.version)}; leave it out to take the newest release`,
      });
    }
  }
  validateFetchConfig(spec.fetchConfig, problems);
  validateReference(spec.configSecret, 'spec.configSecret', problems);
  validateReference(spec.additionalManifests, 'spec.additionalManifests', problems);
  validateManager(spec.manager, 'spec.manager', problems);
  validateDeployment(spec.deployment, 'spec.deployment', problems);
  validatePatches(spec, problems);
  validateAdditionalDeployments(spec.additionalDeployments, problems);
  return problems;
}
