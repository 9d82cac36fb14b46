// What a render did with Secrets under --secrets encrypt, for `render` reports and logs: per unit
// how many Secrets are encrypted (names only, never values), how many were encrypted in this run,
// and how many of those only because the recipients changed (a rotation: once, then reused).
import type { UnitRecord } from './provenance.js';

export interface EncryptedSecretsReport {
  /** Every published unit holding encrypted Secrets. */
  units: { dir: string; count: number; names: string[]; encryptedInThisRun: number }[];
  total: number;
  encryptedInThisRun: number;
  /** Encrypted again because their recipients changed. */
  recipientsChanged: number;
}

/** The report for `units` against the units the target held before; undefined when nothing is encrypted. */
export function reportEncryptedSecrets(before: UnitRecord[], units: UnitRecord[]): EncryptedSecretsReport | undefined {
  const old = new Map(
    before.flatMap((unit) => (unit.secrets ?? []).map((secret) => [`${unit.dir}/${secret.file}`, secret] as const)),
  );
  const report: EncryptedSecretsReport = { units: [], total: 0, encryptedInThisRun: 0, recipientsChanged: 0 };
  for (const unit of units) {
    if (!unit.secrets || unit.secrets.length === 0) continue;
    let now = 0;
    for (const secret of unit.secrets) {
      const previous = old.get(`${unit.dir}/${secret.file}`);
      if (previous?.digest === secret.digest) continue;
      now += 1;
      if (previous && [...previous.recipients].sort().join(',') !== [...secret.recipients].sort().join(','))
        report.recipientsChanged += 1;
    }
    report.units.push({
      dir: unit.dir,
      count: unit.secrets.length,
      names: unit.secrets.map((secret) => `${secret.namespace}/${secret.name}`),
      encryptedInThisRun: now,
    });
    report.total += unit.secrets.length;
    report.encryptedInThisRun += now;
  }
  return report.total > 0 ? report : undefined;
}

/** One line for people: how many Secrets are encrypted and what this run did. */
export function describeEncryptedSecrets(report: EncryptedSecretsReport): string {
  const rotation =
    report.recipientsChanged > 0
      ? `; the recipients changed, so ${report.recipientsChanged} were encrypted again for the new ones`
      : '';
  return `Secrets: ${report.total} encrypted with SOPS in ${report.units.length} units, ${report.encryptedInThisRun} of them in this run${rotation}.`;
}
