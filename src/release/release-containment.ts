// A local release is a directory someone else wrote. Helm follows symbolic links in a chart
// directory, and so would our digests and readers: a link in a release must never lead out of it
// (to /etc, to the user's home, to /dev/zero) nor to anything but files and directories.
import { lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { InputError } from '../core/problem.js';

function isInside(child: string, root: string): boolean {
  const relative = path.relative(root, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function refuse(label: string, message: string): InputError {
  return new InputError([{ source: label, message }]);
}

/**
 * Checks `entry` (a file or directory of the release at `root`) and, for a directory, everything
 * under it: every symbolic link must resolve inside the release, and only regular files and
 * directories may be reached. `label` names the entry in messages (`<release>/<entry>`). The walk
 * is synchronous: a chart is hundreds of small files, and a promise per stat cost several times
 * more (every plan checks the releases it loads).
 */
export async function assertInsideRelease(
  entry: string,
  root: string,
  label: string,
  what: 'release' | 'repository' = 'release',
): Promise<void> {
  const realRoot = realpathSync.native(root);
  const visited = new Set<string>();
  const check = (file: string, shown: string): void => {
    const own = lstatSync(file);
    let target = file;
    if (own.isSymbolicLink()) {
      try {
        target = realpathSync.native(file);
      } catch {
        throw refuse(shown, 'is a symbolic link to something that does not exist');
      }
      if (!isInside(target, realRoot))
        throw refuse(
          shown,
          `is a symbolic link to ${target}, outside the ${what}; ${what === 'release' ? 'releases may only link within themselves' : 'copy the file into the repository instead of linking to it'}`,
        );
    }
    const info = own.isSymbolicLink() ? statSync(file) : own;
    if (info.isFile()) return;
    if (!info.isDirectory())
      throw refuse(
        shown,
        'is not a regular file or directory (a device, pipe or socket); only files and directories are read',
      );
    const real = realpathSync.native(target);
    // A directory reached twice (two links to it, or a link back up) is checked once.
    if (visited.has(real)) return;
    visited.add(real);
    for (const name of readdirSync(file).sort()) check(path.join(file, name), `${shown}/${name}`);
  };
  check(entry, label);
}
