// A Cluster in another namespace than its ClusterStack (spec.topology.classNamespace) gets its
// addons from the stack's release: releases are keyed by the stack's namespace, not the Cluster's.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_RELEASES, readTree, runClusterstack, tempDir, writeTree } from './support/cli.js';

describe('a Cluster using a class from another namespace', () => {
  it('renders its addons from the stack’s release', async () => {
    const inputs = await writeTree({
      'stack.yaml': `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: cluster-stacks}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", noProvider: true, versions: [v2]}
`,
      'cluster.yaml': `apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: elsewhere, namespace: team-x}
spec:
  clusterNetwork: {pods: {cidrBlocks: [10.1.0.0/16]}}
  controlPlaneEndpoint: {host: elsewhere.example.test, port: 6443}
  topology: {class: docker-ferrol-1-30-v2, classNamespace: cluster-stacks, version: v1.30.4}
`,
    });
    const output = path.join(await tempDir(), 'out');
    const result = await runClusterstack([
      'render',
      inputs,
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      output,
      '--json',
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).withheld).toEqual([]);
    const files = Object.keys(await readTree(path.join(output, 'current')));
    expect(files).toContain('clusters/team-x/elsewhere/cni/daemonset-kindnet.yaml');
  });
});
