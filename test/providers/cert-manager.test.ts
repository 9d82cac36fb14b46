// cert-manager as the providers' prerequisite, end to end through `clusterstack render`: declared on
// the CoreProvider with clusterctl's two fields (version, url), fetched from a (fake) GitHub release
// asset or a local file, rendered into management/providers/cert-manager/ (CRDs never pruned), wired
// first (Flux: the providers depend on it and it waits for cert-manager's Deployments, the webhook
// among them; Argo CD: an earlier sync wave), and every bad declaration refused by name.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certManagerLocation } from '../../src/providers/provider-fetcher.js';
import { kustomizeBuild } from '../support/engine-schemas/kustomize-build.js';
import { startFakeGitHub, type FakeGitHub } from '../support/fake-github/index.js';
import { addProviderRelease, dockerProviderWithVariables, providerFixture } from '../support/provider-fixtures.js';
import { EXAMPLE_RELEASES, readTree, runClusterstack, tempDir, writeTree } from '../support/cli.js';

const CERT_MANAGER_DIR = 'management/providers/cert-manager';

function core(annotations: Record<string, string>, extra = ''): string {
  const lines = Object.entries(annotations)
    .map(([key, value]) => `    ${key}: ${JSON.stringify(value)}\n`)
    .join('');
  return `apiVersion: operator.cluster.x-k8s.io/v1alpha2
kind: CoreProvider
metadata:
  name: cluster-api
  namespace: capi-system
${lines ? `  annotations:\n${lines}` : ''}${extra}spec:
  version: v1.8.0
  fetchConfig:
    url: https://github.com/kubernetes-sigs/cluster-api/releases
`;
}

const DOCKER = dockerProviderWithVariables('v1.8.0');

const VERSION = 'clusterstack.x-k8s.io/cert-manager-version';
const URL_ANNOTATION = 'clusterstack.x-k8s.io/cert-manager-url';

