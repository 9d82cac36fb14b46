// A shard's identity and its part of the fleet's plan (pure), and the command line refusing what a
// shard cannot do, before anything is written.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CapiCluster, ClusterAddon, ClusterStack, ClusterStackRelease } from '../../src/api/types.js';
import type { Plan } from '../../src/plan/build-plan.js';
import { NOTHING_PUBLISHED, type PublishedState, readPublishedState } from '../../src/output/published-state.js';
import { handoversPending, shardPlan } from '../../src/shards/shard-plan.js';
import { splitNamespaceProblems } from '../../src/shards/shard-namespaces.js';
import { markHandoverWiring, wiringReleasedBy } from '../../gitops/shard-handover-wiring.js';
import { renderWiring } from '../../gitops/wiring/render-wiring.js';
import type { UnitRecord } from '../../src/output/provenance.js';
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
      clusterStacks: stacks.map((stack) => ({
        namespace: 'fleet',
        name: stack.metadata.name,
        stack,
        releases: [{ name: `${stack.metadata.name}-v1`, kept: true, usedBy: [] }],
      })),
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

/** A shard's previous tree whose provenance records the addons of `clusters` and the `releases`. */
function previousWith(clusters: string[], releases: string[] = []): PublishedState {
  return readPublishedState(
    new Map([
      [
        'provenance.json',
        JSON.stringify({
          units: [
            ...clusters.map((name) => ({
              kind: 'cluster-stage',
              namespace: 'fleet',
              name,
              dir: `clusters/fleet/${name}/cluster-addon`,
            })),
            ...releases.map((release) => ({
              kind: 'release',
              namespace: 'fleet',
              name: release,
              release,
              dir: `management/fleet/${release}`,
            })),
          ],
        }),
      ],
    ]),
  );
}

