import { describe, expect, it } from 'vitest';
import { InputError } from '../src/core/problem.js';
import { parseGitOpsEngine, renderWiring, type WiringOptions } from '../gitops/wiring/render-wiring.js';
import { FLUX_SCHEMAS } from './support/engine-schemas/flux-schemas.js';
import { KUSTOMIZE_SCHEMAS } from './support/engine-schemas/kubernetes-schemas.js';
import { kustomizeBuild } from './support/engine-schemas/kustomize-build.js';
import { checkObject } from './support/engine-schemas/schema-facts.js';
import {
  credentialProblems,
  fleet,
  object,
  OLD_RELEASE,
  RELEASE,
  kustomizationProblems,
  parseObject,
  releaseUnit,
  schemaProblems,
  stageUnit,
  wiringObjects,
} from './support/engine-schemas/wiring-checks.js';

const gitOptions: WiringOptions = {
  engine: 'flux',
  name: 'clusterstacks',
  namespace: 'flux-system',
  source: { kind: 'git', url: 'https://git.example.com/platform/fleet.git', branch: 'main', path: 'rendered' },
};

const ociOptions: WiringOptions = {
  ...gitOptions,
  source: { kind: 'oci', url: 'oci://registry.example.com/platform/fleet', tag: 'latest' },
};

describe('parseGitOpsEngine', () => {
  it('accepts none, flux and argocd', () => {
    expect(['none', 'flux', 'argocd'].map(parseGitOpsEngine)).toEqual(['none', 'flux', 'argocd']);
  });

  it('refuses any other name with an error listing the valid ones', () => {
    for (const bad of ['Flux', 'argo', '', ' flux']) {
      expect(() => parseGitOpsEngine(bad)).toThrow(InputError);
      expect(() => parseGitOpsEngine(bad)).toThrow(`unknown GitOps engine "${bad}": use one of none, flux, argocd`);
    }
  });
});

describe('renderWiring for none', () => {
  it('writes nothing', () => {
    expect(renderWiring(fleet(), { ...gitOptions, engine: 'none' }).size).toBe(0);
  });
});

