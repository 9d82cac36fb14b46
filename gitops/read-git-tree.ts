// Reads the rendered tree under a path at a commit, for both Git publishers.
import type { GitCommand } from './git-command.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';

/** Blobs per `git show`: far below any argument-list limit. */
const CHUNK = 500;

/**
 * The regular files under `subdir` ('' = the root) at `commit`, with paths relative to `subdir`.
 * When `irregular` is given, the paths that are not plain files are added to it: symbolic links
 * and submodules (left out of the tree) and executable files (in the tree, as their text).
 */
export async function readTreeAtCommit(git: GitCommand, commit: string, subdir: string, irregular?: string[]): Promise<RenderedTree> {
  const args = ['ls-tree', '-r', '-z', '-l', commit];
  if (subdir !== '') args.push('--', `${subdir}/`);
  const listing = await git.run(args, 'git ls-tree');
  const blobs: { file: string; sha: string; size: number }[] = [];
  for (const entry of listing.split('\0')) {
    const tab = entry.indexOf('\t');
    if (tab < 0) continue;
    const [mode, type, sha, size] = entry.slice(0, tab).split(/\s+/);
    // Regular files only: symbolic links and submodules are not part of a rendered tree.
    const file = entry.slice(tab + 1);
    if (type !== 'blob' || (mode !== '100644' && mode !== '100755') || sha === undefined) {
      irregular?.push(file);
      continue;
    }
    if (mode === '100755') irregular?.push(file);
    blobs.push({ file: subdir === '' ? file : file.slice(subdir.length + 1), sha, size: Number(size) });
  }
  const tree: RenderedTree = new Map();
  for (let start = 0; start < blobs.length; start += CHUNK) {
    const chunk = blobs.slice(start, start + CHUNK);
    // `git show` of several blobs prints their bytes back to back; ls-tree gave each size.
    const bytes = await git.showBytes(['--no-textconv', ...chunk.map((blob) => blob.sha)], 'git show');
    let offset = 0;
    for (const blob of chunk) {
      tree.set(blob.file, bytes.subarray(offset, offset + blob.size).toString('utf8'));
      offset += blob.size;
    }
  }
  return tree;
}
