// What Argo CD does with an object that carries hook annotations, read from its sync engine
// (gitops-engine: pkg/sync/hook/hook.go, hook/helm/type.go, sync_phase.go) and its Helm guide:
// - an object is a hook when it has `argocd.argoproj.io/hook` (and is not Skip alone), or
//   `helm.sh/hook` with any value but `crd-install`;
// - its types come from `argocd.argoproj.io/hook` when that names any; only when it names none are
//   helm's mapped: pre-install and pre-upgrade to PreSync, post-install and post-upgrade to PostSync,
//   post-delete to PostDelete and (in the versions whose guide lists it) pre-delete to PreDelete;
//   every other helm event (test, test-success, pre-rollback, post-rollback) maps to nothing;
// - a sync applies a hook only in the phases PreSync, Sync, PostSync and SyncFail: a hook with none
//   of them (a test Pod, a rollback Job, a delete hook) is never applied by a sync.
// Both annotations are comma-separated lists, each entry trimmed, compared as written.
import type { HookHandling, HookPhases } from '../../src/core/engine-rules.js';

const ARGOCD_HOOK_ANNOTATION = 'argocd.argoproj.io/hook';
const HELM_HOOK_ANNOTATION = 'helm.sh/hook';

const ARGOCD_HOOK_TYPES = new Set(['PreSync', 'Sync', 'PostSync', 'SyncFail', 'Skip', 'PreDelete', 'PostDelete']);
const SYNC_PHASES = new Set(['PreSync', 'Sync', 'PostSync', 'SyncFail']);
const HELM_TO_ARGOCD: Record<string, string> = {
  'pre-install': 'PreSync',
  'pre-upgrade': 'PreSync',
  'post-install': 'PostSync',
  'post-upgrade': 'PostSync',
  'post-delete': 'PostDelete',
  'pre-delete': 'PreDelete',
};

function csv(value: string | undefined): string[] {
  return value === undefined
    ? []
    : value
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
}

/** What Argo CD does with an object carrying these annotations (see the header for the source). */
export function argoCdHookHandling(annotations: Readonly<Record<string, string>> | undefined): HookHandling {
  const argoTypes = csv(annotations?.[ARGOCD_HOOK_ANNOTATION]).filter((type) => ARGOCD_HOOK_TYPES.has(type));
  const types =
    argoTypes.length > 0
      ? argoTypes
      : csv(annotations?.[HELM_HOOK_ANNOTATION]).flatMap((event) =>
          HELM_TO_ARGOCD[event] ? [HELM_TO_ARGOCD[event]!] : [],
        );
  const skipOnly = types.includes('Skip') && types.length === 1;
  const hook =
    annotations?.[ARGOCD_HOOK_ANNOTATION] !== undefined
      ? !skipOnly
      : annotations?.[HELM_HOOK_ANNOTATION] !== undefined && annotations[HELM_HOOK_ANNOTATION] !== 'crd-install';
  if (skipOnly) return { hook: false, types, syncPhases: [] };
  if (!hook) return { hook: false, types: [], syncPhases: ['Sync'] };
  return { hook, types: [...new Set(types)], syncPhases: [...new Set(types.filter((type) => SYNC_PHASES.has(type)))] };
}

/** Argo CD's hook phases, as the render's helm hook placement takes them. */
export const ARGOCD_HOOK_PHASES: HookPhases = {
  placement: 'argocd',
  engine: 'Argo CD',
  hookAnnotation: ARGOCD_HOOK_ANNOTATION,
  handling: argoCdHookHandling,
};
