// What Flux and Argo CD delete, create and leave behind on a workload cluster when the tree moves
// from one commit to the next, by the engines' own rules (read from their sources), over the
// generated wiring and the directories it points at, both built with real `kubectl kustomize`:
//
// - An owner (Flux Kustomization, Argo CD Application) is known by its name; its inventory is what
//   its directory builds. An owner present in both trees applies the new inventory and, when it
//   prunes, garbage-collects what left it (Flux: `spec.prune`; Argo CD: automated `prune`). A
//   suspended Kustomization or an Application without automated sync does neither.
// - An owner present only in the old tree is deleted (the root prunes it). Its finalizer deletes its
//   inventory when Flux's `finalizerShouldDeleteResources` says so (prune on, deletionPolicy not
//   Orphan, not suspended) or when the Application carries the resources finalizer.
// - Every deletion skips a live object another owner has applied since (Flux's owner labels, Argo
//   CD's tracking id) and one whose live copy is marked (`kustomize.toolkit.fluxcd.io/prune:
//   disabled`, `argocd.argoproj.io/sync-options: Prune=false`).
// The engines order nothing between owners, so both orders are walked: every old owner first, and
// every new owner first. An object deleted in either order although both trees have it would be
// re-created; one alive at the end that the new tree does not have is orphaned.
import { kustomizeBuild } from './engine-schemas/kustomize-build.js';

export type Engine = 'flux' | 'argocd';

interface Owner {
  id: string;
  dir: string;
  /** Applies new revisions (not suspended, automated sync). */
  syncs: boolean;
  /** Garbage-collects what leaves its inventory while it syncs. */
  prunes: boolean;
  /** Deletes its inventory when the owner itself is deleted. */
  deletesOnRemoval: boolean;
}

interface Live {
  owner: string;
  marked: boolean;
}

export interface Transition {
  /** Objects the old tree had and the new one does not, deleted in every order. */
  pruned: string[];
  /** Objects alive at the end of some order that the new tree does not have. */
  orphaned: string[];
  /** Objects both trees have that some order deletes (and the new owner then creates again). */
  recreated: string[];
}

const FLUX_PRUNE = 'kustomize.toolkit.fluxcd.io/prune';
const ARGO_OPTIONS = 'argocd.argoproj.io/sync-options';
const ARGO_FINALIZER = 'resources-finalizer.argocd.argoproj.io';

/** The owners of workload-cluster directories (`clusters/...`) in a tree's wiring. */
function owners(tree: Map<string, string>, engine: Engine): Owner[] {
  if (engine === 'flux') {
    return kustomizeBuild(tree, 'flux')
      .filter((o) => o.kind === 'Kustomization' && String(o.spec.path).startsWith('./clusters/'))
      .map((o) => ({
        id: `${o.metadata.namespace}/${o.metadata.name}`,
        dir: String(o.spec.path).slice(2),
        syncs: o.spec.suspend !== true,
        prunes: o.spec.prune === true && o.spec.suspend !== true,
        deletesOnRemoval: o.spec.prune === true && o.spec.deletionPolicy !== 'Orphan' && o.spec.suspend !== true,
      }));
  }
  // Each cluster's app of apps reads its children by path; the root lists the parents.
  const parents = kustomizeBuild(tree, 'argocd').filter(
    (o) => o.kind === 'Application' && o.metadata.labels?.['clusterstack.x-k8s.io/wiring'] === 'cluster',
  );
  return parents
    .flatMap((parent) => kustomizeBuild(tree, parent.spec.source.path))
    .map((o) => ({
      id: o.metadata.name,
      dir: o.spec.source.path,
      syncs: o.spec.syncPolicy?.automated !== undefined,
      prunes: o.spec.syncPolicy?.automated?.prune === true,
      deletesOnRemoval: (o.metadata.finalizers ?? []).includes(ARGO_FINALIZER),
    }));
}

/** Objects an owner's directory builds, keyed by cluster directory and identity, with whether each carries both engines' marks against pruning. */
function inventory(tree: Map<string, string>, dir: string): Map<string, boolean> {
  const cluster = dir.split('/').slice(0, 3).join('/');
  const out = new Map<string, boolean>();
  if (!tree.has(`${dir}/kustomization.yaml`)) return out;
  for (const object of kustomizeBuild(tree, dir)) {
    const annotations = object.metadata.annotations ?? {};
    const marked =
      annotations[FLUX_PRUNE] === 'disabled' ||
      String(annotations[ARGO_OPTIONS] ?? '')
        .split(',')
        .includes('Prune=false');
    out.set(`${cluster}: ${object.kind} ${object.metadata.namespace ?? ''}/${object.metadata.name}`, marked);
  }
  return out;
}

/** What the engine does to the workload clusters' objects going from `before` to `after` (file maps of two rendered trees). */
export function transition(before: Record<string, string>, after: Record<string, string>, engine: Engine): Transition {
  const oldTree = new Map(Object.entries(before));
  const newTree = new Map(Object.entries(after));
  const oldOwners = new Map(
    owners(oldTree, engine).map((o) => [o.id, { owner: o, objects: inventory(oldTree, o.dir) }]),
  );
  const newOwners = new Map(
    owners(newTree, engine).map((o) => [o.id, { owner: o, objects: inventory(newTree, o.dir) }]),
  );
  const wanted = new Set([...newOwners.values()].flatMap(({ objects }) => [...objects.keys()]));
  const had = new Set([...oldOwners.values()].flatMap(({ objects }) => [...objects.keys()]));

  const walk = (newFirst: boolean): { deleted: Set<string>; live: Map<string, Live> } => {
    // The cluster as the old tree left it: each object applied by the owner that syncs it.
    const live = new Map<string, Live>();
    for (const { owner, objects } of oldOwners.values())
      if (owner.syncs) for (const [key, marked] of objects) live.set(key, { owner: owner.id, marked });
    const deleted = new Set<string>();
    const remove = (owner: string, keys: Iterable<string>): void => {
      for (const key of keys) {
        const object = live.get(key);
        if (object && object.owner === owner && !object.marked) {
          live.delete(key);
          deleted.add(key);
        }
      }
    };
    const steps: (() => void)[] = [];
    // Owners gone from the new tree: deleted, their finalizer deleting their inventory or not.
    for (const [id, { owner, objects }] of oldOwners)
      if (!newOwners.has(id) && owner.deletesOnRemoval) steps.push(() => remove(id, objects.keys()));
    const applies: (() => void)[] = [];
    for (const [id, { owner, objects }] of newOwners) {
      if (!owner.syncs) continue;
      applies.push(() => {
        for (const [key, marked] of objects) live.set(key, { owner: id, marked });
        const previous = oldOwners.get(id)?.objects;
        if (previous && owner.prunes)
          remove(
            id,
            [...previous.keys()].filter((key) => !objects.has(key)),
          );
      });
    }
    for (const step of newFirst ? [...applies, ...steps] : [...steps, ...applies]) step();
    // An owner that deleted an object the new tree still wants is followed by the new owner applying it again.
    return { deleted, live };
  };

  const orders = [walk(false), walk(true)];
  const sorted = (keys: Iterable<string>): string[] => [...new Set(keys)].sort();
  return {
    pruned: sorted([...had].filter((key) => !wanted.has(key) && orders.every(({ deleted }) => deleted.has(key)))),
    orphaned: sorted(orders.flatMap(({ live }) => [...live.keys()].filter((key) => !wanted.has(key)))),
    recreated: sorted(orders.flatMap(({ deleted }) => [...deleted].filter((key) => wanted.has(key)))),
  };
}
