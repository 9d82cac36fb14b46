// "Did you mean": the known name closest to a mistyped one, for flags, commands and subcommands,
// and for the kinds and ClusterClass names of the inputs.
// Edit distance counts a swap of two neighbouring letters as one edit (`prnue` -> `prune`), since
// that is the typo people make most after a missing or extra letter.

/** Edits (insert, delete, substitute, swap neighbours) that turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  // Rows of the optimal-string-alignment table; three are enough because a swap looks two back.
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, beforePrevious[j - 2]! + 1);
      current.push(best);
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The candidate `input` most likely meant: the nearest within a few edits (one for short names,
 * about one per three letters for longer ones), else the only candidate `input` starts, else none.
 */
export function closestName(input: string, candidates: Iterable<string>): string | undefined {
  const names = [...new Set(candidates)].filter((name) => name !== input);
  const best = nearestName(input, names, Math.max(1, Math.floor(input.length / 3)));
  if (best) return best;
  // An abbreviation (`--release` for `--release-source`) is a guess only when it fits one name.
  const extensions = input.length >= 3 ? names.filter((name) => name.startsWith(input)) : [];
  return extensions.length === 1 ? extensions[0] : undefined;
}

/**
 * The candidate nearest to `input` (case ignored) within `maxEdits` edits, never `input` itself;
 * ties go to the first candidate, so the answer depends on nothing but the list order.
 */
export function nearestName(input: string, candidates: Iterable<string>, maxEdits: number): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    if (name === input) continue;
    const distance = editDistance(input.toLowerCase(), name.toLowerCase());
    if (distance <= maxEdits && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** `; did you mean <name>?` when a candidate is close to `input`, else an empty string. */
export function didYouMean(input: string, candidates: Iterable<string>): string {
  const suggestion = closestName(input, candidates);
  return suggestion ? `; did you mean ${suggestion}?` : '';
}
