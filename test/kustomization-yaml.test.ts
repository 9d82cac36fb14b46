import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../src/api/types.js';
import { kustomizationEncoder } from '../src/render/kustomization-yaml.js';
import { serializeObject } from '../src/render/manifest-objects.js';

const generic = (resources: string[]): string =>
  serializeObject({
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources,
  } as unknown as KubeObject);

describe('kustomizationEncoder', () => {
  it('gives the bytes of the generic encoder, for plain names and names YAML would misread', () => {
    const encode = kustomizationEncoder();
    const cases = [
      ['configmap-cni-agent.yaml', 'daemonset-kube-system-cilium.yaml', 'kustomization.yaml'],
      // Names of the fast path's shape next to ones YAML readers could misread.
      [
        'y.yaml',
        'n.yaml',
        'on.yaml',
        'null.yaml',
        'true.yaml',
        'e1.yaml',
        'x-.yaml',
        'a..yaml',
        'a.b.c-1.2.3.yaml',
        'inf.yaml',
        'nan.yaml',
        'o.yaml',
        'yes',
        'no.yml',
      ],
      ['yes', 'on', 'no', 'null', '~', '123', '0400', '1e3', '0x1F', '.inf', 'true'],
      [
        'x: y',
        '# not a comment',
        '- dash',
        'a "quoted" name',
        "it's",
        ' leading space',
        'trailing space ',
        '@at',
        '*star',
        '&anchor',
        '!tag',
        '%percent',
        '`tick',
      ],
      ['ünïcödé.yaml', 'tab\there', 'line\nbreak', ''],
      [],
    ];
    for (const resources of cases) expect(encode(resources)).toBe(generic(resources));
    // The cache is per encoder: a second encoding of the same entries gives the same bytes.
    for (const resources of cases) expect(encode(resources)).toBe(generic(resources));
  });
});
