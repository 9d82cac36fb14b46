// Argo CD and helm hooks: Argo CD maps `helm.sh/hook` to its own hook phases when it applies a
// directory (argocd-hook-phases.ts: pre-install and pre-upgrade run as PreSync, post-install
// and post-upgrade as PostSync, delete hooks only when the Application is deleted, test and rollback
// hooks never), so a unit's hooks stay in its directory with their annotations untouched, and the
// Applications need nothing for them. What this checks is that the tree was rendered that way:
// hooks moved to `helm-hooks/` (the layout for Flux) would never be applied by the unit's
// Application, and hooks left out would not run at install.
import type { UnitRecord } from '../../src/output/provenance.js';

/** Throws when a unit's helm hooks were not left for Argo CD to map (rendered for another engine). */
export function checkArgoCdHookLayout(units: UnitRecord[]): void {
  for (const unit of units) {
    const misplaced = (unit.hooks ?? []).filter((hook) => hook.file === undefined || hook.file.includes('/'));
    if (misplaced.length > 0) {
      throw new Error(
        `internal error: ${unit.dir} was rendered with its helm hooks moved or left out (${misplaced.map((hook) => `${hook.kind} ${hook.name}`).join(', ')}), not left for Argo CD to map`,
      );
    }
  }
}
