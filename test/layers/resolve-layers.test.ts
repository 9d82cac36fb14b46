import { describe, expect, it } from 'vitest';
import type { AddonsLayer } from '../../src/api/addons-layer.js';
import type { CapiCluster } from '../../src/api/types.js';
import { type LayerClusterInput, resolveLayers } from '../../src/layers/resolve-layers.js';

function aLayer(name: string, version: string, spec: Partial<AddonsLayer['spec']> = {}): AddonsLayer {
  return {
    apiVersion: 'kraan.io/v1alpha1',
    kind: 'AddonsLayer',
    metadata: { name },
    spec: { version, source: { path: `./addons/${name}` }, clusterSelector: {}, ...spec },
  };
}

function aCluster(
  name: string,
  version: string | undefined,
  labels: Record<string, string> = {},
  extra: Partial<LayerClusterInput> = {},
): LayerClusterInput {
  const cluster: CapiCluster = {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name, namespace: 'fleet', labels },
    spec: { topology: { class: 'x', ...(version ? { version } : {}) } },
  };
  return { namespace: 'fleet', name, cluster, stages: ['cni', 'metrics-server'], ...extra };
}

const LAYERS = [
  aLayer('bootstrap', '1.0.0', { prereqs: { dependsOn: ['cluster-stack'] } }),
  aLayer('base', '1.2.0', { prereqs: { dependsOn: ['bootstrap@1.0.0'] } }),
  aLayer('apps', '2.0.0', { prereqs: { k8sVersion: '1.30', dependsOn: ['base@1.2.0'] } }),
];
const FLEET = [aCluster('one', 'v1.29.8'), aCluster('two', 'v1.30.4'), aCluster('three', 'v1.30.0')];

const view = (resolution: ReturnType<typeof resolveLayers>): Record<string, string[]> =>
  Object.fromEntries(
    resolution.clusters.map((c) => [
      c.name,
      c.layers.map((l) =>
        l.withheld
          ? `${l.layer}: ${l.withheld.state}: ${l.withheld.reason}`
          : `${l.layer}@${l.version}${l.hold ? ' (hold)' : ''}`,
      ),
    ]),
  );

