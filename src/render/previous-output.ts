// What the target's published state offers the next render: a unit's files, read back from the
// tree under its own file names, to reuse a unit whose inputs did not change.
import type { UnitRecord } from '../output/provenance.js';
import type { PublishedState } from '../output/published-state.js';
import { unmarkedText } from './addon-moves.js';
import { compareText } from '../core/compare-text.js';
import type { KeepMarks } from '../core/engine-rules.js';

/**
 * The previous unit's files, if the previous tree still has all of them: those in its directory and
 * those written once elsewhere (`shared`), under the unit's own file names, sorted. An object
 * handed over (addon-moves.ts) is read from its copy marked with `marks`, without them.
 */
export function previousFiles(
  unit: UnitRecord | undefined,
  published: PublishedState,
  marks: KeepMarks,
): Map<string, string> | undefined {
  if (!unit) return undefined;
  const locations: [string, string][] = [
    ...unit.files.map((file): [string, string] => [file, `${unit.dir}/${file}`]),
    ...Object.entries(unit.shared ?? {}),
  ];
  const files = new Map<string, string>();
  for (const [file, path] of locations.sort(([a], [b]) => compareText(a, b))) {
    let content = published.tree.get(path);
    const handover = unit.shared ? published.addonHandovers.get(path) : undefined;
    if (content !== undefined && handover && handover.to === unit.dir && handover.file === file)
      content = unmarkedText(content, handover.digest, marks);
    if (content === undefined) return undefined;
    files.set(file, content);
  }
  return files;
}
