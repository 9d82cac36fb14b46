// The scheduler configuration, in openMCP's format (the `scheduler:` section of the openmcp-operator
// config, or that section alone): scope, strategy and purposeMappings, each purpose mapped to a
// Cluster template whose `spec.profile` names a ClusterProfile we publish (one per ClusterStack).
// Read with Kubernetes' YAML; every problem is reported at once, and nothing is guessed: an unknown
// field, strategy or tenancy, or a purpose given twice, is refused.
// Label selectors mean what they mean in the operator (internal/config/config_scheduler.go):
// `selectors.requests` picks the ClusterRequests this scheduler handles, `selectors.clusters` the
// Clusters it may see at all, and a purpose's `selector` narrows the Clusters that purpose may share
// (ANDed with `selectors.clusters`). A template whose labels match neither would make Clusters the
// scheduler could never find again: refused, as the operator refuses it.
// openMCP's template has nothing for what a CAPI topology Cluster may need beyond class and version
// (clusterNetwork, control plane replicas, workers, variables). Those come from our own section
// beside `scheduler:`, never from fields added to openMCP's: `clusterstack.clusterSpecs.<purpose>`,
// a part of a CAPI Cluster spec merged into every Cluster made for that purpose.
import {
  combineLabelSelectors,
  type LabelSelector,
  matchesLabelSelector,
  validateLabelSelector,
} from '../core/label-selector.js';
import { InputError, type Problem } from '../core/problem.js';
import { sha256Digest } from '../release/content-digest.js';
import { canonicalJson } from '../render/canonical-json.js';
import { decodeYamlDocuments, YamlDecodeError } from '../yaml/kube-yaml.js';

const SCHEDULER_SCOPES = ['Cluster', 'Namespaced'] as const;
const SCHEDULER_STRATEGIES = ['Balanced', 'Random', 'Simple'] as const;
const TENANCIES = ['Exclusive', 'Shared'] as const;

type SchedulerScope = (typeof SCHEDULER_SCOPES)[number];
type SchedulerStrategy = (typeof SCHEDULER_STRATEGIES)[number];
type Tenancy = (typeof TENANCIES)[number];

/** What a purpose maps to (openMCP's ClusterDefinition). */
export interface ClusterDefinition {
  /** Requests per shared cluster; 0 is unlimited (and always 0 for Exclusive). */
  tenancyCount: number;
  template: {
    metadata: {
      name?: string;
      generateName?: string;
      namespace?: string;
      labels: Record<string, string>;
      annotations: Record<string, string>;
    };
    spec: { profile: string; tenancy: Tenancy };
  };
  /** Our extension (`clusterstack.clusterSpecs.<purpose>`): what the generated Cluster's spec gets besides class and version. */
  clusterSpec?: ClusterSpecTemplate;
  /** The purpose's own `selector`, as written (see clusterSelectorOf for the one in effect). */
  selector?: LabelSelector;
}

/** The part of a CAPI Cluster (cluster.x-k8s.io/v1beta1) spec a purpose may set. */
interface ClusterSpecTemplate {
  clusterNetwork?: Record<string, unknown>;
  topology?: {
    controlPlane?: Record<string, unknown>;
    workers?: Record<string, unknown>;
    variables?: { name: string; value: unknown }[];
  };
}

export interface SchedulerConfig {
  /** Where the configuration came from, for messages. */
  origin: string;
  /** Digest of what it says (recorded in provenance.json): same meaning, same digest. */
  digest: string;
  scope: SchedulerScope;
  strategy: SchedulerStrategy;
  /** Sorted by purpose. */
  purposeMappings: Map<string, ClusterDefinition>;
  /** `selectors.requests` and `selectors.clusters`; absent: every request, every Cluster. */
  selectors: { requests?: LabelSelector; clusters?: LabelSelector };
}

/** Whether the scheduler handles a ClusterRequest with these labels (`selectors.requests`). */
export function handlesRequest(config: SchedulerConfig, labels: Record<string, string> | undefined): boolean {
  return config.selectors.requests === undefined || matchesLabelSelector(config.selectors.requests, labels);
}

/** The selector a purpose's Clusters must match to be shared: its own `selector` and `selectors.clusters`, both. */
export function clusterSelectorOf(config: SchedulerConfig, definition: ClusterDefinition): LabelSelector | undefined {
  return combineLabelSelectors(definition.selector, config.selectors.clusters);
}

