import { describe, expect, it } from 'vitest';
import type { AddonsLayer } from '../../src/api/addons-layer.js';
import type { CapiCluster, KubeObject } from '../../src/api/types.js';
import { desiredLayerStatuses } from '../../src/controller/desired-state/addons-layer-status.js';
import type { UnitSync } from '../../src/controller/desired-state/sync-state.js';
import { resolveLayers } from '../../src/layers/resolve-layers.js';
import type { Plan } from '../../src/plan/build-plan.js';
import type { RenderOutcome } from '../../src/render/render-output.js';

const NOW = '2026-11-23T12:00:00Z';

function aLayer(name: string, version: string, spec: Partial<AddonsLayer['spec']> = {}): AddonsLayer {
  return {
    apiVersion: 'kraan.io/v1alpha1',
    kind: 'AddonsLayer',
    metadata: { name, generation: 3 },
    spec: { version, source: { path: `./addons/${name}` }, clusterSelector: {}, ...spec },
  };
}

function aCluster(name: string, version: string) {
  const cluster: CapiCluster = {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name, namespace: 'fleet' },
    spec: { topology: { class: 'x', version } },
  };
  return { namespace: 'fleet', name, cluster, stages: ['cni'] };
}

function planOf(layers: AddonsLayer[], problems: Plan['problems'] = []): Plan {
  return {
    problems,
    layers: {
      layers,
      sources: new Map(),
      problems: [],
      resolution: resolveLayers(layers, [aCluster('one', 'v1.29.8'), aCluster('two', 'v1.30.4')]),
    },
  } as unknown as Plan;
}

const synced = (revision: string): UnitSync => ({
  engine: 'flux',
  source: 'Flux Kustomization fleet/two-layer-base',
  state: 'synced',
  revision,
  message: 'Applied revision',
});

function statuses(
  layers: AddonsLayer[],
  sync: Map<string, UnitSync>,
  options: { plan?: Plan; render?: Partial<RenderOutcome> } = {},
) {
  return desiredLayerStatuses({
    now: NOW,
    layers: layers as unknown as KubeObject[],
    plan: options.plan ?? planOf(layers),
    ...(options.render ? { render: options.render as RenderOutcome } : {}),
    sync,
    engine: 'flux',
  });
}

describe('desiredLayerStatuses', () => {
  it('is Deployed with the applied revision when the engine reports every Cluster ready', () => {
    const base = aLayer('base', '1.2.0');
    const sync = new Map([
      ['clusters/fleet/one/layers/base', synced('main@sha1:abc')],
      ['clusters/fleet/two/layers/base', synced('main@sha1:abc')],
    ]);
    const { layers, events } = statuses([base], sync);
    expect(layers[0]!.status).toEqual({
      state: 'Deployed',
      version: '1.2.0',
      revision: 'main@sha1:abc',
      observedGeneration: 3,
      conditions: [
        {
          type: 'Deployed',
          status: 'True',
          version: '1.2.0',
          reason: 'AddonsLayer is Deployed',
          message:
            'fleet/one: Flux Kustomization fleet/two-layer-base: Applied revision; fleet/two: Flux Kustomization fleet/two-layer-base: Applied revision',
          lastTransitionTime: NOW,
        },
      ],
    });
    expect(events).toEqual([
      expect.objectContaining({
        type: 'Normal',
        reason: 'LayerDeployed',
        regarding: expect.objectContaining({ kind: 'AddonsLayer', name: 'base' }),
      }),
    ]);
  });

  it('says K8sVersion for the Cluster below the gate, naming it, and Pending where the engine has not applied yet', () => {
    const apps = aLayer('apps', '2.0.0', { prereqs: { k8sVersion: '1.30' } });
    const { layers } = statuses([apps], new Map());
    expect(layers[0]!.status.state).toBe('K8sVersion');
    expect(layers[0]!.status.conditions.map((c) => [c.type, c.message])).toEqual([
      [
        'K8sVersion',
        'fleet/one: apps@2.0.0 needs Kubernetes 1.30.0 or newer; the Cluster is at v1.29.8 (spec.topology.version)',
      ],
      ['Pending', 'fleet/two: published; waiting for the Flux Kustomization'],
    ]);
  });

  it('says ApplyPending for a dependency at another version, Hold on hold, Failed when the engine fails', () => {
    const base = aLayer('base', '1.1.0', { hold: true });
    const apps = aLayer('apps', '2.0.0', { prereqs: { dependsOn: ['base@1.2.0'] } });
    const other = aLayer('other', '1.0.0');
    const failed: UnitSync = {
      engine: 'flux',
      source: 'Flux Kustomization fleet/one-layer-other',
      state: 'failed',
      message: 'Namespace "x" not found',
    };
    const { layers } = statuses(
      [base, apps, other],
      new Map([
        ['clusters/fleet/one/layers/other', failed],
        ['clusters/fleet/two/layers/other', synced('r1')],
      ]),
    );
    expect(layers.map((entry) => [entry.live.metadata.name, entry.status.state])).toEqual([
      ['base', 'Hold'],
      ['apps', 'ApplyPending'],
      ['other', 'Failed'],
    ]);
    expect(layers[1]!.status.conditions[0]!.message).toBe(
      'fleet/one: base is at 1.1.0, apps needs base@1.2.0; fleet/two: base is at 1.1.0, apps needs base@1.2.0',
    );
    expect(layers[2]!.status.conditions[0]).toMatchObject({
      type: 'Failed',
      reason: 'AddonsLayer processsing has failed',
      message: 'fleet/one: Flux Kustomization fleet/one-layer-other: Namespace "x" not found',
    });
  });

  it('is Failed with the problems for an invalid layer, and records no event while the state stays', () => {
    const broken = { ...aLayer('broken', '1.0.0'), status: { state: 'Failed' } } as unknown as AddonsLayer;
    const plan = planOf(
      [],
      [{ object: 'AddonsLayer broken', path: 'spec.prereqs.dependsOn[0]', message: '"base" has no version' }],
    );
    const { layers, events } = statuses([broken], new Map(), { plan });
    expect(layers[0]!.status).toMatchObject({
      state: 'Failed',
      conditions: [{ type: 'Failed', message: 'AddonsLayer broken spec.prereqs.dependsOn[0]: "base" has no version' }],
    });
    expect(events).toEqual([]);
  });

  it('keeps lastTransitionTime while a condition says the same', () => {
    const base = aLayer('base', '1.2.0');
    const sync = new Map([
      ['clusters/fleet/one/layers/base', synced('r1')],
      ['clusters/fleet/two/layers/base', synced('r1')],
    ]);
    const first = statuses([base], sync).layers[0]!.status;
    const again = desiredLayerStatuses({
      now: '2026-11-23T13:00:00Z',
      layers: [{ ...base, status: first } as unknown as KubeObject],
      plan: planOf([base]),
      sync,
      engine: 'flux',
    });
    expect(again.layers[0]!.status.conditions[0]!.lastTransitionTime).toBe(NOW);
    expect(again.events).toEqual([]);
  });
});
