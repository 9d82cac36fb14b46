// What the target's previous tree offers the next render: its unit records (to reuse unchanged
// units, files and all) and the values templates that failed with the same inputs before.
import { readProvenance, type UnitRecord } from '../output/provenance.js';
import type { RenderedTree } from '../output/rendered-tree.js';

/** The previous tree's units by directory and its values failures by `dir inputDigest`; a damaged record only costs a full render. */
export function previousRecords(previous: RenderedTree): { units: Map<string, UnitRecord>; failures: Map<string, string> } {
  const provenance = readProvenance(previous);
  return {
    units: new Map((provenance?.units ?? []).map((unit) => [unit.dir, unit])),
    failures: new Map((provenance?.valuesFailures ?? []).map((failure) => [`${failure.dir} ${failure.inputDigest}`, failure.reason])),
  };
}

/** The previous unit's files, if the previous tree still has all of them. */
export function previousFiles(unit: UnitRecord | undefined, previous: RenderedTree): Map<string, string> | undefined {
  if (!unit) return undefined;
  const files = new Map<string, string>();
  for (const file of unit.files) {
    const content = previous.get(`${unit.dir}/${file}`);
    if (content === undefined) return undefined;
    files.set(file, content);
  }
  return files;
}

