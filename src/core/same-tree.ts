// "Unchanged tree, no commit": publishers and the controller skip work when the tree they would
// write is the one already there. Trees are path -> content maps (RenderedTree).

/** True when both trees hold the same paths with the same contents, whatever their insertion order. */
export function sameTree(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [file, content] of a) if (b.get(file) !== content) return false;
  return true;
}
