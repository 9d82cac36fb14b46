// What the other shards publish (Clusters' addons, releases), read from their subtrees
// (`<path>/shards/<shard>/provenance.json`) on the branch or in the output directory. A sharded
// controller asks only while it hands a Cluster or a ClusterStack over, so the read is rare.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { PROVENANCE_FILE } from '../src/output/tree-layout.js';
import { readPublishedState } from '../src/output/published-state.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { publishedHoldings, type ShardHoldings } from '../src/shards/shard-plan.js';
import { readPublishedGitTree } from './read-git-tree.js';
import { CURRENT_LINK } from './directory-publisher.js';
import type { GitTargetOptions } from './git-command.js';

/** The Clusters and releases any shard but `shard` publishes, from the shards directory's files (relative to it). */
export function holdingsOfOtherShards(files: ReadonlyMap<string, string>, shard: string): ShardHoldings {
  const holdings: ShardHoldings = { clusters: new Set(), releases: new Set() };
  for (const [file, text] of files) {
    const [owner, rest] = [file.slice(0, file.indexOf('/')), file.slice(file.indexOf('/') + 1)];
    if (owner === shard || rest !== PROVENANCE_FILE) continue;
    const theirs = publishedHoldings(readPublishedState(new Map([[PROVENANCE_FILE, text]])).provenance);
    for (const key of theirs.clusters) holdings.clusters.add(key);
    for (const key of theirs.releases) holdings.releases.add(key);
  }
  return holdings;
}

/** Reads the shards directory of a Git target (`shardsPath` inside the repository) at the branch head. */
export async function gitShardsReader(
  target: Omit<GitTargetOptions, 'path'>,
  shardsPath: string,
  shard: string,
): Promise<ShardHoldings> {
  const tree: RenderedTree = await readPublishedGitTree({ ...target, path: shardsPath });
  return holdingsOfOtherShards(tree, shard);
}

/** The shard directories of an --output target's shards directory (none when it does not exist yet). */
export async function shardDirectories(shardsDir: string): Promise<string[]> {
  const entries = await readdir(shardsDir, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  return entries.filter((entry) => entry.isDirectory() && !entry.name.startsWith('.')).map((entry) => entry.name);
}

/**
 * A shard directory's provenance.json: in its published tree (`<shard>/current/`, directory-publisher.ts),
 * or at its top where an earlier version wrote the tree; undefined when it has none.
 */
export async function shardDirectoryProvenance(shardsDir: string, shard: string): Promise<string | undefined> {
  for (const file of [
    path.join(shardsDir, shard, CURRENT_LINK, PROVENANCE_FILE),
    path.join(shardsDir, shard, PROVENANCE_FILE),
  ]) {
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text !== undefined) return text;
  }
  return undefined;
}

/** Reads the shards directory of a directory target: each shard's provenance.json only. */
export async function directoryShardsReader(shardsDir: string, shard: string): Promise<ShardHoldings> {
  const files = new Map<string, string>();
  for (const name of await shardDirectories(shardsDir)) {
    if (name === shard) continue;
    const text = await shardDirectoryProvenance(shardsDir, name);
    if (text !== undefined) files.set(`${name}/${PROVENANCE_FILE}`, text);
  }
  return holdingsOfOtherShards(files, shard);
}
