// Live objects as the render pipeline reads them: copies without server bookkeeping (status,
// resourceVersion, managed fields, finalizers), so that status writes, ours or CAPI's, never change
// the rendered output or its provenance. Invalid ClusterStacks fall back to their last valid spec.
import type { CrdRuleChecker } from '../../api/crd-rules.js';
import { validateClusterStack } from '../../api/validate.js';
import { clusterReference, type ClusterReference } from '../../api/capi-cluster.js';
import type { CapiCluster, ClusterStack, KubeObject, ObjectMeta } from '../../api/types.js';
import type { Problem } from '../../core/problem.js';
import type { ParsedManifests } from '../../inputs/parse-manifests.js';
import { groupOf } from '../../inputs/classify-inputs.js';
import { namespaceOf } from '../../release/resolve-releases.js';
import type { StackIssue } from '../desired-state/status-inputs.js';
import { keyOf } from '../desired-state/owned-objects.js';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
/** The `source` live objects carry in problems (files have `file:line`). */
const LIVE_SOURCE = 'cluster';

/** Name, namespace, labels and annotations: what a values template or a release source may read. */
function stableMetadata(metadata: ObjectMeta): ObjectMeta {
  const out: ObjectMeta = { name: metadata.name };
  if (metadata.namespace) out.namespace = metadata.namespace;
  if (metadata.labels && Object.keys(metadata.labels).length > 0) out.labels = { ...metadata.labels };
  const annotations = Object.fromEntries(
    Object.entries(metadata.annotations ?? {}).filter(([key]) => key !== LAST_APPLIED),
  );
  if (Object.keys(annotations).length > 0) out.annotations = annotations;
  return out;
}

/** The object without status and server-set metadata. */
export function specOnly<T extends { apiVersion: string; kind: string; metadata: ObjectMeta }>(object: T): T {
  const copy = structuredClone(object) as unknown as Record<string, unknown>;
  delete copy['status'];
  copy['metadata'] = stableMetadata(object.metadata);
  return copy as unknown as T;
}

/** A provider release as resolution reads it: only whether it is ready. */
function providerReadiness(object: KubeObject): KubeObject {
  const ready = (object as { status?: { ready?: unknown } }).status?.ready === true;
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: stableMetadata(object.metadata),
    status: { ready },
  };
}

/**
 * Objects a Cluster points at (control plane, infrastructure cluster): values templates read them.
 * A v1beta1 reference names its apiVersion, a v1beta2 one its group only (capi-cluster.ts).
 */
export function referencedObjectKeys(cluster: CapiCluster): (ClusterReference & { group: string })[] {
  return [clusterReference(cluster, 'controlPlaneRef'), clusterReference(cluster, 'infrastructureRef')].filter(
    (ref): ref is ClusterReference & { group: string } => ref?.group !== undefined,
  );
}

export interface InputSnapshot {
  stacks: ClusterStack[];
  clusters: CapiCluster[];
  providerReleases: KubeObject[];
  /** Control planes and infrastructure clusters the Clusters reference. */
  referenced: KubeObject[];
  /** AddonsLayers (when the controller renders layers). */
  layers?: KubeObject[];
  /** Cluster API provider objects (spec only is read). */
  capiProviders?: KubeObject[];
  /** openMCP ClusterRequests (with a scheduler configuration). */
  requests?: KubeObject[];
  /** Secrets and ConfigMaps the providers name (read by name, or by label for selectors). */
  providerConfig?: KubeObject[];
}

/** Remembers each ClusterStack's last valid spec across reconciles. */
export class StackSpecMemory {
  private readonly lastValid = new Map<string, ClusterStack>();

  /** `checkRules`: the CRDs' CEL rules (src/inputs/crd-rule-verdicts.ts). */
  constructor(private readonly checkRules: CrdRuleChecker) {}

  /**
   * The stacks to render: valid ones as they are, invalid ones as their last valid version (when
   * known), else as `standIn` makes them (published output kept, see withheld-stacks.ts). Every
   * invalid one gets an InvalidSpec issue listing all its problems.
   */
  select(
    stacks: ClusterStack[],
    issues: Map<string, StackIssue>,
    standIn?: (stack: ClusterStack, problems: Problem[]) => ClusterStack | undefined,
  ): { selected: ClusterStack[]; standIns: Set<string> } {
    const selected: ClusterStack[] = [];
    const standIns = new Set<string>();
    const present = new Set<string>();
    for (const live of stacks) {
      const key = keyOf(live);
      present.add(key);
      const stack = specOnly(live);
      const problems = validateClusterStack(stack, this.checkRules);
      if (problems.length === 0) {
        this.lastValid.set(key, stack);
        selected.push(stack);
        continue;
      }
      const fallback = this.lastValid.get(key);
      const substitute = fallback ? undefined : standIn?.(stack, problems);
      const issue: StackIssue = {
        reason: 'InvalidSpec',
        problems: problems.map((problem) => `${problem.path ? `${problem.path} ` : ''}${problem.message}`),
        fallback: fallback !== undefined,
      };
      if (substitute) issue.keptPublished = true;
      issues.set(key, issue);
      if (fallback) selected.push(fallback);
      else if (substitute) {
        selected.push(substitute);
        standIns.add(key);
      }
    }
    for (const key of [...this.lastValid.keys()]) if (!present.has(key)) this.lastValid.delete(key);
    return { selected, standIns };
  }
}

/** The render pipeline's input, from live objects. */
export function manifestsFrom(snapshot: InputSnapshot): ParsedManifests {
  const objects: KubeObject[] = [
    ...snapshot.stacks.map((stack) => stack as unknown as KubeObject),
    ...snapshot.clusters.map((cluster) => specOnly(cluster) as KubeObject),
    ...snapshot.providerReleases.map(providerReadiness),
    ...snapshot.referenced.map((object) => specOnly(object)),
    ...(snapshot.layers ?? []).map((object) => specOnly(object)),
    ...(snapshot.capiProviders ?? []).map((object) => specOnly(object)),
    ...(snapshot.requests ?? []).map((object) => specOnly(object)),
    ...(snapshot.providerConfig ?? []),
  ];
  return { objects: objects.map((object) => ({ object, source: LIVE_SOURCE })), problems: [] };
}

/** Whether `object` is one of `keys` (API group, kind, namespace, name). */
export function isReferenced(
  object: KubeObject,
  keys: { group: string; kind: string; namespace: string; name: string }[],
): boolean {
  return keys.some(
    (key) =>
      key.kind === object.kind &&
      key.name === object.metadata.name &&
      key.namespace === namespaceOf(object) &&
      key.group === groupOf(object.apiVersion),
  );
}
