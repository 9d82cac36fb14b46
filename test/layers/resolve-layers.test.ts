import { describe, expect, it } from 'vitest';
import type { AddonsLayer } from '../../src/api/addons-layer.js';
import type { CapiCluster } from '../../src/api/types.js';
import { type LayerClusterInput, resolveLayers } from '../../src/layers/resolve-layers.js';

function aLayer(name: string, version: string, spec: Partial<AddonsLayer['spec']> = {}): AddonsLayer {
  return { apiVersion: 'kraan.io/v1alpha1', kind: 'AddonsLayer', metadata: { name }, spec: { version, source: { path: `./addons/${name}` }, clusterSelector: {}, ...spec } };
}

function aCluster(name: string, version: string | undefined, labels: Record<string, string> = {}, extra: Partial<LayerClusterInput> = {}): LayerClusterInput {
  const cluster: CapiCluster = { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', metadata: { name, namespace: 'fleet', labels }, spec: { topology: { class: 'x', ...(version ? { version } : {}) } } };
  return { namespace: 'fleet', name, cluster, stages: ['cni', 'metrics-server'], ...extra };
}

const LAYERS = [
  aLayer('bootstrap', '1.0.0', { prereqs: { dependsOn: ['cluster-stack'] } }),
  aLayer('base', '1.2.0', { prereqs: { dependsOn: ['bootstrap@1.0.0'] } }),
  aLayer('apps', '2.0.0', { prereqs: { k8sVersion: '1.30', dependsOn: ['base@1.2.0'] } }),
];
const FLEET = [aCluster('one', 'v1.29.8'), aCluster('two', 'v1.30.4'), aCluster('three', 'v1.30.0')];

const view = (resolution: ReturnType<typeof resolveLayers>): Record<string, string[]> =>
  Object.fromEntries(resolution.clusters.map((c) => [c.name, c.layers.map((l) => (l.withheld ? `${l.layer}: ${l.withheld.state}: ${l.withheld.reason}` : `${l.layer}@${l.version}${l.hold ? ' (hold)' : ''}`))]));

describe('resolveLayers', () => {
  it('renders bootstrap -> base -> apps in dependency order, withholding apps below Kubernetes 1.30 with the reason', () => {
    const resolution = resolveLayers(LAYERS, FLEET);
    expect(resolution.problems).toEqual([]);
    expect(view(resolution)).toEqual({
      one: ['bootstrap@1.0.0', 'base@1.2.0', 'apps: K8sVersion: apps@2.0.0 needs Kubernetes 1.30.0 or newer; the Cluster is at v1.29.8'],
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
    expect(view(resolveLayers(layers, [aCluster('two', 'v1.30.4')])).two).toEqual(['bootstrap@1.0.0', 'base@1.1.0', 'apps: ApplyPending: base is at 1.1.0, apps needs base@1.2.0']);
  });

  it('withholds dependents of a withheld layer, and layers after the stack when its addons are withheld', () => {
    const layers = [aLayer('base', '1.0.0', { prereqs: { k8sVersion: '1.31' } }), aLayer('apps', '1.0.0', { prereqs: { dependsOn: ['base@1.0.0'] } }), aLayer('cni-extra', '1.0.0', { prereqs: { dependsOn: ['cluster-stack'] } })];
    expect(view(resolveLayers(layers, [aCluster('two', 'v1.30.4', {}, { stackWithheld: 'addon values need .Cluster.spec.controlPlaneEndpoint.host' })])).two).toEqual([
      'base: K8sVersion: base@1.0.0 needs Kubernetes 1.31.0 or newer; the Cluster is at v1.30.4',
      'apps: ApplyPending: apps needs base@1.0.0, which is withheld here (base@1.0.0 needs Kubernetes 1.31.0 or newer; the Cluster is at v1.30.4)',
      "cni-extra: ApplyPending: the cluster stack's addons are withheld (addon values need .Cluster.spec.controlPlaneEndpoint.host)",
    ]);
  });

  it('withholds a layer depending on one that does not exist or does not select the Cluster', () => {
    const layers = [aLayer('apps', '1.0.0', { prereqs: { dependsOn: ['base@1.0.0', 'gpu@1.0.0'] } }), aLayer('gpu', '1.0.0', { clusterSelector: { matchLabels: { gpu: 'true' } } })];
    expect(view(resolveLayers(layers, [aCluster('two', 'v1.30.4')])).two).toEqual(['apps: ApplyPending: apps needs base@1.0.0, and there is no AddonsLayer base; apps needs gpu@1.0.0, which does not select this Cluster']);
  });

  it('refuses a cycle, naming it, and renders none of its layers', () => {
    const layers = [aLayer('a', '1.0.0', { prereqs: { dependsOn: ['b@1.0.0'] } }), aLayer('b', '1.0.0', { prereqs: { dependsOn: ['c@1.0.0'] } }), aLayer('c', '1.0.0', { prereqs: { dependsOn: ['a@1.0.0'] } }), aLayer('d', '1.0.0')];
    const resolution = resolveLayers(layers, [aCluster('two', 'v1.30.4')]);
    expect(resolution.problems.map((p) => p.message)).toEqual(['layers depend on each other in a cycle: a -> b -> c -> a; remove one of these dependencies']);
    expect(view(resolution).two).toEqual(['d@1.0.0']);
  });

  it('refuses a layer named like an addon stage of a selected Cluster', () => {
    const resolution = resolveLayers([aLayer('cni', '1.0.0')], FLEET);
    expect(resolution.problems).toEqual([expect.objectContaining({ object: 'AddonsLayer cni', message: 'is also the name of an addon stage of the cluster stack used by fleet/one, fleet/three, fleet/two; rename the layer' })]);
  });

  it('selects Clusters by label; an absent selector selects none and says so', () => {
    const layers = [aLayer('prod-only', '1.0.0', { clusterSelector: { matchLabels: { tier: 'prod' } } }), { ...aLayer('nowhere', '1.0.0'), spec: { version: '1.0.0', source: { path: './x' } } }];
    const resolution = resolveLayers(layers, [aCluster('one', 'v1.30.0', { tier: 'prod' }), aCluster('two', 'v1.30.0', { tier: 'dev' })]);
    expect(view(resolution)).toEqual({ one: ['prod-only@1.0.0'], two: [] });
    expect(resolution.notes).toEqual(['AddonsLayer nowhere has no spec.clusterSelector and goes to no Cluster (use clusterSelector: {} for every Cluster)']);
  });

  it('renders a layer on hold, and its dependents wait for it', () => {
    const layers = [aLayer('base', '1.0.0', { hold: true }), aLayer('apps', '1.0.0', { prereqs: { dependsOn: ['base@1.0.0'] } })];
    const resolution = resolveLayers(layers, [aCluster('two', 'v1.30.4')]);
    expect(view(resolution).two).toEqual(['base@1.0.0 (hold)', 'apps@1.0.0']);
    expect(resolution.clusters[0]!.layers[1]!.waitingOn).toEqual(['base@1.0.0 (on hold)']);
  });

  it('withholds a gated layer on a Cluster without spec.topology.version', () => {
    expect(view(resolveLayers([aLayer('apps', '1.0.0', { prereqs: { k8sVersion: '1.30' } })], [aCluster('two', undefined)])).two).toEqual(['apps: K8sVersion: apps@1.0.0 needs Kubernetes 1.30.0 or newer; the Cluster has no spec.topology.version']);
  });
});
