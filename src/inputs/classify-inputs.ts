// Sorts parsed objects into what the pipeline reads: ClusterStacks (validated), Clusters, provider
// release objects, and everything else (looked up by the Clusters' refs for values templates).
import { ADDONS_LAYER_KIND, type AddonsLayer, KRAAN_GROUP, validateAddonsLayer } from '../api/addons-layer.js';
import { API_GROUP, CAPI_API_GROUP, type CapiCluster, type ClusterStack, type KubeObject } from '../api/types.js';
import type { CrdRuleChecker } from '../api/crd-rules.js';
import {
  findDuplicateStacks,
  validateClusterAddon,
  validateClusterStack,
  validateClusterStackRelease,
} from '../api/validate.js';
import { type CapiProvider, OPERATOR_API_GROUP, PROVIDER_KINDS } from '../api/provider-types.js';
import { didYouMean, nearestName } from '../core/did-you-mean.js';
import { validateProvider } from '../api/validate-provider.js';
import type { Problem } from '../core/problem.js';
import { findDuplicateObjects, objectIdentity } from './duplicate-objects.js';
import { fieldSource, type SourcedObject } from './parse-manifests.js';

export interface Inputs {
  clusterStacks: SourcedObject<ClusterStack>[];
  clusters: SourcedObject<CapiCluster>[];
  /** <Provider>ClusterStackRelease objects (any group but ours). */
  providerReleases: SourcedObject[];
  /** Addon layers (kraan.io AddonsLayer), validated. */
  addonsLayers: SourcedObject<AddonsLayer>[];
  /** Cluster API provider objects (operator.cluster.x-k8s.io), validated: rendered under management/providers/. */
  providers: SourcedObject<CapiProvider>[];
  /** Everything else: control planes, infrastructure clusters, provider templates, ... */
  others: SourcedObject[];
  /** Problems that make an object unusable; other objects are still resolved. */
  problems: Problem[];
}

export function groupOf(apiVersion: string): string {
  return apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
}

