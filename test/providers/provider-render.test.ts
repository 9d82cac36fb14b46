// `clusterstack render` with Cluster API provider objects, end to end: releases served by the fake
// GitHub (and a real registry), rendered into management/providers/, every directory built by
// kubectl kustomize; upgrades, the version lock, and each refusal with nothing written.
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryClient } from '../../src/oci/registry-client.js';
import { decodeYamlDocuments } from '../../src/yaml/kube-yaml.js';
import { kustomizeBuild } from '../support/engine-schemas/kustomize-build.js';
import { startFakeGitHub, type FakeGitHub } from '../support/fake-github/index.js';
import { addProviderRelease, DOCKER_VARIABLES, dockerProvider, providerFixture } from '../support/provider-fixtures.js';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, readTree, runClusterstack, tempDir, writeTree } from '../support/cli.js';
import { pushArtifact } from '../support/registry/push-artifact.js';
import { startRegistry, type TestRegistry } from '../support/registry/index.js';

function core(spec: string): string {
  return `apiVersion: operator.cluster.x-k8s.io/v1alpha2
kind: CoreProvider
metadata:
  name: cluster-api
  namespace: capi-system
spec:
  fetchConfig:
    url: https://github.com/kubernetes-sigs/cluster-api/releases
${spec}`;
}

async function inputs(files: Record<string, string>): Promise<string> {
  return writeTree(files);
}