const TOP_FIELDS = ['scope', 'strategy', 'purposeMappings', 'selectors'];
/** Our section beside openMCP's `scheduler:`. */
const EXTENSION_SECTION = 'clusterstack';
const EXTENSION_FIELDS = ['clusterSpecs'];
const CLUSTER_SPEC_FIELDS = ['clusterNetwork', 'topology'];
const TOPOLOGY_FIELDS = ['controlPlane', 'workers', 'variables'];
/** Set by clusterstack (class, version, classNamespace) or by CAPI (controlPlaneEndpoint): never from a template. */
const OWNED_SPEC_FIELDS: Record<string, string> = {
  controlPlaneEndpoint: 'Cluster API fills it in',
  'topology.class': 'the profile decides it (the newest ready release of its stack)',
  'topology.version': 'the profile decides it (exactly the Kubernetes version of that release)',
  'topology.classNamespace': 'clusterstack sets it when the stack lives in another namespace',
};
const SELECTOR_FIELDS = ['requests', 'clusters'];
const DEFINITION_FIELDS = ['tenancyCount', 'template', 'selector'];
const TEMPLATE_FIELDS = ['metadata', 'spec'];
const METADATA_FIELDS = ['name', 'generateName', 'namespace', 'labels', 'annotations'];
// openMCP's Cluster spec: `purposes` and `kubernetes` are accepted (the profile's release decides the
// version), `config` (a provider-specific ClusterConfig) has no meaning for a ClusterClass.
const SPEC_FIELDS = ['profile', 'tenancy', 'purposes', 'kubernetes'];
/** A purpose becomes a label value and part of cluster names. */
const PURPOSE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses and validates a scheduler configuration; throws InputError naming every problem. */
export function parseSchedulerConfig(text: string, origin: string): SchedulerConfig {
  const problems: Problem[] = [];
  const fail = (path: string | undefined, message: string): void => {
    problems.push({ source: origin, ...(path ? { path } : {}), message });
  };
  let value: unknown;
  try {
    const documents = decodeYamlDocuments(text).filter(
      (document) => document.value !== null && document.value !== undefined,
    );
    if (documents.length !== 1)
      throw new InputError([
        {
          source: origin,
          message: `must hold exactly one YAML document with the scheduler configuration, found ${documents.length}`,
        },
      ]);
    const [document] = documents;
    // Two entries for one purpose (or any key given twice) would silently keep the last: refused.
    for (const duplicate of document!.duplicateKeys)
      fail(
        undefined,
        `line ${duplicate.line}: key "${duplicate.key}" is given more than once; keep one (for a purpose: one mapping per purpose)`,
      );
    value = document!.value;
  } catch (error) {
    if (error instanceof YamlDecodeError)
      throw new InputError([{ source: origin, message: `is not valid YAML: ${error.message}` }]);
    throw error;
  }
  // The openmcp-operator's config file holds it under `scheduler:`; the section alone works too.
  // Our own section (`clusterstack:`) sits beside `scheduler:`, so openMCP's stays openMCP's.
  let extension: unknown;
  if (isRecord(value) && isRecord(value.scheduler)) {
    // Other sections of the operator's file (managedControlPlane, ...) are not ours to read.
    extension = value[EXTENSION_SECTION];
    value = value.scheduler;
  }
  if (!isRecord(value))
    throw new InputError([
      {
        source: origin,
        message: 'must be a mapping with scope, strategy and purposeMappings (or a `scheduler:` section holding them)',
      },
    ]);
  if (value[EXTENSION_SECTION] !== undefined)
    fail(
      EXTENSION_SECTION,
      `goes beside the scheduler: section, not inside it (openMCP's section has no such field): put scheduler: and ${EXTENSION_SECTION}: at the top of the file`,
    );
  unknown(value, TOP_FIELDS.concat(value[EXTENSION_SECTION] !== undefined ? [EXTENSION_SECTION] : []), '', fail);
  const selectors = parseSelectors(value.selectors, fail);

  const scope = value.scope ?? 'Cluster';
  if (!SCHEDULER_SCOPES.includes(scope as SchedulerScope))
    fail('scope', `must be one of ${SCHEDULER_SCOPES.join(', ')}, not ${JSON.stringify(scope)}`);
  const strategy = value.strategy ?? 'Balanced';
  if (!SCHEDULER_STRATEGIES.includes(strategy as SchedulerStrategy))
    fail('strategy', `must be one of ${SCHEDULER_STRATEGIES.join(', ')}, not ${JSON.stringify(strategy)}`);

  const purposeMappings = parsePurposeMappings(value.purposeMappings ?? {}, selectors, fail);
  parseExtension(extension, purposeMappings, fail);
  if (problems.length > 0)
    throw new InputError(
      problems,
      `scheduler configuration ${origin} is not valid; nothing was rendered or written:\n  ${problems.map((p) => `${p.path ? `${p.path}: ` : ''}${p.message}`).join('\n  ')}`,
    );
  // Selectors only when given: a configuration without them keeps the digest it always had.
  const digest = sha256Digest(
    canonicalJson({
      scope,
      strategy,
      purposeMappings: Object.fromEntries(purposeMappings),
      ...(Object.keys(selectors).length > 0 ? { selectors } : {}),
    }),
  );
  return {
    origin,
    digest,
    scope: scope as SchedulerScope,
    strategy: strategy as SchedulerStrategy,
    purposeMappings,
    selectors,
  };
}

