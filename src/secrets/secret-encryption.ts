// What `--secrets encrypt` encrypts for: age recipients from the command line (or the environment),
// or else the creation rules of a `.sops.yaml` (given, or at the root of the target tree). Resolved
// once per run, before anything renders, so a bad recipient or rule writes nothing.
import { Failure } from '../core/failure.js';
import { checkAgeRecipients } from './age-recipients.js';
import type { SecretEncryption } from './secrets-digest.js';
import { parseSopsConfig, recipientsForPath } from './sops-config.js';

// The digest part lives apart so that planning units does not load age; callers keep importing it here.
export { type SecretEncryption, secretsDigestPart } from './secrets-digest.js';

/** What a run was given to find its recipients. */
export interface EncryptionInput {
  /** Recipients given explicitly (flags or the environment); they win over any `.sops.yaml`. */
  recipients: string[];
  /** Names where `recipients` come from, for messages. */
  recipientsOrigin: string;
  /** A `.sops.yaml` given explicitly (--sops-config). */
  sopsConfig?: { text: string; origin: string };
}

/** The encryption of a run; `targetSopsConfig` is the `.sops.yaml` the target tree holds, if any. Throws a fix-input Failure. */
export function resolveSecretEncryption(
  input: EncryptionInput,
  targetSopsConfig: string | undefined,
): SecretEncryption {
  if (input.recipients.length > 0)
    return {
      rules: [{ recipients: checkAgeRecipients(input.recipients, input.recipientsOrigin) }],
      origin: input.recipientsOrigin,
    };
  if (input.sopsConfig)
    return { rules: parseSopsConfig(input.sopsConfig.text, input.sopsConfig.origin), origin: input.sopsConfig.origin };
  if (targetSopsConfig !== undefined)
    return {
      rules: parseSopsConfig(targetSopsConfig, 'the .sops.yaml of the target'),
      origin: 'the .sops.yaml of the target',
    };
  throw new Failure(
    'fix-input',
    '--secrets encrypt needs age recipients: pass --age-recipient age1... (repeatable; or CLUSTERSTACK_AGE_RECIPIENTS), --sops-config <.sops.yaml>, ' +
      'or commit a .sops.yaml with creation_rules at the root of the target tree; create a key with age-keygen. Nothing was rendered or written',
  );
}

/** The recipients for one file of the tree (its path from the tree root). */
export function recipientsForFile(encryption: SecretEncryption, file: string): string[] {
  return recipientsForPath(encryption.rules, file, encryption.origin);
}
