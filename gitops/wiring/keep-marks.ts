// The marks that keep Flux and Argo CD from pruning an object: Flux's kustomize-controller never
// garbage-collects a live object annotated `kustomize.toolkit.fluxcd.io/prune: disabled` (fluxcd/pkg
// ssa `ResourceManager.Delete`); Argo CD skips live objects whose `argocd.argoproj.io/sync-options`
// hold `Prune=false` (gitops-engine `pruneObject`). A tree carries both whatever engine is chosen:
// the tree is the same for every engine but its hooks, a user of `--gitops none` applies it with
// either, and a mark must still hold on the live object after the engine is switched.
import type { KeepMarks } from '../../src/core/engine-rules.js';

const FLUX_PRUNE_ANNOTATION = 'kustomize.toolkit.fluxcd.io/prune';
const FLUX_PRUNE_DISABLED = 'disabled';
const ARGOCD_SYNC_OPTIONS_ANNOTATION = 'argocd.argoproj.io/sync-options';
const ARGOCD_NO_PRUNE = 'Prune=false';

/** Both engines' marks, merged into the sync options an object already has (any other `Prune=` option is replaced). */
export const EVERY_ENGINE_KEEP_MARKS: KeepMarks = {
  annotationsFor(existing) {
    const options = (existing[ARGOCD_SYNC_OPTIONS_ANNOTATION] ?? '')
      .split(',')
      .map((option) => option.trim())
      .filter((option) => option !== '' && !option.startsWith('Prune='));
    return {
      [FLUX_PRUNE_ANNOTATION]: FLUX_PRUNE_DISABLED,
      [ARGOCD_SYNC_OPTIONS_ANNOTATION]: [...options, ARGOCD_NO_PRUNE].join(','),
    };
  },
  isMarkLine(line) {
    return (
      /^\s+kustomize\.toolkit\.fluxcd\.io\/prune: disabled$/.test(line) ||
      /^\s+argocd\.argoproj\.io\/sync-options: Prune=false$/.test(line)
    );
  },
};
