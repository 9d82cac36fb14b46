// The one Git tree reader: the rendered tree under a path at a commit, read with `ls-tree` and
// batched `git show`. Both Git publishers read their target through it, and so does `plan`
// (readPublishedGitTree), which looks and never writes: one shallow fetch into a bare repository
// of its own (made fresh for each read, removed after), so neither the target nor the publisher's
// clone is touched. A missing local path or a branch that does not exist yet reads as empty.
import { access, mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { GitCommand, type GitTargetOptions } from './git-command.js';
import { parseGitRemote } from './git-remote.js';
import { normalizeSubdir } from './tree-paths.js';

/** Blobs per `git show`: far below any argument-list limit. */
const CHUNK = 500;

/**
 * The regular files under `subdir` ('' = the root) at `commit`, with paths relative to `subdir`.
 * When `irregular` is given, the paths that are not plain files are added to it: symbolic links
 * and submodules (left out of the tree) and executable files (in the tree, as their text).
 */
export async function readTreeAtCommit(
  git: GitCommand,
  commit: string,
  subdir: string,
  irregular?: string[],
): Promise<RenderedTree> {
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

/** The Git target to read; `workDir` is the parent of the temporary repository. */
export type PublishedGitTreeOptions = GitTargetOptions;

/** What a Git target holds under its path at the branch head, read without touching it (see the header). */
export async function readPublishedGitTree(options: PublishedGitTreeOptions): Promise<RenderedTree> {
  const remote = parseGitRemote(options.repository);
  const url = remote.kind === 'url' ? remote.url : remote.path;
  if (remote.kind !== 'url') {
    const exists = await access(url).then(
      () => true,
      () => false,
    );
    if (!exists) return new Map();
  }
  const parent = path.resolve(options.workDir);
  await mkdir(parent, { recursive: true });
  const dir = await mkdtemp(path.join(parent, 'read-'));
  try {
    const http = /^https?:\/\//i.test(url);
    const git = new GitCommand(dir, {
      author: options.author,
      env: options.env,
      ...(http && options.token ? { token: options.token } : {}),
    });
    await git.run(['init', '--bare', '--quiet'], `git init ${dir}`);
    const ref = `refs/heads/${options.branch}`;
    const listing = await git.run(['ls-remote', url, ref], `git ls-remote ${remote.display}`);
    if (!listing.split('\n').some((line) => line.split('\t')[1] === ref)) return new Map();
    // A local path is fetched through file:// so that --depth applies.
    const source = remote.kind === 'url' ? url : `file://${path.resolve(url)}`;
    await git.run(
      ['fetch', '--quiet', '--no-tags', '--depth', '1', source, `+${ref}:${ref}`],
      `git fetch from ${remote.display}`,
    );
    const head = (await git.run(['rev-parse', ref], 'git rev-parse')).trim();
    return await readTreeAtCommit(git, head, normalizeSubdir(options.path));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
