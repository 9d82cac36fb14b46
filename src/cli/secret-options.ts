// The command-line side of `--secrets encrypt`: who to encrypt for (--age-recipient, repeatable,
// or CLUSTERSTACK_AGE_RECIPIENTS; else a .sops.yaml given with --sops-config or found at the root
// of the target tree) and which Secret Flux decrypts with (--sops-secret). Shared by render and the
// controller.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
// The secrets modules load the age library: only a run that encrypts imports them.
import type { EncryptionInput } from '../secrets/secret-encryption.js';
import { SECRET_POLICIES, type SecretPolicy } from '../render/secret-policy.js';
import { UsageError } from './cli-io.js';

const AGE_RECIPIENTS_VARIABLE = 'CLUSTERSTACK_AGE_RECIPIENTS';

export const SECRET_HELP = `  --secrets <policy>       refuse (default) | drop | allow | encrypt rendered Secrets and private keys
  --age-recipient <age1..> with --secrets encrypt: an age recipient to encrypt Secrets for (repeatable;
                           ${AGE_RECIPIENTS_VARIABLE}, comma-separated); without one, a .sops.yaml decides
  --sops-config <file>     with --secrets encrypt: a .sops.yaml whose creation_rules (path_regex, age)
                           pick the recipients per file (default: .sops.yaml at the root of the target tree)
  --sops-secret <name>     Flux: the Secret with the age identity for decryption (default sops-age)`;

/** The secret flags, parsed alike by `render` and `plan` (whose unit digests hold the policy and recipients). */
export const SECRET_OPTIONS = {
  secrets: { type: 'string', default: 'refuse' },
  'age-recipient': { type: 'string', multiple: true },
  'sops-config': { type: 'string' },
  'sops-secret': { type: 'string' },
} as const;

/** `--secrets` as a policy; a usage error (exit 2) naming the policies for any other value. */
export function secretPolicyFrom(value: string | undefined, flag = '--secrets'): SecretPolicy {
  if (!SECRET_POLICIES.includes(value as SecretPolicy))
    throw new UsageError(`${flag} must be one of ${SECRET_POLICIES.join(', ')}, not "${value}"`);
  return value as SecretPolicy;
}

/** What the encrypt options say; `sopsSecret` goes to the Flux wiring. */
export interface SecretSettings {
  encryption?: EncryptionInput;
  sopsSecret?: string;
}

/**
 * The encryption input from flags and the environment; a usage error when they are given without
 * `--secrets encrypt`, or when a recipient they give is not one (a bad flag or variable value, exit 2).
 */
export async function secretSettingsFrom(
  policy: string,
  flags: { 'age-recipient'?: string[]; 'sops-config'?: string; 'sops-secret'?: string },
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<SecretSettings> {
  if (policy !== 'encrypt') {
    // splitRecipientList's separators: a flag of only commas and spaces names no recipient.
    const recipientGiven = (flags['age-recipient'] ?? []).some((value) => /[^,\s]/.test(value));
    const given = [
      recipientGiven && '--age-recipient',
      flags['sops-config'] && '--sops-config',
      flags['sops-secret'] && '--sops-secret',
    ].filter(Boolean);
    if (given.length > 0) throw new UsageError(`${given.join(', ')} only apply with --secrets encrypt`);
    return {};
  }
  const { checkAgeRecipients, splitRecipientList } = await import('../secrets/age-recipients.js');
  const fromFlags = (flags['age-recipient'] ?? []).flatMap(splitRecipientList);
  const fromEnv = splitRecipientList(env[AGE_RECIPIENTS_VARIABLE] ?? '');
  const recipients = fromFlags.length > 0 ? fromFlags : fromEnv;
  const encryption: EncryptionInput = {
    recipients,
    recipientsOrigin: fromFlags.length > 0 ? '--age-recipient' : AGE_RECIPIENTS_VARIABLE,
  };
  try {
    checkAgeRecipients(recipients, encryption.recipientsOrigin);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (flags['sops-config']) {
    const file = path.resolve(cwd, flags['sops-config']);
    try {
      encryption.sopsConfig = { text: await readFile(file, 'utf8'), origin: `--sops-config ${flags['sops-config']}` };
    } catch (error) {
      throw new UsageError(
        `--sops-config ${flags['sops-config']} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  }
  return { encryption, ...(flags['sops-secret'] ? { sopsSecret: flags['sops-secret'] } : {}) };
}

/**
 * The controller's encrypt settings (flags, else CLUSTERSTACK_* variables), checked at start: a
 * bad recipient, an unreadable or invalid .sops.yaml, or Argo CD wiring stops it with a usage error
 * rather than failing every publish. A target's own .sops.yaml is read on every publish.
 */
export async function controllerSecretSettings(
  policy: string,
  engine: string,
  flags: { 'age-recipient'?: string[]; 'sops-config'?: string; 'sops-secret'?: string },
  io: { env: NodeJS.ProcessEnv; cwd: string },
): Promise<SecretSettings> {
  // The variables count only with encrypt (a shared environment may set them for other runs); flags always.
  const fromEnv = (name: string): string | undefined => (policy === 'encrypt' ? nonEmpty(io.env[name]) : undefined);
  const sopsConfig = flags['sops-config'] ?? fromEnv('CLUSTERSTACK_SOPS_CONFIG');
  const sopsSecret = flags['sops-secret'] ?? fromEnv('CLUSTERSTACK_SOPS_SECRET');
  const settings = await secretSettingsFrom(
    policy,
    {
      ...flags,
      ...(sopsConfig ? { 'sops-config': sopsConfig } : {}),
      ...(sopsSecret ? { 'sops-secret': sopsSecret } : {}),
    },
    io.env,
    io.cwd,
  );
  if (!settings.encryption) return settings;
  const [{ checkEncryptionEngine }, { resolveSecretEncryption }] = await Promise.all([
    import('../secrets/encryption-engine.js'),
    import('../secrets/secret-encryption.js'),
  ]);
  try {
    checkEncryptionEngine(engine);
    if (settings.encryption.recipients.length > 0 || settings.encryption.sopsConfig)
      resolveSecretEncryption(settings.encryption, undefined);
  } catch (error) {
    throw new UsageError(
      (error as Error).message.replace(/; nothing was rendered or written$|\. Nothing was rendered or written$/i, ''),
    );
  }
  return settings;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