/** `purposeMappings: {<purpose>: {template, tenancyCount, selector?}}`, in purpose order; invalid purposes are left out. */
function parsePurposeMappings(
  mappings: unknown,
  selectors: SchedulerConfig['selectors'],
  fail: (path: string, message: string) => void,
): Map<string, ClusterDefinition> {
  const purposeMappings = new Map<string, ClusterDefinition>();
  if (!isRecord(mappings)) {
    fail('purposeMappings', 'must be a mapping from purpose to {template, tenancyCount}');
    return purposeMappings;
  }
  for (const purpose of Object.keys(mappings).sort()) {
    const definition = parseDefinition(mappings[purpose], `purposeMappings.${purpose}`, fail);
    if (!PURPOSE.test(purpose))
      fail(
        `purposeMappings.${purpose}`,
        'a purpose must be a lowercase DNS label (letters, digits, "-", at most 63): it becomes a label value and part of cluster names',
      );
    if (definition) {
      templateMatchesSelectors(definition, selectors.clusters, `purposeMappings.${purpose}`, fail);
      purposeMappings.set(purpose, definition);
    }
  }
  return purposeMappings;
}

/** `selectors: {requests?, clusters?}`, each a Kubernetes label selector; `null` is left out, as the operator does. */
function parseSelectors(value: unknown, fail: (path: string, message: string) => void): SchedulerConfig['selectors'] {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) {
    fail(
      'selectors',
      'must be a mapping with requests and/or clusters, each a label selector (matchLabels, matchExpressions)',
    );
    return {};
  }
  unknown(value, SELECTOR_FIELDS, 'selectors', fail);
  const out: SchedulerConfig['selectors'] = {};
  for (const field of ['requests', 'clusters'] as const) {
    const selector = parseSelector(value[field], `selectors.${field}`, fail);
    if (selector) out[field] = selector;
  }
  return out;
}

function parseSelector(
  value: unknown,
  path: string,
  fail: (path: string, message: string) => void,
): LabelSelector | undefined {
  if (value === undefined || value === null) return undefined;
  const problems = validateLabelSelector(value, path);
  for (const problem of problems) fail(problem.path ?? path, problem.message);
  return problems.length === 0 ? (value as LabelSelector) : undefined;
}

/**
 * The operator's check: a template's labels must match `selectors.clusters` and the purpose's own
 * selector, or the Clusters made from it would be invisible to the scheduler that made them.
 */
function templateMatchesSelectors(
  definition: ClusterDefinition,
  clusters: LabelSelector | undefined,
  path: string,
  fail: (path: string, message: string) => void,
): void {
  const { labels } = definition.template.metadata;
  const shown = JSON.stringify(labels);
  if (clusters && !matchesLabelSelector(clusters, labels))
    fail(
      `${path}.template.metadata.labels`,
      `${shown} do not match selectors.clusters: the scheduler could never find the Clusters it makes for this purpose; add the labels the selector asks for`,
    );
  if (definition.selector && !matchesLabelSelector(definition.selector, labels))
    fail(
      `${path}.template.metadata.labels`,
      `${shown} do not match ${path}.selector: the scheduler could never find the Clusters it makes for this purpose; add the labels the selector asks for`,
    );
}

