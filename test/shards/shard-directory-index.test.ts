// Shards publishing to one --output directory: each its own `<dir>/shards/<shard>/`, and the shards'
// index `<dir>/shards/README.md` rewritten after each tree published, under a lock of the shards
// directory, so the index written last lists exactly the shard directories present. Also what a
// shard reads of the others (their published `current/provenance.json`) to finish a handover.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DirectoryPublisher } from '../../gitops/directory-publisher.js';
import { refreshDirectoryFleetIndex } from '../../gitops/shard-directory-index.js';
import { directoryShardsReader } from '../../gitops/shard-fleet.js';
import type { RenderedTree } from '../../src/output/rendered-tree.js';
import { FLEET_INDEX_FILE } from '../../src/shards/fleet-index.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'clusterstack-shard-dir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A shard's tree of round `round`: its README, and a provenance naming one Cluster of that round. */
function roundTree(shard: string, round: number): RenderedTree {
  const unit = { kind: 'cluster-stage', namespace: 'fleet', name: `${shard}-c${round}`, dir: 'd' };
  return new Map([
    ['README.md', `# ${shard}, round ${round}\n`],
    ['provenance.json', `${JSON.stringify({ units: [unit], withheld: [] })}\n`],
  ]);
}

/** Publishes one tree as a run does: under the shard directory's lock. */
async function publish(publisher: DirectoryPublisher, tree: RenderedTree): Promise<boolean> {
  const lock = await publisher.lock({ timeoutMs: 10_000, command: 'test' });
  try {
    await publisher.readPrevious();
    return (await publisher.publish(tree)).changed;
  } finally {
    await lock.release();
  }
}

/** The shards the index's table lists. */
function listed(index: string): string[] {
  return [...index.matchAll(/^\| ([a-z0-9-]+) \| (?:\d+|-) \|/gm)].map((row) => row[1]!);
}

describe('sharded publishing to one --output directory', () => {
  it('keeps the shards index right after concurrent publishes, a removed shard and a publish with no change', async () => {
    const shardsDir = path.join(root, 'out', 'shards');
    const shards = ['main', 'shard1', 'shard2'];
    const publisher = (shard: string) =>
      new DirectoryPublisher(path.join(shardsDir, shard), {
        afterChange: async () => void (await refreshDirectoryFleetIndex(shardsDir, 10_000)),
      });
    const publishers = new Map(shards.map((shard) => [shard, publisher(shard)]));
    await Promise.all(
      shards.map(async (shard) => {
        for (let round = 0; round < 3; round += 1)
          expect(await publish(publishers.get(shard)!, roundTree(shard, round))).toBe(true);
      }),
    );
    const indexFile = path.join(shardsDir, FLEET_INDEX_FILE);
    let index = readFileSync(indexFile, 'utf8');
    expect(listed(index)).toEqual(shards);
    for (const shard of shards) {
      expect(index).toContain(`- \`fleet\` (1): ${shard}-c2\n`);
      expect(index).toContain(`[${shard}/current/README.md](${shard}/current/README.md)`);
    }
    // The handover's reader finds the other shards' Clusters in their published trees.
    expect([...(await directoryShardsReader(shardsDir, 'main')).clusters].sort()).toEqual([
      'fleet/shard1-c2',
      'fleet/shard2-c2',
    ]);

    // Nothing new: the index is not written again.
    const written = statSync(indexFile).mtimeMs;
    expect(await publish(publishers.get('main')!, roundTree('main', 2))).toBe(false);
    expect(statSync(indexFile).mtimeMs).toBe(written);

    // shard2 leaves the fleet; the next tree any shard publishes drops it from the index.
    rmSync(path.join(shardsDir, 'shard2'), { recursive: true });
    expect(await publish(publishers.get('shard1')!, roundTree('shard1', 3))).toBe(true);
    index = readFileSync(indexFile, 'utf8');
    expect(listed(index)).toEqual(['main', 'shard1']);
    expect(index).toContain('- `fleet` (1): shard1-c3\n');
  }, 60_000);

  it('rewrites the index with the next publish when it failed after a tree was published', async () => {
    const shardsDir = path.join(root, 'failing', 'shards');
    let calls = 0;
    const publisher = new DirectoryPublisher(path.join(shardsDir, 'main'), {
      afterChange: async () => {
        calls += 1;
        if (calls === 1) throw new Error('index lock held too long');
        await refreshDirectoryFleetIndex(shardsDir, 10_000);
      },
    });
    await expect(publish(publisher, roundTree('main', 0))).rejects.toThrow('index lock held too long');
    // The tree is there; the next publish has nothing new but still writes the index it owes.
    expect(await publish(publisher, roundTree('main', 0))).toBe(false);
    expect(calls).toBe(2);
    expect(listed(readFileSync(path.join(shardsDir, FLEET_INDEX_FILE), 'utf8'))).toEqual(['main']);
    expect(await publish(publisher, roundTree('main', 0))).toBe(false);
    expect(calls).toBe(2);
  });
});
