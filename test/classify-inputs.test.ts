// Sorting the inputs: a kind or API group one typo away from one clusterstack reads is an error
// with a did-you-mean, never an object quietly passed by (a `kind: Cluser` would drop the Cluster
// and, with its last user, its ClusterClass); every other kind passes as before.
import { describe, expect, it } from 'vitest';
import { classifyInputs, mistypedKind } from '../src/inputs/classify-inputs.js';
import { parseManifests } from '../src/inputs/parse-manifests.js';
import { checkCrdRules } from './support/crd-rule-check.js';

function classify(documents: string[]) {
  return classifyInputs(parseManifests(documents.join('---\n'), 'inputs.yaml').objects, checkCrdRules);
}

const object = (apiVersion: string, kind: string, name = 'x'): string =>
  `apiVersion: ${apiVersion}\nkind: ${kind}\nmetadata: {name: ${name}, namespace: fleet}\n`;

describe('classifyInputs: kinds that are typos', () => {
  it.each([
    ['cluster.x-k8s.io/v1beta1', 'Cluser', 'Cluster'],
    ['cluster.x-k8s.io/v1beta2', 'cluster', 'Cluster'],
    ['clusterstack.x-k8s.io/v1alpha1', 'ClusterStak', 'ClusterStack'],
    ['kraan.io/v1alpha1', 'AddonLayer', 'AddonsLayer'],
    ['operator.cluster.x-k8s.io/v1alpha2', 'CoreProvidr', 'CoreProvider'],
    ['infrastructure.clusterstack.x-k8s.io/v1alpha1', 'DockerClusterStackRelase', 'DockerClusterStackRelease'],
    ['example.com/v1', 'Clustre', 'Cluster'],
  ])('refuses %s %s, naming the file, line and the kind meant', (apiVersion, kind, meant) => {
    const inputs = classify([object('v1', 'ConfigMap', 'first'), object(apiVersion, kind)]);
    expect(inputs.problems).toEqual([
      expect.objectContaining({
        source: 'inputs.yaml:6',
        path: 'kind',
        message: expect.stringContaining(`did you mean ${meant}?`),
      }),
    ]);
    expect(inputs.clusters).toEqual([]);
    expect(inputs.others.map((sourced) => sourced.object.kind)).toEqual(['ConfigMap']);
  });

  it('refuses a Cluster whose API group is a typo of cluster.x-k8s.io', () => {
    const inputs = classify([object('cluser.x-k8s.io/v1beta2', 'Cluster')]);
    expect(inputs.problems).toEqual([
      expect.objectContaining({
        source: 'inputs.yaml:1',
        path: 'apiVersion',
        message: expect.stringContaining('did you mean cluster.x-k8s.io/v1beta2?'),
      }),
    ]);
  });

  it('passes every kind that merely looks alike: ClusterClass, templates, CAPI and provider kinds', () => {
    const legit = [
      ['cluster.x-k8s.io/v1beta2', 'ClusterClass'],
      ['cluster.x-k8s.io/v1beta2', 'MachineDeployment'],
      ['cluster.x-k8s.io/v1beta2', 'Machine'],
      ['cluster.x-k8s.io/v1beta2', 'MachineSet'],
      ['addons.cluster.x-k8s.io/v1beta2', 'ClusterResourceSet'],
      ['controlplane.cluster.x-k8s.io/v1beta2', 'KubeadmControlPlane'],
      ['controlplane.cluster.x-k8s.io/v1beta2', 'KubeadmControlPlaneTemplate'],
      ['bootstrap.cluster.x-k8s.io/v1beta2', 'KubeadmConfigTemplate'],
      ['infrastructure.cluster.x-k8s.io/v1beta1', 'DockerCluster'],
      ['infrastructure.cluster.x-k8s.io/v1beta1', 'DockerClusterTemplate'],
      ['infrastructure.clusterstack.x-k8s.io/v1alpha1', 'DockerClusterStackReleaseTemplate'],
      ['rbac.authorization.k8s.io/v1', 'ClusterRole'],
      ['rbac.authorization.k8s.io/v1', 'ClusterRoleBinding'],
      ['cert-manager.io/v1', 'ClusterIssuer'],
      ['clusters.openmcp.cloud/v1alpha1', 'Cluster'],
      ['clusters.openmcp.cloud/v1alpha1', 'ClusterProfile'],
      ['v1', 'Secret'],
    ];
    const inputs = classify(legit.map(([apiVersion, kind], index) => object(apiVersion!, kind!, `o${index}`)));
    expect(inputs.problems).toEqual([]);
    expect(inputs.others).toHaveLength(legit.length);
    for (const [, kind] of legit) expect(mistypedKind(kind!)).toBeUndefined();
  });

  it('says which kinds our own group has, with the one meant', () => {
    const inputs = classify([object('clusterstack.x-k8s.io/v1alpha1', 'ClusterAdon')]);
    expect(inputs.problems).toEqual([
      expect.objectContaining({
        path: 'kind',
        message: expect.stringMatching(
          /known kinds are ClusterStack, ClusterStackRelease and ClusterAddon; did you mean ClusterAddon\?/,
        ),
      }),
    ]);
  });
});
