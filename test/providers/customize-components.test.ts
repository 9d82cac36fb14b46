import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { customizeComponents, ProviderRenderError } from '../../src/providers/customize-components.js';
import { substituteVariables } from '../../src/providers/envsubst.js';
import { scopeResolver } from '../../src/api/object-scope.js';
import { decodeYamlDocuments } from '../../src/yaml/kube-yaml.js';

const CORE = readFileSync('test/fixtures/providers/core/v1.8.0/core-components.yaml', 'utf8');

function objects(): KubeObject[] {
  return decodeYamlDocuments(substituteVariables(CORE, () => undefined).text).map(
    (document) => document.value as KubeObject,
  );
}

function customize(
  spec: Parameters<typeof customizeComponents>[1]['spec'],
  images?: Parameters<typeof customizeComponents>[1]['images'],
): KubeObject[] {
  const all = objects();
  const scope = scopeResolver(all);
  return customizeComponents(all, {
    spec,
    targetNamespace: 'capi-core',
    manifestLabel: 'cluster-api',
    isClusterScoped: (o) => scope(o) === 'Cluster',
    ...(images ? { images } : {}),
  });
}

const find = (list: KubeObject[], kind: string): any => list.find((object) => object.kind === kind);

describe('customizeComponents', () => {
  it('moves everything into the target namespace, with the references that name it', () => {
    const result = customize({});
    expect(find(result, 'Namespace').metadata.name).toBe('capi-core');
    expect(find(result, 'Deployment').metadata.namespace).toBe('capi-core');
    expect(find(result, 'ClusterRoleBinding').metadata.namespace).toBeUndefined();
    expect(find(result, 'ClusterRoleBinding').subjects[0].namespace).toBe('capi-core');
    expect(find(result, 'ValidatingWebhookConfiguration').webhooks[0].clientConfig.service.namespace).toBe('capi-core');
    expect(find(result, 'ValidatingWebhookConfiguration').metadata.annotations['cert-manager.io/inject-ca-from']).toBe(
      'capi-core/capi-serving-cert',
    );
    const crd = result.find((o) => o.metadata.name === 'clusters.cluster.x-k8s.io') as any;
    expect(crd.spec.conversion.webhook.clientConfig.service.namespace).toBe('capi-core');
    expect(find(result, 'Certificate').spec.dnsNames).toEqual([
      'capi-webhook-service.capi-core.svc',
      'capi-webhook-service.capi-core.svc.cluster.local',
    ]);
    for (const object of result)
      expect(object.metadata.labels).toMatchObject({
        'cluster.x-k8s.io/provider': 'cluster-api',
        'clusterctl.cluster.x-k8s.io': '',
      });
  });

  it('sets manager flags as the operator does: feature gates merged and sorted, verbosity, additional args', () => {
    const deployment = find(
      customize({
        manager: {
          featureGates: { ClusterTopology: true, RuntimeSDK: true },
          verbosity: 4,
          syncPeriod: '10m',
          additionalArgs: { '--profiler-address': 'localhost:6060' },
        },
      }),
      'Deployment',
    );
    expect(deployment.spec.template.spec.containers[0].args).toEqual([
      '--leader-elect',
      '--diagnostics-address=:8443',
      '--insecure-diagnostics=false',
      '--feature-gates=ClusterTopology=true,MachinePool=true,RuntimeSDK=true',
      '--sync-period=10m',
      '--v=4',
      '--profiler-address=localhost:6060',
    ]);
  });

  it('refuses an additional arg the manifest already passes', () => {
    expect(() => customize({ manager: { additionalArgs: { '--leader-elect': 'false' } } })).not.toThrow();
    expect(() => customize({ manager: { additionalArgs: { '--diagnostics-address': ':9000' } } })).toThrow(
      /already passes --diagnostics-address/,
    );
  });

  it('customises the deployment: replicas, scheduling, pull secrets and container image, args, env, resources, command', () => {
    const deployment = find(
      customize({
        deployment: {
          replicas: 3,
          nodeSelector: { role: 'cp' },
          tolerations: [{ key: 'k', effect: 'NoSchedule' }],
          imagePullSecrets: [{ name: 'pull' }],
          containers: [
            {
              name: 'manager',
              imageUrl: 'mirror.example/capi:v1',
              args: { '--leader-elect': 'false' },
              env: [{ name: 'X', value: 'y' }],
              resources: { limits: { cpu: '1' } },
              command: ['/m'],
            },
          ],
        },
      }),
      'Deployment',
    );
    expect(deployment.spec.replicas).toBe(3);
    const pod = deployment.spec.template.spec;
    expect(pod).toMatchObject({
      nodeSelector: { role: 'cp' },
      tolerations: [{ key: 'k', effect: 'NoSchedule' }],
      imagePullSecrets: [{ name: 'pull' }],
    });
    expect(pod.containers[0]).toMatchObject({
      image: 'mirror.example/capi:v1',
      env: [{ name: 'X', value: 'y' }],
      resources: { limits: { cpu: '1' } },
      command: ['/m'],
    });
    expect(pod.containers[0].args).toContain('--leader-elect=false');
  });

  it('names a container the deployment does not have', () => {
    expect(() => customize({ deployment: { containers: [{ name: 'sidecar' }] } })).toThrow(ProviderRenderError);
    expect(() => customize({ deployment: { containers: [{ name: 'sidecar' }] } })).toThrow(
      /has no container "sidecar" \(it has manager\)/,
    );
  });

  it('overrides image repositories and tags as clusterctl does, the component entry over "all"', () => {
    const image = (images: Record<string, { repository?: string; tag?: string }>) =>
      find(customize({}, images), 'Deployment').spec.template.spec.containers[0].image;
    expect(image({ all: { repository: 'mirror.example/capi' } })).toBe(
      'mirror.example/capi/cluster-api-controller:v1.8.0',
    );
    expect(image({ all: { repository: 'mirror.example/capi' }, 'cluster-api': { tag: 'v1.8.1' } })).toBe(
      'mirror.example/capi/cluster-api-controller:v1.8.1',
    );
    expect(image({ 'infrastructure-docker': { tag: 'nope' } })).toBe(
      'registry.k8s.io/cluster-api/cluster-api-controller:v1.8.0',
    );
  });

  it('applies patches in order to the objects their target selects: JSON patch and merge patch', () => {
    const result = customize({
      patches: [
        {
          target: { kind: 'Deployment', labelSelector: 'control-plane=controller-manager' },
          patch: '- op: add\n  path: /metadata/labels/first\n  value: "1"\n',
        },
        {
          target: { group: 'apps', kind: 'Deployment' },
          patch: 'metadata:\n  labels:\n    first: null\n    second: "2"\n',
        },
        { target: { kind: 'Service' }, patch: 'spec:\n  type: NodePort\n' },
      ],
    });
    expect(find(result, 'Deployment').metadata.labels).toMatchObject({ second: '2' });
    expect(find(result, 'Deployment').metadata.labels.first).toBeUndefined();
    expect(find(result, 'Service').spec.type).toBe('NodePort');
    expect(find(result, 'Namespace').metadata.labels.second).toBeUndefined();
  });

  it('applies manifestPatches to objects of their kind and apiVersion', () => {
    const result = customize({
      manifestPatches: ['apiVersion: v1\nkind: Service\nmetadata:\n  annotations:\n    patched: "yes"\n'],
    });
    expect(find(result, 'Service').metadata.annotations).toEqual({ patched: 'yes' });
  });

  it('says which patch fails and why', () => {
    expect(() =>
      customize({
        patches: [{ target: { kind: 'Service' }, patch: '- op: replace\n  path: /spec/missing/field\n  value: 1\n' }],
      }),
    ).toThrow(/spec\.patches\[0\]: cannot be applied to Service capi-webhook-service/);
    expect(() => customize({ patches: [{ patch: 'a: [' }] })).toThrow(/spec\.patches\[0\]: is not valid YAML/);
  });
});
