// Problems name the line of their field, not the line their object starts on.
import { checkCrdRules } from './support/crd-rule-check.js';
import { describe, expect, it } from 'vitest';
import { classifyInputs } from '../src/inputs/classify-inputs.js';
import { parseManifests } from '../src/inputs/parse-manifests.js';
import { fieldLine } from '../src/yaml/field-line.js';
describe('fieldLine', () => {
  it('finds block fields, sequence items and indentless sequences; a missing field at its parent, a flow value on its line', () => {
    const doc = `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: bravo
  namespace: fleet
spec:
  clusterNetwork:
    pods: {cidrBlocks: [192.168.0.0/16]}
  topology:
    # a comment
    classRef:
      name: [x]
    version: v1.33.7
    workers:
      machineDeployments:
      - class: default
        name: md-0
      - class: other
        name: md-1
versions:
- v1
- v2
tail: 1
`;
    expect(fieldLine(doc, 'spec.topology.classRef.name')).toBe(12);
    expect(fieldLine(doc, 'spec.topology.version')).toBe(13);
    expect(fieldLine(doc, 'spec.topology.classRef.namespace')).toBe(11);
    expect(fieldLine(doc, 'spec.clusterNetwork.pods.cidrBlocks[0]')).toBe(8);
    expect(fieldLine(doc, 'spec.topology.workers.machineDeployments[1].name')).toBe(19);
    expect(fieldLine(doc, 'spec.topology.workers.machineDeployments[1]')).toBe(18);
    expect(fieldLine(doc, 'spec.topology.workers.machineDeployments[0].name')).toBe(17);
    expect(fieldLine(doc, 'versions[1]')).toBe(22);
    expect(fieldLine(doc, 'tail')).toBe(23);
    expect(fieldLine(doc, 'metadata.name')).toBe(4);
    expect(fieldLine(doc, 'nothing.here')).toBeUndefined();
  });
});

describe('input problems', () => {
  it('name the line of the field a ClusterStack problem is about', () => {
    const text = `# stacks
---
apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata:
  name: ferrol
  namespace: cluster-stacks
spec:
  provider: docker
  name: fer-rol
  kubernetesVersion: "1.30"
  noProvider: true
`;
    const inputs = classifyInputs(parseManifests(text, 'stacks.yaml').objects, checkCrdRules);
    expect(inputs.problems.map((problem) => `${problem.source} ${problem.path}`)).toEqual(['stacks.yaml:10 spec.name']);
  });

  it('fall back to the document line for a field written in flow style JSON', () => {
    const text = `{"apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack", "metadata": {"name": "ferrol"},\n "spec": {"provider": "docker", "name": "fer-rol", "kubernetesVersion": "1.30", "noProvider": true}}\n`;
    const inputs = classifyInputs(parseManifests(text, 'stacks.json').objects, checkCrdRules);
    expect(inputs.problems.map((problem) => problem.source)).toEqual(['stacks.json:1']);
  });
});
