// The render options that carry an engine's rules into the core (src/core/engine-rules.ts, and the
// management annotations of src/render/unit-decisions.ts), filled in here from the engine the
// command chose.
import type { EngineRules } from '../../src/core/engine-rules.js';
import type { UnitPlanSettings } from '../../src/render/unit-decisions.js';
import { ARGOCD_HOOK_PHASES } from './argocd-hook-phases.js';
import { ARGOCD_SYNC_WAVE_ANNOTATION, syncWaveFor } from './argocd-sync-waves.js';
import type { GitOpsEngine } from './gitops-engine.js';
import { EVERY_ENGINE_KEEP_MARKS } from './keep-marks.js';

/** The rules a render follows for `engine`: every engine's keep marks; Argo CD's hook phases when it applies the tree. */
export function engineRulesFor(engine: GitOpsEngine | undefined): EngineRules {
  return { keepMarks: EVERY_ENGINE_KEEP_MARKS, ...(engine === 'argocd' ? { hookPhases: ARGOCD_HOOK_PHASES } : {}) };
}

/** The annotations the engine wants on management-side objects where the chart set none: Argo CD's sync waves, or none. */
export function managementAnnotationsFor(engine: GitOpsEngine | undefined): UnitPlanSettings['managementAnnotations'] {
  if (engine !== 'argocd') return undefined;
  return {
    // The id is in every unit digest: v2 added the node image wave, so older trees render again.
    id: 'argocd-sync-waves/v2',
    annotationsFor: (object) => {
      const wave = syncWaveFor(object.kind, object.apiVersion);
      return wave === undefined ? undefined : { [ARGOCD_SYNC_WAVE_ANNOTATION]: wave };
    },
  };
}
