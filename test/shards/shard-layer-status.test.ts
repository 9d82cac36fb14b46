// An AddonsLayer's status has one writer among the shards: the shard its own labels select. A
// shard controller (in this process, the fake API server, real helm and git) writes the status of
// its layer and leaves the other shard's layer alone, though both layers select its Cluster.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { parseShardScope, SHARD_LABEL } from '../../src/shards/shard-scope.js';
import { writeTree } from '../support/cli.js';
import {
  aCluster,
  aStack,
  startControllerFixture,
  waitFor,
  type ControllerFixture,
} from '../support/controller-fixture.js';
import { labelled } from './shard-fixture.js';

const NS = 'fleet';
const KRAAN = { group: 'kraan.io', version: 'v1alpha1', plural: 'addonslayers' } as const;

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

describe('AddonsLayer statuses of a sharded controller', () => {
  let fx: ControllerFixture;
  const layer = (name: string) =>
    fx.api.get('kraan.io/v1alpha1', 'AddonsLayer', '', name) as
      (KubeObject & { status?: { state?: string } }) | undefined;

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
      'addons/mine/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine}\n',
      'addons/theirs/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: theirs}\n',
    });
    await fx.createNamespace(NS);
    await fx.create(labelled(aStack('ferrol', NS), 's0'));
    await fx.create(labelled(aCluster('alpha', NS, 'docker-ferrol-1-30-v2'), 's0'));
    for (const [name, shard] of [
      ['mine', 's0'],
      ['theirs', 's1'],
    ] as const)
      await fx.custom.createClusterCustomObject({ ...KRAAN, body: aLayer(name, shard) });
    await fx.start('s0', {
      layerRoot: path.resolve(checkout),
      shard: {
        scope: parseShardScope('s0', `${SHARD_LABEL}=s0`)!,
        publishedElsewhere: () => Promise.resolve({ clusters: new Set<string>(), releases: new Set<string>() }),
      },
    });
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it("writes its own layer's status only", async () => {
    await waitFor(() => layer('mine')?.status?.state === 'Deployed', "the status of s0's layer");
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
  });
});
