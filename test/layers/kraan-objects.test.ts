// Kraan's own objects, in the shapes of Kraan's samples and test data (test/fixtures/kraan), plan
// and render unchanged through the CLI: no version, no clusterSelector, bare dependsOn names,
// source.kind, a namespace and a finalizer on the cluster-scoped layer. What has no meaning here
// is accepted; what changes the outcome (every Cluster, unversioned) is said in the output.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyExampleReleases, runClusterstack, tempDir, writeTree } from '../support/cli.js';
import { kustomizeBuild } from '../support/engine-schemas/kustomize-build.js';
import { parseObject } from '../support/engine-schemas/wiring-checks.js';
import { GitSandbox } from '../support/git-repos.js';

const FIXTURES = path.resolve('test/fixtures/kraan');

const INPUTS = {
  'stack.yaml': `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: fleet}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", noProvider: true, autoSubscribe: false, versions: [v1]}
`,
  'clusters.yaml': ['one', 'two']
    .map(
      (name) => `---
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: ${name}, namespace: fleet}
spec:
  clusterNetwork: {pods: {cidrBlocks: [10.1.0.0/16]}}
  controlPlaneEndpoint: {host: ${name}.example.test, port: 6443}
  topology: {class: docker-ferrol-1-30-v1, version: v1.30.2}
`,
    )
    .join(''),
};

async function renderKraan(shape: 'samples' | 'testdata'): Promise<{
  code: number;
  stderr: string;
  report: Record<string, any>;
  files: Record<string, string>;
  plan: Record<string, any>;
}> {
  const manifests = await writeTree(INPUTS);
  const releases = await copyExampleReleases();
  const args = [
    manifests,
    path.join(FIXTURES, shape, 'layers.yaml'),
    '--release-source',
    releases,
    '--layer-root',
    path.join(FIXTURES, shape),
  ];
  const plan = await runClusterstack(['plan', ...args, '--json'], {
    env: { CLUSTERSTACK_CACHE_DIR: await tempDir('csk-kraan-cache-') },
  });
  if (plan.code !== 0) throw new Error(plan.stderr);
  const sandbox = new GitSandbox();
  try {
    const remote = sandbox.bareRepo(`kraan-${shape}`);
    const result = await runClusterstack([
      'render',
      ...args,
      '--git',
      remote,
      '--json',
      '--gitops',
      'flux',
      '--gitops-url',
      'https://git.example.test/fleet.git',
    ]);
    return {
      code: result.code,
      stderr: result.stderr,
      report: result.stdout ? JSON.parse(result.stdout) : {},
      files: result.code === 0 ? sandbox.files(remote, 'main') : {},
      plan: JSON.parse(plan.stdout),
    };
  } finally {
    sandbox.cleanup();
  }
}

describe('Kraan objects are read unchanged (real git and kustomize)', () => {
  it('renders the samples shape: unversioned layers to every Cluster, bare dependsOn in order, and says both', async () => {
    const run = await renderKraan('samples');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(
      run.plan.layers.map(
        (l: { cluster: string; layer: string; version: string; state: string; after: string[] }) =>
          `${l.cluster}/${l.layer}${l.version ? `@${l.version}` : ''}: ${l.state} after ${l.after.join(',') || '-'}`,
      ),
    ).toEqual([
      'one/bootstrap: render after -',
      'one/base: render after bootstrap',
      'one/mgmt: render after base',
      'one/apps: render after base,mgmt',
      'two/bootstrap: render after -',
      'two/base: render after bootstrap',
      'two/mgmt: render after base',
      'two/apps: render after base,mgmt',
    ]);
    expect(run.plan.warnings).toContain(
      'AddonsLayer base has no spec.clusterSelector: it goes to every Cluster (2), as Kraan applies a layer to the cluster it runs in; set clusterSelector to choose Clusters',
    );
    expect(run.plan.warnings).toContain(
      'AddonsLayer base has no spec.version (Kraan\'s CRD requires one): it is rendered unversioned, and only a bare "base" in dependsOn matches it',
    );
    expect(run.report.warnings).toContain(
      run.plan.warnings.find((warning: string) => warning.startsWith('AddonsLayer apps has no spec.clusterSelector')),
    );
    // The HelmReleases as written, one file each, built by kustomize.
    const tree = new Map(Object.entries(run.files));
    expect(kustomizeBuild(tree, 'clusters/fleet/two/layers/apps')).toEqual([
      expect.objectContaining({ kind: 'HelmRelease', metadata: { name: 'apps-service', namespace: 'apps' } }),
    ]);
    const apps = parseObject(run.files['flux/clusters/fleet/two/layers/apps.yaml']!);
    expect(apps.spec.dependsOn).toEqual([
      { name: 'two-layer-base', namespace: 'fleet' },
      { name: 'two-layer-mgmt', namespace: 'fleet' },
    ]);
    expect(apps.metadata.labels['clusterstack.x-k8s.io/layer-version']).toBe('');
  });

  it('renders the test-data shape: source.kind, a finalizer, versions like 0.1.01, "v1.16" gates, name@version dependencies', async () => {
    const run = await renderKraan('testdata');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.report.withheld).toEqual([]);
    expect(
      run.plan.layers
        .filter((l: { cluster: string }) => l.cluster === 'one')
        .map((l: { layer: string; version: string; after: string[]; kubernetesVersion: unknown }) => [
          l.layer,
          l.version,
          l.after.join(','),
          l.kubernetesVersion,
        ]),
    ).toEqual([
      ['bootstrap', '0.1.01', '', { version: 'v1.30.2', origin: 'spec.topology.version' }],
      ['base', '0.1.01', 'bootstrap@0.1.01', { version: 'v1.30.2', origin: 'spec.topology.version' }],
      ['mgmt', '0.1.01', 'base@0.1.01', { version: 'v1.30.2', origin: 'spec.topology.version' }],
      ['apps', '0.1.01', 'base@0.1.01,mgmt@0.1.01', { version: 'v1.30.2', origin: 'spec.topology.version' }],
    ]);
    const tree = new Map(Object.entries(run.files));
    expect(
      kustomizeBuild(tree, 'clusters/fleet/one/layers/bootstrap')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['bootstrap-service', 'second-service']);
    // Kraan reads the directory's YAML files, not its kustomization.yaml: neither do we.
    expect(kustomizeBuild(tree, 'clusters/fleet/one/layers/base')).toEqual([
      expect.objectContaining({ kind: 'HelmRelease', metadata: { name: 'base-service', namespace: 'base' } }),
    ]);
    expect(parseObject(run.files['flux/clusters/fleet/one/layers/base.yaml']!).spec).toMatchObject({
      interval: '1m',
      timeout: '30s',
      dependsOn: [{ name: 'one-layer-bootstrap', namespace: 'fleet' }],
    });
  });
});
