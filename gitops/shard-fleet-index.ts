// The shards' fleet-wide index (src/shards/fleet-index.ts) as a shard's Git publisher writes it: for
// the commit it is about to make on a parent, the index of the subtrees that commit will hold (the
// parent's other subtrees, read from their provenance.json, and the shard's own new tree). Reading
// costs one `git cat-file --batch` per commit (the shards directory and the known shards' records
// together), and an `ls-tree` and a `git show` when a new shard appears: each blob is parsed once (a
// shard's record changes only with that shard's commits).
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

/** `a/b/c` -> [`a`, `b/c`]; `a` -> [`a`, undefined]. */
function splitOnce(relative: string): [string, string | undefined] {
  const slash = relative.indexOf('/');
  return slash < 0 ? [relative, undefined] : [relative.slice(0, slash), relative.slice(slash + 1)];
}

/** One object `git cat-file --batch` printed: undefined for a name it reports missing. */
interface BatchObject {
  oid: string;
  type: string;
  content: Buffer;
}

/** The `count` answers of `git cat-file --batch`: `<oid> <type> <size>`, the content and a newline, or `<name> missing`. */
function parseBatch(output: Buffer, count: number): (BatchObject | undefined)[] {
  const objects: (BatchObject | undefined)[] = [];
  let at = 0;
  while (objects.length < count) {
    const newline = output.indexOf(10, at);
    if (newline < 0) throw new Error('git cat-file --batch: its answer ended early');
    const header = output.subarray(at, newline).toString('utf8').split(' ');
    at = newline + 1;
    const size = Number(header[2]);
    if (header.length !== 3 || !Number.isInteger(size)) {
      objects.push(undefined);
      continue;
    }
    objects.push({ oid: header[0]!, type: header[1]!, content: output.subarray(at, at + size) });
    at += size + 1;
  }
  return objects;
}

/**
 * A tree object's entries (`<mode> <name>\0<id bytes>` each), named `<prefix><name>` as ls-tree
 * names them; sizes are not in a tree (NaN): only the records' are read, from their contents.
 */
