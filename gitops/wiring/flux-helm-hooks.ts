// Flux Kustomizations for a unit's helm install hooks (src/render/helm-hooks.ts lays them out in
// `<unit>/helm-hooks/<pre|post>-w<weight>/`). kustomize-controller applies everything it is given
// at once, so helm's order is rebuilt from Kustomizations: one per phase and weight, each waiting
// (dependsOn, wait: true) for the one before, the pre-hooks for what the unit waits for, the unit
// for its last pre-hook, the post-hooks for the unit. `wait: true` holds the chain until a hook Job
// has completed, as helm waits; a failed hook stops it, as it stops `helm install`. `force: true`
// replaces a hook whose immutable fields changed (a Job's template): a new chart version's hook runs
// again, as helm's `before-hook-creation` does; an unchanged hook is not run again (helm would, on
// every upgrade). Pruning removes the hooks with the unit.
import type { KubeObject } from '../../src/api/types.js';
import type { HelmHookRecord } from '../../src/output/helm-hooks-record.js';
import type { UnitRecord } from '../../src/output/provenance.js';
import { fluxHookKustomizationName } from './wiring-names.js';

const FLUX_KUSTOMIZATION_API = 'kustomize.toolkit.fluxcd.io/v1';

export interface KustomizationRef {
  name: string;
  namespace: string;
}

/** The unit's own Kustomization as the hooks copy it: where it lives, its labels and the spec fields hooks share. */
export interface UnitKustomization {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  /** interval, timeouts, sourceRef, kubeConfig, decryption: everything but path, dependsOn and health checks. */
  spec: Record<string, unknown>;
}

export interface UnitHookKustomizations {
  /** Wiring files (under `flux/`) and their Kustomizations. */
  objects: [string, KubeObject][];
  /** Added to the unit's own dependsOn: its last pre-hook Kustomization. */
  before: KustomizationRef[];
  /** What waits for the unit's install to be complete: its last post-hook Kustomization, or the unit itself. */
  done: KustomizationRef;
}

/** The hook directories of a unit, per phase, lowest weight first. */
function hookDirs(hooks: HelmHookRecord[], phase: 'before' | 'after'): { dir: string; weight: number }[] {
  const dirs = new Map<string, number>();
  for (const hook of hooks) {
    if (hook.decision !== phase || hook.file === undefined || !hook.file.includes('/')) continue;
    dirs.set(hook.file.slice(0, hook.file.lastIndexOf('/')), hook.weight);
  }
  return [...dirs].map(([dir, weight]) => ({ dir, weight })).sort((a, b) => a.weight - b.weight);
}

/**
 * The Kustomizations applying `unit`'s hooks around `main`, the first pre-hook one depending on
 * `after` (what the unit itself waits for). `path` maps a tree directory to the source path. Throws
 * when the unit's hooks were laid out for Argo CD: Flux would apply its delete and test hooks.
 */
export function fluxHookKustomizations(
  unit: UnitRecord,
  main: UnitKustomization,
  after: KustomizationRef[],
  path: (treeDir: string) => string,
): UnitHookKustomizations {
  const hooks = unit.hooks ?? [];
  const misplaced = hooks.filter(
    (hook) =>
      hook.decision === 'with-objects' ||
      hook.decision === 'on-delete' ||
      hook.decision === 'never' ||
      (hook.file !== undefined && !hook.file.includes('/')),
  );
  if (misplaced.length > 0) {
    throw new Error(
      `internal error: ${unit.dir} holds helm hooks laid out for Argo CD (${misplaced.map((hook) => `${hook.kind} ${hook.name}`).join(', ')}); Flux would apply them as ordinary objects`,
    );
  }
  const objects: [string, KubeObject][] = [];
  const chain = (
    phase: 'pre' | 'post',
    dirs: { dir: string; weight: number }[],
    first: KustomizationRef[],
  ): KustomizationRef[] => {
    let previous = first;
    for (const { dir, weight } of dirs) {
      const ref = { name: fluxHookKustomizationName(main.name, phase, weight), namespace: main.namespace };
      objects.push([
        `flux/${unit.dir}/${dir}.yaml`,
        {
          apiVersion: FLUX_KUSTOMIZATION_API,
          kind: 'Kustomization',
          metadata: { name: ref.name, namespace: ref.namespace, labels: main.labels },
          spec: {
            ...structuredClone(main.spec),
            path: path(`${unit.dir}/${dir}`),
            prune: true,
            wait: true,
            force: true,
            ...(previous.length > 0 ? { dependsOn: previous } : {}),
          },
        },
      ]);
      previous = [ref];
    }
    return previous;
  };
  const pre = hookDirs(hooks, 'before');
  const post = hookDirs(hooks, 'after');
  const before = pre.length > 0 ? chain('pre', pre, after) : [];
  const done =
    post.length > 0
      ? chain('post', post, [{ name: main.name, namespace: main.namespace }])[0]!
      : { name: main.name, namespace: main.namespace };
  return { objects, before, done };
}
