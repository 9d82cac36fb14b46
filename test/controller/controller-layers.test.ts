// Addon layers in the running controller: AddonsLayers (cluster-scoped, Kraan's kind) are watched,
// rendered per Cluster and published, and each gets a Kraan-shaped status, written through the
// status subresource, with events on changes. On a leased real API server, as deploy/'s
// ServiceAccount with deploy/layers' RBAC beside it; Kraan's CRD is schemaless here
// (test/support/kraan-addons-layer.ts says why).
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { writeTree } from '../support/cli.js';
import { aStack, MERGE } from '../support/controller-fixture.js';
import { ADDONS_LAYER, addonsLayerInstall, untilLayersGranted } from '../support/kraan-addons-layer.js';
import {
  aCluster,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';

const NS = 'cluster-stacks';
const KRAAN = { group: 'kraan.io', version: 'v1alpha1', plural: 'addonslayers' } as const;
/** The setup and each test wait for a publish or two of a real controller (helm, git), no more. */
const TEST_MS = 240_000;

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

describe('controller with addon layers', { timeout: TEST_MS }, () => {
  let fx: RealControllerFixture;
  const layer = (name: string) =>
    fx.object(ADDONS_LAYER.apiVersion, ADDONS_LAYER.kind, undefined, name) as
      | (KubeObject & {
          status?: { state?: string; version?: string; conditions?: { type: string; message: string }[] };
        })
      | undefined;

  beforeAll(async () => {
    fx = await startRealControllerFixture({ install: addonsLayerInstall(), mirror: [ADDONS_LAYER] });
    const checkout = await writeTree(
      {
        'addons/base/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\ndata: {a: "1"}\n',
        'addons/apps/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: apps}\n',
      },
      path.join(fx.work, 'checkout'),
    );
    await fx.createNamespace(NS);
    await fx.create(aStack('ferrol', NS, { autoSubscribe: false }));
    await fx.create(aCluster('alpha', NS, 'docker-ferrol-1-30-v2'));
    for (const object of [
      aLayer('base', {}),
      aLayer('apps', { version: '2.0.0', prereqs: { k8sVersion: '1.31', dependsOn: ['base@1.0.0'] } }),
    ])
      await fx.create(object);
    await untilLayersGranted(fx);
    await fx.start('layers', { layerRoot: checkout });
    await fx.waitFor(
      () => layer('base')?.status?.state === 'Deployed' && layer('apps')?.status?.state === 'K8sVersion',
      'layer statuses',
    );
  }, TEST_MS);

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
    const events = () => fx.objects('v1', 'Event', 'default') as Record<string, any>[];
    await fx.waitFor(
      () =>
        ['LayerK8sVersion', 'LayerDeployed'].every((reason) => events().some((event) => event['reason'] === reason)),
      'the layer events',
    );
    expect(events().find((event) => event['reason'] === 'LayerK8sVersion')?.['message']).toBe(
      'AddonsLayer apps@2.0.0 is K8sVersion: cluster-stacks/alpha: apps@2.0.0 needs Kubernetes 1.31.0 or newer; the Cluster is at v1.30.4 (spec.topology.version)',
    );
    // The statuses went through the status subresource, as Kraan's own controller writes them.
    const layerWrites = fx
      .controllerRequests()
      .filter((event) => event.objectRef?.resource === 'addonslayers' && ['update', 'patch'].includes(event.verb));
    expect(layerWrites.length).toBeGreaterThan(0);
    expect(layerWrites.filter((event) => event.objectRef?.subresource !== 'status')).toEqual([]);
  });

  it('says Hold once the layer is put on hold', async () => {
    await fx.custom.patchClusterCustomObject({ ...KRAAN, name: 'base', body: { spec: { hold: true } } }, MERGE());
    await fx.waitFor(() => layer('base')?.status?.state === 'Hold', 'base on hold');
    expect(layer('base')!.status!.conditions![0]).toMatchObject({ type: 'Hold' });
  });
});
