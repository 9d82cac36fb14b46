// What a render changed about Cluster API providers (management/providers/), from the provenance
// records of both trees: added, removed, upgraded or downgraded, or re-rendered at the same version.
// The data behind the provider lines of commit messages and pull request bodies.
import type { Provenance, ProviderRecord } from './provenance.js';

export interface ProviderChange {
  kind: string;
  namespace: string;
  name: string;
  change: 'added' | 'removed' | 'upgraded' | 'downgraded' | 'updated';
  versionBefore?: string;
  versionAfter?: string;
  contract?: string;
}

function compareVersions(a: string, b: string): number {
  const parts = (version: string): number[] =>
    version
      .replace(/^v/, '')
      .split(/[.-]/)
      .map((part) => Number.parseInt(part, 10) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i += 1)
    if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

/** Provider changes between two provenance records (files compared by the records' digests and file lists). */
export function compareProviders(
  before: Provenance | undefined,
  after: Provenance | undefined,
  changedFiles: ReadonlySet<string>,
): ProviderChange[] {
  const old = new Map((before?.providers ?? []).map((record) => [record.dir, record]));
  const now = new Map((after?.providers ?? []).map((record) => [record.dir, record]));
  const changes: ProviderChange[] = [];
  const base = (record: ProviderRecord) => ({ kind: record.kind, namespace: record.namespace, name: record.name });
  for (const dir of [...new Set([...old.keys(), ...now.keys()])].sort()) {
    const was = old.get(dir);
    const is = now.get(dir);
    if (!was && is) changes.push({ ...base(is), change: 'added', versionAfter: is.version, contract: is.contract });
    else if (was && !is) changes.push({ ...base(was), change: 'removed', versionBefore: was.version });
    else if (was && is) {
      const touched = [...changedFiles].some((file) => file.startsWith(`${dir}/`));
      if (!touched && was.version === is.version) continue;
      const order = compareVersions(is.version, was.version);
      changes.push({
        ...base(is),
        change: order > 0 ? 'upgraded' : order < 0 ? 'downgraded' : 'updated',
        versionBefore: was.version,
        versionAfter: is.version,
        contract: is.contract,
      });
    }
  }
  return changes;
}

/** One line per provider change, for commit messages and pull request bodies. */
export function describeProviderChange(change: ProviderChange): string {
  const subject = `${change.kind} ${change.namespace}/${change.name}`;
  switch (change.change) {
    case 'added':
      return `${subject} ${change.versionAfter} added${change.contract ? ` (contract ${change.contract})` : ''}`;
    case 'removed':
      return `${subject} removed (was ${change.versionBefore})`;
    case 'updated':
      return `${subject} ${change.versionAfter} re-rendered`;
    default:
      return `${subject} ${change.change} ${change.versionBefore} -> ${change.versionAfter}${change.contract ? ` (contract ${change.contract})` : ''}`;
  }
}
