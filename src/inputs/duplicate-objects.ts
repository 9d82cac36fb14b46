// Two input documents for one Kubernetes object (the same API group, kind, namespace and name):
// Kubernetes would keep only one of them, and which one depends on file order. Neither is guessed.
import type { Problem } from '../core/problem.js';
import type { SourcedObject } from './parse-manifests.js';

function groupOf(apiVersion: string): string {
  return apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
}

/** The identity Kubernetes stores an object under; the API version within a group does not count. */
export function objectIdentity(object: SourcedObject['object']): string {
  return `${groupOf(object.apiVersion) || 'core'}/${object.kind}/${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
}

/** One problem per object defined more than once, naming every file and line that defines it. */
export function findDuplicateObjects(objects: readonly SourcedObject[]): Problem[] {
  const byIdentity = new Map<string, SourcedObject[]>();
  for (const sourced of objects) {
    const key = objectIdentity(sourced.object);
    byIdentity.set(key, [...(byIdentity.get(key) ?? []), sourced]);
  }
  const problems: Problem[] = [];
  for (const group of byIdentity.values()) {
    if (group.length < 2) continue;
    const [first, ...others] = group as [SourcedObject, ...SourcedObject[]];
    const { object } = first;
    const group_ = groupOf(object.apiVersion);
    problems.push({
      source: first.source,
      object: `${object.kind}${group_ ? `.${group_}` : ''} ${object.metadata.namespace ?? 'default'}/${object.metadata.name}`,
      message: `is defined again at ${others.map((other) => other.source).join(', ')}; every object may appear once in the inputs: remove or rename all but one`,
    });
  }
  return problems;
}
