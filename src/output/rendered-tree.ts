// The rendered tree itself: relative POSIX path -> file content, the unit that render produces,
// wiring extends and every publisher writes.

/** Relative POSIX path -> file content. Paths are sorted when iterated by publishers. */
export type RenderedTree = Map<string, string>;

/** Files added or changed and files removed between two trees, sorted. */
export function diffTrees(previous: RenderedTree, next: RenderedTree): { written: string[]; removed: string[] } {
  // One lookup per file: a fleet's trees hold tens of thousands, compared on every publish.
  const written: string[] = [];
  for (const [file, content] of next) if (previous.get(file) !== content) written.push(file);
  const removed: string[] = [];
  for (const file of previous.keys()) if (!next.has(file)) removed.push(file);
  return { written: written.sort(), removed: removed.sort() };
}

/** True when both trees hold the same files with the same content. */
export function sameTree(a: RenderedTree, b: RenderedTree): boolean {
  if (a.size !== b.size) return false;
  for (const [file, content] of a) if (b.get(file) !== content) return false;
  return true;
}