describe('cert-manager as the providers prerequisite', () => {
  let github: FakeGitHub;
  let env: NodeJS.ProcessEnv;
  const assetIds = new Map<string, number>();
  beforeAll(async () => {
    github = await startFakeGitHub();
    addProviderRelease(github, 'core', 'v1.8.0');
    addProviderRelease(github, 'infrastructure', 'v1.8.0');
    for (const version of ['v1.15.0', 'v1.16.2']) {
      // Real cert-manager releases carry more assets (the CRDs alone, the chart): only cert-manager.yaml is downloaded.
      const release = github.addRelease('cert-manager', 'cert-manager', {
        tag: version,
        assets: [
          { name: 'cert-manager.yaml', content: providerFixture('cert-manager', version, 'cert-manager.yaml') },
          { name: 'cert-manager.crds.yaml', content: 'not needed\n' },
        ],
      });
      for (const asset of release.assets) assetIds.set(`${version}/${asset.name}`, asset.id);
    }
    github.addRelease('cert-manager', 'cert-manager', {
      tag: 'v1.16.3',
      assets: [{ name: 'cert-manager.crds.yaml', content: 'only the CRDs\n' }],
    });
    github.addRelease('cert-manager', 'cert-manager', {
      tag: 'v1.16.4',
      assets: [{ name: 'cert-manager.yaml', content: 'kind: [unclosed\n' }],
    });
    env = {
      GITHUB_API_URL: github.apiUrl,
      CLUSTERSTACK_CACHE_DIR: await mkdtemp(path.join(os.tmpdir(), 'csk-cert-manager-')),
    };
  });
  afterAll(async () => {
    await github.close();
  });

  async function render(files: Record<string, string>, out: string, ...extra: string[]) {
    const dir = await writeTree(files);
    const result = await runClusterstack(
      ['render', dir, '--release-source', EXAMPLE_RELEASES, '--output', out, '--json', ...extra],
      { env },
    );
    return { ...result, report: result.code === 0 ? JSON.parse(result.stdout) : undefined };
  }

  it('renders cert-manager.yaml of the declared release into management/providers/cert-manager/ and wires it first for Flux', async () => {
    const out = await tempDir();
    github.clearRequests();
    const result = await render(
      { 'p.yaml': `${core({ [VERSION]: 'v1.16.2' })}---\n${DOCKER}` },
      out,
      '--gitops',
      'flux',
      '--gitops-url',
      'https://git.example.com/fleet.git',
      // A cache of its own: the downloads asked below are not already cached by another test of this file.
      '--cache-dir',
      await tempDir('csk-cert-manager-cache-'),
    );
    expect(result.stderr).toBe('');
    expect(result.report.withheld).toEqual([]);
    // Only the asset named (clusterctl's default URL), not the release's other assets.
    const asked = (id: number | undefined) =>
      github.requests.some((request) => request.path.endsWith(`/releases/assets/${id}`));
    expect(asked(assetIds.get('v1.16.2/cert-manager.yaml'))).toBe(true);
    expect(asked(assetIds.get('v1.16.2/cert-manager.crds.yaml'))).toBe(false);
    const tree = await readTree(path.join(out, 'current'));
    const files = new Map(Object.entries(tree));
    const objects = kustomizeBuild(files, CERT_MANAGER_DIR);
    expect(
      objects
        .filter((o) => o.kind === 'Deployment')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['cert-manager', 'cert-manager-cainjector', 'cert-manager-webhook']);
    expect(
      objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'cert-manager-webhook')!.spec.template.spec
        .containers[0].image,
    ).toBe('quay.io/jetstack/cert-manager-webhook:v1.16.2');
    // Unchanged otherwise: the leader-election Role stays in kube-system, namespaces as published.
    expect(objects.find((o) => o.kind === 'Role')!.metadata.namespace).toBe('kube-system');
    const crd = objects.find((o) => o.kind === 'CustomResourceDefinition')!;
    expect(crd.metadata.annotations).toMatchObject({
      'kustomize.toolkit.fluxcd.io/prune': 'disabled',
      'argocd.argoproj.io/sync-options': 'Prune=false',
    });
    expect(objects.find((o) => o.kind === 'Namespace')!.metadata.annotations).toMatchObject({
      'kustomize.toolkit.fluxcd.io/prune': 'disabled',
    });
    expect(kustomizeBuild(files, 'management/providers').length).toBeGreaterThan(objects.length);

    const record = JSON.parse(tree['provenance.json']!).providers.find(
      (p: { dir: string }) => p.dir === CERT_MANAGER_DIR,
    );
    expect(record).toMatchObject({
      kind: 'CertManager',
      name: 'cert-manager',
      version: 'v1.16.2',
      source: 'github:cert-manager/cert-manager cert-manager.yaml',
      kinds: ['cert-manager.io/Certificate'],
    });

    const wiring = new Map(kustomizeBuild(files, 'flux').map((o) => [o.metadata.name, o]));
    const certManager = wiring.get('provider-cert-manager')!;
    expect(certManager.spec).toMatchObject({ path: './management/providers/cert-manager', prune: true, wait: false });
    expect(certManager.spec.dependsOn).toBeUndefined();
    expect(certManager.spec.healthChecks).toContainEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: 'cert-manager',
      name: 'cert-manager-webhook',
    });
    expect(certManager.spec.healthChecks).toContainEqual({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      name: 'certificates.cert-manager.io',
    });
    expect(wiring.get('provider-coreprovider-cluster-api')!.spec.dependsOn).toEqual([
      { name: 'provider-cert-manager' },
    ]);
    expect(wiring.get('provider-infrastructureprovider-docker')!.spec.dependsOn).toEqual([
      { name: 'provider-cert-manager' },
      { name: 'provider-coreprovider-cluster-api' },
    ]);

    const again = await render(
      { 'p.yaml': `${core({ [VERSION]: 'v1.16.2' })}---\n${DOCKER}` },
      out,
      '--gitops',
      'flux',
      '--gitops-url',
      'https://git.example.com/fleet.git',
    );
    expect(again.report.changed).toBe(false);
  });

  it('puts cert-manager in an Argo CD sync wave before the core provider', async () => {
    const out = await tempDir();
    const result = await render(
      {
        'p.yaml': `${core({ [URL_ANNOTATION]: 'https://github.com/cert-manager/cert-manager/releases/download/v1.16.2/cert-manager.yaml' })}---\n${DOCKER}`,
      },
      out,
      '--gitops',
      'argocd',
      '--gitops-url',
      'https://git.example.com/fleet.git',
    );
    expect(result.code).toBe(0);
    const files = new Map(Object.entries(await readTree(path.join(out, 'current'))));
    const apps = new Map(kustomizeBuild(files, 'argocd').map((o) => [o.metadata.name, o]));
    const wave = (name: string): number => Number(apps.get(name)!.metadata.annotations['argocd.argoproj.io/sync-wave']);
    expect(wave('provider-cert-manager')).toBeLessThan(wave('provider-coreprovider-cluster-api'));
    expect(wave('provider-coreprovider-cluster-api')).toBeLessThan(wave('provider-infrastructureprovider-docker'));
    expect(apps.get('provider-cert-manager')!.spec).toMatchObject({
      source: { path: 'management/providers/cert-manager' },
      destination: { namespace: 'cert-manager' },
    });
  });

  it('upgrades cert-manager, refuses a downgrade unless annotated, and reads a local file with "latest" replaced by the version', async () => {
    const out = await tempDir();
    expect((await render({ 'p.yaml': `${core({ [VERSION]: 'v1.15.0' })}---\n${DOCKER}` }, out)).code).toBe(0);
    const upgraded = await render({ 'p.yaml': `${core({ [VERSION]: 'v1.16.2' })}---\n${DOCKER}` }, out);
    expect(upgraded.report.changed).toBe(true);
    const published = await readTree(path.join(out, 'current'));
    expect(published[`${CERT_MANAGER_DIR}/deployment-cert-manager-webhook.yaml`]).toContain(
      'cert-manager-webhook:v1.16.2',
    );
    const downgrade = await render({ 'p.yaml': `${core({ [VERSION]: 'v1.15.0' })}---\n${DOCKER}` }, out);
    expect(downgrade.code).toBe(1);
    expect(downgrade.stderr).toContain(
      'cert-manager metadata.annotations[clusterstack.x-k8s.io/cert-manager-version]: v1.15.0 is lower than v1.16.2, which is published',
    );
    expect(await readTree(path.join(out, 'current'))).toEqual(published);

    // clusterctl's local repository layout: <dir>/cert-manager/latest/cert-manager.yaml, "latest" the version.
    const local = await writeTree({
      'cert-manager/v1.15.0/cert-manager.yaml': providerFixture('cert-manager', 'v1.15.0', 'cert-manager.yaml'),
    });
    const allowed = await render(
      {
        'p.yaml': `${core({ [VERSION]: 'v1.15.0', [URL_ANNOTATION]: `file://${local}/cert-manager/latest/cert-manager.yaml`, 'clusterstack.x-k8s.io/allow-downgrade': 'true' })}---\n${DOCKER}`,
      },
      out,
    );
    expect(allowed.code).toBe(0);
    const tree = await readTree(path.join(out, 'current'));
    expect(tree[`${CERT_MANAGER_DIR}/deployment-cert-manager-webhook.yaml`]).toContain('cert-manager-webhook:v1.15.0');
    expect(
      JSON.parse(tree['provenance.json']!).providers.find((p: { dir: string }) => p.dir === CERT_MANAGER_DIR).source,
    ).toBe(path.join(local, 'cert-manager/v1.15.0/cert-manager.yaml'));
  });

  it('refuses an unknown version, a missing asset and a missing file by name, writing nothing; withholds components that are not YAML alone', async () => {
    const out = await tempDir();
    const unknown = await render({ 'p.yaml': `${core({ [VERSION]: 'v9.9.9' })}---\n${DOCKER}` }, out);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('release v9.9.9 is not in cert-manager/cert-manager');
    const missingAsset = await render({ 'p.yaml': `${core({ [VERSION]: 'v1.16.3' })}---\n${DOCKER}` }, out);
    expect(missingAsset.code).toBe(1);
    expect(missingAsset.stderr).toContain(
      'release v1.16.3 in cert-manager/cert-manager has no cert-manager.yaml asset',
    );
    const noFile = await render(
      {
        'p.yaml': `${core({ [VERSION]: 'v1.16.2', [URL_ANNOTATION]: '/nonexistent/cert-manager/latest/cert-manager.yaml' })}---\n${DOCKER}`,
      },
      out,
    );
    expect(noFile.code).toBe(1);
    expect(noFile.stderr).toContain('there is no file /nonexistent/cert-manager/v1.16.2/cert-manager.yaml');
    const notSemver = await render({ 'p.yaml': `${core({ [VERSION]: 'one-sixteen' })}---\n${DOCKER}` }, out);
    expect(notSemver.code).toBe(1);
    expect(notSemver.stderr).toContain('version "one-sixteen" is not a semantic version');
    expect(await readTree(out)).toEqual({});

    const notYaml = await render({ 'p.yaml': `${core({ [VERSION]: 'v1.16.4' })}---\n${DOCKER}` }, out);
    expect(notYaml.code).toBe(0);
    expect(notYaml.report.withheld).toEqual([
      expect.objectContaining({
        kind: 'provider',
        name: 'CertManager/cert-manager',
        previousOutputKept: false,
        reason: expect.stringContaining('is not valid YAML'),
      }),
    ]);
    const tree = await readTree(path.join(out, 'current'));
    expect(Object.keys(tree).some((file) => file.startsWith(`${CERT_MANAGER_DIR}/`))).toBe(false);
    expect(Object.keys(tree)).toContain(
      'management/providers/coreprovider-cluster-api/deployment-capi-controller-manager.yaml',
    );
  });

  it('reads clusterctl URL forms: latest replaced by the version, a tag in the URL, GitHub Enterprise hosts', () => {
    const hosts = ['github.com', 'git.example.com'];
    expect(
      certManagerLocation(
        'https://github.com/cert-manager/cert-manager/releases/latest/cert-manager.yaml',
        'v1.16.2',
        hosts,
      ),
    ).toEqual({
      version: 'v1.16.2',
      location: {
        kind: 'github',
        owner: 'cert-manager',
        repo: 'cert-manager',
        tag: 'v1.16.2',
        asset: 'cert-manager.yaml',
      },
    });
    expect(
      certManagerLocation(
        'https://git.example.com/mirror/cm/releases/download/v1.15.0/cert-manager.yaml',
        undefined,
        hosts,
      ).location,
    ).toMatchObject({ owner: 'mirror', repo: 'cm', tag: 'v1.15.0' });
    expect(() =>
      certManagerLocation(
        'https://github.com/cert-manager/cert-manager/releases/latest/cert-manager.yaml',
        undefined,
        hosts,
      ),
    ).toThrow('no version is given');
    expect(() =>
      certManagerLocation(
        'https://github.com/cert-manager/cert-manager/releases/download/v1.15.0/cert-manager.yaml',
        'v1.16.2',
        hosts,
      ),
    ).toThrow('names release v1.15.0, but the version says v1.16.2');
    expect(() => certManagerLocation('https://example.org/cert-manager.yaml', 'v1.16.2', hosts)).toThrow(
      'only GitHub release assets',
    );
    expect(() => certManagerLocation('relative/cert-manager.yaml', 'v1.16.2', hosts)).toThrow(
      'neither a URL nor an absolute path',
    );
  });
});
