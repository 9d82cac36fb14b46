// What of its context a values template can read, for the digests that decide whether a unit is
// rendered again and whether a tree changed. A label or annotation added to a Cluster (by a person,
// kubectl, Cluster API or a policy engine) reaches the output only if a values template reads it, so
// a template that cannot does not have its unit's digest, or the tree's provenance, change for it.
import type { KubeObject } from '../api/types.js';

type Context = Record<string, object | undefined>;

/**
 * A template may reach `metadata.<field>` when it names the field, uses an object or its metadata
 * whole (`toYaml .Cluster`, `index .Cluster.metadata "labels"`, `$m := .Cluster.metadata`), or uses
 * the context itself (`.` or `$` alone). Conservative on purpose: a miss would reuse a stale render.
 */
function mayRead(template: string, field: 'labels' | 'annotations'): boolean {
  if (template.includes(field)) return true;
  if (/\.(?:Cluster|ControlPlane|InfraCluster|metadata)(?![.\w])/.test(template)) return true;
  return /(?:^|[^\w.$\])])[.$](?![\w.$])/.test(template);
}

/** An object without the metadata fields in `drop`. */
function without<T extends object>(object: T, drop: ('labels' | 'annotations')[]): T {
  const metadata = (object as { metadata?: Record<string, unknown> }).metadata;
  if (drop.length === 0 || !metadata) return object;
  const kept = { ...metadata };
  for (const field of drop) delete kept[field];
  return { ...object, metadata: kept };
}

/**
 * The part of `context` that `template` can read, for digests: nothing for an empty template, and
 * each object without the labels or annotations the template cannot reach. Never for evaluation:
 * the template itself always sees the whole context.
 */
export function readableContext<C extends Context>(template: string, context: C): C | null {
  if (template.trim() === '') return null;
  const drop = (['labels', 'annotations'] as const).filter((field) => !mayRead(template, field));
  return Object.fromEntries(
    Object.entries(context).map(([key, object]) => [key, object && without(object, drop)]),
  ) as C;
}

/** An input object as provenance.json digests it: without its labels and annotations (see provenance.ts). */
export function withoutLabelsAndAnnotations(object: KubeObject): KubeObject {
  return without(object, ['labels', 'annotations']);
}
