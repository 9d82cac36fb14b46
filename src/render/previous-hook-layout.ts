// Which units of the previous tree cannot be reused because their helm hooks are laid out for
// another engine (helm-hooks.ts): the layout is not part of any digest, since most units have no
// hooks and must not render again (charts that generate certificates would change) when only the
// engine changes. The tree records its placement (provenance.json `helmHooks`); a tree written
// before hooks were handled has none, and its units that hold a hook render again once.
import type { HookPlacement } from '../output/helm-hooks-record.js';
import type { PublishedState } from '../output/published-state.js';
import { HELM_HOOK_ANNOTATION } from './helm-hooks.js';

/** The directories of previous units whose hooks are not laid out for `placement`. */
export function unitsWithMisplacedHooks(published: PublishedState, placement: HookPlacement): Set<string> {
  const recorded = published.helmHooks;
  if (recorded === placement) return new Set();
  const dirs = new Set<string>();
  for (const unit of published.units.values()) {
    if (recorded !== undefined) {
      if (unit.hooks && unit.hooks.length > 0) dirs.add(unit.dir);
      continue;
    }
    // Written before hooks were handled: any file may hold a hook, as an ordinary object.
    const paths = [...unit.files.map((file) => `${unit.dir}/${file}`), ...Object.values(unit.shared ?? {})];
    if (paths.some((path) => published.tree.get(path)?.includes(HELM_HOOK_ANNOTATION))) dirs.add(unit.dir);
  }
  return dirs;
}
