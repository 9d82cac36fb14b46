// A shard's identity and its part of the fleet's plan (pure), and the command line refusing what a
// shard cannot do, before anything is written.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CapiCluster, ClusterAddon, ClusterStack, ClusterStackRelease } from '../../src/api/types.js';
import type { Plan } from '../../src/plan/build-plan.js';
import { clustersToHandOver, shardPlan } from '../../src/shards/shard-plan.js';
import { NOTHING_PUBLISHED, type PublishedState, readPublishedState } from '../../src/output/published-state.js';
import {
  parseShardScope,
  SHARD_LABEL,
  shardObjectName,
  shardOwns,
  shardSubtree,
} from '../../src/shards/shard-scope.js';
import { shardLive, shardStatusPlan } from '../../src/controller/reconcile/shard-view.js';
import type { LiveObjects } from '../../src/controller/desired-state/status-inputs.js';
import { runClusterstack, tempDir } from '../support/cli.js';

const ONE = parseShardScope('shard1', `${SHARD_LABEL}=shard1`)!;
const MAIN = parseShardScope('main', `!${SHARD_LABEL}`)!;

function labelled(
  name: string,
  shard?: string,
): { metadata: { name: string; namespace: string; labels?: Record<string, string>; uid: string } } {
  return {
    metadata: { name, namespace: 'fleet', uid: `uid-${name}`, ...(shard ? { labels: { [SHARD_LABEL]: shard } } : {}) },
  };
}

/** A plan of two stacks (one per shard) and three Clusters: a (shard1), b (main), c (main, published by shard1 before). */
function fleetPlan(): Plan {
  const stacks = [
    { ...labelled('stack-one', 'shard1'), spec: {} },
    { ...labelled('stack-main'), spec: {} },
  ] as unknown as ClusterStack[];
  const clusters = [labelled('a', 'shard1'), labelled('b'), labelled('c')] as unknown as CapiCluster[];
  return {
    inputs: { clusters: clusters.map((object) => ({ object, source: `${object.metadata.name}.yaml` })) },
    resolution: {
      clusterStacks: stacks.map((stack) => ({ namespace: 'fleet', name: stack.metadata.name, stack, releases: [] })),
      clusters: clusters.map((cluster) => ({
        namespace: 'fleet',
        name: cluster.metadata.name,
        cluster,
        managed: true,
        release: 'r',
        stack: { namespace: 'fleet', name: 'stack-main' },
        problems: [],
      })),
    },
  } as unknown as Plan;
}

/** A shard's previous tree whose provenance records the addons of `clusters`. */
function previousWith(...clusters: string[]): PublishedState {
  return readPublishedState(
    new Map([
      [
        'provenance.json',
        JSON.stringify({
          units: clusters.map((name) => ({
            kind: 'cluster-stage',
            namespace: 'fleet',
            name,
            dir: `clusters/fleet/${name}/cluster-addon`,
          })),
        }),
      ],
    ]),
  );
}

const names = (plan: Plan) => ({
  clusters: plan.resolution.clusters.map((c) => c.name),
  inputs: plan.inputs.clusters.map((c) => c.object.metadata.name),
});

describe('shard identity', () => {
  it('selects by label; the main shard takes what has no shard label', () => {
    expect(shardOwns(ONE, labelled('x', 'shard1'))).toBe(true);
    expect(shardOwns(ONE, labelled('x', 'shard2'))).toBe(false);
    expect(shardOwns(MAIN, labelled('x'))).toBe(true);
    expect(shardOwns(MAIN, labelled('x', 'shard1'))).toBe(false);
    expect(shardSubtree('rendered/', 'shard1')).toBe('rendered/shards/shard1');
    expect(shardSubtree('', 'main')).toBe('shards/main');
    expect(shardObjectName('clusterstack-gitops-controller', 'shard1')).toBe('clusterstack-gitops-controller-shard1');
  });

  it('refuses a half-given, misnamed or empty shard with what to give instead', () => {
    expect(parseShardScope(undefined, undefined)).toBeUndefined();
    expect(() => parseShardScope('shard1', undefined)).toThrow(
      `--shard and --shard-selector go together: give both (e.g. --shard shard1 --shard-selector ${SHARD_LABEL}=shard1`,
    );
    expect(() => parseShardScope('Shard_1', 'a=b')).toThrow(
      '--shard must be a lowercase DNS label of at most 40 characters (it names the shard\'s directory, Lease and wiring), not "Shard_1"',
    );
    expect(() => parseShardScope('s', ' ')).toThrow('an empty selector would make every shard publish everything');
    expect(() => parseShardScope('s', 'a in b')).toThrow('--shard-selector "a in b": cannot parse "a in b"');
  });
});

