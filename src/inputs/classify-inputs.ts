// Sorts parsed objects into what the pipeline reads: ClusterStacks (validated), Clusters, provider
// release objects, and everything else (looked up by the Clusters' refs for values templates).
import { API_GROUP, CAPI_API_GROUP, type CapiCluster, type ClusterStack, type KubeObject } from '../api/types.js';
import { findDuplicateStacks, validateClusterAddon, validateClusterStack, validateClusterStackRelease } from '../api/validate.js';
import { type CapiProvider, OPERATOR_API_GROUP } from '../api/provider-types.js';
import { validateProvider } from '../api/validate-provider.js';
import type { Problem } from '../core/problem.js';
import { findDuplicateObjects, objectIdentity } from './duplicate-objects.js';
import type { SourcedObject } from './parse-manifests.js';

export interface Inputs {
  clusterStacks: SourcedObject<ClusterStack>[];
  clusters: SourcedObject<CapiCluster>[];
  /** <Provider>ClusterStackRelease objects (any group but ours). */
  providerReleases: SourcedObject[];
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

/** Classifies and validates objects; an invalid ClusterStack is left out and its problems listed. */
export function classifyInputs(objects: SourcedObject[]): Inputs {
  const inputs: Inputs = { clusterStacks: [], clusters: [], providerReleases: [], providers: [], others: [], problems: [] };
  // An object defined twice is left out altogether (which copy Kubernetes would keep depends on
  // file order); the problem names every place, and the render stops on it.
  const duplicates = findDuplicateObjects(objects);
  inputs.problems.push(...duplicates);
  const counts = new Map<string, number>();
  for (const sourced of objects) counts.set(objectIdentity(sourced.object), (counts.get(objectIdentity(sourced.object)) ?? 0) + 1);
  const duplicated = new Set([...counts].filter(([, count]) => count > 1).map(([identity]) => identity));
  for (const sourced of objects) {
    if (duplicated.has(objectIdentity(sourced.object))) continue;
    const { object, source } = sourced;
    const group = groupOf(object.apiVersion);
    if (group === API_GROUP) {
      const validator =
        object.kind === 'ClusterStack' ? validateClusterStack : object.kind === 'ClusterStackRelease' ? validateClusterStackRelease : object.kind === 'ClusterAddon' ? validateClusterAddon : undefined;
      if (!validator) {
        inputs.problems.push({ source, message: `kind ${object.kind} is not part of ${API_GROUP}; known kinds are ClusterStack, ClusterStackRelease and ClusterAddon` });
        continue;
      }
      const problems = validator(object).map((problem) => ({ ...problem, source, object: describeObject(object) }));
      if (problems.length > 0) {
        inputs.problems.push(...problems);
        continue;
      }
      // ClusterStackReleases and ClusterAddons are ours to write; as inputs they carry nothing we need.
      if (object.kind === 'ClusterStack') inputs.clusterStacks.push(sourced as unknown as SourcedObject<ClusterStack>);
    } else if (group === OPERATOR_API_GROUP) {
      const problems = validateProvider(object).map((problem) => ({ ...problem, source, object: describeObject(object) }));
      if (problems.length > 0) inputs.problems.push(...problems);
      else inputs.providers.push(sourced as SourcedObject<CapiProvider>);
    } else if (group === CAPI_API_GROUP && object.kind === 'Cluster') {
      inputs.clusters.push(sourced as SourcedObject<CapiCluster>);
    } else if (object.kind.endsWith('ClusterStackRelease')) {
      inputs.providerReleases.push(sourced);
    } else {
      inputs.others.push(sourced);
    }
  }
  const sameStacks = findDuplicateStacks(inputs.clusterStacks.map((s) => s.object));
  if (sameStacks.length > 0) {
    inputs.problems.push(...sameStacks);
    const stacks = new Set(sameStacks.map((problem) => problem.object));
    inputs.clusterStacks = inputs.clusterStacks.filter((s) => !stacks.has(`ClusterStack ${s.object.metadata.namespace ?? 'default'}/${s.object.metadata.name}`));
  }
  return inputs;
}
