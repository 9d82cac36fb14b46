// The shards' fleet-wide index as a pure function of the subtrees present: what it lists per shard,
// that the same subtrees give the same bytes whatever order they come in, and that what more than
// one shard publishes (a handover) is named.
import { describe, expect, it } from 'vitest';
import { renderFleetIndex, summarizeShard } from '../../src/shards/fleet-index.js';

/** A provenance.json of Clusters (`ns/name`) and releases (`ns/release`), with one provider and one withheld entry. */
function provenance(clusters: string[], releases: string[]): string {
  const split = (key: string) => key.split('/') as [string, string];
  return JSON.stringify({
    units: [
      ...clusters.map((key) => ({ kind: 'cluster-stage', namespace: split(key)[0], name: split(key)[1], dir: 'd' })),
      ...clusters.map((key) => ({ kind: 'cluster-layer', namespace: split(key)[0], name: split(key)[1], dir: 'l' })),
      ...releases.map((key) => ({
        kind: 'release',
        namespace: split(key)[0],
        name: 'x',
        release: split(key)[1],
        dir: 'r',
      })),
    ],
    withheld: [{ kind: 'cluster', namespace: 'fleet', name: 'held', reason: 'r', previousKept: false }],
    providers: [{ kind: 'InfrastructureProvider', namespace: 'capd', name: 'docker' }],
  });
}

describe('the fleet index of a sharded tree', () => {
  const main = summarizeShard(provenance(['fleet/b', 'fleet/a', 'prod/c'], ['fleet/docker-1-30-v1']));
  const shard1 = summarizeShard(provenance(['fleet/a', 'edge/z'], []));

  it('summarizes a shard from its provenance record, and a missing or damaged one as unreadable', () => {
    expect(main).toEqual({
      readable: true,
      clusters: ['fleet/a', 'fleet/b', 'prod/c'],
      releases: ['fleet/docker-1-30-v1'],
      providers: ['InfrastructureProvider capd/docker'],
      withheld: 1,
    });
    for (const text of [undefined, '{', '"text"', '{"units": 3}'])
      expect(summarizeShard(text)).toEqual({ readable: false, clusters: [], releases: [], providers: [], withheld: 0 });
  });

  it('lists every shard present with its counts, README and Clusters by namespace, the same bytes in any order', () => {
    const index = renderFleetIndex(
      new Map([
        ['shard1', shard1],
        ['main', main],
        ['gone', summarizeShard(undefined)],
      ]),
    );
    expect(index).toBe(
      renderFleetIndex(
        new Map([
          ['main', main],
          ['gone', summarizeShard(undefined)],
          ['shard1', shard1],
        ]),
      ),
    );
    expect(index).toContain('3 shards, 4 Clusters, 1 release.');
    expect(index).toContain('| gone | - | - | - | - | no readable provenance.json |\n');
    expect(index).toContain('| main | 3 | 1 | 1 | 1 | [main/README.md](main/README.md) |\n| shard1 | 2 | 0 | 1 | 1 |');
    expect(index).toContain('## main\n\nSubtree: [`main/`](main/)\n\nReleases (1):\n\n- `fleet` (1): docker-1-30-v1\n');
    expect(index).toContain('Clusters (3):\n\n- `fleet` (2): a, b\n- `prod` (1): c\n');
    expect(index).toContain('## Published by more than one shard');
    expect(index).toContain('- Cluster fleet/a: main, shard1\n');
    expect(index.endsWith('\n')).toBe(true);
  });

  it('names no shard that is not present, and no handover when each Cluster has one shard', () => {
    const index = renderFleetIndex(new Map([['main', main]]));
    expect(index).toContain('1 shard, 3 Clusters, 1 release.');
    expect(index).not.toContain('shard1');
    expect(index).not.toContain('more than one shard');
    expect(renderFleetIndex(new Map())).toContain('0 shards, 0 Clusters, 0 releases.');
  });
});
