// What a render would change about Cluster API providers (and cert-manager), as `plan` shows it
// against the target's last published tree (its provenance.json `providers[]`): added, upgraded
// from→to, unchanged (also when the version lock keeps the published one), downgraded (allowed by
// annotation), refused (a downgrade without it) or removed. Pure: the same decisions the guards in
// guard-providers.ts take at render time, without fetching anything.
import { semver } from '../core/semver-functions.js';
import { ALLOW_DOWNGRADE_ANNOTATION, describeProvider } from '../api/provider-types.js';
import type { ProviderRecord } from '../output/provenance.js';
import type { ProviderPlan } from './plan-providers.js';
import { compareText } from '../core/compare-text.js';

export type ProviderChangeKind = 'added' | 'upgraded' | 'unchanged' | 'downgraded' | 'refused' | 'removed';

export interface ProviderPlanChange {
  dir: string;
  kind: string;
  namespace: string;
  name: string;
  change: ProviderChangeKind;
  /** The published version, when there is one. */
  from?: string;
  /** The version a render would publish (for `refused`: the one asked for). */
  to?: string;
  /** Why, when the change needs saying: the lock, a refusal. */
  note?: string;
}

function compare(to: string, from: string): number {
  return semver.valid(to) && semver.valid(from) ? semver.compare(to, from) : to === from ? 0 : 1;
}

/** Which provider a change is about. */
type Who = { kind: string; namespace: string; name: string };

/** One provider's change against what was published before (`was`), with the note a reader needs. */
function providerChange(
  was: ProviderRecord | undefined,
  dir: string,
  who: Who,
  version: string,
  pinned: boolean,
  allowDowngrade: boolean,
  what: string,
): ProviderPlanChange {
  if (!was) return { dir, ...who, change: 'added', to: version };
  if (!pinned && was.version !== version && semver.valid(was.version)) {
    return {
      dir,
      ...who,
      change: 'unchanged',
      from: was.version,
      to: was.version,
      note: `kept at ${was.version} (no spec.version: the version first rendered stays; ${version} is the newest)`,
    };
  }
  const order = compare(version, was.version);
  if (order > 0) return { dir, ...who, change: 'upgraded', from: was.version, to: version };
  if (order === 0) return { dir, ...who, change: 'unchanged', from: was.version, to: version };
  if (allowDowngrade)
    return {
      dir,
      ...who,
      change: 'downgraded',
      from: was.version,
      to: version,
      note: `allowed by ${ALLOW_DOWNGRADE_ANNOTATION}`,
    };
  return {
    dir,
    ...who,
    change: 'refused',
    from: was.version,
    to: version,
    note: `${what} ${version} is lower than ${was.version}, which is published; render refuses the downgrade unless ${ALLOW_DOWNGRADE_ANNOTATION}: "true" is set`,
  };
}

/** The change per provider directory, in directory order, removals included; providers without a version are left out. */
export function providerPlanChanges(plan: ProviderPlan, previous: readonly ProviderRecord[]): ProviderPlanChange[] {
  const before = new Map(previous.map((record) => [record.dir, record]));
  const changes: ProviderPlanChange[] = [];
  const present = new Set<string>();
  const decide = (
    dir: string,
    who: Who,
    version: string,
    pinned: boolean,
    allowDowngrade: boolean,
    what: string,
  ): void => {
    present.add(dir);
    const change =
      version === '' ? undefined : providerChange(before.get(dir), dir, who, version, pinned, allowDowngrade, what);
    if (change) changes.push(change);
  };
  for (const planned of plan.providers) {
    const { provider } = planned;
    decide(
      planned.dir,
      { kind: provider.kind, namespace: provider.metadata.namespace ?? 'default', name: provider.metadata.name },
      planned.version,
      planned.pinned,
      provider.metadata.annotations?.[ALLOW_DOWNGRADE_ANNOTATION] === 'true',
      describeProvider(provider),
    );
  }
  const certManager = plan.certManager;
  if (certManager) {
    decide(
      certManager.dir,
      { kind: 'CertManager', namespace: 'cert-manager', name: 'cert-manager' },
      certManager.release ? certManager.version : '',
      true,
      certManager.core.metadata.annotations?.[ALLOW_DOWNGRADE_ANNOTATION] === 'true',
      'cert-manager',
    );
  }
  for (const record of previous) {
    if (!present.has(record.dir))
      changes.push({
        dir: record.dir,
        kind: record.kind,
        namespace: record.namespace,
        name: record.name,
        change: 'removed',
        from: record.version,
      });
  }
  return changes.sort((a, b) => compareText(a.dir, b.dir));
}
