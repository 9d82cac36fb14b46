// Withholding: a unit that cannot be published takes its release (alone) or its cluster (whole: half
// an addon set is worse than the old one) out of the new tree, and whatever was published before
// for it stays. Withholding never prunes.
import type { UnitRecord, WithheldEntry } from '../output/provenance.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { clusterDir, releaseDir } from '../output/tree-layout.js';
import { previousFiles } from './previous-output.js';
import type { PendingUnit } from './render-units.js';
import type { ObjectConflict } from './shared-objects.js';

/**
 * Takes failed units out of the output and records them as withheld: a release alone, a cluster
 * whole (half an addon set is worse than the old one). Their previous output is kept later.
 */
export function withholdFailedUnits(failures: Map<PendingUnit, string>, rendered: Map<string, Map<string, string>>, records: UnitRecord[], withheld: WithheldEntry[]): void {
  const reasons = new Map<string, { kind: WithheldEntry['kind']; namespace: string; name: string; reasons: string[] }>();
  for (const [unit, reason] of failures) {
    const kind = unit.record.kind === 'release' ? 'release' : 'cluster';
    const key = `${kind}/${unit.record.namespace}/${unit.record.name}`;
    const entry = reasons.get(key) ?? { kind, namespace: unit.record.namespace, name: unit.record.name, reasons: [] };
    entry.reasons.push(unit.record.kind === 'release' ? reason : `stage ${unit.record.stage}: ${reason}`);
    reasons.set(key, entry);
  }
  for (const entry of reasons.values()) {
    const prefix = entry.kind === 'release' ? undefined : `${clusterDir(entry.namespace, entry.name)}/`;
    for (let index = records.length - 1; index >= 0; index -= 1) {
      const record = records[index]!;
      const matches = prefix ? record.dir.startsWith(prefix) : record.kind === 'release' && record.namespace === entry.namespace && record.name === entry.name;
      if (!matches) continue;
      rendered.delete(record.dir);
      records.splice(index, 1);
    }
    withheld.push({ kind: entry.kind, namespace: entry.namespace, name: entry.name, reason: entry.reasons.sort().join('; '), previousKept: false });
  }
}

/** Puts back the previous output of withheld units that were published before, marking them so. */
export function keepPreviousOutput(withheld: WithheldEntry[], before: Map<string, UnitRecord>, previous: RenderedTree, rendered: Map<string, Map<string, string>>, records: UnitRecord[]): void {
  for (const entry of withheld) {
    const dirs = entry.kind === 'release' ? [releaseDir(entry.namespace, entry.name)] : [...before.keys()].filter((dir) => dir.startsWith(`${clusterDir(entry.namespace, entry.name)}/`));
    for (const dir of dirs) {
      const old = before.get(dir);
      const files = previousFiles(old, previous);
      if (!old || !files || rendered.has(dir)) continue;
      rendered.set(dir, files);
      records.push(old);
      entry.previousKept = true;
    }
  }
}

/**
 * Takes the units of conflicts out of the output: a release alone, a cluster whole. A unit already
 * withheld (its previous output put back, and that output conflicts too) loses the previous output.
 */
export function withholdConflicts(conflicts: ObjectConflict[], rendered: Map<string, Map<string, string>>, records: UnitRecord[], withheld: WithheldEntry[]): void {
  for (const { record, reason } of conflicts) {
    const kind = record.kind === 'release' ? 'release' : 'cluster';
    const prefix = `${clusterDir(record.namespace, record.name)}/`;
    for (let index = records.length - 1; index >= 0; index -= 1) {
      const candidate = records[index]!;
      const matches = kind === 'release' ? candidate.dir === record.dir : candidate.kind === 'cluster-stage' && candidate.dir.startsWith(prefix);
      if (!matches) continue;
      rendered.delete(candidate.dir);
      records.splice(index, 1);
    }
    const entry = withheld.find((item) => item.kind === kind && item.namespace === record.namespace && item.name === record.name);
    if (!entry) withheld.push({ kind, namespace: record.namespace, name: record.name, reason, previousKept: false });
    else {
      entry.previousKept = false;
      if (!entry.reason.includes(reason)) entry.reason = `${entry.reason}; ${reason}`;
    }
  }
}