const holdings = (clusters: string[], releases: string[] = []) => ({
  clusters: new Set(clusters),
  releases: new Set(releases),
});
const NONE = { clusters: [], stacks: [] };

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
    const { plan, handingOver, handedOver } = shardPlan(fleetPlan(), ONE, NOTHING_PUBLISHED, {
      publishedElsewhere: undefined,
    });
    expect(names(plan)).toEqual({ clusters: ['a'], inputs: ['a'] });
    expect(plan.resolution.clusterStacks.map((stack) => [stack.name, stack.publishedByAnotherShard ?? false])).toEqual([
      ['stack-one', false],
      ['stack-main', true],
    ]);
    expect([handingOver, handedOver]).toEqual([NONE, NONE]);
  });

  it('keeps publishing a Cluster that moved away until its new shard publishes it, then drops it', () => {
    const previous = previousWith(['a', 'c']);
    expect(handoversPending(fleetPlan(), ONE, previous)).toEqual({ clusters: ['fleet/c'], stacks: [] });
    // The new shard's subtree cannot be read, or does not hold it yet: still published here.
    for (const elsewhere of [undefined, holdings(['fleet/b'])]) {
      const part = shardPlan(fleetPlan(), ONE, previous, { publishedElsewhere: elsewhere });
      expect(names(part.plan).clusters).toEqual(['a', 'c']);
      expect(part.handingOver).toEqual({ clusters: ['fleet/c'], stacks: [] });
    }
    const done = shardPlan(fleetPlan(), ONE, previous, { publishedElsewhere: holdings(['fleet/b', 'fleet/c']) });
    expect(names(done.plan)).toEqual({ clusters: ['a'], inputs: ['a'] });
    expect(done.handedOver).toEqual({ clusters: ['fleet/c'], stacks: [] });
  });

  it('keeps a moved Cluster while its old root would still prune the live wiring object, even once the new shard publishes it', () => {
    const previous = previousWith(['a', 'c']);
    const elsewhere = holdings(['fleet/b', 'fleet/c']);
    const kustomization = (labels: Record<string, string>, annotations: Record<string, string> = {}) => ({
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: {
        name: 'c-cluster-addon',
        namespace: 'fleet',
        labels: { 'clusterstack.x-k8s.io/namespace': 'fleet', 'clusterstack.x-k8s.io/cluster': 'c', ...labels },
        annotations,
      },
    });
    // Last applied by this shard's root, unmarked: the old root's garbage collection would delete it.
    const ours = wiringReleasedBy(
      [kustomization({ 'kustomize.toolkit.fluxcd.io/name': 'gitops-shard1' })],
      'gitops-shard1',
    );
    const held = shardPlan(fleetPlan(), ONE, previous, { publishedElsewhere: elsewhere, wiringReleased: ours });
    expect(held.handingOver.clusters).toEqual(['fleet/c']);
    expect(names(held.plan).clusters).toEqual(['a', 'c']);
    // Marked against pruning (our root applied the handover revision), or applied by the new shard's root: dropped.
    for (const live of [
      kustomization(
        { 'kustomize.toolkit.fluxcd.io/name': 'gitops-shard1' },
        { 'kustomize.toolkit.fluxcd.io/prune': 'disabled' },
      ),
      kustomization({ 'kustomize.toolkit.fluxcd.io/name': 'gitops-main' }),
    ]) {
      const part = shardPlan(fleetPlan(), ONE, previous, {
        publishedElsewhere: elsewhere,
        wiringReleased: wiringReleasedBy([live], 'gitops-shard1'),
      });
      expect(part.handedOver.clusters).toEqual(['fleet/c']);
    }
    // Argo CD: tracked by our root Application unless Prune=false.
    const app = (annotations: Record<string, string>) => ({
      ...kustomization({}),
      metadata: { ...kustomization({}).metadata, annotations },
    });
    const tracked = { 'argocd.argoproj.io/tracking-id': 'gitops-shard1:argoproj.io/Application:argocd/c' };
    expect(wiringReleasedBy([app(tracked)], 'gitops-shard1')('cluster fleet/c')).toBe(false);
    expect(
      wiringReleasedBy(
        [app({ ...tracked, 'argocd.argoproj.io/sync-options': 'Prune=false' })],
        'gitops-shard1',
      )('cluster fleet/c'),
    ).toBe(true);
  });

  it("hands a ClusterStack's releases over the same way: kept until the new shard publishes every kept release", () => {
    // stack-main moved to main; shard1 published its release before.
    const previous = previousWith(['a'], ['stack-one-v1', 'stack-main-v1']);
    expect(handoversPending(fleetPlan(), ONE, previous)).toEqual({ clusters: [], stacks: ['fleet/stack-main'] });
    const publishedBy = (part: ReturnType<typeof shardPlan>) =>
      part.plan.resolution.clusterStacks.map((stack) => [stack.name, stack.publishedByAnotherShard ?? false]);
    for (const elsewhere of [undefined, holdings([], ['fleet/other'])]) {
      const part = shardPlan(fleetPlan(), ONE, previous, { publishedElsewhere: elsewhere });
      expect(publishedBy(part)).toEqual([
        ['stack-one', false],
        ['stack-main', false],
      ]);
      expect(part.handingOver.stacks).toEqual(['fleet/stack-main']);
    }
    const done = shardPlan(fleetPlan(), ONE, previous, { publishedElsewhere: holdings([], ['fleet/stack-main-v1']) });
    expect(publishedBy(done)).toEqual([
      ['stack-one', false],
      ['stack-main', true],
    ]);
    expect(done.handedOver.stacks).toEqual(['fleet/stack-main']);
  });

  it('marks the wiring of what it hands over against pruning by Flux and Argo CD, and nothing else', () => {
    const unit = (kind: 'release' | 'cluster-stage', name: string, dir: string): UnitRecord =>
      ({
        kind,
        namespace: 'fleet',
        name,
        release: 'r1',
        stage: 'cluster-addon',
        dir,
        inputDigest: 'i',
        renderDigest: 'r',
        files: [],
      }) as UnitRecord;
    const units = [
      unit('release', 'r1', 'management/fleet/r1'),
      unit('cluster-stage', 'a', 'clusters/fleet/a/cluster-addon'),
      unit('cluster-stage', 'c', 'clusters/fleet/c/cluster-addon'),
    ];
    for (const engine of ['flux', 'argocd'] as const) {
      const wiring = renderWiring(units, {
        engine,
        source: { kind: 'git', url: 'https://git.example/fleet.git', branch: 'main', path: 'shards/shard1' },
        namespace: engine === 'flux' ? 'flux-system' : 'argocd',
        name: 'gitops-shard1',
      });
      const marked = markHandoverWiring(wiring, { clusters: ['fleet/c'], stacks: ['fleet/stack'] }, () => ['fleet/r1']);
      const changed = [...marked].filter(([file, text]) => wiring.get(file) !== text).map(([file]) => file);
      expect(changed.sort()).toEqual(
        [...wiring.keys()]
          .filter(
            (file) => !file.endsWith('/kustomization.yaml') && /(\/fleet\/c[/.]|management\/fleet\/r1)/.test(file),
          )
          .sort(),
      );
      expect(changed.length).toBeGreaterThan(0);
      for (const file of changed) {
        expect(marked.get(file)).toContain('kustomize.toolkit.fluxcd.io/prune: disabled');
        expect(marked.get(file)).toContain('argocd.argoproj.io/sync-options: Prune=false');
      }
      expect(markHandoverWiring(wiring, NONE, () => [])).toBe(wiring);
    }
  });

  it("tells a shard's stacks that share their namespace with another shard's stacks how to fix it", () => {
    const stack = (name: string, namespace: string, shard?: string) =>
      ({
        metadata: { name, namespace, ...(shard ? { labels: { [SHARD_LABEL]: shard } } : {}) },
        spec: {},
      }) as unknown as ClusterStack;
    const stacks = [
      stack('x', 'fleet', 'shard1'),
      stack('y', 'fleet'),
      stack('z', 'solo', 'shard1'),
      stack('w', 'other'),
    ];
    const problems = splitNamespaceProblems(ONE, stacks);
    expect([...problems.keys()]).toEqual(['fleet/x']);
    expect(problems.get('fleet/x')).toBe(
      `metadata.labels: this ClusterStack is in shard shard1 (--shard-selector ${SHARD_LABEL}=shard1) but ClusterStack(s) y (${SHARD_LABEL}=unset) of namespace fleet are not; the namespace's shared objects (management/fleet/shared/) and their wiring object have one name, so two shards would publish them. Give every ClusterStack of namespace fleet the same ${SHARD_LABEL} label`,
    );
    expect([...splitNamespaceProblems(MAIN, stacks).keys()]).toEqual(['fleet/y']);
  });

  it('writes back only its own stacks and Clusters, reading every Cluster', () => {
    const whole = shardPlan(fleetPlan(), MAIN, previousWith(['b']), { publishedElsewhere: undefined }).plan;
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
