// The rendered tree itself: relative POSIX path -> file content, the unit that render produces,
// wiring extends and every publisher writes.

/** Relative POSIX path -> file content. Paths are sorted when iterated by publishers. */
export type RenderedTree = Map<string, string>;

/** Files added or changed and files removed between two trees, sorted. */
export function diffTrees(previous: RenderedTree, next: RenderedTree): { written: string[]; removed: string[] } {
  const written = [...next.keys()].filter((file) => previous.get(file) !== next.get(file)).sort();
  const removed = [...previous.keys()].filter((file) => !next.has(file)).sort();
  return { written, removed };
}

/** True when both trees hold the same files with the same content. */
export function sameTree(a: RenderedTree, b: RenderedTree): boolean {
  if (a.size !== b.size) return false;
  for (const [file, content] of a) if (b.get(file) !== content) return false;
  return true;
}
