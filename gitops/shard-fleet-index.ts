// The shards' fleet-wide index (src/shards/fleet-index.ts) as a shard's Git publisher writes it: for
// the commit it is about to make on a parent, the index of the subtrees that commit will hold (the
// parent's other subtrees, read from their provenance.json, and the shard's own new tree). Reading
// costs two `ls-tree`s per commit; the other shards' provenance is parsed once per blob (a shard's
// record changes only with that shard's commits), so a busy fleet does not re-read it every time.
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { PROVENANCE_FILE } from '../src/output/tree-layout.js';
import { FLEET_INDEX_FILE, renderFleetIndex, summarizeShard, type ShardSummary } from '../src/shards/fleet-index.js';
import type { GitCommand } from './git-command.js';

/** Summaries kept by blob id: a few rounds of every shard's record. */
const CACHE_LIMIT = 256;

/** One `ls-tree -z -l` entry: mode, type, object id, size ('-' for a tree) and the path. */
interface TreeEntry {
  type: string;
  oid: string;
  size: number;
  path: string;
}

function parseLsTree(listing: string): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (const entry of listing.split('\0')) {
    const tab = entry.indexOf('\t');
    if (tab < 0) continue;
    const [, type, oid, size] = entry.slice(0, tab).split(/\s+/);
    if (type === undefined || oid === undefined) continue;
    entries.push({ type, oid, size: Number(size), path: entry.slice(tab + 1) });
  }
  return entries;
}

/** The object id git gives `text` as a blob, in the hash of the repository (told by an id's length). */
function blobId(text: string, idLength: number): string {
  const bytes = Buffer.from(text, 'utf8');
  return createHash(idLength === 64 ? 'sha256' : 'sha1')
    .update(`blob ${bytes.length}\0`)
    .update(bytes)
    .digest('hex');
}

/** The index a shard's commit carries, kept current for one shard subtree (`<shards dir>/<shard>`). */
export class GitFleetIndex {
  /** The index's repository path: `<shards dir>/README.md`. */
  readonly file: string;
  private readonly shardsDir: string;
  private readonly shard: string;
  private readonly summaries = new Map<string, ShardSummary>();
  private own: { text: string | undefined; summary: ShardSummary } | undefined;

  /** `subdir` is the shard's subtree inside the repository (`<path>/shards/<shard>`). */
  constructor(subdir: string) {
    this.shardsDir = path.posix.dirname(subdir);
    this.shard = path.posix.basename(subdir);
    this.file = this.shardsDir === '.' ? FLEET_INDEX_FILE : `${this.shardsDir}/${FLEET_INDEX_FILE}`;
  }

  /**
   * The index of a commit on `parent` (null: a new branch) whose own subtree is `tree`; undefined
   * when `parent` holds exactly that index already (nothing to write).
   */
  async changedAt(git: GitCommand, parent: string | null, tree: RenderedTree): Promise<string | undefined> {
    const prefix = this.shardsDir === '.' ? '' : `${this.shardsDir}/`;
    const children =
      parent === null
        ? []
        : parseLsTree(
            await git.run(['ls-tree', '-z', '-l', parent, '--', prefix === '' ? '.' : prefix], 'git ls-tree'),
          );
    const current = children.find((entry) => entry.type === 'blob' && entry.path === this.file);
    const others = children
      .filter((entry) => entry.type === 'tree' && entry.path !== `${prefix}${this.shard}`)
      .map((entry) => entry.path.slice(prefix.length));
    const subtrees = new Map<string, ShardSummary>();
    for (const [shard, summary] of await this.summariesAt(git, parent, prefix, others)) subtrees.set(shard, summary);
    if (tree.size > 0) subtrees.set(this.shard, this.ownSummary(tree.get(PROVENANCE_FILE)));
    const text = renderFleetIndex(subtrees);
    return current && blobId(text, current.oid.length) === current.oid ? undefined : text;
  }

  /** The other shards' summaries at `parent`, from their provenance.json (each blob parsed once). */
  private async summariesAt(
    git: GitCommand,
    parent: string | null,
    prefix: string,
    shards: readonly string[],
  ): Promise<Map<string, ShardSummary>> {
    const result = new Map<string, ShardSummary>();
    if (parent === null || shards.length === 0) return result;
    const records = parseLsTree(
      await git.run(
        ['ls-tree', '-z', '-l', parent, '--', ...shards.map((shard) => `${prefix}${shard}/${PROVENANCE_FILE}`)],
        'git ls-tree',
      ),
    ).filter((entry) => entry.type === 'blob');
    const byShard = new Map(records.map((entry) => [entry.path.slice(prefix.length).split('/')[0]!, entry]));
    const unread = records.filter((entry) => !this.summaries.has(entry.oid));
    if (unread.length > 0) {
      // `git show` of several blobs prints their bytes back to back; ls-tree gave each size.
      const bytes = await git.showBytes(['--no-textconv', ...unread.map((entry) => entry.oid)], 'git show');
      let offset = 0;
      if (this.summaries.size + unread.length > CACHE_LIMIT) this.summaries.clear();
      for (const entry of unread) {
        this.summaries.set(entry.oid, summarizeShard(bytes.subarray(offset, offset + entry.size).toString('utf8')));
        offset += entry.size;
      }
    }
    for (const shard of shards) {
      const record = byShard.get(shard);
      result.set(shard, record ? this.summaries.get(record.oid)! : summarizeShard(undefined));
    }
    return result;
  }

  /** This shard's summary; the last one is kept while its record stays the same text. */
  private ownSummary(text: string | undefined): ShardSummary {
    if (this.own === undefined || this.own.text !== text) this.own = { text, summary: summarizeShard(text) };
    return this.own.summary;
  }
}
