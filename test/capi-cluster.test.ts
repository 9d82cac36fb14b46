// Reading a Cluster API Cluster alike in v1beta1 and v1beta2: the class it names and the objects it
// references, and what a values template sees of it.
import { describe, expect, it } from 'vitest';
import { clusterClassOf, clusterReference } from '../src/api/capi-cluster.js';
import type { CapiCluster, KubeObject } from '../src/api/types.js';
import { parseManifests } from '../src/inputs/parse-manifests.js';
import { clusterContext } from '../src/render/render-units.js';
import { v1beta2TwinObjects } from './support/v1beta2-stack-releases.js';

function twin(version: 'v1beta1' | 'v1beta2'): { cluster: CapiCluster; others: KubeObject[] } {
  const objects = parseManifests(v1beta2TwinObjects(version), 'twin.yaml').objects.map((sourced) => sourced.object);
  return {
    cluster: objects.find((object) => object.kind === 'Cluster') as CapiCluster,
    others: objects.filter((object) => object.kind !== 'Cluster'),
  };
}

describe('clusterClassOf and clusterReference', () => {
  it('read the class and its namespace from v1beta1 class/classNamespace and v1beta2 classRef', () => {
    expect(clusterClassOf(twin('v1beta1').cluster)).toEqual({
      kind: 'class',
      name: 'docker-scs2-1-33-v1',
      namespace: 'fleet',
      path: 'spec.topology.class',
    });
    expect(clusterClassOf(twin('v1beta2').cluster)).toEqual({
      kind: 'class',
      name: 'docker-scs2-1-33-v1',
      namespace: 'fleet',
      path: 'spec.topology.classRef.name',
    });
    const elsewhere = {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      metadata: { namespace: 'team-a' },
      spec: { topology: { classRef: { name: 'c', namespace: 'stacks' } } },
    };
    expect(clusterClassOf(elsewhere)).toMatchObject({ name: 'c', namespace: 'stacks' });
    expect(clusterClassOf({ apiVersion: 'cluster.x-k8s.io/v1beta1', metadata: {}, spec: {} })).toEqual({
      kind: 'none',
    });
    // A runtime hook's request may carry a Cluster without apiVersion: read by the field it has.
    expect(clusterClassOf({ metadata: {}, spec: { topology: { classRef: { name: 'c' } } } })).toMatchObject({
      kind: 'class',
      name: 'c',
    });
    expect(clusterClassOf({ metadata: {}, spec: { topology: { class: 'c' } } })).toMatchObject({
      kind: 'class',
      name: 'c',
    });
  });

  it("resolve v1beta2 references (apiGroup, no namespace) in the Cluster's namespace, as v1beta1 ones", () => {
    expect(clusterReference(twin('v1beta2').cluster, 'controlPlaneRef')).toEqual({
      group: 'controlplane.cluster.x-k8s.io',
      kind: 'KubeadmControlPlane',
      name: 'alpha-cp',
      namespace: 'fleet',
    });
    expect(clusterReference(twin('v1beta1').cluster, 'controlPlaneRef')).toEqual({
      group: 'controlplane.cluster.x-k8s.io',
      apiVersion: 'controlplane.cluster.x-k8s.io/v1beta1',
      kind: 'KubeadmControlPlane',
      name: 'alpha-cp',
      namespace: 'fleet',
    });
    expect(clusterReference(twin('v1beta2').cluster, 'infrastructureRef')).toMatchObject({
      group: 'infrastructure.cluster.x-k8s.io',
      kind: 'DockerCluster',
      name: 'alpha-infra',
    });
  });

  it('give values templates the v1beta2 Cluster as given (status.initialization, conditions) and its control plane and infrastructure cluster', () => {
    const { cluster, others } = twin('v1beta2');
    const context = clusterContext(cluster, others);
    expect(context.Cluster).toMatchObject({
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      status: { initialization: { controlPlaneInitialized: true }, conditions: [{ type: 'Available' }] },
    });
    expect(context.ControlPlane).toMatchObject({
      apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2',
      metadata: { name: 'alpha-cp' },
      spec: { replicas: 3 },
    });
    expect(context.InfraCluster).toMatchObject({ kind: 'DockerCluster', metadata: { name: 'alpha-infra' } });
  });
});