describe('resolveLayers', () => {
  it('renders bootstrap -> base -> apps in dependency order, withholding apps below Kubernetes 1.30 with the reason', () => {
    const resolution = resolveLayers(LAYERS, FLEET);
    expect(resolution.problems).toEqual([]);
    expect(view(resolution)).toEqual({
      one: [
        'bootstrap@1.0.0',
        'base@1.2.0',
        'apps: K8sVersion: apps@2.0.0 needs Kubernetes 1.30.0 or newer; the Cluster is at v1.29.8 (spec.topology.version)',
      ],
      three: ['bootstrap@1.0.0', 'base@1.2.0', 'apps@2.0.0'],
      two: ['bootstrap@1.0.0', 'base@1.2.0', 'apps@2.0.0'],
    });
    const apps = resolution.clusters.find((c) => c.name === 'two')!.layers[2]!;
    expect(apps).toMatchObject({ dependsOn: [{ layer: 'base', version: '1.2.0' }], afterStack: false, depth: 2 });
    expect(resolution.clusters.find((c) => c.name === 'two')!.layers[0]).toMatchObject({ afterStack: true, depth: 0 });
  });

  it('renders apps once the Cluster is upgraded to 1.30', () => {
    const upgraded = resolveLayers(LAYERS, [aCluster('one', 'v1.30.1')]);
    expect(view(upgraded).one).toEqual(['bootstrap@1.0.0', 'base@1.2.0', 'apps@2.0.0']);
  });

  it('withholds a layer whose dependency is at another version, saying which', () => {
    const layers = [LAYERS[0]!, aLayer('base', '1.1.0', { prereqs: { dependsOn: ['bootstrap@1.0.0'] } }), LAYERS[2]!];
    expect(view(resolveLayers(layers, [aCluster('two', 'v1.30.4')])).two).toEqual([
      'bootstrap@1.0.0',
      'base@1.1.0',
      'apps: ApplyPending: base is at 1.1.0, apps needs base@1.2.0',
    ]);
  });

  it('withholds dependents of a withheld layer, and layers after the stack when its addons are withheld', () => {
    const layers = [
      aLayer('base', '1.0.0', { prereqs: { k8sVersion: '1.31' } }),
      aLayer('apps', '1.0.0', { prereqs: { dependsOn: ['base@1.0.0'] } }),
      aLayer('cni-extra', '1.0.0', { prereqs: { dependsOn: ['cluster-stack'] } }),
    ];
    expect(
      view(
        resolveLayers(layers, [
          aCluster(
            'two',
            'v1.30.4',
            {},
            { stackWithheld: 'addon values need .Cluster.spec.controlPlaneEndpoint.host' },
          ),
        ]),
      ).two,
    ).toEqual([
      'base: K8sVersion: base@1.0.0 needs Kubernetes 1.31.0 or newer; the Cluster is at v1.30.4 (spec.topology.version)',
      'apps: ApplyPending: apps needs base@1.0.0, which is withheld here (base@1.0.0 needs Kubernetes 1.31.0 or newer; the Cluster is at v1.30.4 (spec.topology.version))',
      "cni-extra: ApplyPending: the cluster stack's addons are withheld (addon values need .Cluster.spec.controlPlaneEndpoint.host)",
    ]);
  });

  it('withholds a layer depending on one that does not exist or does not select the Cluster', () => {
    const layers = [
      aLayer('apps', '1.0.0', { prereqs: { dependsOn: ['base@1.0.0', 'gpu@1.0.0'] } }),
      aLayer('gpu', '1.0.0', { clusterSelector: { matchLabels: { gpu: 'true' } } }),
    ];
    expect(view(resolveLayers(layers, [aCluster('two', 'v1.30.4')])).two).toEqual([
      'apps: ApplyPending: apps needs base@1.0.0, and there is no AddonsLayer base; apps needs gpu@1.0.0, which does not select this Cluster',
    ]);
  });

  it('refuses a cycle, naming it, and renders none of its layers', () => {
    const layers = [
      aLayer('a', '1.0.0', { prereqs: { dependsOn: ['b@1.0.0'] } }),
      aLayer('b', '1.0.0', { prereqs: { dependsOn: ['c@1.0.0'] } }),
      aLayer('c', '1.0.0', { prereqs: { dependsOn: ['a@1.0.0'] } }),
      aLayer('d', '1.0.0'),
    ];
    const resolution = resolveLayers(layers, [aCluster('two', 'v1.30.4')]);
    expect(resolution.problems.map((p) => p.message)).toEqual([
      'layers depend on each other in a cycle: a -> b -> c -> a; remove one of these dependencies',
    ]);
    expect(view(resolution).two).toEqual(['d@1.0.0']);
  });

  it('refuses a layer named like an addon stage of a selected Cluster', () => {
    const resolution = resolveLayers([aLayer('cni', '1.0.0')], FLEET);
    expect(resolution.problems).toEqual([
      expect.objectContaining({
        object: 'AddonsLayer cni',
        message:
          'is also the name of an addon stage of the cluster stack used by fleet/one, fleet/three, fleet/two; rename the layer',
      }),
    ]);
  });

  it('selects Clusters by label; an absent selector selects every Cluster (Kraan: the cluster it runs in) and says so', () => {
    const layers = [
      aLayer('prod-only', '1.0.0', { clusterSelector: { matchLabels: { tier: 'prod' } } }),
      { ...aLayer('everywhere', '1.0.0'), spec: { version: '1.0.0', source: { path: './x' } } },
    ];
    const resolution = resolveLayers(layers, [
      aCluster('one', 'v1.30.0', { tier: 'prod' }),
      aCluster('two', 'v1.30.0', { tier: 'dev' }),
    ]);
    expect(view(resolution)).toEqual({ one: ['everywhere@1.0.0', 'prod-only@1.0.0'], two: ['everywhere@1.0.0'] });
    expect(resolution.notes).toEqual([
      'AddonsLayer everywhere has no spec.clusterSelector: it goes to every Cluster (2), as Kraan applies a layer to the cluster it runs in; set clusterSelector to choose Clusters',
    ]);
  });

  it('reads a bare dependsOn name as Kraan does: the dependency at whatever version it is', () => {
    const layers = [aLayer('base', '1.3.0'), aLayer('apps', '1.0.0', { prereqs: { dependsOn: ['base'] } })];
    const resolution = resolveLayers(layers, [aCluster('two', 'v1.30.4')]);
    expect(view(resolution).two).toEqual(['base@1.3.0', 'apps@1.0.0']);
    expect(resolution.clusters[0]!.layers[1]).toMatchObject({
      dependsOn: [{ layer: 'base', version: '1.3.0' }],
      depth: 1,
    });
  });

  it("renders a layer without a version (Kraan's samples omit it), noting it; only a bare name depends on it", () => {
    const unversioned = {
      ...aLayer('base', '1.0.0'),
      spec: { source: { path: './addons/base' }, clusterSelector: {} },
    } as AddonsLayer;
    const layers = [
      unversioned,
      aLayer('apps', '1.0.0', { prereqs: { dependsOn: ['base'] } }),
      aLayer('pinned', '1.0.0', { prereqs: { dependsOn: ['base@1.0.0'] } }),
    ];
    const resolution = resolveLayers(layers, [aCluster('two', 'v1.30.4')]);
    expect(view(resolution).two).toEqual([
      'base@',
      'apps@1.0.0',
      'pinned: ApplyPending: base is unversioned, pinned needs base@1.0.0',
    ]);
    expect(resolution.notes).toEqual([
      'AddonsLayer base has no spec.version (Kraan\'s CRD requires one): it is rendered unversioned, and only a bare "base" in dependsOn matches it',
    ]);
  });

  it('gates on the version the workload API server reports when it is known, on spec.topology.version otherwise, and says which', () => {
    const gated = [aLayer('apps', '1.0.0', { prereqs: { k8sVersion: '1.30' } })];
    // Mid-upgrade: the topology already names 1.30, the control plane still runs 1.29.
    const live = resolveLayers(gated, [aCluster('two', 'v1.30.4', {}, { liveVersion: 'v1.29.8' })]);
    expect(view(live).two).toEqual([
      'apps: K8sVersion: apps@1.0.0 needs Kubernetes 1.30.0 or newer; the Cluster is at v1.29.8 (its workload API server reports)',
    ]);
    expect(live.clusters[0]!.layers[0]!.kubernetesVersion).toEqual({
      version: 'v1.29.8',
      origin: 'workload API server',
    });
    const topology = resolveLayers(gated, [aCluster('two', 'v1.30.4')]);
    expect(view(topology).two).toEqual(['apps@1.0.0']);
    expect(topology.clusters[0]!.layers[0]!.kubernetesVersion).toEqual({
      version: 'v1.30.4',
      origin: 'spec.topology.version',
    });
    // A live version also serves a Cluster whose topology names none.
    expect(view(resolveLayers(gated, [aCluster('two', undefined, {}, { liveVersion: 'v1.30.1' })])).two).toEqual([
      'apps@1.0.0',
    ]);
  });

  it('renders a layer on hold, and its dependents wait for it', () => {
    const layers = [
      aLayer('base', '1.0.0', { hold: true }),
      aLayer('apps', '1.0.0', { prereqs: { dependsOn: ['base@1.0.0'] } }),
    ];
    const resolution = resolveLayers(layers, [aCluster('two', 'v1.30.4')]);
    expect(view(resolution).two).toEqual(['base@1.0.0 (hold)', 'apps@1.0.0']);
    expect(resolution.clusters[0]!.layers[1]!.waitingOn).toEqual(['base@1.0.0 (on hold)']);
  });

  it('withholds a gated layer on a Cluster without spec.topology.version', () => {
    expect(
      view(resolveLayers([aLayer('apps', '1.0.0', { prereqs: { k8sVersion: '1.30' } })], [aCluster('two', undefined)]))
        .two,
    ).toEqual([
      'apps: K8sVersion: apps@1.0.0 needs Kubernetes 1.30.0 or newer; the Cluster has no spec.topology.version',
    ]);
  });
});
