// The render option that carries an engine's rules into the core (src/core/engine-rules.ts),
// filled in here from the engine the command chose.
import type { EngineRules } from '../../src/core/engine-rules.js';
import { ARGOCD_HOOK_PHASES } from './argocd-hook-phases.js';
import type { GitOpsEngine } from './gitops-engine.js';
import { EVERY_ENGINE_KEEP_MARKS } from './keep-marks.js';

/** The rules a render follows for `engine`: every engine's keep marks; Argo CD's hook phases when it applies the tree. */
export function engineRulesFor(engine: GitOpsEngine | undefined): EngineRules {
  return { keepMarks: EVERY_ENGINE_KEEP_MARKS, ...(engine === 'argocd' ? { hookPhases: ARGOCD_HOOK_PHASES } : {}) };
}
