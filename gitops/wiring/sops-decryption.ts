// Flux decrypts what `--secrets encrypt` wrote: kustomize-controller's SOPS support
// (`spec.decryption.provider: sops`) with an age identity from a Secret. Only Kustomizations whose
// directory holds an encrypted Secret get it, so every other directory applies without the key.
// Flux reads `decryption.secretRef` from the Kustomization's own namespace: the wiring namespace
// (flux-system) for management releases, the Cluster's namespace for addon stages; that Secret
// holds the age identity under a key ending in `.agekey`.
import type { UnitRecord } from '../../src/output/provenance.js';

/** The default name of the Secret holding the age identity (`age.agekey`). */
export const DEFAULT_SOPS_SECRET = 'sops-age';

/** `decryption` for the Kustomization of `dir` when that directory holds encrypted Secrets; none otherwise. */
export function fluxDecryptionFor(
  units: UnitRecord[],
  dir: string,
  secretName: string | undefined,
): { decryption?: { provider: 'sops'; secretRef: { name: string } } } {
  const unit = units.find((candidate) => candidate.dir === dir);
  if (!unit?.secrets || unit.secrets.length === 0) return {};
  return { decryption: { provider: 'sops', secretRef: { name: secretName ?? DEFAULT_SOPS_SECRET } } };
}
