import { describe, expect, it } from 'vitest';
import { argoClusterName, syncWaveFor, withSyncWave } from '../gitops/wiring/argocd-wiring.js';
import { renderWiring, type WiringOptions } from '../gitops/wiring/render-wiring.js';
import { ARGOCD_SCHEMAS } from './support/engine-schemas/argocd-schemas.js';
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
  engine: 'argocd',
  name: 'clusterstacks',
  namespace: 'argocd',
  source: { kind: 'git', url: 'git@git.example.com:platform/fleet.git', branch: 'main', path: 'rendered' },
};

const ociOptions: WiringOptions = {
  ...gitOptions,
  source: { kind: 'oci', url: 'oci://registry.example.com/platform/fleet', tag: 'latest' },
};

const SYNC_POLICY = {
  automated: { prune: true, selfHeal: true },
  syncOptions: ['ServerSideApply=true', 'CreateNamespace=false'],
};

describe('renderWiring for Argo CD', () => {
  it('writes a root Application that applies the wiring directory itself and never cascades a deletion', () => {
    const root = object(renderWiring(fleet(), gitOptions), 'argocd/root.yaml');
    expect(root).toMatchObject({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'clusterstacks', namespace: 'argocd' },
    });
    expect(root.metadata.finalizers).toBeUndefined();
    expect(root.spec).toMatchObject({
      project: 'default',
      source: { repoURL: 'git@git.example.com:platform/fleet.git', targetRevision: 'main', path: 'rendered/argocd' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'argocd' },
      syncPolicy: SYNC_POLICY,
    });
  });

  it('writes one Application per release directory, in-cluster into the release namespace, pruning what it applied when deleted but never on a sync', () => {
    const release = object(renderWiring(fleet(), gitOptions), `argocd/management/cluster-stacks/${RELEASE}.yaml`);
    expect(release.metadata).toMatchObject({
      name: `cluster-stacks-${RELEASE}`,
      namespace: 'argocd',
      finalizers: ['resources-finalizer.argocd.argoproj.io'],
    });
    expect(release.spec).toMatchObject({
      source: {
        repoURL: 'git@git.example.com:platform/fleet.git',
        targetRevision: 'main',
        path: `rendered/management/cluster-stacks/${RELEASE}`,
      },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'cluster-stacks' },
      syncPolicy: { ...SYNC_POLICY, automated: { prune: false, selfHeal: true } },
    });
  });

  it('writes one shared Application per release namespace, in an earlier wave, that never prunes and never cascades a deletion', () => {
    const files = renderWiring(fleet(), gitOptions);
    const shared = object(files, 'argocd/management/cluster-stacks/shared.yaml');
    expect(shared.metadata).toMatchObject({
      name: 'cluster-stacks-shared',
      namespace: 'argocd',
      annotations: { 'argocd.argoproj.io/sync-wave': '-1' },
    });
    expect(shared.metadata.finalizers).toBeUndefined();
    expect(shared.spec).toMatchObject({
      source: { path: 'rendered/management/cluster-stacks/shared' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'cluster-stacks' },
      syncPolicy: { ...SYNC_POLICY, automated: { prune: false, selfHeal: true } },
    });
    expect([...files.keys()].filter((path) => path.endsWith('/shared.yaml'))).toEqual([
      'argocd/management/cluster-stacks/shared.yaml',
    ]);
  });

  it('gives each cluster an app of apps whose children apply the stages to the Argo CD cluster named after it', () => {
    const files = renderWiring(fleet(), gitOptions);
    const parent = object(files, 'argocd/clusters/dev/alpha.yaml');
    expect(parent.metadata).toMatchObject({
      name: 'dev-alpha',
      namespace: 'argocd',
      finalizers: ['resources-finalizer.argocd.argoproj.io'],
    });
    expect(parent.spec).toMatchObject({
      source: { path: 'rendered/argocd/cluster-addons/dev/alpha' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'argocd' },
      syncPolicy: SYNC_POLICY,
    });

    const children = [...files.keys()].filter(
      (path) => path.startsWith('argocd/cluster-addons/dev/alpha/') && !path.endsWith('kustomization.yaml'),
    );
    expect(children).toEqual(
      ['ccm', 'cni', 'csi', 'metrics-server'].map((stage) => `argocd/cluster-addons/dev/alpha/${stage}.yaml`),
    );
    const cni = object(files, 'argocd/cluster-addons/dev/alpha/cni.yaml');
    expect(cni.metadata).toMatchObject({
      name: 'dev-alpha-cni',
      namespace: 'argocd',
      finalizers: ['resources-finalizer.argocd.argoproj.io'],
    });
    expect(cni.spec).toMatchObject({
      source: { path: 'rendered/clusters/dev/alpha/cni' },
      destination: { name: argoClusterName('dev', 'alpha') },
      syncPolicy: SYNC_POLICY,
    });
    expect(cni.spec.destination).toEqual({ name: 'dev-alpha' });
  });

  it('orders the stages of a cluster with sync waves that increase with stage order', () => {
    const files = renderWiring(fleet(), gitOptions);
    const wave = (path: string): string => object(files, path).metadata.annotations['argocd.argoproj.io/sync-wave'];
    expect(
      ['cni', 'csi', 'metrics-server', 'ccm'].map((stage) => wave(`argocd/cluster-addons/dev/alpha/${stage}.yaml`)),
    ).toEqual(['0', '1', '1', '2']);
    expect(wave('argocd/cluster-addons/prod/beta/cluster-addon.yaml')).toBe('0');
  });

  it('keeps the children out of what the root applies: only their parent reads their directory', () => {
    const files = renderWiring(fleet(), gitOptions);
    expect(parseObject(files.get('argocd/kustomization.yaml')!).resources).toEqual([
      'clusters',
      'management',
      'root.yaml',
    ]);
    expect(files.has('argocd/cluster-addons/kustomization.yaml')).toBe(false);
    expect(files.has('argocd/cluster-addons/dev/kustomization.yaml')).toBe(false);
    expect(parseObject(files.get('argocd/cluster-addons/dev/alpha/kustomization.yaml')!).resources).toEqual([
      'ccm.yaml',
      'cni.yaml',
      'csi.yaml',
      'metrics-server.yaml',
    ]);
    // Every child directory is some parent's source path.
    const parents = [...wiringObjects(files).values()]
      .filter((app) => app.metadata.labels['clusterstack.x-k8s.io/wiring'] === 'cluster')
      .map((app) => app.spec.source.path);
    const childDirs = [
      ...new Set(
        [...files.keys()]
          .filter((path) => path.startsWith('argocd/cluster-addons/'))
          .map((path) => `rendered/${path.split('/').slice(0, -1).join('/')}`),
      ),
    ];
    expect(parents.sort()).toEqual(childDirs.sort());
  });

  it('points OCI sources at the artifact with its tag and a path inside it', () => {
    const files = renderWiring(fleet(), ociOptions);
    expect(object(files, 'argocd/root.yaml').spec.source).toEqual({
      repoURL: 'oci://registry.example.com/platform/fleet',
      targetRevision: 'latest',
      path: 'argocd',
    });
    expect(object(files, 'argocd/cluster-addons/dev/alpha/cni.yaml').spec.source).toEqual({
      repoURL: 'oci://registry.example.com/platform/fleet',
      targetRevision: 'latest',
      path: 'clusters/dev/alpha/cni',
    });
  });

  it('uses the AppProject given', () => {
    for (const app of wiringObjects(renderWiring(fleet(), { ...gitOptions, project: 'platform' })).values())
      expect(app.spec.project).toBe('platform');
  });

  it('writes only objects that conform to the Argo CD Application and kustomize schemas', () => {
    for (const options of [gitOptions, ociOptions])
      expect(schemaProblems(renderWiring(fleet(), options), [...ARGOCD_SCHEMAS, ...KUSTOMIZE_SCHEMAS])).toEqual([]);
  });

  it('gives every directory it aggregates a kustomization.yaml listing exactly its files and subdirectories', () => {
    expect(kustomizationProblems(renderWiring(fleet(), gitOptions))).toEqual([]);
    expect([...renderWiring([], gitOptions).keys()]).toEqual(['argocd/kustomization.yaml', 'argocd/root.yaml']);
  });

  it('builds with real kustomize: the root gets parents and releases, each parent its own children (kubectl kustomize)', () => {
    const files = renderWiring(fleet(), gitOptions);
    const names = (dir: string): string[] =>
      kustomizeBuild(files, dir)
        .map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`)
        .sort();
    expect(names('argocd')).toEqual(
      [
        'clusterstacks',
        'cluster-stacks-shared',
        `cluster-stacks-${OLD_RELEASE}`,
        `cluster-stacks-${RELEASE}`,
        'dev-alpha',
        'prod-beta',
      ]
        .map((name) => `Application argocd/${name}`)
        .sort(),
    );
    expect(names('argocd/cluster-addons/dev/alpha')).toEqual(
      ['ccm', 'cni', 'csi', 'metrics-server'].map((stage) => `Application argocd/dev-alpha-${stage}`),
    );
  });

  it('never writes a Secret, kubeconfig contents or credentials', () => {
    expect(credentialProblems(renderWiring(fleet(), gitOptions))).toEqual([]);
    expect(credentialProblems(renderWiring(fleet(), ociOptions))).toEqual([]);
  });

  it('labels ownership with separate namespace and name labels, none holding a "/"', () => {
    const files = renderWiring(fleet(), gitOptions);
    for (const [path, app] of wiringObjects(files)) {
      expect(app.metadata.labels['app.kubernetes.io/managed-by'], path).toBe('clusterstack-gitops');
      for (const value of Object.values(app.metadata.labels as Record<string, string>))
        expect(value, path).not.toContain('/');
    }
    expect(object(files, 'argocd/clusters/dev/alpha.yaml').metadata.labels).toMatchObject({
      'clusterstack.x-k8s.io/namespace': 'dev',
      'clusterstack.x-k8s.io/cluster': 'alpha',
    });
    expect(object(files, 'argocd/cluster-addons/dev/alpha/csi.yaml').metadata.labels).toMatchObject({
      'clusterstack.x-k8s.io/namespace': 'dev',
      'clusterstack.x-k8s.io/cluster': 'alpha',
      'clusterstack.x-k8s.io/stage': 'csi',
    });
  });

  it('drops the Application of a release resolution no longer keeps, and keeps a release its clusters use untouched', () => {
    // Resolution never drops a release some Cluster uses (the caller guarantees it): beta uses OLD_RELEASE until it moves on.
    const before = renderWiring(fleet(), gitOptions);
    const betaMoved = fleet().map((unit) => (unit.name === 'beta' ? { ...unit, release: RELEASE } : unit));
    const after = renderWiring(
      betaMoved.filter((unit) => unit.name !== OLD_RELEASE),
      gitOptions,
    );
    expect(after.has(`argocd/management/cluster-stacks/${OLD_RELEASE}.yaml`)).toBe(false);
    expect(after.get(`argocd/management/cluster-stacks/${RELEASE}.yaml`)).toBe(
      before.get(`argocd/management/cluster-stacks/${RELEASE}.yaml`),
    );
    for (const path of [...before.keys()].filter((p) => p.includes('/clusters/') || p.includes('/cluster-addons/')))
      expect(after.get(path), path).toBe(before.get(path));
    expect(parseObject(after.get('argocd/management/cluster-stacks/kustomization.yaml')!).resources).toEqual([
      `${RELEASE}.yaml`,
      'shared.yaml',
    ]);
  });

  it('drops the parent and children of a cluster that left the tree', () => {
    const after = renderWiring(
      fleet().filter((unit) => unit.name !== 'alpha'),
      gitOptions,
    );
    expect([...after.keys()].filter((path) => path.includes('alpha'))).toEqual([]);
    expect(parseObject(after.get('argocd/clusters/kustomization.yaml')!).resources).toEqual(['prod']);
  });

  it('gives the same bytes for the same units in any order', () => {
    const once = renderWiring(fleet(), gitOptions);
    expect([...renderWiring([...fleet()].reverse(), gitOptions).entries()]).toEqual([...once.entries()]);
  });

  it('refuses a release and a cluster that would share one Application name', () => {
    expect(() =>
      renderWiring([releaseUnit('dev', 'alpha'), stageUnit('dev', 'alpha', RELEASE, 'cni', 0)], gitOptions),
    ).toThrow(/would both be Argo CD Application argocd\/dev-alpha/);
  });
});

describe('argoClusterName', () => {
  it('names the Argo CD cluster <namespace>-<cluster>, the convention the controller shares', () => {
    expect(argoClusterName('dev', 'alpha')).toBe('dev-alpha');
  });
});

describe('syncWaveFor', () => {
  it('puts CAPI templates before the ClusterClass and leaves other kinds alone', () => {
    expect(syncWaveFor('KubeadmControlPlaneTemplate')).toBe('-1');
    expect(syncWaveFor('DockerMachineTemplate')).toBe('-1');
    expect(syncWaveFor('KubeadmConfigTemplate')).toBe('-1');
    expect(syncWaveFor('ClusterClass')).toBe('0');
    expect(syncWaveFor('ConfigMap')).toBeUndefined();
  });

  it('annotates an object with its wave, keeping a wave the chart set itself', () => {
    const template = {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1',
      kind: 'DockerMachineTemplate',
      metadata: { name: 'x', annotations: { a: 'b' } },
    };
    expect(withSyncWave(template).metadata.annotations).toEqual({ a: 'b', 'argocd.argoproj.io/sync-wave': '-1' });
    expect(template.metadata.annotations).toEqual({ a: 'b' });
    const pinned = { ...template, metadata: { name: 'x', annotations: { 'argocd.argoproj.io/sync-wave': '-5' } } };
    expect(withSyncWave(pinned)).toBe(pinned);
    const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } };
    expect(withSyncWave(configMap)).toBe(configMap);
  });
});

describe('Argo CD schema facts', () => {
  it('catch unknown fields, missing required fields and wrong types', () => {
    const problems = checkObject(
      {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Application',
        metadata: { name: 'x' },
        spec: { destination: {}, source: { path: 'x' }, syncPolicy: { automated: { prune: 'yes' }, syncOption: [] } },
      },
      ARGOCD_SCHEMAS,
    );
    expect(problems).toEqual([
      'Application.spec.project: required but missing',
      'Application.spec.source.repoURL: required but missing',
      'Application.spec.syncPolicy.automated.prune: expected a boolean, found string',
      'Application.spec.syncPolicy.syncOption: unknown field',
    ]);
  });
});
