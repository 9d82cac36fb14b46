import { describe, expect, it } from 'vitest';
import { findDuplicateStacks, MAX_VERSIONS, validateClusterAddon, validateClusterStack } from '../src/api/validate.js';
import { aClusterStack } from './support/builders.js';
import { checkCrdRules } from './support/crd-rule-check.js';

function pathsOf(problems: { path?: string }[]): (string | undefined)[] {
  return problems.map((problem) => problem.path);
}

describe('validateClusterStack', () => {
  it('accepts a CSO-style spec unchanged', () => {
    const cso = {
      apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
      kind: 'ClusterStack',
      metadata: { name: 'clusterstack', namespace: 'cluster' },
      spec: {
        provider: 'docker',
        name: 'ferrol',
        kubernetesVersion: '1.27',
        channel: 'stable',
        autoSubscribe: false,
        noProvider: false,
        providerRef: {
          apiVersion: 'infrastructure.clusterstack.x-k8s.io/v1alpha1',
          kind: 'DockerClusterStackReleaseTemplate',
          name: 'cspotemplate',
        },
        versions: ['v1', 'v2'],
      },
    };
    expect(validateClusterStack(cso, checkCrdRules)).toEqual([]);
  });

  it('refuses values nesting one level deeper than Kubernetes serves an object (10,000 levels), before any rule walks them', () => {
    // The object, spec, addonStageValues and cni are four levels; then `lists` lists and a scalar.
    const withValues = (lists: number) => {
      let deep: unknown = 1;
      for (let level = 0; level < lists; level += 1) deep = [deep];
      return {
        ...aClusterStack().build(),
        spec: { ...aClusterStack().build().spec, addonStageValues: { cni: { deep } } },
      };
    };
    // 9,995 lists (10,000 levels) are read on the controller's deep stack: test/controller-deep-nesting.test.ts.
    expect(validateClusterStack(withValues(9996), checkCrdRules)).toEqual([
      {
        path: 'spec',
        message:
          'nests collections more than 10000 levels deep, which Kubernetes refuses ("exceeded max depth of 10000"): flatten spec.addonStageValues',
      },
    ]);
  });

  it('returns every problem at once, each with its path and a way out', () => {
    const bad = aClusterStack()
      .withSpec({ provider: 'do-cker', kubernetesVersion: '1.30.1', versions: ['v1-alpha.5', '3'], noProvider: false })
      .build();
    const problems = validateClusterStack(bad, checkCrdRules);
    // The schema's checks first, then the CRD's CEL rules (in the CRD's order) with the CRD's messages.
    expect(pathsOf(problems)).toEqual([
      'spec.provider',
      'spec.kubernetesVersion',
      'spec.versions[1]',
      'spec.providerRef',
      'spec.versions',
    ]);
    expect(problems[0]!.message).toMatch(/contains "-".*use letters and digits only \(e\.g\. docker\)/);
    expect(problems[1]!.message).toMatch(/major\.minor in quotes such as "1\.30", found "1\.30\.1"/);
    expect(problems[2]!.message).toMatch(/not a cluster stack version/);
    expect(problems[3]!.message).toMatch(
      /^providerRef is required unless noProvider is true: point it at the <Provider>ClusterStackReleaseTemplate/,
    );
    expect(problems[4]!.message).toBe(
      'v1-alpha.5 belongs to the alpha channel, but this ClusterStack follows stable; list only stable versions or change spec.channel',
    );
  });

  it('rejects a kubernetesVersion written as a number (1.3 instead of "1.30")', () => {
    const bad = aClusterStack()
      .withSpec({ kubernetesVersion: 1.3 as unknown as string })
      .build();
    expect(validateClusterStack(bad, checkCrdRules)[0]!.message).toMatch(/found 1\.3$/);
  });

  it('names unknown fields so typos do not silently do nothing', () => {
    const bad = aClusterStack().build() as unknown as { spec: Record<string, unknown> };
    bad.spec.autoSubcribe = true;
    expect(validateClusterStack(bad, checkCrdRules)).toEqual([
      { path: 'spec.autoSubcribe', message: expect.stringMatching(/not a field.*check the spelling/) },
    ]);
  });

  it('accepts hash versions in the custom channel', () => {
    expect(
      validateClusterStack(aClusterStack().withChannel('custom').withVersions('v0-sha.hipstsw').build(), checkCrdRules),
    ).toEqual([]);
  });

  it('refuses more versions than the CRD allows (its maxItems bounds the cost of its CEL rules)', () => {
    const versions = Array.from({ length: MAX_VERSIONS + 1 }, (_, index) => `v${index + 1}`);
    expect(
      validateClusterStack(
        aClusterStack()
          .withVersions(...versions)
          .build(),
        checkCrdRules,
      ),
    ).toEqual([
      {
        path: 'spec.versions',
        message: `lists ${MAX_VERSIONS + 1} versions; keep at most ${MAX_VERSIONS} (the CRD's limit, which bounds the cost of its CEL rules)`,
      },
    ]);
    expect(
      validateClusterStack(
        aClusterStack()
          .withVersions(...versions.slice(1))
          .build(),
        checkCrdRules,
      ),
    ).toEqual([]);
  });

  it('checks our optional additions', () => {
    const bad = aClusterStack()
      .withSpec({
        addonValues: [] as unknown as Record<string, unknown>,
        addonStageValues: { cni: 'x' } as unknown as Record<string, Record<string, unknown>>,
        releaseSource: '',
      })
      .build();
    expect(pathsOf(validateClusterStack(bad, checkCrdRules))).toEqual([
      'spec.releaseSource',
      'spec.addonValues',
      'spec.addonStageValues.cni',
    ]);
  });
});

describe('validateClusterAddon', () => {
  it('requires a spec and known fields', () => {
    expect(
      pathsOf(
        validateClusterAddon(
          { apiVersion: 'clusterstack.x-k8s.io/v1alpha1', kind: 'ClusterAddon', metadata: { name: 'a' } },
          checkCrdRules,
        ),
      ),
    ).toEqual(['spec']);
  });
});

describe('findDuplicateStacks', () => {
  it('flags two stacks for the same provider, name, Kubernetes and channel in one namespace', () => {
    const first = aClusterStack().named('one').build();
    const second = aClusterStack().named('two').build();
    const elsewhere = aClusterStack().named('three', 'other').build();
    const problems = findDuplicateStacks([first, second, elsewhere]);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.message).toMatch(/duplicates ClusterStack one/);
  });
});