function parseTree(content: Buffer, idBytes: number, prefix: string): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (let at = 0; at < content.length;) {
    const space = content.indexOf(32, at);
    const nul = content.indexOf(0, space);
    if (space < 0 || nul < 0) throw new Error('git cat-file --batch: a tree it printed is not a tree');
    const mode = content.subarray(at, space).toString('utf8');
    const oid = content.subarray(nul + 1, nul + 1 + idBytes).toString('hex');
    const type = mode === '40000' ? 'tree' : mode === '160000' ? 'commit' : 'blob';
    entries.push({
      type,
      oid,
      size: Number.NaN,
      path: `${prefix}${content.subarray(space + 1, nul).toString('utf8')}`,
    });
    at = nul + 1 + idBytes;
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
  /** The other shards the last listing found: their provenance.json is asked for in the next one. */
  private known = new Set<string>();
  /** The last listing (subtreeAt's), kept for changedAt on the same commit: one `ls-tree` serves both. */
  private listed: { commit: string; known: Set<string>; entries: TreeEntry[] } | undefined;

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
    const subtrees = new Map<string, ShardSummary>();
    let current: TreeEntry | undefined;
    if (parent !== null) {
      const listing = await this.listing(git, parent);
      current = listing.find((entry) => entry.type === 'blob' && entry.path === this.file);
      const present = new Set<string>();
      const records = new Map<string, TreeEntry>();
      for (const entry of listing) {
        const [shard, rest] = splitOnce(entry.path.slice(prefix.length));
        if (shard === this.shard || (rest === undefined && entry.type !== 'tree')) continue;
        present.add(shard);
        if (rest === PROVENANCE_FILE && entry.type === 'blob') records.set(shard, entry);
      }
      const unseen = [...present].filter((shard) => !this.known.has(shard));
      if (unseen.length > 0)
        for (const entry of await this.list(
          git,
          parent,
          unseen.map((shard) => `${prefix}${shard}/${PROVENANCE_FILE}`),
        ))
          if (entry.type === 'blob') records.set(splitOnce(entry.path.slice(prefix.length))[0], entry);
      // A name with a newline cannot be asked of `cat-file --batch`: such a shard is listed on its own each time.
      this.known = new Set([...present].filter((shard) => !shard.includes('\n')));
      await this.readSummaries(git, [...records.values()]);
      for (const shard of present) {
        const record = records.get(shard);
        subtrees.set(shard, record ? this.summaries.get(record.oid)! : summarizeShard(undefined));
      }
    }
    if (tree.size > 0) subtrees.set(this.shard, this.ownSummary(tree.get(PROVENANCE_FILE)));
    const text = renderFleetIndex(subtrees);
    return current && blobId(text, current.oid.length) === current.oid ? undefined : text;
  }

  /**
   * The tree id of this shard's own subtree at `commit` (undefined: none there), from the listing
   * the index of a commit on `commit` reads anyway.
   */
  async subtreeAt(git: GitCommand, commit: string): Promise<string | undefined> {
    const own = this.shardsDir === '.' ? this.shard : `${this.shardsDir}/${this.shard}`;
    return (await this.listing(git, commit)).find((entry) => entry.type === 'tree' && entry.path === own)?.oid;
  }

  /**
   * One listing of `commit`: the shards directory's entries, and the provenance.json of each shard
   * seen before (a new shard's is asked for after). One `git cat-file --batch` gives both the
   * directory's tree and those records' contents, so the records that changed since the last
   * listing (another shard's commit) need no `git show` of their own: each git process is a step of
   * the serial fetch-commit-push that shards racing on one branch wait for in turn.
   */
  private async listing(git: GitCommand, commit: string): Promise<TreeEntry[]> {
    const listed = this.listed;
    this.listed = undefined;
    if (listed && listed.commit === commit && listed.known === this.known) return listed.entries;
    const prefix = this.shardsDir === '.' ? '' : `${this.shardsDir}/`;
    const known = [...this.known];
    const requests = [
      this.shardsDir === '.' ? `${commit}^{tree}` : `${commit}:${this.shardsDir}`,
      ...known.map((shard) => `${commit}:${prefix}${shard}/${PROVENANCE_FILE}`),
    ];
    const objects = parseBatch(
      await git.runWithInputBytes(
        ['cat-file', '--batch'],
        requests.map((request) => `${request}\n`).join(''),
        'git cat-file',
      ),
      requests.length,
    );
    const directory = objects[0];
    // No shards directory: nothing listed (as ls-tree says of a missing path); no commit at all: an error.
    if (directory === undefined && this.shardsDir === '.') throw new Error(`git cat-file: no commit ${commit}`);
    const entries = directory?.type === 'tree' ? parseTree(directory.content, directory.oid.length / 2, prefix) : [];
    known.forEach((shard, index) => {
      const record = objects[index + 1];
      if (record?.type !== 'blob') return;
      entries.push({
        type: 'blob',
        oid: record.oid,
        size: record.content.length,
        path: `${prefix}${shard}/${PROVENANCE_FILE}`,
      });
      this.remember(record.oid, record.content);
    });
    this.listed = { commit, known: this.known, entries };
    return entries;
  }

  /** Keeps the summary of a record blob (parsed once per blob id). */
  private remember(oid: string, content: Buffer): void {
    if (this.summaries.has(oid)) return;
    if (this.summaries.size >= CACHE_LIMIT) this.summaries.clear();
    this.summaries.set(oid, summarizeShard(content.toString('utf8')));
  }

  private async list(git: GitCommand, commit: string, paths: string[]): Promise<TreeEntry[]> {
    return parseLsTree(await git.run(['ls-tree', '-z', '-l', commit, '--', ...paths], 'git ls-tree'));
  }

  /** Parses the provenance blobs not summarized yet (one `git show` for all of them). */
  private async readSummaries(git: GitCommand, records: readonly TreeEntry[]): Promise<void> {
    const unread = records.filter((entry) => !this.summaries.has(entry.oid));
    if (unread.length === 0) return;
    // `git show` of several blobs prints their bytes back to back; ls-tree gave each size.
    const bytes = await git.showBytes(['--no-textconv', ...unread.map((entry) => entry.oid)], 'git show');
    let offset = 0;
    for (const entry of unread) {
      this.remember(entry.oid, bytes.subarray(offset, offset + entry.size));
      offset += entry.size;
    }
  }

  /** This shard's summary; the last one is kept while its record stays the same text. */
  private ownSummary(text: string | undefined): ShardSummary {
    if (this.own === undefined || this.own.text !== text) this.own = { text, summary: summarizeShard(text) };
    return this.own.summary;
  }
}
