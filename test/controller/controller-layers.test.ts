// Addon layers in the running controller: AddonsLayers (cluster-scoped, Kraan's CRD) are watched,
// rendered per Cluster and published, and each gets a Kraan-shaped status with events on changes.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { writeTree } from '../support/cli.js';
import {
  aCluster,
  aStack,
  MERGE,
  startControllerFixture,
  type ControllerFixture,
} from '../support/controller-fixture.js';

const NS = 'cluster-stacks';
const KRAAN = { group: 'kraan.io', version: 'v1alpha1', plural: 'addonslayers' } as const;

function aLayer(name: string, spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'kraan.io/v1alpha1',
    kind: 'AddonsLayer',
    metadata: { name },
    spec: {
      version: '1.0.0',
      source: { name: 'addons', namespace: 'gotk-system', path: `./addons/${name}` },
      clusterSelector: {},
      ...spec,
    },
  };
}

describe('controller with addon layers', () => {
  let fx: ControllerFixture;
  const layer = (name: string) =>
    fx.api.get('kraan.io/v1alpha1', 'AddonsLayer', '', name) as
      | (KubeObject & {
          status?: { state?: string; version?: string; conditions?: { type: string; message: string }[] };
        })
      | undefined;

  beforeAll(async () => {
    fx = await startControllerFixture({
      api: {
        resources: [
          {
            group: 'kraan.io',
            version: 'v1alpha1',
            kind: 'AddonsLayer',
            plural: 'addonslayers',
            namespaced: false,
            statusSubresource: true,
          },
        ],
      },
    });
    const checkout = await writeTree({
      'addons/base/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\ndata: {a: "1"}\n',
      'addons/apps/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: apps}\n',
    });
    await fx.createNamespace(NS);
    await fx.create(aStack('ferrol', NS, { autoSubscribe: false }));
    await fx.create(aCluster('alpha', NS, 'docker-ferrol-1-30-v2'));
    for (const object of [
      aLayer('base', {}),
      aLayer('apps', { version: '2.0.0', prereqs: { k8sVersion: '1.31', dependsOn: ['base@1.0.0'] } }),
    ]) {
      await fx.custom.createClusterCustomObject({ ...KRAAN, body: object });
    }
    await fx.start('layers', { layerRoot: path.resolve(checkout) });
    await fx.waitFor(
      () => layer('base')?.status?.state === 'Deployed' && layer('apps')?.status?.state === 'K8sVersion',
      'layer statuses',
    );
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('publishes the layer for the Cluster and reports Kraan states with the per-cluster reason', async () => {
    expect(
      Object.keys(fx.published())
        .filter((file) => file.includes('/layers/'))
        .sort(),
    ).toEqual([
      'clusters/cluster-stacks/alpha/layers/base/configmap-base.yaml',
      'clusters/cluster-stacks/alpha/layers/base/kustomization.yaml',
    ]);
    expect(layer('base')!.status).toMatchObject({ state: 'Deployed', version: '1.0.0' });
    expect(layer('apps')!.status!.conditions![0]).toMatchObject({
      type: 'K8sVersion',
      message:
        'cluster-stacks/alpha: apps@2.0.0 needs Kubernetes 1.31.0 or newer; the Cluster is at v1.30.4 (spec.topology.version)',
    });
    // Events about cluster-scoped objects go to `default`.
    const events = () => fx.api.list('v1', 'Event', 'default') as Record<string, any>[];
    await fx.waitFor(
      () =>
        ['LayerK8sVersion', 'LayerDeployed'].every((reason) => events().some((event) => event['reason'] === reason)),
      'the layer events',
    );
    expect(events().find((event) => event['reason'] === 'LayerK8sVersion')?.['message']).toBe(
      'AddonsLayer apps@2.0.0 is K8sVersion: cluster-stacks/alpha: apps@2.0.0 needs Kubernetes 1.31.0 or newer; the Cluster is at v1.30.4 (spec.topology.version)',
    );
  });

  it('says Hold once the layer is put on hold', async () => {
    await fx.custom.patchClusterCustomObject({ ...KRAAN, name: 'base', body: { spec: { hold: true } } }, MERGE());
    await fx.waitFor(() => layer('base')?.status?.state === 'Hold', 'base on hold');
    expect(layer('base')!.status!.conditions![0]).toMatchObject({ type: 'Hold' });
  });
});
