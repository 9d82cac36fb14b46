// Where a publisher may write: never over the inputs or the release source. Publishing replaces what
// is under the output (and an in-place Git work tree's --path), so an output that is, or contains,
// an input directory or the release source would delete the very files it was made from.
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { PublishError } from './publish-error.js';

export interface ProtectedPath {
  /** What it is, for the message: `input`, `release source`. */
  label: string;
  /** Absolute path. */
  path: string;
}

/** The real path of `file`, or of its nearest existing ancestor joined with the rest (for paths not created yet). */
async function realish(file: string): Promise<string> {
  const absolute = path.resolve(file);
  try {
    return await realpath(absolute);
  } catch {
    const parent = path.dirname(absolute);
    return parent === absolute ? absolute : path.join(await realish(parent), path.basename(absolute));
  }
}

function contains(ancestor: string, child: string): boolean {
  const relative = path.relative(ancestor, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * Throws (invalid-target) when `owned`, the directory a publisher replaces, is or contains one of
 * `protectedPaths`. `what` names the output in the message (`--output /srv/out`).
 */
export async function assertOutsideProtected(
  what: string,
  owned: string,
  protectedPaths: readonly ProtectedPath[],
  hint: string,
): Promise<void> {
  if (protectedPaths.length === 0) return;
  const realOwned = await realish(owned);
  for (const entry of protectedPaths) {
    const realProtected = await realish(entry.path);
    if (!contains(realOwned, realProtected)) continue;
    const relation = realOwned === realProtected ? 'is' : 'contains';
    throw new PublishError(
      'invalid-target',
      `${what} ${relation} the ${entry.label} ${entry.path}; publishing there would replace or delete it, so nothing was written. ${hint}`,
    );
  }
}