describe("a shard's part of the plan", () => {
  it("renders its own Clusters, and its stacks' releases only", () => {
    const { plan, handingOver, handedOver } = shardPlan(fleetPlan(), ONE, NOTHING_PUBLISHED, undefined);
    expect(names(plan)).toEqual({ clusters: ['a'], inputs: ['a'] });
    expect(plan.resolution.clusterStacks.map((stack) => [stack.name, stack.publishedByAnotherShard ?? false])).toEqual([
      ['stack-one', false],
      ['stack-main', true],
    ]);
    expect([handingOver, handedOver]).toEqual([[], []]);
  });

  it('keeps publishing a Cluster that moved away until its new shard publishes it, then drops it', () => {
    const previous = previousWith('a', 'c');
    expect(clustersToHandOver(fleetPlan(), ONE, previous)).toEqual(['fleet/c']);
    // The new shard's subtree cannot be read, or does not hold it yet: still published here.
    for (const elsewhere of [undefined, new Set(['fleet/b'])]) {
      const part = shardPlan(fleetPlan(), ONE, previous, elsewhere);
      expect(names(part.plan).clusters).toEqual(['a', 'c']);
      expect(part.handingOver).toEqual(['fleet/c']);
    }
    const done = shardPlan(fleetPlan(), ONE, previous, new Set(['fleet/b', 'fleet/c']));
    expect(names(done.plan)).toEqual({ clusters: ['a'], inputs: ['a'] });
    expect(done.handedOver).toEqual(['fleet/c']);
  });

  it('writes back only its own stacks and Clusters, reading every Cluster', () => {
    const whole = shardPlan(fleetPlan(), MAIN, previousWith('b'), undefined).plan;
    const status = shardStatusPlan(whole, MAIN);
    expect(status.resolution.clusters.map((c) => c.name)).toEqual(['b', 'c']);
    expect(status.resolution.clusterStacks.map((s) => s.name)).toEqual(['stack-main']);
    const owned = (name: string, kind: string, owner: string) => ({
      ...labelled(name),
      metadata: {
        ...labelled(name).metadata,
        ownerReferences: [{ apiVersion: 'v1', kind, name: owner, uid: `uid-${owner}`, controller: true }],
      },
    });
    const plan = fleetPlan();
    const live = {
      stacks: plan.resolution.clusterStacks.map((s) => s.stack),
      clusters: plan.resolution.clusters.map((c) => c.cluster),
      releases: [
        owned('r1', 'ClusterStack', 'stack-one'),
        owned('r2', 'ClusterStack', 'stack-main'),
      ] as unknown as ClusterStackRelease[],
      addons: [owned('a', 'Cluster', 'a'), owned('b', 'Cluster', 'b')] as unknown as ClusterAddon[],
      providerReleases: [],
      providerTemplates: [],
      capiProviders: [labelled('core', 'shard1'), labelled('infra')],
    } as unknown as LiveObjects;
    const mine = shardLive(live, MAIN);
    expect(mine.stacks.map((s) => s.metadata.name)).toEqual(['stack-main']);
    expect(mine.clusters).toHaveLength(3);
    expect(mine.releases.map((r) => r.metadata.name)).toEqual(['r2']);
    expect(mine.addons.map((a) => a.metadata.name)).toEqual(['b']);
    expect(mine.capiProviders!.map((p) => p.metadata.name)).toEqual(['infra']);
  });
});

describe('clusterstack controller --shard', () => {
  it('2: refuses a shard without selector, and an OCI target, before writing anything', async () => {
    const dir = await tempDir();
    const half = await runClusterstack(
      ['controller', '--release-source', 'releases', '--output', 'out', '--shard', 'shard1'],
      { cwd: dir },
    );
    expect(half.code).toBe(2);
    expect(half.stderr).toContain('--shard and --shard-selector go together');
    const oci = await runClusterstack(
      [
        'controller',
        '--release-source',
        'releases',
        '--oci',
        'oci://localhost:5000/fleet:latest',
        '--shard',
        'shard1',
        '--shard-selector',
        `${SHARD_LABEL}=shard1`,
      ],
      { cwd: dir },
    );
    expect(oci.code).toBe(2);
    expect(oci.stderr).toContain(
      '--shard publishes to a subtree of one Git branch or directory; --oci oci://localhost:5000/fleet:latest holds one tree per tag',
    );
    expect(existsSync(path.join(dir, 'out'))).toBe(false);
  });
});
