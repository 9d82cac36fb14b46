// The generated GitOps wiring for a rendered tree, for whichever engine the user chose: the files
// to add to the tree beside management/ and clusters/ (under flux/ or argocd/). Pure: it sees only
// the unit records, so a release or cluster that leaves the tree leaves the wiring with it.
import type { UnitRecord } from '../../src/output/provenance.js';
import { renderArgoWiring } from './argocd-wiring.js';
import { renderFluxWiring } from './flux-wiring.js';
import type { WiringExtras, WiringOptions } from './wiring-options.js';

export type { GitOpsEngine } from './gitops-engine.js';
export { parseGitOpsEngine } from './gitops-engine.js';
export type { WiringExtras, WiringOptions } from './wiring-options.js';

/**
 * Wiring files by path relative to the tree's root (all under `flux/` or `argocd/`, sorted), each
 * directory with a kustomization.yaml; empty for `none`. Same units and options, same bytes. Only
 * names of Secrets appear in it, never their contents. Throws InputError when the options are unusable.
 */
export function renderWiring(
  units: UnitRecord[],
  options: WiringOptions,
  extras: WiringExtras = {},
): Map<string, string> {
  switch (options.engine) {
    case 'none':
      return new Map();
    case 'flux':
      return renderFluxWiring(units, options, extras);
    case 'argocd':
      return renderArgoWiring(units, options, extras);
  }
}
