// What the render did with each helm hook object (annotation `helm.sh/hook`): `helm template` prints
// hooks beside the chart's objects, but helm itself runs them only at certain events (install,
// upgrade, delete, rollback, test), and neither Flux nor a plain `kubectl apply -k` knows that.
// The record is written per unit in provenance.json, summarized in the README and the pull
// request body, and listed by `render --json`; the Flux wiring reads it to order the hook directories.

/**
 * How hooks are laid out for the engine that applies the tree:
 * - `argocd`: left in the unit's directory with their annotations; Argo CD maps helm's hook
 *   annotations to its own sync phases itself (pre-install/pre-upgrade to PreSync, post-* to PostSync,
 *   delete hooks to PreDelete/PostDelete, test and rollback hooks never applied).
 * - `staged`: for appliers that apply every object they are given (Flux's kustomize-controller,
 *   `kubectl apply -k`): install hooks go to `helm-hooks/<pre|post>-w<weight>/` below the unit's
 *   directory, which the unit's own kustomization does not list; the rest are left out.
 */
export type HookPlacement = 'argocd' | 'staged';

/**
 * When the object is applied, relative to the unit's other objects:
 * - `before` / `after`: before them (pre-install, pre-upgrade; Argo CD PreSync) or once they are
 *   ready (post-install, post-upgrade; Argo CD PostSync);
 * - `with-objects`: with them (the chart asked Argo CD for its Sync phase itself);
 * - `on-delete`: written, but Argo CD runs it only when the Application is deleted (PreDelete, PostDelete);
 * - `never`: written, but Argo CD never applies it (test and rollback hooks);
 * - `dropped`: not written (staged placement: helm runs it only on delete, rollback or test, or
 *   skips it as an unknown hook).
 */
export type HookDecision = 'before' | 'after' | 'with-objects' | 'on-delete' | 'never' | 'dropped';

/** One hook object of one unit and what became of it. */
export interface HelmHookRecord {
  apiVersion: string;
  kind: string;
  /** After namespace placement; absent for cluster-scoped objects. */
  namespace?: string;
  name: string;
  /** helm.sh/hook as helm reads it: comma-separated, trimmed, lower case. */
  events: string[];
  /** helm.sh/hook-weight (0 when absent or not a number, as helm reads it). */
  weight: number;
  /** helm.sh/hook-delete-policy, as written. */
  deletePolicies: string[];
  decision: HookDecision;
  /** The file below the unit's directory, when written (`helm-hooks/pre-w0/job-x.yaml`, or a plain name for Argo CD). */
  file?: string;
  /** Why, in a sentence: what helm does with it and what the engine will. */
  reason: string;
}
