// The objects a rendered unit holds, as ResourceStatus entries, with their sync state from the
// GitOps engine. Pure: reads the rendered tree already in memory.
import { decodeYamlDocument } from '../../yaml/kube-yaml.js';
import type { ResourceStatus } from '../../api/types.js';
import type { RenderedTree } from '../../output/rendered-tree.js';
import type { UnitRecord } from '../../output/provenance.js';
import { resourceKey, type UnitSync } from './sync-state.js';

export interface UnitObject {
  group: string;
  version: string;
  kind: string;
  namespace?: string;
  name: string;
}

/** The objects in a unit's files (one object per file), in file order. */
export function unitObjects(tree: RenderedTree, unit: Pick<UnitRecord, 'dir' | 'files'>): UnitObject[] {
  const objects: UnitObject[] = [];
  for (const file of unit.files) {
    const content = tree.get(`${unit.dir}/${file}`);
    if (content === undefined) continue;
    let document: unknown;
    try {
      document = decodeYamlDocument(content).value;
    } catch {
      continue; // we wrote these files; a damaged one shows up in the render, not here
    }
    const object = document as {
      apiVersion?: unknown;
      kind?: unknown;
      metadata?: { name?: unknown; namespace?: unknown };
    } | null;
    if (
      !object ||
      typeof object.apiVersion !== 'string' ||
      typeof object.kind !== 'string' ||
      typeof object.metadata?.name !== 'string'
    )
      continue;
    const slash = object.apiVersion.indexOf('/');
    const entry: UnitObject = {
      group: slash < 0 ? '' : object.apiVersion.slice(0, slash),
      version: slash < 0 ? object.apiVersion : object.apiVersion.slice(slash + 1),
      kind: object.kind,
      name: object.metadata.name,
    };
    if (typeof object.metadata.namespace === 'string' && object.metadata.namespace !== '')
      entry.namespace = object.metadata.namespace;
    objects.push(entry);
  }
  return objects;
}

/**
 * ResourceStatus entries for a unit: `synced` when the engine says so (per object where it reports
 * objects, else for the whole unit), `not-synced` with the reason otherwise, empty when nobody tracks it.
 */
export function resourceStatuses(objects: UnitObject[], sync: UnitSync | undefined): ResourceStatus[] {
  return objects.map((object) => {
    const status: ResourceStatus = {
      group: object.group,
      version: object.version,
      kind: object.kind,
      name: object.name,
    };
    if (object.namespace) status.namespace = object.namespace;
    if (!sync) {
      status.status = '';
      return status;
    }
    const perObject =
      sync.resources?.get(resourceKey(object)) ?? sync.resources?.get(resourceKey({ ...object, namespace: '' }));
    const synced = perObject ? perObject.synced && sync.state !== 'failed' : sync.state === 'synced';
    status.status = synced ? 'synced' : 'not-synced';
    if (!synced) status.error = perObject?.message ?? sync.message;
    return status;
  });
}