function describeObject(object: KubeObject): string {
  return `${object.kind} ${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
}

const OWN_KINDS = ['ClusterStack', 'ClusterStackRelease', 'ClusterAddon'];
/** Every kind the inputs are read for: a kind a typo away from one of these is a mistake, not an object to pass by. */
const READ_KINDS = ['Cluster', ...OWN_KINDS, ADDONS_LAYER_KIND, ...Object.keys(PROVIDER_KINDS), 'ClusterRequest'];
const PROVIDER_RELEASE_SUFFIX = 'ClusterStackRelease';

/**
 * The kind clusterstack reads that `kind` is a typo of (one edit for short kinds, two from ten
 * letters on, case ignored), including `<Provider>ClusterStackRelease`; undefined for every other
 * kind. Kinds that merely share a prefix (ClusterClass, ClusterRole, DockerCluster,
 * <Provider>ClusterStackReleaseTemplate) are further away than that.
 */
export function mistypedKind(kind: string): string | undefined {
  const edits = kind.length >= 10 ? 2 : 1;
  const direct = nearestName(kind, READ_KINDS, edits);
  if (direct) return direct;
  // `DockerClusterStackRelase`: the provider prefix is anything, the suffix is ours; the split
  // with the fewest edits says where the prefix ends.
  for (let allowed = 1; allowed <= 2; allowed += 1) {
    for (
      let length = PROVIDER_RELEASE_SUFFIX.length - allowed;
      length <= PROVIDER_RELEASE_SUFFIX.length + allowed && length < kind.length;
      length += 1
    ) {
      if (nearestName(kind.slice(-length), [PROVIDER_RELEASE_SUFFIX], allowed))
        return `${kind.slice(0, -length)}${PROVIDER_RELEASE_SUFFIX}`;
    }
  }
  return undefined;
}

/** Where each kind read from the inputs lives. */
const GROUP_OF_KIND: ReadonlyMap<string, string> = new Map([
  ['Cluster', CAPI_API_GROUP],
  ...OWN_KINDS.map((kind): [string, string] => [kind, API_GROUP]),
  [ADDONS_LAYER_KIND, KRAAN_GROUP],
  ...Object.keys(PROVIDER_KINDS).map((kind): [string, string] => [kind, OPERATOR_API_GROUP]),
]);

/** The group a read kind's apiVersion group is a typo of (`cluser.x-k8s.io` for a Cluster), else undefined. */
function mistypedGroup(group: string, kind: string): string | undefined {
  const expected = GROUP_OF_KIND.get(kind);
  return expected !== undefined && group !== expected && nearestName(group, [expected], 2) ? expected : undefined;
}

/** Classifies and validates objects (our kinds also by their CRDs' rules, `checkRules`); an invalid ClusterStack is left out and its problems listed. */
export function classifyInputs(objects: SourcedObject[], checkRules: CrdRuleChecker): Inputs {
  const inputs: Inputs = {
    clusterStacks: [],
    clusters: [],
    providerReleases: [],
    providers: [],
    addonsLayers: [],
    others: [],
    problems: [],
  };
  // An object defined twice is left out altogether (which copy Kubernetes would keep depends on
  // file order); the problem names every place, and the render stops on it.
  inputs.problems.push(...findDuplicateObjects(objects));
  const counts = new Map<string, number>();
  for (const sourced of objects)
    counts.set(objectIdentity(sourced.object), (counts.get(objectIdentity(sourced.object)) ?? 0) + 1);
  const duplicated = new Set([...counts].filter(([, count]) => count > 1).map(([identity]) => identity));
  for (const sourced of objects) {
    if (!duplicated.has(objectIdentity(sourced.object))) classifyObject(sourced, checkRules, inputs);
  }
  dropDuplicateStacks(inputs);
  return inputs;
}

/** One object into its group of `inputs`, or its problems into `inputs.problems`. */
function classifyObject(sourced: SourcedObject, checkRules: CrdRuleChecker, inputs: Inputs): void {
  const { object, source } = sourced;
  const group = groupOf(object.apiVersion);
  const meantGroup = mistypedGroup(group, object.kind);
  if (meantGroup) {
    inputs.problems.push({
      source: fieldSource(object, source, 'apiVersion'),
      object: describeObject(object),
      path: 'apiVersion',
      message: `${object.apiVersion} is no API group clusterstack reads for a ${object.kind}, and would be ignored; did you mean ${meantGroup}/${object.apiVersion.slice(group.length + 1)}?`,
    });
  } else if (group === API_GROUP) {
    classifyOwnObject(sourced, checkRules, inputs);
  } else if (group === KRAAN_GROUP && object.kind === ADDONS_LAYER_KIND) {
    const problems = located(validateAddonsLayer(object), sourced, `AddonsLayer ${object.metadata.name}`);
    if (problems.length > 0) inputs.problems.push(...problems);
    else inputs.addonsLayers.push(sourced as unknown as SourcedObject<AddonsLayer>);
  } else if (group === OPERATOR_API_GROUP) {
    const problems = located(validateProvider(object), sourced);
    if (problems.length > 0) inputs.problems.push(...problems);
    else inputs.providers.push(sourced as SourcedObject<CapiProvider>);
  } else if (group === CAPI_API_GROUP && object.kind === 'Cluster') {
    inputs.clusters.push(sourced as SourcedObject<CapiCluster>);
  } else if (object.kind.endsWith('ClusterStackRelease')) {
    inputs.providerReleases.push(sourced);
  } else {
    const meant = mistypedKind(object.kind);
    if (meant)
      inputs.problems.push({
        source: fieldSource(object, source, 'kind'),
        object: describeObject(object),
        path: 'kind',
        message: `${object.kind} is no kind clusterstack reads, and would be ignored; did you mean ${meant}?`,
      });
    else inputs.others.push(sourced);
  }
}

/** An object of our own API group: validated; only a valid ClusterStack is kept as input. */
function classifyOwnObject(sourced: SourcedObject, checkRules: CrdRuleChecker, inputs: Inputs): void {
  const { object, source } = sourced;
  const validator =
    object.kind === 'ClusterStack'
      ? validateClusterStack
      : object.kind === 'ClusterStackRelease'
        ? validateClusterStackRelease
        : object.kind === 'ClusterAddon'
          ? validateClusterAddon
          : undefined;
  if (!validator) {
    inputs.problems.push({
      source: fieldSource(object, source, 'kind'),
      path: 'kind',
      message: `kind ${object.kind} is not part of ${API_GROUP}; known kinds are ClusterStack, ClusterStackRelease and ClusterAddon${didYouMean(object.kind, OWN_KINDS)}`,
    });
    return;
  }
  const problems = located(validator(object, checkRules), sourced);
  if (problems.length > 0) {
    inputs.problems.push(...problems);
    return;
  }
  // ClusterStackReleases and ClusterAddons are ours to write; as inputs they carry nothing we need.
  if (object.kind === 'ClusterStack') inputs.clusterStacks.push(sourced as unknown as SourcedObject<ClusterStack>);
}

/** An object's problems with the file and line of each field, and the object they are about. */
function located(problems: Problem[], sourced: SourcedObject, object = describeObject(sourced.object)): Problem[] {
  return problems.map((problem) => ({
    ...problem,
    source: fieldSource(sourced.object, sourced.source, problem.path),
    object,
  }));
}

/** Two ClusterStacks that would make the same releases: both are left out, with the problem. */
function dropDuplicateStacks(inputs: Inputs): void {
  const sameStacks = findDuplicateStacks(inputs.clusterStacks.map((s) => s.object));
  if (sameStacks.length === 0) return;
  inputs.problems.push(...sameStacks);
  const stacks = new Set(sameStacks.map((problem) => problem.object));
  inputs.clusterStacks = inputs.clusterStacks.filter(
    (s) => !stacks.has(`ClusterStack ${s.object.metadata.namespace ?? 'default'}/${s.object.metadata.name}`),
  );
}
