import { describe, expect, it } from 'vitest';
import { parseLayerDependency, validateAddonsLayer } from '../../src/api/addons-layer.js';
import { classifyInputs } from '../../src/inputs/classify-inputs.js';
import { parseManifests } from '../../src/inputs/parse-manifests.js';
import { matchesLabelSelector } from '../../src/core/label-selector.js';
import { meetsKubernetesGate, normalizeVersion, sameVersion } from '../../src/core/layer-version.js';
import { checkCrdRules } from '../support/crd-rule-check.js';

// Kraan's own examples (docs/design and its test data), byte for byte in meaning.
const KRAAN_OBJECTS = `apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata:
  name: bootstrap
spec:
  version: 1.0.0
  hold: true
  interval: 1m
  source:
    name: addons
    namespace: gotk-system
    path: ./addons/bootstrap
  prereqs:
      k8sVersion: "1.16"
---
apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata:
  name: base
spec:
  version: 1.0.1
  interval: 1m
  source:
    name: addons
    namespace: gotk-system
    path: ./addons/base
  prereqs:
      k8sVersion: "1.16"
      dependsOn:
        - bootstrap@1.0.0
---
apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata: {name: two-depends, generation: 1}
spec:
  prereqs: {dependsOn: [no-depends@0.1.01, one-depends@0.1.01], k8sVersion: ""}
  source: {name: gen-rev-ok, namespace: gotk-system, path: ./addons/apps}
  version: 0.1.01
  timeout: 30s
`;

function layer(spec: Record<string, unknown>, name = 'apps'): Record<string, unknown> {
  return {
    apiVersion: 'kraan.io/v1alpha1',
    kind: 'AddonsLayer',
    metadata: { name },
    spec: { version: '1.0.0', source: { path: './addons/apps' }, ...spec },
  };
}

const messages = (object: unknown): string[] => validateAddonsLayer(object).map((p) => `${p.path}: ${p.message}`);

describe('validateAddonsLayer', () => {
  it('accepts existing Kraan objects unchanged', () => {
    const parsed = parseManifests(KRAAN_OBJECTS, 'kraan.yaml');
    expect(parsed.problems).toEqual([]);
    const inputs = classifyInputs(parsed.objects, checkCrdRules);
    expect(inputs.problems).toEqual([]);
    expect(inputs.addonsLayers.map((l) => l.object.metadata.name)).toEqual(['bootstrap', 'base', 'two-depends']);
  });

  it('accepts our additions: a label selector, a namespace, values and a values template', () => {
    expect(
      messages(
        layer({
          clusterSelector: {
            matchLabels: { tier: 'prod' },
            matchExpressions: [{ key: 'example.com/zone', operator: 'In', values: ['a', 'b'] }],
          },
          namespace: 'monitoring',
          values: { replicas: 2 },
          valuesTemplate: 'name: {{ .Cluster.metadata.name }}',
        }),
      ),
    ).toEqual([]);
  });

  it('accepts a dependsOn entry without @version, as Kraan does, and refuses one that is not a layer name', () => {
    expect(messages(layer({ prereqs: { dependsOn: ['base'] } }))).toEqual([]);
    expect(parseLayerDependency('base')).toEqual({ layer: 'base' });
    expect(messages(layer({ prereqs: { dependsOn: ['Base'] } }))).toEqual([
      'spec.prereqs.dependsOn[0]: "Base" is not a layer name (lowercase letters, digits and "-")',
    ]);
  });

  it('refuses an invalid layer version, dependency version and Kubernetes gate', () => {
    expect(
      messages(layer({ version: 'latest', prereqs: { dependsOn: ['base@one'], k8sVersion: 'one.thirty' } })),
    ).toEqual([
      'spec.version: must be a version such as "1.2.0" (numbers, "v" optional; quote it), found "latest"',
      'spec.prereqs.k8sVersion: must be a Kubernetes version such as "1.30" (meaning 1.30.0 or newer; quote it), found "one.thirty"',
      'spec.prereqs.dependsOn[0]: "base@one": "one" is not a version (numbers such as 1.2.0, "v" optional)',
    ]);
  });

  it('refuses a selector that does not parse', () => {
    expect(
      messages(layer({ clusterSelector: { matchExpressions: [{ key: 'tier', operator: 'Equals', values: ['a'] }] } })),
    ).toEqual([
      'spec.clusterSelector.matchExpressions[0].operator: must be one of In, NotIn, Exists, DoesNotExist, found "Equals"',
    ]);
    expect(messages(layer({ clusterSelector: { matchLabels: { 'bad key!': 'x' } } }))).toEqual([
      'spec.clusterSelector.matchLabels: "bad key!" is not a valid label key (letters, digits, "-", "_", ".", at most 63, starting and ending alphanumeric)',
    ]);
    expect(messages(layer({ clusterSelector: 'tier=prod' }))).toEqual([
      'spec.clusterSelector: must be a label selector: a mapping with matchLabels and/or matchExpressions ({} selects every Cluster)',
    ]);
  });

  it('refuses a source path outside the repository or not starting with ./', () => {
    expect(messages(layer({ source: { path: './addons/../../etc' } }))).toEqual([
      'spec.source.path: "./addons/../../etc" leads outside the repository; layer sources must be inside it',
    ]);
    expect(messages(layer({ source: { path: '/etc' } }))).toEqual([
      'spec.source.path: must be a directory of the inputs\' repository starting with "./" (as in Kraan), found "/etc"',
    ]);
  });

  it('refuses the reserved name cluster-stack, a dependency on itself and a versioned cluster-stack', () => {
    expect(messages(layer({}, 'cluster-stack'))).toEqual([
      'metadata.name: "cluster-stack" stands for the stack\'s own addon stages; give the layer another name',
    ]);
    expect(messages(layer({ prereqs: { dependsOn: ['apps@1.0.0', 'cluster-stack@v1'] } }))).toEqual([
      'spec.prereqs.dependsOn[0]: a layer cannot depend on itself (apps@1.0.0)',
      'spec.prereqs.dependsOn[1]: "cluster-stack@v1": cluster-stack (the stack\'s own addons) takes no version; write cluster-stack',
    ]);
  });

  it('reports an invalid AddonsLayer as an input problem with its file', () => {
    const parsed = parseManifests(
      'apiVersion: kraan.io/v1alpha1\nkind: AddonsLayer\nmetadata: {name: apps}\nspec: {version: 1.0.0, source: {path: ./a}, prereqs: {dependsOn: [Base]}}\n',
      'layers.yaml',
    );
    const inputs = classifyInputs(parsed.objects, checkCrdRules);
    expect(inputs.addonsLayers).toEqual([]);
    expect(inputs.problems).toEqual([
      expect.objectContaining({
        source: 'layers.yaml:4',
        object: 'AddonsLayer apps',
        path: 'spec.prereqs.dependsOn[0]',
      }),
    ]);
  });
});

