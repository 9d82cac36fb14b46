// age recipients as users give them (flags, an environment variable, .sops.yaml): checked before
// anything renders, so a typo is a clear error and never a half-encrypted tree.
import { Encrypter } from 'age-encryption';
import { Failure } from '../core/failure.js';

/**
 * An X25519 recipient: `age1` and 58 bech32 characters. sops (and so Flux's kustomize-controller)
 * decrypts these with an `AGE-SECRET-KEY-1...` identity; post-quantum and plugin recipients are not
 * accepted, since the sops in a cluster may not know them.
 */
const X25519_RECIPIENT = /^age1[02-9ac-hj-np-z]{58}$/;

/** Splits `age1...,age1...` (commas and white space, as sops reads its `age` setting). */
export function splitRecipientList(text: string): string[] {
  return text
    .split(/[,\s]+/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** The recipients, each checked (bech32 checksum included), without duplicates, sorted; throws a fix-input Failure naming `origin`. */
export function checkAgeRecipients(recipients: string[], origin: string): string[] {
  const unique = [
    ...new Set(recipients.map((recipient) => recipient.trim()).filter((recipient) => recipient !== '')),
  ].sort();
  for (const recipient of unique) {
    const shown = recipient.length > 70 ? `${recipient.slice(0, 70)}...` : recipient;
    if (!X25519_RECIPIENT.test(recipient)) {
      throw new Failure(
        'fix-input',
        `${origin}: "${shown}" is not an age X25519 recipient (age1 followed by 58 characters, as age-keygen -y prints it); nothing was rendered or written`,
      );
    }
    try {
      new Encrypter().addRecipient(recipient);
    } catch (error) {
      throw new Failure(
        'fix-input',
        `${origin}: "${shown}" is not a valid age recipient (${(error as Error).message}); nothing was rendered or written`,
      );
    }
  }
  return unique;
}
