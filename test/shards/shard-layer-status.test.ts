// An AddonsLayer's status has one writer among the shards: the shard its own labels select. A
// shard controller (in this process, real helm and git, on a leased real API server as deploy/'s
// ServiceAccount with deploy/layers' RBAC; Kraan's CRD is schemaless there, see
// test/support/kraan-addons-layer.ts) writes the status of its layer and leaves the other shard's
// layer alone, though both layers select its Cluster.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { parseShardScope, SHARD_LABEL } from '../../src/shards/shard-scope.js';
import { writeTree } from '../support/cli.js';
import { aStack } from '../support/controller-fixture.js';
import { ADDONS_LAYER, addonsLayerInstall, untilLayersGranted } from '../support/kraan-addons-layer.js';
import {
  aCluster,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';
import { labelled } from './shard-fixture.js';

const NS = 'fleet';
/** The setup and the test wait for a publish of a real controller (helm, git), no more. */
const TEST_MS = 240_000;

function aLayer(name: string, shard: string): KubeObject {
  return labelled(
    {
      apiVersion: 'kraan.io/v1alpha1',
      kind: 'AddonsLayer',
      metadata: { name },
      spec: {
        version: '1.0.0',
        source: { name: 'addons', namespace: 'gotk-system', path: `./addons/${name}` },
        clusterSelector: {},
      },
    },
    shard,
  );
}

describe('AddonsLayer statuses of a sharded controller', { timeout: TEST_MS }, () => {
  let fx: RealControllerFixture;
  const layer = (name: string) =>
    fx.object(ADDONS_LAYER.apiVersion, ADDONS_LAYER.kind, undefined, name) as
      (KubeObject & { status?: { state?: string } }) | undefined;

  beforeAll(async () => {
    fx = await startRealControllerFixture({ install: addonsLayerInstall(), mirror: [ADDONS_LAYER] });
    const checkout = await writeTree(
      {
        'addons/mine/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine}\n',
        'addons/theirs/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: theirs}\n',
      },
      path.join(fx.work, 'checkout'),
    );
    await fx.createNamespace(NS);
    await fx.create(labelled(aStack('ferrol', NS), 's0'));
    await fx.create(labelled(aCluster('alpha', NS, 'docker-ferrol-1-30-v2'), 's0'));
    for (const [name, shard] of [
      ['mine', 's0'],
      ['theirs', 's1'],
    ] as const)
      await fx.create(aLayer(name, shard));
    await untilLayersGranted(fx);
    await fx.start('s0', {
      layerRoot: checkout,
      shard: {
        scope: parseShardScope('s0', `${SHARD_LABEL}=s0`)!,
        publishedElsewhere: () => Promise.resolve({ clusters: new Set<string>(), releases: new Set<string>() }),
      },
    });
  }, TEST_MS);

  afterAll(async () => {
    await fx?.cleanup();
  });

  it("writes its own layer's status only", async () => {
    await fx.waitFor(() => layer('mine')?.status?.state === 'Deployed', "the status of s0's layer");
    // Both layers select alpha and are published for it; the status of s1's layer is s1's to write.
    expect(
      Object.keys(fx.published())
        .filter((file) => file.includes('/layers/') && !file.endsWith('/kustomization.yaml'))
        .sort(),
    ).toEqual([
      'clusters/fleet/alpha/layers/mine/configmap-mine.yaml',
      'clusters/fleet/alpha/layers/theirs/configmap-theirs.yaml',
    ]);
    expect(layer('theirs')?.status).toBeUndefined();
    // Nor did s0 write to it at all: its only writes to layers were mine's status.
    const layerWrites = fx
      .controllerRequests()
      .filter((event) => event.objectRef?.resource === 'addonslayers' && ['update', 'patch'].includes(event.verb));
    expect(layerWrites.map((event) => `${event.objectRef?.name}/${event.objectRef?.subresource}`)).toContain(
      'mine/status',
    );
    expect(layerWrites.filter((event) => event.objectRef?.name !== 'mine')).toEqual([]);
  });
});
