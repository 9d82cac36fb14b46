// The command-line side of `--secrets encrypt`: who to encrypt for (--age-recipient, repeatable,
// or CLUSTERSTACK_AGE_RECIPIENTS; else a .sops.yaml given with --sops-config or found at the root
// of the target tree) and which Secret Flux decrypts with (--sops-secret). Shared by render and the
// controller.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { splitRecipientList } from '../secrets/age-recipients.js';
import type { EncryptionInput } from '../secrets/secret-encryption.js';
import { UsageError } from './cli-io.js';

export const AGE_RECIPIENTS_VARIABLE = 'CLUSTERSTACK_AGE_RECIPIENTS';

export const SECRET_HELP = `  --secrets <policy>       refuse (default) | drop | allow | encrypt rendered Secrets and private keys
  --age-recipient <age1..> with --secrets encrypt: an age recipient to encrypt Secrets for (repeatable;
                           ${AGE_RECIPIENTS_VARIABLE}, comma-separated); without one, a .sops.yaml decides
  --sops-config <file>     with --secrets encrypt: a .sops.yaml whose creation_rules (path_regex, age)
                           pick the recipients per file (default: .sops.yaml at the root of the target tree)
  --sops-secret <name>     Flux: the Secret with the age identity for decryption (default sops-age)`;

/** What the encrypt options say; `sopsSecret` goes to the Flux wiring. */
export interface SecretSettings {
  encryption?: EncryptionInput;
  sopsSecret?: string;
}

/** The encryption input from flags and the environment; a usage error when they are given without `--secrets encrypt`. */
export async function secretSettingsFrom(
  policy: string,
  flags: { 'age-recipient'?: string[]; 'sops-config'?: string; 'sops-secret'?: string },
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<SecretSettings> {
  const fromFlags = (flags['age-recipient'] ?? []).flatMap(splitRecipientList);
  const fromEnv = splitRecipientList(env[AGE_RECIPIENTS_VARIABLE] ?? '');
  if (policy !== 'encrypt') {
    const given = [fromFlags.length > 0 && '--age-recipient', flags['sops-config'] && '--sops-config', flags['sops-secret'] && '--sops-secret'].filter(Boolean);
    if (given.length > 0) throw new UsageError(`${given.join(', ')} only apply with --secrets encrypt`);
    return {};
  }
  const recipients = fromFlags.length > 0 ? fromFlags : fromEnv;
  const encryption: EncryptionInput = { recipients, recipientsOrigin: fromFlags.length > 0 ? '--age-recipient' : AGE_RECIPIENTS_VARIABLE };
  if (flags['sops-config']) {
    const file = path.resolve(cwd, flags['sops-config']);
    try {
      encryption.sopsConfig = { text: await readFile(file, 'utf8'), origin: `--sops-config ${flags['sops-config']}` };
    } catch (error) {
      throw new UsageError(`--sops-config ${flags['sops-config']} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
  }
  return { encryption, ...(flags['sops-secret'] ? { sopsSecret: flags['sops-secret'] } : {}) };
}
