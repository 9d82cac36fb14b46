// Which commit of the target branch last changed each rendered unit directory, read from Git
// itself: a restarted controller (or a new leader) names the same commits in its conditions as the
// one before it, and knows the order of the commits a GitOps engine reports as applied.
// It keeps its own bare mirror of the branch, so it never touches the publisher's clone.
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { GitCommand, type GitTargetOptions, isMissingRemoteRef } from './git-command.js';
import { parseGitRemote } from './git-remote.js';
import { normalizeSubdir } from './tree-paths.js';

export interface PublishedHistory {
  /** The branch head (null: the branch does not exist yet). */
  head: string | null;
  /** First-parent commits of the branch, oldest first (the newest `limit`). */
  history: string[];
  /** Per unit directory (relative to the path), the newest commit that changed a file in it. */
  unitRevisions: Map<string, string>;
}

/** The published branch to read; `workDir` holds this reader's own mirror. */
export type GitHistoryOptions = GitTargetOptions;

/** The unit directory a file (relative to the tree root) belongs to, as the controller counts them. */
export type UnitDirOf = (file: string) => string | undefined;

const RECORD = '\u0001';

/** Reads the published history of a branch through a mirror fetch. */
export class GitHistoryReader {
  private readonly url: string;
  private readonly subdir: string;
  private ready: Promise<GitCommand> | undefined;

  constructor(private readonly options: GitHistoryOptions) {
    const remote = parseGitRemote(options.repository);
    this.url = remote.kind === 'url' ? remote.url : remote.path;
    this.subdir = normalizeSubdir(options.path);
  }

  private mirror(): Promise<GitCommand> {
    this.ready ??= (async () => {
      await mkdir(this.options.workDir, { recursive: true });
      const http = /^https?:\/\//i.test(this.url);
      const git = new GitCommand(this.options.workDir, {
        author: this.options.author,
        env: this.options.env,
        ...(http && this.options.token ? { token: this.options.token } : {}),
      });
      if (!(await readdir(this.options.workDir)).includes('HEAD'))
        await git.run(['init', '--bare', '--quiet'], `git init ${this.options.workDir}`);
      return git;
    })().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  /** The branch head as the remote has it now (null: no such branch), without fetching. */
  async head(): Promise<string | null> {
    const git = await this.mirror();
    const ref = `refs/heads/${this.options.branch}`;
    const listing = await git.run(['ls-remote', this.url, ref], 'git ls-remote');
    const line = listing.split('\n').find((entry) => entry.split('\t')[1] === ref);
    return line ? line.split('\t')[0]! : null;
  }

  /**
   * Fetches the branch and walks its newest `limit` first-parent commits: the head, their order,
   * and for each unit directory the newest commit that changed it (directories whose change is
   * older than that stay unknown).
   */
  async read(unitDirOf: UnitDirOf, limit = 1000): Promise<PublishedHistory> {
    const git = await this.mirror();
    const ref = `refs/heads/${this.options.branch}`;
    try {
      // One connection: a branch the remote lacks fails the fetch with git's own words (no ls-remote first).
      await git.run(['fetch', '--quiet', '--no-tags', this.url, `+${ref}:${ref}`], 'git fetch');
    } catch (error) {
      if (isMissingRemoteRef(error, ref)) return { head: null, history: [], unitRevisions: new Map() };
      throw error;
    }
    const log = await git.run(
      ['log', '--first-parent', '--no-renames', '--format=%x01%H', '--name-only', `-n${limit}`, ref, '--'],
      'git log',
    );
    const newestFirst: string[] = [];
    const unitRevisions = new Map<string, string>();
    for (const entry of log.split(RECORD)) {
      const lines = entry.split('\n').filter((line) => line !== '');
      const commit = lines.shift();
      if (!commit) continue;
      newestFirst.push(commit);
      for (const file of lines) {
        if (this.subdir !== '' && !file.startsWith(`${this.subdir}/`)) continue;
        const relative = this.subdir === '' ? file : file.slice(this.subdir.length + 1);
        if (relative.endsWith('/kustomization.yaml')) continue;
        const dir = unitDirOf(relative);
        if (dir !== undefined && !unitRevisions.has(dir)) unitRevisions.set(dir, commit);
      }
    }
    return { head: newestFirst[0] ?? null, history: newestFirst.reverse(), unitRevisions };
  }
}

/** Where a controller keeps the mirror for a target: beside the publisher's clone. */
export function historyMirrorDir(cacheDir: string, key: string): string {
  return path.join(cacheDir, 'git-history', key);
}