// In order (shuffle: false): the lock step publishes core v2.0.0 on the shared fake GitHub, and the
// plan step before it expects v1.9.0 to be the newest.
describe('clusterstack render with Cluster API providers', { shuffle: false }, () => {
  let github: FakeGitHub;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    github = await startFakeGitHub();
    for (const version of ['v1.8.0', 'v1.9.0']) addProviderRelease(github, 'core', version);
    for (const version of ['v1.8.0', 'v1.9.0', 'v2.0.0']) addProviderRelease(github, 'infrastructure', version);
    // Broken releases: an asset missing, a metadata.yaml without the version's series, components that are not YAML.
    github.addRelease('kubernetes-sigs', 'cluster-api-provider-docker', {
      tag: 'v1.9.1',
      assets: [{ name: 'metadata.yaml', content: providerFixture('infrastructure', 'v1.9.0', 'metadata.yaml') }],
    });
    github.addRelease('kubernetes-sigs', 'cluster-api-provider-docker', {
      tag: 'v1.10.0',
      assets: [
        { name: 'metadata.yaml', content: providerFixture('infrastructure', 'v1.9.0', 'metadata.yaml') },
        {
          name: 'infrastructure-components.yaml',
          content: providerFixture('infrastructure', 'v1.9.0', 'infrastructure-components.yaml'),
        },
      ],
    });
    github.addRelease('kubernetes-sigs', 'cluster-api-provider-docker', {
      tag: 'v1.9.2',
      assets: [
        { name: 'metadata.yaml', content: providerFixture('infrastructure', 'v1.9.0', 'metadata.yaml') },
        { name: 'infrastructure-components.yaml', content: 'kind: [unclosed\n' },
      ],
    });
  });
  afterAll(async () => {
    await github.close();
  });

  async function render(dir: string, out: string, ...extra: string[]) {
    const result = await runClusterstack(
      ['render', dir, '--release-source', EXAMPLE_RELEASES, '--output', out, '--json', ...extra],
      { env },
    );
    return { ...result, report: result.code === 0 ? JSON.parse(result.stdout) : undefined };
  }

  beforeAll(async () => {
    env = {
      GITHUB_API_URL: github.apiUrl,
      CLUSTERSTACK_CACHE_DIR: await mkdtemp(path.join(os.tmpdir(), 'csk-providers-')),
    };
  });

  it('renders core and infrastructure provider components into management/providers/, each directory a valid kustomization', async () => {
    const dir = await inputs({
      'providers.yaml': `${core('  version: v1.8.0\n')}---\n${dockerProvider('  version: v1.8.0\n  manager:\n    featureGates:\n      MachinePool: false\n')}---\n${DOCKER_VARIABLES}`,
    });
    const out = await tempDir();
    const first = await render(dir, out);
    expect(first.stderr).toBe('');
    expect(first.report.withheld).toEqual([]);
    const tree = await readTree(path.join(out, 'current'));
    const files = new Map(Object.entries(tree));
    const infra = 'management/providers/infrastructureprovider-docker';
    const coreDir = 'management/providers/coreprovider-cluster-api';
    for (const built of [coreDir, infra, 'management/providers', 'management'])
      expect(kustomizeBuild(files, built).length).toBeGreaterThan(0);
    const objects = kustomizeBuild(files, infra);
    const settings = objects.find((o) => o.kind === 'ConfigMap')!;
    expect(settings.data).toEqual({ dockerHost: 'unix:///var/run/docker.sock', price: '$5' });
    expect(settings.metadata.labels).toEqual({
      'cluster.x-k8s.io/provider': 'infrastructure-docker',
      'clusterctl.cluster.x-k8s.io': '',
    });
    const deployment = objects.find((o) => o.kind === 'Deployment')!;
    expect(deployment.spec.template.spec.containers[0].args).toEqual([
      '--leader-elect',
      '--v=2',
      '--feature-gates=MachinePool=false',
    ]);
    const crd = kustomizeBuild(files, coreDir).find((o) => o.metadata.name === 'clusters.cluster.x-k8s.io')!;
    expect(crd.metadata.annotations).toMatchObject({
      'kustomize.toolkit.fluxcd.io/prune': 'disabled',
      'argocd.argoproj.io/sync-options': 'Prune=false',
    });
    expect(kustomizeBuild(files, coreDir).find((o) => o.kind === 'Namespace')!.metadata.annotations).toMatchObject({
      'kustomize.toolkit.fluxcd.io/prune': 'disabled',
    });
    const provenance = JSON.parse(tree['provenance.json']!);
    expect(provenance.providers.map((p: any) => [p.dir, p.version, p.contract, p.source])).toEqual([
      [coreDir, 'v1.8.0', 'v1beta1', 'github:kubernetes-sigs/cluster-api'],
      [infra, 'v1.8.0', 'v1beta1', 'github:kubernetes-sigs/cluster-api-provider-docker'],
    ]);
    expect(provenance.providers[1].kinds).toEqual(['infrastructure.cluster.x-k8s.io/DockerClusterTemplate']);
    expect(tree['README.md']).toContain(
      '| InfrastructureProvider capd-system/docker | v1.8.0 | v1beta1 | github:kubernetes-sigs/cluster-api-provider-docker | `management/providers/infrastructureprovider-docker/` |',
    );
    // The secret's value is in the rendered ConfigMap (the components ask for it) but never in the report.
    expect(first.stdout).not.toContain('docker.sock');

    const again = await render(dir, out);
    expect(again.report.changed).toBe(false);
  });

  it('records no digest of Secret values in provenance.json: two renders differing only in a secret value record the same', async () => {
    const provenanceWith = async (value: string): Promise<string> => {
      const out = await tempDir();
      const dir = await inputs({
        'p.yaml': `${core('  version: v1.8.0\n')}---\n${dockerProvider('  version: v1.8.0\n')}---\n${DOCKER_VARIABLES}  UNUSED_TOKEN: ${value}\n`,
      });
      expect((await render(dir, out)).code).toBe(0);
      return (await readTree(path.join(out, 'current')))['provenance.json']!;
    };
    const first = await provenanceWith('hunter2');
    expect(first).toContain('"name": "docker-variables"');
    expect(await provenanceWith('correct-horse')).toBe(first);
  });

  it('withholds a provider whose variable has no value and no default, naming it; the others render and its previous output stays', async () => {
    const out = await tempDir();
    const good = await inputs({
      'p.yaml': `${core('  version: v1.8.0\n')}---\n${dockerProvider('  version: v1.8.0\n')}---\n${DOCKER_VARIABLES}`,
    });
    expect((await render(good, out)).code).toBe(0);
    const before = await readTree(path.join(out, 'current'));
    const missing = await inputs({
      'p.yaml': `${core('  version: v1.8.0\n')}---\n${dockerProvider('  version: v1.9.0\n')}---\n${DOCKER_VARIABLES.replace('DOCKER_HOST', 'OTHER')}`,
    });
    const result = await render(missing, out);
    expect(result.code).toBe(0);
    expect(result.report.withheld).toEqual([
      expect.objectContaining({
        kind: 'provider',
        namespace: 'capd-system',
        name: 'InfrastructureProvider/docker',
        previousOutputKept: true,
        reason: expect.stringContaining(
          'needs variable DOCKER_HOST, which has no value and no default; set it in the Secret spec.configSecret names (docker-variables)',
        ),
      }),
    ]);
    const after = await readTree(path.join(out, 'current'));
    for (const [file, text] of Object.entries(before))
      if (file.startsWith('management/providers/')) expect(after[file]).toBe(text);
    expect(JSON.parse(after['provenance.json']!).providers[1].version).toBe('v1.8.0');
  });

  it('upgrades, refuses a downgrade unless annotated, and refuses a contract other than the core one, writing nothing', async () => {
    const out = await tempDir();
    const at = (version: string, metadata = '') =>
      inputs({
        'p.yaml': `${core('  version: v1.8.0\n')}---\n${dockerProvider(`  version: ${version}\n`, metadata)}---\n${DOCKER_VARIABLES}`,
      });
    expect((await render(await at('v1.8.0'), out)).code).toBe(0);
    const upgraded = await render(await at('v1.9.0'), out);
    expect(upgraded.report.changed).toBe(true);
    expect(upgraded.report.summary).toBe('Render cluster stacks: 1 provider changed');
    const published = await readTree(path.join(out, 'current'));
    expect(
      published['management/providers/infrastructureprovider-docker/deployment-capd-controller-manager.yaml'],
    ).toContain('capd-manager:v1.9.0');

    const downgrade = await render(await at('v1.8.0'), out);
    expect(downgrade.code).toBe(1);
    expect(downgrade.stderr).toContain(
      'InfrastructureProvider capd-system/docker spec.version: v1.8.0 is lower than v1.9.0, which is published',
    );
    expect(downgrade.stderr).toContain('clusterstack.x-k8s.io/allow-downgrade: "true"');
    expect(await readTree(path.join(out, 'current'))).toEqual(published);
    const allowed = await render(
      await at('v1.8.0', '  annotations:\n    clusterstack.x-k8s.io/allow-downgrade: "true"\n'),
      out,
    );
    expect(allowed.code).toBe(0);

    const mismatch = await render(await at('v2.0.0'), out);
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toContain(
      'InfrastructureProvider capd-system/docker: v2.0.0 implements Cluster API contract v1beta2, but CoreProvider capi-system/cluster-api v1.8.0 implements v1beta1',
    );
  });

  it('refuses a release missing an asset, a metadata.yaml without the version series, and names a components file that is not YAML', async () => {
    const out = await tempDir();
    const at = (version: string) =>
      inputs({
        'p.yaml': `${core('  version: v1.8.0\n')}---\n${dockerProvider(`  version: ${version}\n`)}---\n${DOCKER_VARIABLES}`,
      });
    const missingAsset = await render(await at('v1.9.1'), out);
    expect(missingAsset.code).toBe(1);
    expect(missingAsset.stderr).toContain(
      'release v1.9.1 of github:kubernetes-sigs/cluster-api-provider-docker has no infrastructure-components.yaml asset',
    );
    const noSeries = await render(await at('v1.10.0'), out);
    expect(noSeries.code).toBe(1);
    expect(noSeries.stderr).toContain('has no releaseSeries entry for 1.10 (version v1.10.0); it lists 1.8, 1.9');
    expect(await readTree(out)).toEqual({});
    const notYaml = await render(await at('v1.9.2'), out);
    expect(notYaml.code).toBe(0);
    expect(notYaml.report.withheld[0].reason).toContain('infrastructure-components.yaml is not valid YAML');
  });

  it('plan lists each provider with its version, contract and source', async () => {
    const dir = await inputs({
      'p.yaml': `${core('')}---\n${dockerProvider('  version: v1.8.0\n')}---\n${DOCKER_VARIABLES}`,
    });
    const json = await runClusterstack(['plan', dir, '--release-source', EXAMPLE_RELEASES, '--json'], { env });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).providers).toEqual([
      {
        kind: 'CoreProvider',
        namespace: 'capi-system',
        name: 'cluster-api',
        version: 'v1.9.0',
        pinned: false,
        contract: 'v1beta1',
        source: 'github:kubernetes-sigs/cluster-api',
        problems: [],
      },
      {
        kind: 'InfrastructureProvider',
        namespace: 'capd-system',
        name: 'docker',
        version: 'v1.8.0',
        pinned: true,
        contract: 'v1beta1',
        source: 'github:kubernetes-sigs/cluster-api-provider-docker',
        problems: [],
      },
    ]);
    const text = await runClusterstack(['plan', dir, '--release-source', EXAMPLE_RELEASES], { env });
    expect(text.stdout).toMatch(
      /CoreProvider capi-system\/cluster-api\s+v1\.9\.0 \(newest; kept once published\)\s+v1beta1\s+github:kubernetes-sigs\/cluster-api/,
    );
  });

  it('refuses bad provider specs before anything is fetched or written', async () => {
    const out = await tempDir();
    const twoSources = await inputs({
      'p.yaml': core('    oci: registry.example.com/capi:v1.8.0\n  version: v1.8.0\n'),
    });
    const result = await render(twoSources, out);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'CoreProvider capi-system/cluster-api spec.fetchConfig: sets url and oci; set exactly one of url, oci or selector',
    );
    const noCore = await render(
      await inputs({ 'p.yaml': `${dockerProvider('  version: v1.8.0\n')}---\n${DOCKER_VARIABLES}` }),
      out,
    );
    expect(noCore.code).toBe(1);
    expect(noCore.stderr).toContain('no CoreProvider');
    const twice = await render(
      await inputs({
        'a.yaml': core('  version: v1.8.0\n'),
        'b.yaml': core('  version: v1.9.0\n').replace('namespace: capi-system', 'namespace: other'),
      }),
      out,
    );
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('2 CoreProviders');
    expect(await readTree(out)).toEqual({});
  });

  it('resolves a missing version to the newest release once and keeps it (the lock), never writing into the input', async () => {
    const out = await tempDir();
    const dir = await inputs({ 'p.yaml': `${core('')}` });
    const before = await readFile(path.join(dir, 'p.yaml'), 'utf8');
    const first = await render(dir, out);
    expect(first.code).toBe(0);
    const provenance = () =>
      readTree(path.join(out, 'current')).then((tree) => JSON.parse(tree['provenance.json']!).providers[0]);
    expect(await provenance()).toMatchObject({ version: 'v1.9.0', pinned: false });
    addProviderRelease(github, 'core', 'v2.0.0');
    const second = await render(dir, out);
    expect(second.report.changed).toBe(false);
    expect(await provenance()).toMatchObject({ version: 'v1.9.0' });
    expect(await readFile(path.join(dir, 'p.yaml'), 'utf8')).toBe(before);
  });

  it('refuses removing a provider whose kinds rendered ClusterClasses or Clusters still use', async () => {
    const out = await tempDir();
    const stacks = await readFile(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8');
    const clusters = await readFile(path.join(EXAMPLE_MANIFESTS, 'clusters.yaml'), 'utf8');
    const withCore = await inputs({
      'stack.yaml': stacks,
      'clusters.yaml': clusters,
      'p.yaml': core('  version: v1.8.0\n'),
    });
    expect((await render(withCore, out)).code).toBe(0);
    const without = await inputs({ 'stack.yaml': stacks, 'clusters.yaml': clusters });
    const removed = await render(without, out);
    expect(removed.code).toBe(1);
    expect(removed.stderr).toContain(
      'CoreProvider capi-system/cluster-api: would be removed, but its kinds are still used by Cluster cluster-stacks/alpha (Cluster)',
    );
    expect(removed.stderr).toContain('(ClusterClass)');
  });

  it('wires providers for Flux: core first, the others after it, releases after all providers', async () => {
    const out = await tempDir();
    const dir = await inputs({
      'stack.yaml': await readFile(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8'),
      'p.yaml': `${core('  version: v1.8.0\n')}---\n${dockerProvider('  version: v1.8.0\n')}---\n${DOCKER_VARIABLES}`,
    });
    expect((await render(dir, out, '--gitops', 'flux', '--gitops-url', 'https://git.example.com/fleet.git')).code).toBe(
      0,
    );
    const files = new Map(Object.entries(await readTree(path.join(out, 'current'))));
    const wiring = kustomizeBuild(files, 'flux');
    const byName = new Map(wiring.map((o) => [o.metadata.name, o]));
    expect(byName.get('provider-coreprovider-cluster-api')!.spec).toMatchObject({
      path: './management/providers/coreprovider-cluster-api',
      prune: true,
      wait: true,
    });
    expect(byName.get('provider-coreprovider-cluster-api')!.spec.dependsOn).toBeUndefined();
    expect(byName.get('provider-infrastructureprovider-docker')!.spec.dependsOn).toEqual([
      { name: 'provider-coreprovider-cluster-api' },
    ]);
    const release = wiring.find(
      (o) => o.spec?.path?.startsWith('./management/cluster-stacks/') && !o.spec.path.endsWith('/shared'),
    )!;
    // The namespace's shared objects (node images) first, then every provider.
    expect(release.spec.dependsOn).toEqual([
      { name: 'cluster-stacks-shared' },
      { name: 'provider-coreprovider-cluster-api' },
      { name: 'provider-infrastructureprovider-docker' },
    ]);
  });

  it('wires providers for Argo CD: sync waves of the root put core first, the others next, releases last', async () => {
    const out = await tempDir();
    const dir = await inputs({
      'stack.yaml': await readFile(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8'),
      'p.yaml': `${core('  version: v1.8.0\n')}---\n${dockerProvider('  version: v1.8.0\n')}---\n${DOCKER_VARIABLES}`,
    });
    expect(
      (await render(dir, out, '--gitops', 'argocd', '--gitops-url', 'https://git.example.com/fleet.git')).code,
    ).toBe(0);
    const files = new Map(Object.entries(await readTree(path.join(out, 'current'))));
    const apps = new Map(kustomizeBuild(files, 'argocd').map((o) => [o.metadata.name, o]));
    const wave = (name: string): string | undefined =>
      apps.get(name)?.metadata.annotations?.['argocd.argoproj.io/sync-wave'];
    expect(wave('provider-coreprovider-cluster-api')).toBe('-20');
    expect(wave('provider-infrastructureprovider-docker')).toBe('-10');
    expect(apps.get('provider-infrastructureprovider-docker')!.spec).toMatchObject({
      source: { path: 'management/providers/infrastructureprovider-docker' },
      destination: { namespace: 'capd-system' },
      syncPolicy: { automated: { prune: true } },
    });
    const release = [...apps.values()].find((o) => o.spec.source.path.startsWith('management/cluster-stacks/'))!;
    expect(release.metadata.annotations?.['argocd.argoproj.io/sync-wave']).toBeUndefined();
  });

  it('reads selector ConfigMaps from the inputs, version from their label, gzip-compressed components as annotated', async () => {
    const out = await tempDir();
    const components = gzipSync(providerFixture('core', 'v1.9.0', 'core-components.yaml')).toString('base64');
    const configMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: core-cluster-api-v1.9.0
  namespace: capi-system
  labels:
    provider.cluster.x-k8s.io/name: cluster-api
    provider.cluster.x-k8s.io/version: v1.9.0
  annotations:
    provider.cluster.x-k8s.io/compressed: "true"
data:
  metadata: |
${providerFixture('core', 'v1.9.0', 'metadata.yaml').replace(/^/gm, '    ')}
binaryData:
  components: ${components}
`;
    const provider = `apiVersion: operator.cluster.x-k8s.io/v1alpha2
kind: CoreProvider
metadata:
  name: cluster-api
  namespace: capi-system
spec:
  fetchConfig:
    selector:
      matchLabels:
        provider.cluster.x-k8s.io/name: cluster-api
`;
    const result = await render(await inputs({ 'p.yaml': provider, 'cm.yaml': configMap }), out);
    expect(result.stderr).toBe('');
    const tree = await readTree(path.join(out, 'current'));
    expect(JSON.parse(tree['provenance.json']!).providers[0]).toMatchObject({
      version: 'v1.9.0',
      source: 'ConfigMap capi-system/core-cluster-api-v1.9.0',
    });
    expect(tree['management/providers/coreprovider-cluster-api/deployment-capi-controller-manager.yaml']).toContain(
      'cluster-api-controller:v1.9.0',
    );
  });
});

describe('clusterstack render with a provider from an OCI registry', () => {
  let registry: TestRegistry;
  beforeAll(async () => {
    registry = await startRegistry();
  });
  afterAll(async () => {
    await registry.stop();
  });

  it("fetches the operator's layout (<type>-components.yaml, tag from the version) and renders it", async () => {
    const client = new RegistryClient({ registry: registry.host, plainHttp: true });
    await pushArtifact(client, {
      repository: 'capi/core',
      tag: 'v1.8.0',
      artifactType: 'application/vnd.acme.provider.v1',
      files: [
        { name: 'metadata.yaml', content: Buffer.from(providerFixture('core', 'v1.8.0', 'metadata.yaml')) },
        {
          name: 'core-components.yaml',
          content: Buffer.from(providerFixture('core', 'v1.8.0', 'core-components.yaml')),
        },
      ],
    });
    const provider = `apiVersion: operator.cluster.x-k8s.io/v1alpha2
kind: CoreProvider
metadata:
  name: cluster-api
  namespace: capi-system
spec:
  version: v1.8.0
  fetchConfig:
    oci: http://${registry.host}/capi/core
`;
    const out = await tempDir();
    const dir = await writeTree({ 'p.yaml': provider });
    const cache = await mkdtemp(path.join(os.tmpdir(), 'csk-providers-oci-'));
    const result = await runClusterstack(
      ['render', dir, '--release-source', EXAMPLE_RELEASES, '--output', out, '--json'],
      { env: { CLUSTERSTACK_CACHE_DIR: cache } },
    );
    expect(result.stderr).toBe('');
    const tree = await readTree(path.join(out, 'current'));
    expect(JSON.parse(tree['provenance.json']!).providers[0]).toMatchObject({
      version: 'v1.8.0',
      contract: 'v1beta1',
      source: `oci://${registry.host}/capi/core`,
    });
    const deployment = decodeYamlDocuments(
      tree['management/providers/coreprovider-cluster-api/deployment-capi-controller-manager.yaml']!,
    )[0]!.value as any;
    expect(deployment.spec.template.spec.containers[0].args).toContain(
      '--feature-gates=MachinePool=true,ClusterTopology=false',
    );
  });
});
