// The wiring side of a handover between controller shards. A Cluster (or a release) keeps the
// engine object's name in every shard's wiring (its Flux Kustomization or Argo CD Application), so
// while two shards publish it both roots apply the same object, and when the old shard drops it
// the old root's garbage collection (Flux) or prune (Argo CD) would delete it if the live object
// is still the old root's own and not marked. Flux's kustomize-controller skips a live object whose
// `kustomize.toolkit.fluxcd.io/name` label names another Kustomization or that carries
// `kustomize.toolkit.fluxcd.io/prune: disabled`; Argo CD prunes only objects whose tracking names
// the Application, and skips those whose sync options hold `Prune=false` (keep-marks.ts). Hence:
//   - while it hands over, the old shard publishes those wiring objects with both engines' keep marks;
//   - it drops them only once every live one is marked (its root applied the marked revision) or
//     already applied by another root (wiringReleased); until then it keeps publishing them.
// So no order of the two roots' applies deletes and re-creates the object. Pure.
import type { KubeObject } from '../src/api/types.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { markedAgainstPrune } from '../src/render/addon-moves.js';
import type { Handovers } from '../src/shards/shard-plan.js';
import { decodeYamlDocument } from '../src/yaml/kube-yaml.js';
import { EVERY_ENGINE_KEEP_MARKS } from './wiring/keep-marks.js';
import { labelValue, LABEL_CLUSTER, LABEL_NAMESPACE, LABEL_RELEASE } from './wiring/wiring-names.js';

const FLUX_OWNER_LABEL = 'kustomize.toolkit.fluxcd.io/name';
const FLUX_PRUNE_ANNOTATION = 'kustomize.toolkit.fluxcd.io/prune';
const ARGOCD_INSTANCE_LABEL = 'app.kubernetes.io/instance';
const ARGOCD_TRACKING_ANNOTATION = 'argocd.argoproj.io/tracking-id';
const ARGOCD_SYNC_OPTIONS = 'argocd.argoproj.io/sync-options';
const WIRING_DIRS = ['flux/', 'argocd/'];

/** The handover key of a wiring object by its labels: `cluster ns/name`, `release ns/name`, or undefined. */
function handoverKeyOf(
  labels: Record<string, string> | undefined,
): `cluster ${string}` | `release ${string}` | undefined {
  const namespace = labels?.[LABEL_NAMESPACE];
  if (namespace === undefined) return undefined;
  if (labels![LABEL_CLUSTER] !== undefined) return `cluster ${namespace}/${labels![LABEL_CLUSTER]}`;
  if (labels![LABEL_RELEASE] !== undefined) return `release ${namespace}/${labels![LABEL_RELEASE]}`;
  return undefined;
}

/** The label keys of what is handed over: Clusters, and the releases of `stacks` that `releasesOf` lists. */
function handoverKeys(handovers: Handovers, releasesOf: (stack: string) => string[]): Set<string> {
  const keys = new Set<string>();
  for (const cluster of handovers.clusters) {
    const [namespace, name] = cluster.split('/');
    keys.add(`cluster ${labelValue(namespace!)}/${labelValue(name!)}`);
  }
  for (const stack of handovers.stacks)
    for (const release of releasesOf(stack)) {
      const [namespace, name] = release.split('/');
      keys.add(`release ${labelValue(namespace!)}/${labelValue(name!)}`);
    }
  return keys;
}

/**
 * The tree with the wiring objects of what this shard hands over marked against pruning by both
 * engines (files under flux/ and argocd/ whose labels name a handed-over Cluster or release).
 * `releasesOf` gives a handed-over stack's releases (`namespace/release`).
 */
export function markHandoverWiring(
  tree: RenderedTree,
  handovers: Handovers,
  releasesOf: (stack: string) => string[],
): RenderedTree {
  const keys = handoverKeys(handovers, releasesOf);
  if (keys.size === 0) return tree;
  const marked = new Map(tree);
  for (const [file, text] of tree) {
    if (!WIRING_DIRS.some((dir) => file.startsWith(dir)) || !file.endsWith('.yaml')) continue;
    let object: KubeObject | undefined;
    try {
      object = decodeYamlDocument(text).value as KubeObject | undefined;
    } catch {
      continue;
    }
    const key = handoverKeyOf(object?.metadata?.labels);
    if (key === undefined || !keys.has(key)) continue;
    const withMarks = markedAgainstPrune(text, EVERY_ENGINE_KEEP_MARKS);
    if (withMarks !== undefined) marked.set(file, withMarks);
  }
  return marked;
}

/** Whether `root` (this shard's root Kustomization or Application) would prune the live wiring object. */
function prunableBy(object: KubeObject, root: string): boolean {
  const labels = object.metadata.labels ?? {};
  const annotations = object.metadata.annotations ?? {};
  if (annotations[FLUX_PRUNE_ANNOTATION] === 'disabled') return false;
  if ((annotations[ARGOCD_SYNC_OPTIONS] ?? '').split(',').some((option) => option.trim() === 'Prune=false'))
    return false;
  const tracking = annotations[ARGOCD_TRACKING_ANNOTATION];
  return (
    labels[FLUX_OWNER_LABEL] === root ||
    labels[ARGOCD_INSTANCE_LABEL] === root ||
    (tracking !== undefined && tracking.startsWith(`${root}:`))
  );
}

/**
 * For each handover key (`cluster ns/name`, `release ns/name`): whether its live wiring objects
 * may leave `root`'s wiring without being pruned (none is still `root`'s own and unmarked).
 */
export function wiringReleasedBy(
  live: readonly KubeObject[],
  root: string,
): (unit: `cluster ${string}` | `release ${string}`) => boolean {
  const held = new Set<string>();
  for (const object of live) {
    const key = handoverKeyOf(object.metadata.labels);
    if (key !== undefined && prunableBy(object, root)) held.add(key);
  }
  return (unit) => {
    const [kind, rest] = [unit.slice(0, unit.indexOf(' ')), unit.slice(unit.indexOf(' ') + 1)];
    const [namespace, name] = rest.split('/');
    return !held.has(`${kind} ${labelValue(namespace!)}/${labelValue(name!)}`);
  };
}
