// Reads what a Git target holds under its path at the branch head, without touching the target or
// the publisher's clone: one shallow fetch into a bare repository of its own (made fresh for each
// read, removed after), for `plan`, which looks and never writes. A missing local path or a branch
// that does not exist yet reads as an empty tree.
import { access, mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { GitCommand, type GitTargetOptions } from './git-command.js';
import { parseGitRemote } from './git-remote.js';
import { readTreeAtCommit } from './read-git-tree.js';
import { normalizeSubdir } from './tree-paths.js';

/** The Git target to read; `workDir` is the parent of the temporary repository. */
export type GitTreeReaderOptions = GitTargetOptions;

/** Reads the published tree of a Git target (see the header). */
export async function readGitTree(options: GitTreeReaderOptions): Promise<RenderedTree> {
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
    const git = new GitCommand(dir, { author: options.author, env: options.env, ...(http && options.token ? { token: options.token } : {}) });
    await git.run(['init', '--bare', '--quiet'], `git init ${dir}`);
    const ref = `refs/heads/${options.branch}`;
    const listing = await git.run(['ls-remote', url, ref], `git ls-remote ${remote.display}`);
    if (!listing.split('\n').some((line) => line.split('\t')[1] === ref)) return new Map();
    // A local path is fetched through file:// so that --depth applies.
    const source = remote.kind === 'url' ? url : `file://${path.resolve(url)}`;
    await git.run(['fetch', '--quiet', '--no-tags', '--depth', '1', source, `+${ref}:${ref}`], `git fetch from ${remote.display}`);
    const head = (await git.run(['rev-parse', ref], 'git rev-parse')).trim();
    return await readTreeAtCommit(git, head, normalizeSubdir(options.path));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
