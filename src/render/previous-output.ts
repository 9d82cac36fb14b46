// What the target's previous tree offers the next render: its unit records (to reuse unchanged
// units, files and all) and the values templates that failed with the same inputs before.
import { readProvenance, type SharedObjectRecord, type UnitRecord } from '../output/provenance.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { previousHandovers, unmarkedText } from './addon-moves.js';
import { compareText } from '../core/compare-text.js';

/**
 * The previous tree's units by directory, its values failures by `dir inputDigest` and its shared
 * objects; a damaged record only costs a full render.
 */
export function previousRecords(previous: RenderedTree): { units: Map<string, UnitRecord>; failures: Map<string, string>; sharedObjects: SharedObjectRecord[] } {
  const provenance = readProvenance(previous);
  return {
    units: new Map((provenance?.units ?? []).map((unit) => [unit.dir, unit])),
    failures: new Map((provenance?.valuesFailures ?? []).map((failure) => [`${failure.dir} ${failure.inputDigest}`, failure.reason])),
    sharedObjects: provenance?.sharedObjects ?? [],
  };
}

/**
 * The previous unit's files, if the previous tree still has all of them: those in its directory and
 * those written once elsewhere (`shared`), under the unit's own file names, sorted. An object
 * handed over (addon-moves.ts) is read from its marked copy, without the marks.
 */
export function previousFiles(unit: UnitRecord | undefined, previous: RenderedTree): Map<string, string> | undefined {
  if (!unit) return undefined;
  const locations: [string, string][] = [...unit.files.map((file): [string, string] => [file, `${unit.dir}/${file}`]), ...Object.entries(unit.shared ?? {})];
  const files = new Map<string, string>();
  const handovers = unit.shared ? previousHandovers(previous) : undefined;
  for (const [file, path] of locations.sort(([a], [b]) => compareText(a, b))) {
    let content = previous.get(path);
    const handover = handovers?.get(path);
    if (content !== undefined && handover && handover.to === unit.dir && handover.file === file) content = unmarkedText(content, handover.digest);
    if (content === undefined) return undefined;
    files.set(file, content);
  }
  return files;
}