/** `clusterstack: {clusterSpecs: {<purpose>: <part of a CAPI Cluster spec>}}`, set on each purpose's definition. */
function parseExtension(
  extension: unknown,
  mappings: Map<string, ClusterDefinition>,
  fail: (path: string, message: string) => void,
): void {
  if (extension === undefined || extension === null) return;
  if (!isRecord(extension)) {
    fail(EXTENSION_SECTION, 'must be a mapping with clusterSpecs');
    return;
  }
  unknown(extension, EXTENSION_FIELDS, EXTENSION_SECTION, fail);
  const specs = extension.clusterSpecs ?? {};
  if (!isRecord(specs)) {
    fail(
      `${EXTENSION_SECTION}.clusterSpecs`,
      'must be a mapping from purpose to a part of a Cluster spec (clusterNetwork, topology.controlPlane, topology.workers, topology.variables)',
    );
    return;
  }
  for (const purpose of Object.keys(specs).sort()) {
    const path = `${EXTENSION_SECTION}.clusterSpecs.${purpose}`;
    const spec = specs[purpose];
    const definition = mappings.get(purpose);
    if (!definition) {
      fail(
        path,
        `purpose "${purpose}" is not in scheduler.purposeMappings (known: ${[...mappings.keys()].join(', ') || 'none'})`,
      );
      continue;
    }
    if (!isRecord(spec)) {
      fail(path, 'must be a mapping: the part of a Cluster spec every Cluster for this purpose gets');
      continue;
    }
    const parsed: ClusterSpecTemplate = {};
    for (const [field, why] of Object.entries(OWNED_SPEC_FIELDS)) {
      const [head, tail] = field.split('.') as [string, string | undefined];
      const present =
        tail === undefined
          ? spec[head] !== undefined
          : isRecord(spec[head]) && (spec[head] as Record<string, unknown>)[tail] !== undefined;
      if (present) fail(`${path}.${field}`, `cannot be set here: ${why}`);
    }
    for (const key of Object.keys(spec))
      if (!CLUSTER_SPEC_FIELDS.includes(key) && OWNED_SPEC_FIELDS[key] === undefined)
        fail(
          `${path}.${key}`,
          `is not a field clusterstack sets on a generated Cluster; known fields are ${CLUSTER_SPEC_FIELDS.join(', ')}`,
        );
    if (spec.clusterNetwork !== undefined) {
      if (isRecord(spec.clusterNetwork)) parsed.clusterNetwork = spec.clusterNetwork;
      else
        fail(
          `${path}.clusterNetwork`,
          "must be a mapping (CAPI's clusterNetwork: pods, services, serviceDomain, apiServerPort)",
        );
    }
    const topology = parseTopology(spec.topology, path, fail);
    if (topology) parsed.topology = topology;
    if (Object.keys(parsed).length > 0) definition.clusterSpec = parsed;
  }
}