describe('layer versions and the Kubernetes gate', () => {
  it('reads "1.16" as 1.16.0 and compares numerically with v optional', () => {
    expect(normalizeVersion('1.16')).toBe('1.16.0');
    expect(meetsKubernetesGate('v1.16.0', '1.16')).toBe(true);
    expect(meetsKubernetesGate('v1.15.12', '1.16')).toBe(false);
    expect(meetsKubernetesGate('v1.30.4', 'v1.30')).toBe(true);
    expect(meetsKubernetesGate('v1.29.9', '1.30')).toBe(false);
    expect(meetsKubernetesGate('1.100.0', '1.30')).toBe(true);
    expect(meetsKubernetesGate('v1.30.0-rc.1', '1.30')).toBe(false);
    expect(meetsKubernetesGate('v1.30.2+k3s1', '1.30')).toBe(true);
    expect(meetsKubernetesGate('latest', '1.30')).toBeUndefined();
  });

  it('treats 1.2, 1.2.0, v1.2.0 and 01.2.00 as one version, and 1.2.1 as another', () => {
    expect(sameVersion('1.2', '1.2.0')).toBe(true);
    expect(sameVersion('v1.2.0', '1.2.0')).toBe(true);
    expect(sameVersion('0.1.01', '0.1.1')).toBe(true);
    expect(sameVersion('1.2.1', '1.2.0')).toBe(false);
  });

  it('parses dependencies', () => {
    expect(parseLayerDependency('base@v1.2.0')).toEqual({ layer: 'base', version: 'v1.2.0' });
    expect(parseLayerDependency('cluster-stack')).toEqual({ layer: 'cluster-stack' });
  });
});

describe('matchesLabelSelector', () => {
  it('selects every Cluster with {} and applies each operator', () => {
    expect(matchesLabelSelector({}, undefined)).toBe(true);
    const labels = { tier: 'prod', zone: 'a' };
    expect(matchesLabelSelector({ matchLabels: { tier: 'prod' } }, labels)).toBe(true);
    expect(matchesLabelSelector({ matchLabels: { tier: 'dev' } }, labels)).toBe(false);
    expect(
      matchesLabelSelector({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }, labels),
    ).toBe(true);
    expect(
      matchesLabelSelector({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }, labels),
    ).toBe(false);
    expect(matchesLabelSelector({ matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist' }] }, labels)).toBe(true);
    expect(matchesLabelSelector({ matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }, labels)).toBe(false);
  });
});
