// Which GitOps engine the generated wiring is for: none (the user wires the tree up themselves),
// Flux, or Argo CD.
import { InputError } from '../../src/core/problem.js';

const GITOPS_ENGINES = ['none', 'flux', 'argocd'] as const;

export type GitOpsEngine = (typeof GITOPS_ENGINES)[number];

/** The engine named by `value` (exact, lowercase); throws InputError listing the valid names otherwise. */
export function parseGitOpsEngine(value: string): GitOpsEngine {
  if ((GITOPS_ENGINES as readonly string[]).includes(value)) return value as GitOpsEngine;
  throw new InputError([{ message: `unknown GitOps engine "${value}": use one of ${GITOPS_ENGINES.join(', ')}` }]);
}
