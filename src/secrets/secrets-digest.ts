// How a run's secret handling enters every unit digest, apart from resolving it: planning and
// rendering units needs only this, so loading them does not load age (a run that encrypts loads it
// through secret-encryption.ts).
import type { SopsCreationRule } from './sops-config.js';

/** The recipients of every encrypted file, by the file's path in the tree. */
export interface SecretEncryption {
  rules: SopsCreationRule[];
  /** Where the rules come from, for messages (`--age-recipient`, `.sops.yaml of the target`). */
  origin: string;
}

/**
 * The secret handling as every unit digest sees it: the policy alone (refuse, drop, allow), or for
 * encrypt the recipients too, so changing them (rotation) encrypts every Secret again, once.
 */
export function secretsDigestPart(policy: string, encryption: SecretEncryption | undefined): unknown {
  if (policy !== 'encrypt' || !encryption) return policy;
  return {
    policy,
    rules: encryption.rules.map((rule) => ({ pathRegex: rule.pathRegex ?? null, recipients: rule.recipients })),
  };
}
