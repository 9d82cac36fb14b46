// The helm hooks of a render for people: one entry per hook object and decision, with the units
// that render it alike (a fleet renders the same addon hooks for every cluster), for the tree's
// README, the pull request body and reports.
import { compareText } from '../core/compare-text.js';
import type { UnitRecord } from '../output/provenance.js';
import type { HelmHookSummary } from '../output/render-summary.js';

/** The hooks of the published units, grouped by object and decision, sorted by object. */
export function summarizeHelmHooks(records: Pick<UnitRecord, 'dir' | 'hooks'>[]): HelmHookSummary[] {
  const groups = new Map<string, HelmHookSummary>();
  for (const record of records) {
    for (const hook of record.hooks ?? []) {
      const object = `${hook.kind} ${hook.namespace ? `${hook.namespace}/` : ''}${hook.name}`;
      const where =
        hook.file === undefined
          ? '-'
          : hook.file.includes('/')
            ? `${hook.file.slice(0, hook.file.lastIndexOf('/'))}/`
            : 'unit directory';
      const key = JSON.stringify([object, hook.events, hook.weight, hook.decision, where, hook.reason]);
      const entry = groups.get(key);
      if (entry) entry.units.push(record.dir);
      else
        groups.set(key, {
          object,
          events: hook.events.join(','),
          weight: hook.weight,
          deletePolicy: hook.deletePolicies.join(',') || '-',
          decision: hook.decision,
          where,
          reason: hook.reason,
          units: [record.dir],
        });
    }
  }
  return [...groups.values()]
    .map((entry) => ({ ...entry, units: entry.units.sort(compareText) }))
    .sort((a, b) => compareText(a.object, b.object) || compareText(a.units[0]!, b.units[0]!));
}
