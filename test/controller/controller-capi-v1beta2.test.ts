// The controller on a management cluster whose API server prefers cluster.x-k8s.io/v1beta2 (Cluster
// API 1.11+): it watches Clusters in that version, reads their classRef, and watches the objects
// their v1beta2 references name by group only in the version the API server prefers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { kubernetesVersionOf } from '../support/builders.js';
import { aStack, condition, startControllerFixture, waitFor, type ControllerFixture } from '../support/controller-fixture.js';

const NS = 'fleet';

function aV1beta2Cluster(name: string, className: string): KubeObject {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Cluster',
    metadata: { name, namespace: NS },
    spec: {
      controlPlaneEndpoint: { host: `${name}.test`, port: 6443 },
      clusterNetwork: { pods: { cidrBlocks: ['10.0.0.0/16'] } },
      controlPlaneRef: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane', name: `${name}-cp` },
      topology: { classRef: { name: className }, version: kubernetesVersionOf(className) },
    },
  };
}

describe('controller with Cluster API v1beta2 preferred', () => {
  let fx: ControllerFixture;

  beforeAll(async () => {
    fx = await startControllerFixture({
      api: {
        resources: [
          { group: 'cluster.x-k8s.io', version: 'v1beta2', kind: 'Cluster', plural: 'clusters', namespaced: true, statusSubresource: true, preferred: true },
          { group: 'controlplane.cluster.x-k8s.io', version: 'v1beta2', kind: 'KubeadmControlPlane', plural: 'kubeadmcontrolplanes', namespaced: true, statusSubresource: true, preferred: true },
        ],
      },
    });
    await fx.createNamespace(NS);
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('watches Clusters in the preferred version and publishes the addons of one that names its class in classRef', async () => {
    await fx.create(aStack('ferrol', NS));
    await fx.custom.createNamespacedCustomObject({ group: 'cluster.x-k8s.io', version: 'v1beta2', plural: 'clusters', namespace: NS, body: aV1beta2Cluster('alpha', 'docker-ferrol-1-30-v2') });
    await fx.custom.createNamespacedCustomObject({ group: 'controlplane.cluster.x-k8s.io', version: 'v1beta2', plural: 'kubeadmcontrolplanes', namespace: NS, body: { apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2', kind: 'KubeadmControlPlane', metadata: { name: 'alpha-cp', namespace: NS }, spec: { replicas: 3, version: 'v1.30.4' } } });
    fx.api.clearRequests();
    await fx.start('v1beta2');
    await waitFor(() => condition(fx.get('ClusterAddon', NS, 'alpha'), 'ManifestsPublished')?.status === 'True', 'the addons of the v1beta2 Cluster published');
    expect(Object.keys(fx.published()).some((file) => file.startsWith(`clusters/${NS}/alpha/`))).toBe(true);
    expect(condition(fx.get('ClusterAddon', NS, 'alpha'), 'ClusterClassAvailable')).toMatchObject({ status: 'True' });
    const watched = fx.api.requests.filter((request) => request.method === 'GET' && (request.query['watch'] === 'true' || request.query['watch'] === '1')).map((request) => request.path);
    expect(watched).toContain('/apis/cluster.x-k8s.io/v1beta2/clusters');
    expect(watched).not.toContain('/apis/cluster.x-k8s.io/v1beta1/clusters');
    // The control plane, named by group only, is watched in the version the API server prefers.
    expect(watched).toContain('/apis/controlplane.cluster.x-k8s.io/v1beta2/kubeadmcontrolplanes');
  });
  it('keeps the addons and the ClusterAddon of a published Cluster whose class it can no longer read, saying why', async () => {
    const live = (await fx.custom.getNamespacedCustomObject({ group: 'cluster.x-k8s.io', version: 'v1beta2', plural: 'clusters', namespace: NS, name: 'alpha' })) as KubeObject & { spec: { topology: Record<string, unknown> } };
    const before = Object.entries(fx.published()).filter(([file]) => file.startsWith(`clusters/${NS}/alpha/`));
    expect(before.length).toBeGreaterThan(0);
    // A ClusterClass of someone else's: the Cluster is no longer ours to render, but its addons were published.
    live.spec.topology = { ...live.spec.topology, classRef: { name: 'hand-made-class' } };
    await fx.custom.replaceNamespacedCustomObject({ group: 'cluster.x-k8s.io', version: 'v1beta2', plural: 'clusters', namespace: NS, name: 'alpha', body: live });
    await waitFor(() => condition(fx.get('ClusterAddon', NS, 'alpha'), 'ClusterClassAvailable')?.status === 'False', 'the held Cluster to say why');
    expect(condition(fx.get('ClusterAddon', NS, 'alpha'), 'ClusterClassAvailable')?.message).toMatch(/spec\.topology\.classRef\.name names hand-made-class, which is not a cluster stack class, but the published tree holds this Cluster's addons/);
    expect(Object.entries(fx.published()).filter(([file]) => file.startsWith(`clusters/${NS}/alpha/`))).toEqual(before);
  });
});
