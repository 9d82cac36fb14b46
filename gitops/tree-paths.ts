// Rendered trees name files by relative POSIX paths; a path that could escape the target, land in
// Git's own directory, or collide with another file is refused before anything is written.
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { PublishError } from './publish-error.js';

function invalid(file: string, reason: string): PublishError {
  return new PublishError('invalid-input', `rendered tree: file "${file}" ${reason}`);
}

// An empty, "." or ".." segment; a ".git" segment (any case). One test per path: a fleet's tree
// has tens of thousands of them, checked on every publish.
const UNNORMALIZED_SEGMENT = /(?:^|\/)\.{0,2}(?:\/|$)/;
const GIT_SEGMENT = /(?:^|\/)\.git(?:\/|$)/i;

/** Throws unless every path is relative, normalized, outside `.git`, and no file is another's directory. */
export function checkTreePaths(tree: RenderedTree): void {
  // Directories already known not to be files; their own parents were checked with them.
  const directories = new Set<string>();
  for (const file of tree.keys()) {
    if (file === '' || file.includes('\0')) throw invalid(file, 'has an empty name or a NUL byte');
    if (file.startsWith('/')) throw invalid(file, 'has an absolute path; give paths relative to the output root');
    if (file.includes('\\')) throw invalid(file, 'contains a backslash; use "/" between directories');
    if (UNNORMALIZED_SEGMENT.test(file))
      throw invalid(file, 'is not a normalized relative path (empty, "." or ".." segment)');
    if (GIT_SEGMENT.test(file)) throw invalid(file, 'would be written inside a .git directory');
    for (let slash = file.lastIndexOf('/'); slash > 0; slash = file.lastIndexOf('/', slash - 1)) {
      const directory = file.slice(0, slash);
      if (directories.has(directory)) break;
      if (tree.has(directory))
        throw invalid(file, `needs "${directory}" to be a directory, but the tree also has a file "${directory}"`);
      directories.add(directory);
    }
  }
}

/**
 * Why `subdir` cannot be a `--path` (a directory relative to the repository's top), or undefined
 * when it can: '' and '.' are the root, trailing slashes are dropped, and nothing absolute, nothing
 * climbing out ("..") and nothing inside `.git` is one. The CLI says it as a bad flag value.
 */
export function subdirProblem(subdir: string): string | undefined {
  if (subdir.includes('\\') || subdir.includes('\0'))
    return 'contains a backslash or a NUL byte; use "/" between directories';
  // An absolute path used to be read as relative to the top: "/srv/out" went to srv/out/.
  if (subdir.startsWith('/'))
    return "is absolute; give a directory relative to the repository's top (leave --path out for the top itself)";
  const trimmed = subdir.replace(/\/+$/, '');
  if (trimmed === '' || trimmed === '.') return undefined;
  const segments = trimmed.split('/');
  if (segments.includes('..')) return 'climbs out of its directory (".."); give a directory inside the repository';
  if (segments.some((segment) => segment === '' || segment === '.'))
    return 'is not a normalized path (an empty or "." segment); write it as dir/subdir';
  if (segments.some((segment) => segment.toLowerCase() === '.git'))
    return 'is inside .git; give a directory of the work tree';
  return undefined;
}

/** Normalizes a subdirectory option ('' and '.' are the root); throws (invalid-input) whatever subdirProblem refuses. */
export function normalizeSubdir(subdir: string): string {
  const problem = subdirProblem(subdir);
  if (problem !== undefined) throw new PublishError('invalid-input', `--path "${subdir}" ${problem}`);
  const trimmed = subdir.replace(/\/+$/, '');
  return trimmed === '.' ? '' : trimmed;
}