/** A clusterSpecs entry's `topology`: controlPlane, workers and variables; undefined when absent, invalid or empty. */
function parseTopology(
  topology: unknown,
  path: string,
  fail: (path: string, message: string) => void,
): ClusterSpecTemplate['topology'] {
  if (topology === undefined) return undefined;
  if (!isRecord(topology)) {
    fail(`${path}.topology`, 'must be a mapping with controlPlane, workers or variables');
    return undefined;
  }
  const out: NonNullable<ClusterSpecTemplate['topology']> = {};
  for (const key of Object.keys(topology))
    if (!TOPOLOGY_FIELDS.includes(key) && OWNED_SPEC_FIELDS[`topology.${key}`] === undefined)
      fail(
        `${path}.topology.${key}`,
        `is not a field clusterstack sets on a generated Cluster; known fields are ${TOPOLOGY_FIELDS.join(', ')}`,
      );
  for (const key of ['controlPlane', 'workers'] as const) {
    if (topology[key] === undefined) continue;
    if (isRecord(topology[key])) out[key] = topology[key] as Record<string, unknown>;
    else fail(`${path}.topology.${key}`, 'must be a mapping');
  }
  if (topology.variables !== undefined) {
    const variables = topology.variables;
    if (
      !Array.isArray(variables) ||
      !variables.every((v) => isRecord(v) && typeof v.name === 'string' && v.name !== '' && 'value' in v)
    )
      fail(`${path}.topology.variables`, 'must be a list of {name, value}');
    else out.variables = variables as { name: string; value: unknown }[];
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function unknown(
  value: Record<string, unknown>,
  known: string[],
  path: string,
  fail: (path: string, message: string) => void,
): void {
  for (const key of Object.keys(value))
    if (!known.includes(key))
      fail(path ? `${path}.${key}` : key, `is not a field here; known fields are ${known.join(', ')}`);
}

function stringMap(
  value: unknown,
  path: string,
  fail: (path: string, message: string) => void,
  label: boolean,
): Record<string, string> {
  if (value === undefined) return {};
  if (!isRecord(value)) {
    fail(path, 'must be a mapping of strings');
    return {};
  }
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') fail(`${path}.${key}`, `must be a string (quote it: "${String(item)}")`);
    else if (label && !LABEL_VALUE.test(item)) fail(`${path}.${key}`, `"${item}" is not a valid label value`);
    else out[key] = item;
  }
  return out;
}

function parseDefinition(
  value: unknown,
  path: string,
  fail: (path: string, message: string) => void,
): ClusterDefinition | undefined {
  if (!isRecord(value)) {
    fail(path, 'must be a mapping with template (and tenancyCount)');
    return undefined;
  }
  unknown(value, DEFINITION_FIELDS, path, fail);
  const selector = parseSelector(value.selector, `${path}.selector`, fail);
  const tenancyCount = value.tenancyCount ?? 0;
  if (typeof tenancyCount !== 'number' || !Number.isInteger(tenancyCount) || tenancyCount < 0)
    fail(`${path}.tenancyCount`, `must be an integer of 0 or more (0: unlimited), not ${JSON.stringify(tenancyCount)}`);
  const template = value.template;
  if (!isRecord(template)) {
    fail(`${path}.template`, 'is required: {metadata?, spec: {profile, tenancy}}');
    return undefined;
  }
  unknown(template, TEMPLATE_FIELDS, `${path}.template`, fail);
  const metadata = template.metadata ?? {};
  const spec = template.spec;
  const parsed: ClusterDefinition['template'] = {
    metadata: { labels: {}, annotations: {} },
    spec: { profile: '', tenancy: 'Shared' },
  };
  if (!isRecord(metadata)) fail(`${path}.template.metadata`, 'must be a mapping');
  else {
    unknown(metadata, METADATA_FIELDS, `${path}.template.metadata`, fail);
    for (const key of ['name', 'generateName', 'namespace'] as const) {
      const item = metadata[key];
      if (item === undefined) continue;
      if (typeof item !== 'string' || item === '')
        fail(`${path}.template.metadata.${key}`, 'must be a non-empty string');
      else parsed.metadata[key] = item;
    }
    if (parsed.metadata.namespace !== undefined && !NAMESPACE.test(parsed.metadata.namespace))
      fail(`${path}.template.metadata.namespace`, `"${parsed.metadata.namespace}" is not a namespace name`);
    // Cluster names are DNS labels; a suffix is added to generateName.
    if (parsed.metadata.name !== undefined && !NAMESPACE.test(parsed.metadata.name))
      fail(
        `${path}.template.metadata.name`,
        `"${parsed.metadata.name}" is not a valid Cluster name (lowercase letters, digits, "-", at most 63)`,
      );
    if (parsed.metadata.generateName !== undefined && !/^[a-z0-9][-a-z0-9]{0,51}$/.test(parsed.metadata.generateName))
      fail(
        `${path}.template.metadata.generateName`,
        `"${parsed.metadata.generateName}" is not a valid name prefix (lowercase letters, digits, "-", at most 52: a suffix follows)`,
      );
    parsed.metadata.labels = stringMap(metadata.labels, `${path}.template.metadata.labels`, fail, true);
    parsed.metadata.annotations = stringMap(metadata.annotations, `${path}.template.metadata.annotations`, fail, false);
  }
  if (!isRecord(spec)) fail(`${path}.template.spec`, 'is required: {profile, tenancy}');
  else {
    unknown(spec, SPEC_FIELDS, `${path}.template.spec`, fail);
    if (typeof spec.profile !== 'string' || spec.profile === '')
      fail(
        `${path}.template.spec.profile`,
        'is required: the name of a ClusterProfile (one per ClusterStack, see docs/requests.md)',
      );
    else parsed.spec.profile = spec.profile;
    if (spec.tenancy === undefined)
      fail(`${path}.template.spec.tenancy`, `is required: one of ${TENANCIES.join(', ')}`);
    else if (!TENANCIES.includes(spec.tenancy as Tenancy))
      fail(
        `${path}.template.spec.tenancy`,
        `must be one of ${TENANCIES.join(', ')}, not ${JSON.stringify(spec.tenancy)}`,
      );
    else parsed.spec.tenancy = spec.tenancy as Tenancy;
  }
  if (parsed.spec.tenancy === 'Exclusive' && tenancyCount !== 0)
    fail(`${path}.tenancyCount`, "must be 0 (or left out) when the template's tenancy is Exclusive");
  return {
    tenancyCount: typeof tenancyCount === 'number' ? tenancyCount : 0,
    template: parsed,
    ...(selector ? { selector } : {}),
  };
}