describe('renderWiring for Flux', () => {
  it('writes a GitRepository source and a root Kustomization that applies the wiring directory itself', () => {
    const files = renderWiring(fleet(), gitOptions);
    const source = object(files, 'flux/source.yaml');
    expect(source).toMatchObject({
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'GitRepository',
      metadata: { name: 'clusterstacks', namespace: 'flux-system' },
    });
    expect(source.spec).toEqual({
      interval: '1m',
      url: 'https://git.example.com/platform/fleet.git',
      ref: { branch: 'main' },
    });
    const root = object(files, 'flux/root.yaml');
    expect(root).toMatchObject({
      kind: 'Kustomization',
      metadata: { name: 'clusterstacks', namespace: 'flux-system' },
    });
    expect(root.spec).toMatchObject({
      path: './rendered/flux',
      prune: true,
      sourceRef: { kind: 'GitRepository', name: 'clusterstacks' },
    });
    expect(root.spec.wait).toBeUndefined();
  });

  it('writes one Kustomization per release directory, pruning and waiting, without a target namespace', () => {
    const files = renderWiring(fleet(), gitOptions);
    const release = object(files, `flux/management/cluster-stacks/${RELEASE}.yaml`);
    expect(release.metadata).toMatchObject({ name: `cluster-stacks-${RELEASE}`, namespace: 'flux-system' });
    expect(release.spec).toMatchObject({
      path: `./rendered/management/cluster-stacks/${RELEASE}`,
      prune: true,
      wait: true,
      sourceRef: { kind: 'GitRepository', name: 'clusterstacks' },
    });
    expect(release.spec.targetNamespace).toBeUndefined();
    expect(release.spec.sourceRef.namespace).toBeUndefined();
    expect(release.spec.kubeConfig).toBeUndefined();
    // ClusterClass health through CEL and the node image's: one entry per kind (Flux refuses a
    // second one for the same group and kind), reading either CAPI API version's condition.
    expect(release.spec.healthCheckExprs.map((e: any) => `${e.apiVersion} ${e.kind}`)).toEqual([
      'cluster.x-k8s.io/v1beta2 ClusterClass',
      'openstack.k-orc.cloud/v1alpha1 Image',
    ]);
    expect(release.spec.healthCheckExprs[0].current).toContain('observedGeneration');
    for (const condition of ['VariablesReady', 'VariablesReconciled'])
      expect(release.spec.healthCheckExprs[0].current).toContain(`'${condition}'`);
    // Every release waits for its namespace's shared objects (always, so a move into shared/ is ordered).
    expect(release.spec.dependsOn).toEqual([{ name: 'cluster-stacks-shared' }]);
  });

  it('writes one shared Kustomization per release namespace that waits for node images and never prunes', () => {
    const files = renderWiring(fleet(), gitOptions);
    const shared = object(files, 'flux/management/cluster-stacks/shared.yaml');
    expect(shared.metadata).toMatchObject({
      name: 'cluster-stacks-shared',
      namespace: 'flux-system',
      labels: { 'clusterstack.x-k8s.io/wiring': 'shared', 'clusterstack.x-k8s.io/namespace': 'cluster-stacks' },
    });
    expect(shared.spec).toMatchObject({
      path: './rendered/management/cluster-stacks/shared',
      prune: false,
      wait: true,
      sourceRef: { kind: 'GitRepository', name: 'clusterstacks' },
    });
    expect(shared.spec.dependsOn).toBeUndefined();
    expect(shared.spec.healthCheckExprs).toEqual([
      {
        apiVersion: 'openstack.k-orc.cloud/v1alpha1',
        kind: 'Image',
        current: "status.?conditions.orValue([]).exists(c, c.type == 'Available' && c.status == 'True')",
        failed:
          "!(status.?conditions.orValue([]).exists(c, c.type == 'Available' && c.status == 'True')) && status.?conditions.orValue([]).exists(c, c.type == 'Progressing' && c.status == 'False')",
      },
    ]);
    expect([...files.keys()].filter((path) => path.endsWith('/shared.yaml'))).toEqual([
      'flux/management/cluster-stacks/shared.yaml',
    ]);
  });

  it("applies every addon stage through the cluster's CAPI kubeconfig Secret, from the cluster's namespace", () => {
    const files = renderWiring(fleet(), gitOptions);
    const cni = object(files, 'flux/clusters/dev/alpha/cni.yaml');
    expect(cni.metadata).toMatchObject({ name: 'alpha-cni', namespace: 'dev' });
    expect(cni.spec).toMatchObject({
      path: './rendered/clusters/dev/alpha/cni',
      prune: true,
      wait: true,
      kubeConfig: { secretRef: { name: 'alpha-kubeconfig', key: 'value' } },
      // Flux reads the kubeconfig Secret from the Kustomization's namespace, so the source is referenced across namespaces.
      sourceRef: { kind: 'GitRepository', name: 'clusterstacks', namespace: 'flux-system' },
    });
    expect(cni.spec.targetNamespace).toBeUndefined();
    const beta = object(files, 'flux/clusters/prod/beta/cluster-addon.yaml');
    expect(beta.metadata).toMatchObject({ name: 'beta-cluster-addon', namespace: 'prod' });
    expect(beta.spec.kubeConfig.secretRef.name).toBe('beta-kubeconfig');
  });

  it('chains the stages of a cluster with dependsOn in stage order, and never across clusters', () => {
    const files = renderWiring(fleet(), gitOptions);
    const dependsOn = (path: string): unknown => object(files, path).spec.dependsOn;
    expect(dependsOn('flux/clusters/dev/alpha/cni.yaml')).toBeUndefined();
    // csi and metrics-server share an order: both wait for cni, not for each other.
    expect(dependsOn('flux/clusters/dev/alpha/csi.yaml')).toEqual([{ name: 'alpha-cni', namespace: 'dev' }]);
    expect(dependsOn('flux/clusters/dev/alpha/metrics-server.yaml')).toEqual([{ name: 'alpha-cni', namespace: 'dev' }]);
    expect(dependsOn('flux/clusters/dev/alpha/ccm.yaml')).toEqual([
      { name: 'alpha-csi', namespace: 'dev' },
      { name: 'alpha-metrics-server', namespace: 'dev' },
    ]);
    expect(dependsOn('flux/clusters/prod/beta/cluster-addon.yaml')).toBeUndefined();
    for (const [path, wiring] of wiringObjects(files)) {
      if (wiring.metadata.labels['clusterstack.x-k8s.io/wiring'] !== 'cluster-stage') continue;
      for (const dependency of wiring.spec?.dependsOn ?? [])
        expect(dependency.namespace, path).toBe(wiring.metadata.namespace);
    }
  });

  it('writes an OCIRepository for an OCI source, with the tag and no secretRef unless one is named', () => {
    const files = renderWiring(fleet(), ociOptions);
    const source = object(files, 'flux/source.yaml');
    expect(source).toMatchObject({ apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'OCIRepository' });
    expect(source.spec).toEqual({
      interval: '1m',
      url: 'oci://registry.example.com/platform/fleet',
      ref: { tag: 'latest' },
    });
    // The artifact's root is the tree's root.
    expect(object(files, 'flux/root.yaml').spec.path).toBe('./flux');
    expect(object(files, 'flux/clusters/dev/alpha/cni.yaml').spec).toMatchObject({
      path: './clusters/dev/alpha/cni',
      sourceRef: { kind: 'OCIRepository', name: 'clusterstacks', namespace: 'flux-system' },
    });

    const withSecret = renderWiring(fleet(), {
      ...ociOptions,
      source: { ...ociOptions.source, secretName: 'registry-pull' },
    });
    expect(object(withSecret, 'flux/source.yaml').spec.secretRef).toEqual({ name: 'registry-pull' });
    // A registry reached over plain HTTP (--plain-http) is one Flux must reach the same way.
    const plainHttp = renderWiring(fleet(), {
      ...ociOptions,
      source: { kind: 'oci', url: 'oci://registry.example.com/platform/fleet', tag: 'latest', insecure: true },
    });
    expect(object(plainHttp, 'flux/source.yaml').spec).toEqual({
      interval: '1m',
      url: 'oci://registry.example.com/platform/fleet',
      ref: { tag: 'latest' },
      insecure: true,
    });
  });

  it('uses the repository root when the tree is not in a subdirectory', () => {
    const files = renderWiring(fleet(), {
      ...gitOptions,
      source: { kind: 'git', url: 'ssh://git@git.example.com/platform/fleet.git', branch: 'main', path: '' },
    });
    expect(object(files, 'flux/root.yaml').spec.path).toBe('./flux');
    expect(object(files, `flux/management/cluster-stacks/${RELEASE}.yaml`).spec.path).toBe(
      `./management/cluster-stacks/${RELEASE}`,
    );
  });

  it('writes only objects that conform to the Flux and kustomize schemas', () => {
    for (const options of [
      gitOptions,
      ociOptions,
      { ...gitOptions, source: { ...gitOptions.source, secretName: 'git-credentials' } },
    ]) {
      expect(schemaProblems(renderWiring(fleet(), options), [...FLUX_SCHEMAS, ...KUSTOMIZE_SCHEMAS])).toEqual([]);
    }
  });

  it('gives every directory a kustomization.yaml listing exactly its files and subdirectories', () => {
    const files = renderWiring(fleet(), gitOptions);
    expect(kustomizationProblems(files)).toEqual([]);
    expect(parseObject(files.get('flux/kustomization.yaml')!).resources).toEqual([
      'clusters',
      'management',
      'root.yaml',
      'source.yaml',
    ]);
    expect(parseObject(files.get('flux/clusters/dev/alpha/kustomization.yaml')!).resources).toEqual([
      'ccm.yaml',
      'cni.yaml',
      'csi.yaml',
      'metrics-server.yaml',
    ]);
    expect(kustomizationProblems(renderWiring([], gitOptions))).toEqual([]);
    expect([...renderWiring([], gitOptions).keys()]).toEqual([
      'flux/kustomization.yaml',
      'flux/root.yaml',
      'flux/source.yaml',
    ]);
  });

  it('builds with real kustomize into the source and every Kustomization (kubectl kustomize)', () => {
    const files = renderWiring(fleet(), gitOptions);
    const built = kustomizeBuild(files, 'flux').map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
    expect(built.sort()).toEqual(
      [
        'GitRepository flux-system/clusterstacks',
        'Kustomization flux-system/clusterstacks',
        `Kustomization flux-system/cluster-stacks-${OLD_RELEASE}`,
        `Kustomization flux-system/cluster-stacks-${RELEASE}`,
        'Kustomization flux-system/cluster-stacks-shared',
        'Kustomization dev/alpha-cni',
        'Kustomization dev/alpha-csi',
        'Kustomization dev/alpha-metrics-server',
        'Kustomization dev/alpha-ccm',
        'Kustomization prod/beta-cluster-addon',
      ].sort(),
    );
  });

  it('never writes a Secret, kubeconfig contents or credentials, only Secret names', () => {
    const files = renderWiring(fleet(), {
      ...gitOptions,
      source: { ...gitOptions.source, secretName: 'git-credentials' },
    });
    expect(credentialProblems(files)).toEqual([]);
  });

  it('labels every object as ours, with the release or cluster in separate namespace and name labels', () => {
    const files = renderWiring(fleet(), gitOptions);
    for (const [path, wiring] of wiringObjects(files)) {
      expect(wiring.metadata.labels['app.kubernetes.io/managed-by'], path).toBe('clusterstack-gitops');
      for (const value of Object.values(wiring.metadata.labels as Record<string, string>))
        expect(value, path).toMatch(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/);
    }
    expect(object(files, 'flux/clusters/dev/alpha/csi.yaml').metadata.labels).toMatchObject({
      'clusterstack.x-k8s.io/namespace': 'dev',
      'clusterstack.x-k8s.io/cluster': 'alpha',
      'clusterstack.x-k8s.io/stage': 'csi',
    });
    expect(object(files, `flux/management/cluster-stacks/${RELEASE}.yaml`).metadata.labels).toMatchObject({
      'clusterstack.x-k8s.io/namespace': 'cluster-stacks',
      'clusterstack.x-k8s.io/release': RELEASE,
    });
  });

  it('removes the wiring of a cluster or release that left the tree, and leaves the rest byte for byte', () => {
    const before = renderWiring(fleet(), gitOptions);
    const after = renderWiring(
      fleet().filter((unit) => unit.name !== 'beta' && unit.name !== OLD_RELEASE),
      gitOptions,
    );
    const gone = [...before.keys()].filter((path) => !after.has(path));
    expect(gone).toEqual(
      [
        `flux/management/cluster-stacks/${OLD_RELEASE}.yaml`,
        'flux/clusters/prod/beta/cluster-addon.yaml',
        'flux/clusters/prod/beta/kustomization.yaml',
        'flux/clusters/prod/kustomization.yaml',
      ].sort(),
    );
    for (const [path, text] of after) {
      if (!path.endsWith('kustomization.yaml')) expect(text, path).toBe(before.get(path));
    }
    expect(parseObject(after.get('flux/clusters/kustomization.yaml')!).resources).toEqual(['dev']);
  });

  it('gives the same bytes for the same units in any order', () => {
    const units = fleet();
    const once = renderWiring(units, gitOptions);
    const again = renderWiring([...units].reverse(), gitOptions);
    expect([...again.entries()]).toEqual([...once.entries()]);
  });

  it('keeps Kustomization names valid DNS labels, cutting long ones short with a stable hash', () => {
    const longCluster = 'a-workload-cluster-with-a-really-quite-long-name-for-testing';
    const files = renderWiring(
      [
        stageUnit('dev', longCluster, RELEASE, 'metrics-server', 0),
        releaseUnit('a-namespace-with-a-long-name', 'openstack-scs-1-32-v0-sha-abc1234'),
      ],
      gitOptions,
    );
    for (const [path, wiring] of wiringObjects(files))
      expect(wiring.metadata.name, path).toMatch(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
    const stage = object(files, `flux/clusters/dev/${longCluster}/metrics-server.yaml`);
    expect(stage.metadata.name).toHaveLength(63);
    expect(stage.metadata.name).toMatch(/^a-workload-cluster-with-a-really-quite-long-name-for-t-[0-9a-f]{8}$/);
    expect(
      renderWiring([stageUnit('dev', longCluster, RELEASE, 'metrics-server', 0)], gitOptions).get(
        `flux/clusters/dev/${longCluster}/metrics-server.yaml`,
      ),
    ).toBe(files.get(`flux/clusters/dev/${longCluster}/metrics-server.yaml`));
  });

  it('refuses two units that would share one Kustomization name', () => {
    expect(() =>
      renderWiring([stageUnit('dev', 'a-b', RELEASE, 'c', 0), stageUnit('dev', 'a', RELEASE, 'b-c', 0)], gitOptions),
    ).toThrow(
      /stage b-c of Cluster dev\/a and stage c of Cluster dev\/a-b would both be Flux Kustomization dev\/a-b-c; rename one of them/,
    );
  });

  it('refuses source URLs Flux cannot clone or that carry credentials, saying what to write instead', () => {
    const withUrl = (url: string): WiringOptions => ({ ...gitOptions, source: { ...gitOptions.source, url } });
    expect(() => renderWiring(fleet(), withUrl('git@git.example.com:platform/fleet.git'))).toThrow(
      /write ssh:\/\/git@git.example.com\/platform\/fleet.git/,
    );
    expect(() => renderWiring(fleet(), withUrl('file:///srv/git/fleet.git'))).toThrow(
      /Flux clones only http:\/\/, https:\/\/ and ssh:\/\/ URLs/,
    );
    const leaked = (() => {
      try {
        renderWiring(fleet(), withUrl('https://deploy:s3cr3t@git.example.com/platform/fleet.git'));
      } catch (error) {
        return error as Error;
      }
      return undefined;
    })();
    expect(leaked).toBeInstanceOf(InputError);
    expect(leaked!.message).toMatch(/carries credentials/);
    expect(leaked!.message).not.toContain('s3cr3t');
    expect(() =>
      renderWiring(fleet(), {
        ...ociOptions,
        source: { kind: 'oci', url: 'oci://robot:token@registry.example.com/fleet', tag: 'v1' },
      }),
    ).toThrow(/carries credentials/);
    expect(() =>
      renderWiring(fleet(), {
        ...ociOptions,
        source: { kind: 'oci', url: 'oci://registry.example.com/fleet', tag: 'not a tag' },
      }),
    ).toThrow(/source.tag/);
    expect(() =>
      renderWiring(fleet(), {
        ...gitOptions,
        source: {
          kind: 'git',
          url: 'https://git.example.com/platform/fleet.git',
          branch: 'main',
          path: '../elsewhere',
        },
      }),
    ).toThrow(/source.path/);
    expect(() => renderWiring(fleet(), { ...gitOptions, namespace: 'Flux_System' })).toThrow(/namespace/);
  });
});

describe('Flux schema facts', () => {
  it('catch unknown fields, missing required fields, bad enums and bad durations', () => {
    const problems = checkObject(
      {
        apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
        kind: 'Kustomization',
        metadata: { name: 'x' },
        spec: { interval: '10 minutes', sourceRef: { kind: 'HelmRepository', name: 'x' }, targetNamespaces: 'x' },
      },
      FLUX_SCHEMAS,
    );
    expect(problems).toEqual([
      'Kustomization.spec.prune: required but missing',
      'Kustomization.spec.interval: "10 minutes" does not match /^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$/',
      'Kustomization.spec.sourceRef.kind: "HelmRepository" is not one of OCIRepository, GitRepository, Bucket, ExternalArtifact',
      'Kustomization.spec.targetNamespaces: unknown field',
    ]);
  });
});
