// Rendered Secrets and key material are never committed silently: refused (the default), dropped,
// allowed, or encrypted with SOPS (Secrets only; other objects carrying a private key are refused).
import type { KubeObject } from '../api/types.js';
import { Failure } from '../core/failure.js';

export type SecretPolicy = 'refuse' | 'drop' | 'allow' | 'encrypt';
export const SECRET_POLICIES: SecretPolicy[] = ['refuse', 'drop', 'allow', 'encrypt'];

const PRIVATE_KEY = /-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED) )?PRIVATE KEY-----/;

export interface SecretFinding {
  object: KubeObject;
  why: string;
}

function containsKeyMaterial(value: unknown): boolean {
  if (typeof value === 'string') return PRIVATE_KEY.test(value) || (value.length > 40 && isBase64PrivateKey(value));
  if (Array.isArray(value)) {
    for (const item of value) if (containsKeyMaterial(item)) return true;
    return false;
  }
  if (value !== null && typeof value === 'object') {
    // A loop rather than Object.values: every object of every render passes here.
    for (const key in value)
      if (Object.hasOwn(value, key) && containsKeyMaterial((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

function isBase64PrivateKey(value: string): boolean {
  if (!/^[A-Za-z0-9+/=\s]+$/.test(value)) return false;
  const head = value.slice(0, 200);
  // Decoded, `-----` holds a whole aligned group `---`, which base64 writes as `LS0t`: text
  // without it (and without `=`, where decoders differ) cannot hold a PEM header, and most long
  // strings (checksums, descriptions) are ruled out here without decoding them.
  if (!head.includes('=') && !(/\s/.test(head) ? head.replace(/\s+/g, '') : head).includes('LS0t')) return false;
  return PRIVATE_KEY.test(Buffer.from(head, 'base64').toString('latin1'));
}

/** Why the policy treats `object` as secret (it is a Secret, or carries a private key), or undefined when it does not. */
export function secretReason(object: KubeObject): string | undefined {
  if (object.kind === 'Secret' && (object.apiVersion === 'v1' || object.apiVersion === '')) return 'is a Secret';
  return containsKeyMaterial(object) ? 'contains a private key' : undefined;
}

/** Objects that are Secrets or carry private keys, with why each was flagged. */
function findSecrets(objects: KubeObject[]): SecretFinding[] {
  return objects.flatMap((object) => {
    const why = secretReason(object);
    return why ? [{ object, why }] : [];
  });
}

export class SecretRefusedError extends Failure {
  constructor(
    readonly unit: string,
    readonly findings: SecretFinding[],
    encrypting = false,
  ) {
    const names = findings
      .map(
        (f) =>
          `${f.object.kind} ${f.object.metadata.namespace ? `${f.object.metadata.namespace}/` : ''}${f.object.metadata.name} (${f.why})`,
      )
      .join(', ');
    super(
      'fix-input',
      encrypting
        ? `${unit} renders ${names}; --secrets encrypt encrypts Secrets only, and this object is not one. ` +
            'Ways out: override the chart values so the key goes into a Secret (or an existing one), or pass --secrets drop to leave such objects out.'
        : `${unit} renders ${names}; secrets are not committed to Git by default. ` +
            'Ways out: pass --secrets encrypt with --age-recipient age1... to commit them encrypted with SOPS (Flux decrypts them), ' +
            'override the chart values so it does not render the secret (e.g. point it at an existing Secret), ' +
            'pass --secrets drop to leave such objects out of the output, or --secrets allow if the target repository is meant to hold them.',
    );
    this.name = 'SecretRefusedError';
  }
}

/** Throws the units' refusals as one error naming every unit and finding (a lone refusal as it is); returns when there are none. */
export function throwRefusals(refusals: SecretRefusedError[]): void {
  if (refusals.length === 0) return;
  throw refusals.length === 1
    ? refusals[0]!
    : new SecretRefusedError(
        refusals.map((r) => r.unit).join(', '),
        refusals.flatMap((r) => r.findings),
      );
}

/**
 * Applies the policy to one unit's objects: throws (refuse), filters (drop), keeps (allow), or keeps
 * and marks the Secrets to encrypt (encrypt; other key material is refused).
 */
export function applySecretPolicy<T extends { object: KubeObject }>(
  entries: T[],
  policy: SecretPolicy,
  unit: string,
): { objects: T[]; dropped: SecretFinding[]; toEncrypt: Set<T> } {
  if (policy === 'allow') return { objects: entries, dropped: [], toEncrypt: new Set() };
  const findings = findSecrets(entries.map((entry) => entry.object));
  if (findings.length === 0) return { objects: entries, dropped: [], toEncrypt: new Set() };
  if (policy === 'refuse') throw new SecretRefusedError(unit, findings);
  if (policy === 'encrypt') {
    const notSecrets = findings.filter((f) => f.why !== 'is a Secret');
    if (notSecrets.length > 0) throw new SecretRefusedError(unit, notSecrets, true);
    const secrets = new Set(findings.map((f) => f.object));
    return { objects: entries, dropped: [], toEncrypt: new Set(entries.filter((entry) => secrets.has(entry.object))) };
  }
  const flagged = new Set(findings.map((f) => f.object));
  return { objects: entries.filter((entry) => !flagged.has(entry.object)), dropped: findings, toEncrypt: new Set() };
}
