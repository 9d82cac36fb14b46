// Which GitOps engines can apply what `--secrets encrypt` writes. Flux's kustomize-controller
// decrypts SOPS natively (the wiring adds `decryption`). Argo CD has no built-in SOPS: the known
// routes (a config management plugin in the repo-server that runs sops before kustomize, KSOPS
// generators, helm-secrets, with the age key mounted there) change how Argo CD builds every directory and where the key lives, which a
// generated Application cannot set up; so the combination is refused with the alternatives named.
import { Failure } from '../core/failure.js';

/** Throws a fix-input Failure when `engine` cannot apply SOPS-encrypted Secrets from the tree. */
export function checkEncryptionEngine(engine: string | undefined): void {
  if (engine !== 'argocd') return;
  throw new Failure(
    'fix-input',
    '--secrets encrypt cannot be combined with --gitops argocd: Argo CD has no built-in SOPS decryption, so it would apply the encrypted ' +
      'documents as they are. Alternatives: apply the tree with Flux (--gitops flux; kustomize-controller decrypts with an age key), ' +
      'render with --gitops none and wire Argo CD yourself through a config management plugin that decrypts SOPS files before kustomize build (sops --decrypt, with the age key in the repo-server), ' +
      'or keep the Secrets out of Git (--secrets drop, or chart values pointing at Secrets an operator such as external-secrets creates). Nothing was rendered or written',
  );
}
