// The shards' fleet-wide index (src/shards/fleet-index.ts) in an --output directory:
// `<dir>/shards/README.md`, beside the shard directories. A shard that published a new tree
// recomputes it from the shard directories there now, under a lock of the shards directory, so the
// index written last was computed after every tree published before it: it lists exactly the
// shard directories present, whichever shard wrote it. Written to a temporary file and renamed
// over the old one: a reader sees the old index or the new one.
import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { FLEET_INDEX_FILE, renderFleetIndex, summarizeShard, type ShardSummary } from '../src/shards/fleet-index.js';
import { CURRENT_LINK } from './directory-publisher.js';
import { acquirePublishLock } from './publish-lock.js';
import { shardDirectories, shardDirectoryProvenance } from './shard-fleet.js';

const INDEX_LOCK_FILE = '.clusterstack-index.lock';

/**
 * Makes `<shardsDir>/README.md` the index of the shard directories present; true when it wrote it
 * (false: it held that index already). Waits up to `timeoutMs` for another shard doing the same.
 */
export async function refreshDirectoryFleetIndex(shardsDir: string, timeoutMs: number): Promise<boolean> {
  const lock = await acquirePublishLock(path.join(shardsDir, INDEX_LOCK_FILE), {
    timeoutMs,
    target: `--output ${shardsDir}`,
    command: 'clusterstack: shards index',
  });
  try {
    const summaries = new Map<string, ShardSummary>();
    for (const shard of await shardDirectories(shardsDir))
      summaries.set(shard, summarizeShard(await shardDirectoryProvenance(shardsDir, shard)));
    const text = renderFleetIndex(summaries, `${CURRENT_LINK}/`);
    const file = path.join(shardsDir, FLEET_INDEX_FILE);
    if ((await readFile(file, 'utf8').catch(() => undefined)) === text) return false;
    const temporary = path.join(shardsDir, `.${FLEET_INDEX_FILE}.${randomBytes(6).toString('hex')}`);
    try {
      await writeFile(temporary, text);
      await rename(temporary, file);
    } finally {
      await rm(temporary, { force: true });
    }
    return true;
  } finally {
    await lock.release();
  }
}
