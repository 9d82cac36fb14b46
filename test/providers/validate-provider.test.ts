import { describe, expect, it } from 'vitest';
import { classifyInputs } from '../../src/inputs/classify-inputs.js';
import { validateProvider } from '../../src/api/validate-provider.js';
import { decodeYamlDocuments } from '../../src/yaml/kube-yaml.js';
import { checkCrdRules } from '../support/crd-rule-check.js';

// A spec as the cluster-api-operator's documentation writes them, with every part rendering reads.
const OPERATOR_SPEC = `
apiVersion: operator.cluster.x-k8s.io/v1alpha2
kind: InfrastructureProvider
metadata:
  name: docker
  namespace: capd-system
spec:
  version: v1.8.0
  configSecret:
    name: docker-variables
  fetchConfig:
    url: https://github.com/kubernetes-sigs/cluster-api/releases
  manager:
    featureGates:
      MachinePool: true
    verbosity: 4
    syncPeriod: 10m
    maxConcurrentReconciles: 5
    metrics:
      bindAddress: ":8181"
    additionalArgs:
      "--insecure-diagnostics": "true"
  deployment:
    replicas: 2
    nodeSelector:
      role: control-plane
    tolerations:
    - key: node-role.kubernetes.io/control-plane
      effect: NoSchedule
    imagePullSecrets:
    - name: pull
    containers:
    - name: manager
      imageUrl: registry.example.com/capd-manager:v1.8.0
      args:
        "--v": "5"
      env:
      - name: A
        value: b
      resources:
        limits:
          cpu: 100m
  additionalManifests:
    name: extra
  patches:
  - target:
      kind: Deployment
    patch: |
      - op: add
        path: /metadata/labels/patched
        value: "yes"
`;

function parse(text: string): Record<string, any> {
  return decodeYamlDocuments(text)[0]!.value as Record<string, any>;
}

describe('validateProvider', () => {
  it('accepts an operator v1alpha2 spec unchanged', () => {
    expect(validateProvider(parse(OPERATOR_SPEC))).toEqual([]);
  });

  it('accepts every provider kind of the operator and no spec at all', () => {
    for (const kind of [
      'CoreProvider',
      'BootstrapProvider',
      'ControlPlaneProvider',
      'InfrastructureProvider',
      'AddonProvider',
      'IPAMProvider',
      'RuntimeExtensionProvider',
    ]) {
      expect(
        validateProvider({ apiVersion: 'operator.cluster.x-k8s.io/v1alpha2', kind, metadata: { name: 'x' } }),
      ).toEqual([]);
    }
  });

  it('refuses two sources in fetchConfig, naming them', () => {
    const spec = parse(OPERATOR_SPEC);
    spec.spec.fetchConfig.oci = 'registry.example.com/capd:v1.8.0';
    expect(validateProvider(spec)).toEqual([
      {
        path: 'spec.fetchConfig',
        message: expect.stringContaining('sets url and oci; set exactly one of url, oci or selector'),
      },
    ]);
  });

  it('refuses a fetchConfig selector Kubernetes would refuse, naming the operator', () => {
    const spec = parse(OPERATOR_SPEC);
    delete spec.spec.fetchConfig.url;
    spec.spec.fetchConfig.selector = {
      matchExpressions: [{ key: 'provider-components', operator: 'Equals', values: ['capd'] }],
    };
    expect(validateProvider(spec)).toEqual([
      {
        path: 'spec.fetchConfig.selector.matchExpressions[0].operator',
        message: 'must be one of In, NotIn, Exists, DoesNotExist, found "Equals"',
      },
    ]);
  });

  it('refuses a version that is not semver, and both patch styles', () => {
    const spec = parse(OPERATOR_SPEC);
    spec.spec.version = 'latest';
    spec.spec.manifestPatches = ['kind: Deployment'];
    const problems = validateProvider(spec);
    expect(problems.map((problem) => problem.path)).toEqual(['spec.version', 'spec.patches']);
    expect(problems[0]!.message).toContain('must be a semantic version such as v1.8.0, found "latest"');
  });

  it('names a misspelt field', () => {
    const spec = parse(OPERATOR_SPEC);
    spec.spec.deployment.replica = 3;
    expect(validateProvider(spec)).toEqual([
      { path: 'spec.deployment.replica', message: expect.stringContaining('is not a field') },
    ]);
  });

  it('makes an unknown kind of the operator group an input problem, and keeps valid providers', () => {
    const objects = [
      {
        object: {
          apiVersion: 'operator.cluster.x-k8s.io/v1alpha2',
          kind: 'DatabaseProvider',
          metadata: { name: 'x', namespace: 'a' },
        },
        source: 'p.yaml:1',
      },
      { object: parse(OPERATOR_SPEC), source: 'p.yaml:5' },
    ];
    const inputs = classifyInputs(objects as never, checkCrdRules);
    expect(inputs.providers.map((p) => p.object.metadata.name)).toEqual(['docker']);
    expect(inputs.problems).toEqual([
      expect.objectContaining({
        source: 'p.yaml:1',
        path: 'kind',
        message: expect.stringContaining(
          '"DatabaseProvider" is not a kind of operator.cluster.x-k8s.io; known kinds are CoreProvider',
        ),
      }),
    ]);
  });
});
