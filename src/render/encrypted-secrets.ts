// `--secrets encrypt` in rendering: a unit's Secret files become SOPS documents before anything
// else sees them (the plaintext lives only in memory), and the digest of what was written is
// recorded, so that a published file edited by hand is noticed and encrypted again from the render.
// A unit whose inputs did not change keeps its encrypted files byte for byte (render-output.ts).
import type { EncryptedSecretRecord, UnitRecord } from '../output/provenance.js';
import type { RenderSummary } from '../output/render-summary.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { sha256Digest } from '../release/content-digest.js';
import type { SecretEncryption } from '../secrets/secret-encryption.js';
import type { UnitFiles } from './unit-files.js';
import { compareText } from '../core/compare-text.js';

/** Replaces the unit's Secret files in `result.files` by SOPS documents; returns their records. */
export async function encryptUnitSecrets(
  dir: string,
  result: UnitFiles,
  encryption: SecretEncryption,
  lastModified: string,
): Promise<EncryptedSecretRecord[]> {
  const records: EncryptedSecretRecord[] = [];
  if (result.secrets.length === 0) return records;
  // Loaded only when there is something to encrypt: age and its ciphers are most of the modules a render would load.
  const [{ recipientsForFile }, { encryptAsSopsDocument }] = await Promise.all([
    import('../secrets/secret-encryption.js'),
    import('../secrets/sops-document.js'),
  ]);
  for (const { file, object } of result.secrets) {
    const recipients = recipientsForFile(encryption, `${dir}/${file}`);
    const document = await encryptAsSopsDocument(object as unknown as Record<string, unknown>, {
      recipients,
      lastModified,
    });
    result.files.set(file, document);
    records.push({
      file,
      namespace: object.metadata.namespace ?? '',
      name: object.metadata.name,
      digest: sha256Digest(document),
      recipients,
    });
  }
  result.secrets = [];
  return records.sort((a, b) => compareText(a.file, b.file));
}

/** Encrypted files of the previous unit that no longer hold what clusterstack wrote (edited by hand), as tree paths. */
export function handEditedSecrets(old: UnitRecord | undefined, previous: RenderedTree): string[] {
  if (!old?.secrets) return [];
  return old.secrets
    .filter((secret) => {
      const content = previous.get(`${old.dir}/${secret.file}`);
      return content !== undefined && sha256Digest(content) !== secret.digest;
    })
    .map((secret) => `${old.dir}/${secret.file}`);
}

/** `lastmodified` for the documents of a render: its time, RFC 3339 in UTC to the second (what sops writes and re-formats). */
export function sopsTimestamp(epochMs: number): string {
  return `${new Date(Math.floor(epochMs / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

/** Where the age identity must be for Flux to decrypt: the Secret's name, and the wiring namespace (management releases). */
export interface DecryptionKeyRef {
  secretName: string;
  managementNamespace: string;
}

/** The encrypted Secrets of the published units, for the tree's README: each with what decrypts it. */
export function describeEncryptedSecrets(
  records: UnitRecord[],
  key: DecryptionKeyRef | undefined,
): NonNullable<RenderSummary['encryptedSecrets']> {
  return records.flatMap((record) =>
    (record.secrets ?? []).map((secret) => {
      // Flux reads decryption.secretRef from the Kustomization's namespace, and every Kustomization runs in the management cluster.
      const namespace = record.kind === 'release' ? key?.managementNamespace : record.namespace;
      const decryptedWith = key
        ? `Flux: Secret \`${key.secretName}\` (key \`age.agekey\`) in namespace \`${namespace}\` of the management cluster`
        : `an age identity of ${secret.recipients.map((recipient) => `\`${recipient}\``).join(', ')}`;
      return { file: `${record.dir}/${secret.file}`, namespace: secret.namespace, name: secret.name, decryptedWith };
    }),
  );
}
