// Every object we render and every example we ship, validated by a real kube-apiserver against
// the real CRDs of its kind (Cluster API core, kubeadm bootstrap and control plane, the Docker
// provider, cluster-api-operator, Flux, Argo CD, and ours): server-side apply, dry run, strict
// field validation, as Flux applies. Kinds the server has no CRD or built-in type for (openMCP's
// API is not served by the Go module proxy) are listed as unchecked, never counted as passing.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClusterstack, tempDir, writeTree } from './support/cli.js';
import {
  describeVerdicts,
  documentsOfFiles,
  engineCrdFiles,
  installCrds,
  startRealKubeApi,
  validateOnServer,
  type ObjectVerdict,
  type RealKubeApi,
} from './support/real-kube-api/index.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CRD_ENGINES = ['cluster-api', 'cluster-api-docker', 'cluster-api-operator', 'source-controller', 'kustomize-controller', 'argo-cd'];

/** YAML files under `dir` (sorted), skipping kustomize's own kustomization.yaml, which is configuration, not an object. */
function yamlFiles(dir: string, skipDir: (relative: string) => boolean = () => false): string[] {
  const found: string[] = [];
  const walk = (current: string): void => {
    for (const entry of readdirSync(current).sort()) {
      const full = path.join(current, entry);
      if (statSync(full).isDirectory()) {
        if (!skipDir(path.relative(dir, full))) walk(full);
      } else if (/\.ya?ml$/.test(entry) && entry !== 'kustomization.yaml') found.push(full);
    }
  };
  walk(dir);
  return found;
}

describe('strict server-side validation on a real API server', () => {
  let api: RealKubeApi | undefined;

  beforeAll(async () => {
    api = await startRealKubeApi({ name: 'validation' });
    const ours = yamlFiles(path.join(ROOT, 'crds'));
    await installCrds(api, [...ours, ...CRD_ENGINES.flatMap((engine) => engineCrdFiles(engine))]);
  }, 240_000);

  afterAll(async () => {
    await api?.stop();
  });

  /** Validates the files (labelled relative to `base`), prints every verdict, and returns them. */
  async function validate(title: string, base: string, files: string[]): Promise<ObjectVerdict[]> {
    const verdicts = await validateOnServer(api!.admin.client, documentsOfFiles(files.map((file) => ({ file, label: path.relative(base, file) }))));
    const unchecked = verdicts.filter((verdict) => verdict.outcome === 'unchecked');
    console.log(`${title}: ${verdicts.length - unchecked.length} objects checked, ${unchecked.length} unchecked\n${describeVerdicts(verdicts)}`);
    return verdicts;
  }

  function refused(verdicts: ObjectVerdict[]): string {
    return describeVerdicts(verdicts.filter((verdict) => verdict.outcome === 'refused'));
  }

  function acceptedKinds(verdicts: ObjectVerdict[]): string[] {
    return [...new Set(verdicts.filter((verdict) => verdict.outcome === 'accepted').map((verdict) => `${verdict.apiVersion} ${verdict.kind}`))].sort();
  }

  async function renderQuickstart(engine: 'flux' | 'argocd'): Promise<string> {
    const out = await tempDir('csk-validate-');
    const result = await runClusterstack(['render', 'examples/quickstart/manifests', '--release-source', 'examples/quickstart/releases', '--output', out,
      '--gitops', engine, '--gitops-url', 'https://git.example.com/platform/fleet.git'], { cwd: ROOT });
    expect(result.code, result.stderr).toBe(0);
    return path.join(out, 'current');
  }

  it('the quick start rendered with the Flux wiring: ClusterClass side, addons and wiring all accepted', async () => {
    const tree = await renderQuickstart('flux');
    const verdicts = await validate('quick start (Flux)', tree, yamlFiles(tree));
    expect(refused(verdicts)).toBe('');
    expect(verdicts.filter((verdict) => verdict.outcome === 'unchecked')).toEqual([]);
    expect(acceptedKinds(verdicts)).toEqual(expect.arrayContaining([
      'cluster.x-k8s.io/v1beta1 ClusterClass',
      'infrastructure.cluster.x-k8s.io/v1beta1 DockerClusterTemplate',
      'infrastructure.cluster.x-k8s.io/v1beta1 DockerMachineTemplate',
      'bootstrap.cluster.x-k8s.io/v1beta1 KubeadmConfigTemplate',
      'controlplane.cluster.x-k8s.io/v1beta1 KubeadmControlPlaneTemplate',
      'source.toolkit.fluxcd.io/v1 GitRepository',
      'kustomize.toolkit.fluxcd.io/v1 Kustomization',
      'apps/v1 DaemonSet',
    ]));
  });

  // The wiring writes Applications only (an app of apps per cluster, gitops/wiring/argocd-wiring.ts):
  // no ApplicationSet or AppProject of ours exists to check, though their CRDs are installed.
  it("the quick start rendered with the Argo CD wiring: our Applications accepted by Argo CD's own CRD", async () => {
    const tree = await renderQuickstart('argocd');
    const verdicts = await validate('quick start (Argo CD)', tree, yamlFiles(tree));
    expect(refused(verdicts)).toBe('');
    expect(verdicts.filter((verdict) => verdict.outcome === 'unchecked')).toEqual([]);
    expect(acceptedKinds(verdicts)).toEqual(expect.arrayContaining(['argoproj.io/v1alpha1 Application', 'cluster.x-k8s.io/v1beta1 ClusterClass']));
  });

  it('the sops-secrets example rendered (Secrets in the clear, as Flux applies them after decrypting) is accepted', async () => {
    const out = await tempDir('csk-validate-');
    const result = await runClusterstack(['render', 'examples/sops-secrets/manifests', '--release-source', 'examples/sops-secrets/releases', '--output', out,
      '--secrets', 'allow', '--gitops', 'flux', '--gitops-url', 'https://git.example.com/platform/fleet.git'], { cwd: ROOT });
    expect(result.code, result.stderr).toBe(0);
    const tree = path.join(out, 'current');
    const verdicts = await validate('sops-secrets example', tree, yamlFiles(tree));
    expect(refused(verdicts)).toBe('');
    expect(acceptedKinds(verdicts)).toEqual(expect.arrayContaining(['v1 Secret', 'cluster.x-k8s.io/v1beta1 ClusterClass']));
  });

  it('the fixture releases rendered (pre-release and hash channels, with a Cluster for the addons) are accepted', async () => {
    const stack = (name: string, channel: string, versions: string[]): string =>
      `apiVersion: clusterstack.x-k8s.io/v1alpha1\nkind: ClusterStack\nmetadata: {name: ${name}, namespace: cluster-stacks}\n` +
      `spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", channel: ${channel}, noProvider: true, versions: [${versions.join(', ')}]}\n`;
    const inputs = await writeTree({
      'stacks.yaml': `${stack('docker-ferrol-1-30-alpha', 'alpha', ['v1-alpha.5', 'v1-alpha.6', 'v1-alpha.10', 'v2-alpha.4'])}---\n${stack('docker-ferrol-1-30-custom', 'custom', ['v0-sha.hipstsw'])}`,
      'cluster.yaml': [
        'apiVersion: cluster.x-k8s.io/v1beta1',
        'kind: Cluster',
        'metadata: {name: echo, namespace: cluster-stacks}',
        'spec:',
        '  clusterNetwork: {pods: {cidrBlocks: [192.168.0.0/16]}, services: {cidrBlocks: [10.128.0.0/12]}}',
        '  controlPlaneEndpoint: {host: 172.18.0.12, port: 6443}',
        '  topology: {class: docker-ferrol-1-30-v1-alpha.10, version: v1.30.2}',
        '',
      ].join('\n'),
    });
    const out = await tempDir('csk-validate-');
    const result = await runClusterstack(['render', inputs, '--release-source', 'test/fixtures/releases', '--output', out, '--gitops', 'flux',
      '--gitops-url', 'https://git.example.com/platform/fleet.git'], { cwd: ROOT });
    expect(result.code, result.stderr).toBe(0);
    const tree = path.join(out, 'current');
    const verdicts = await validate('fixture releases', tree, yamlFiles(tree));
    expect(refused(verdicts)).toBe('');
    expect(verdicts.filter((verdict) => verdict.outcome === 'unchecked')).toEqual([]);
    expect(verdicts.filter((verdict) => verdict.kind === 'ClusterClass' && verdict.outcome === 'accepted')).toHaveLength(5);
    expect(verdicts.some((verdict) => verdict.source.startsWith('clusters/cluster-stacks/echo/') && verdict.outcome === 'accepted')).toBe(true);
  });

  it('the examples we ship as objects (inputs and layer manifests) are accepted, or listed as unchecked', async () => {
    const examples = path.join(ROOT, 'examples');
    // Charts (rendered above and in the other tests), release contents and chart sources are not objects to apply.
    const files = yamlFiles(examples, (relative) => /(^|\/)(releases|chart-sources)$/.test(relative) || existsSync(path.join(examples, relative, 'Chart.yaml')));
    const verdicts = await validate('examples', examples, files);
    expect(refused(verdicts)).toBe('');
    expect(acceptedKinds(verdicts)).toEqual(expect.arrayContaining(['clusterstack.x-k8s.io/v1alpha1 ClusterStack', 'cluster.x-k8s.io/v1beta1 Cluster']));
  });

  it("the controller's manifests (deploy/, each kustomization as kubectl apply -k builds it) are accepted", async () => {
    const built = await tempDir('csk-validate-deploy-');
    const files: string[] = [];
    for (const dir of ['deploy', 'deploy/flux', 'deploy/argocd', 'deploy/namespaced', 'deploy/layers']) {
      const run = spawnSync(process.env.KUBECTL ?? 'kubectl', ['kustomize', path.join(ROOT, dir)], { encoding: 'utf8' });
      expect(run.status, `kubectl kustomize ${dir}: ${run.stderr}`).toBe(0);
      const file = path.join(built, `${dir.replace(/\//g, '-')}.yaml`);
      writeFileSync(file, run.stdout);
      files.push(file);
    }
    const verdicts = await validate('deploy', built, files);
    expect(refused(verdicts)).toBe('');
    expect(acceptedKinds(verdicts)).toEqual(expect.arrayContaining(['apps/v1 Deployment', 'rbac.authorization.k8s.io/v1 ClusterRole', 'v1 ConfigMap']));
  });

  it('refuses what strict validation exists for: the field name the quick start had wrong (jsonPatch) and a field of the wrong type', async () => {
    const classWith = (definition: string): string => [
      'apiVersion: cluster.x-k8s.io/v1beta1',
      'kind: ClusterClass',
      'metadata: {name: negative-control, namespace: default}',
      'spec:',
      '  controlPlane: {ref: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: KubeadmControlPlaneTemplate, name: cp}}',
      '  infrastructure: {ref: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerClusterTemplate, name: infra}}',
      '  patches:',
      '    - name: image',
      '      definitions:',
      '        - selector: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerMachineTemplate, matchResources: {controlPlane: true}}',
      `          ${definition}`,
      '',
    ].join('\n');
    const [wrongName, rightName, wrongType] = await validateOnServer(api!.admin.client, [
      { source: 'jsonPatch', text: classWith('jsonPatch: [{op: add, path: /spec/template/spec/customImage, value: kindest/node}]') },
      { source: 'jsonPatches', text: classWith('jsonPatches: [{op: add, path: /spec/template/spec/customImage, value: kindest/node}]') },
      { source: 'wrong type', text: classWith('jsonPatches: {op: add}') },
    ]);
    expect(wrongName).toMatchObject({ outcome: 'refused' });
    // Server-side apply cannot type an object with an unknown field, so it refuses it outright.
    expect(wrongName!.message).toContain('.spec.patches[0].definitions[0].jsonPatch: field not declared in schema');
    expect(rightName).toMatchObject({ outcome: 'accepted' });
    expect(wrongType).toMatchObject({ outcome: 'refused' });
  });

  describe("our CRDs' rules, evaluated by the server", () => {
    const stack = (spec: Record<string, unknown>, name = 'docker-ferrol-1-30'): Record<string, unknown> => ({
      apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
      kind: 'ClusterStack',
      metadata: { name, namespace: 'default' },
      spec: { provider: 'docker', name: 'ferrol', kubernetesVersion: '1.30', channel: 'stable', noProvider: true, versions: ['v1'], ...spec },
    });
    const create = (body: Record<string, unknown>) => api!.admin.client.request('POST', '/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/default/clusterstacks', { body, query: { fieldValidation: 'Strict' } });

    it('refuses a provider with a dash, a ClusterStack without providerRef or noProvider, and a release name too long for helm', async () => {
      const dash = await create(stack({ provider: 'open-stack' }, 'dash'));
      expect(dash.status).toBe(422);
      expect(dash.body.message).toContain('spec.provider');
      const noProvider = await create(stack({ noProvider: false }, 'no-provider'));
      expect(noProvider.status).toBe(422);
      expect(noProvider.body.message).toContain('providerRef is required unless noProvider is true');
      const long = await create(stack({ provider: 'a'.repeat(25), name: 'b'.repeat(25) }, 'too-long'));
      expect(long.status).toBe(422);
      expect(long.body.message).toContain('53 characters');
    });

    it('refuses a change of an immutable field on a stored ClusterStack', async () => {
      const created = await create(stack({}, 'immutable'));
      expect(created.status, created.text).toBe(201);
      const changed = await api!.admin.client.request('PATCH', '/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/default/clusterstacks/immutable', {
        contentType: 'application/merge-patch+json',
        body: { spec: { channel: 'beta' } },
      });
      expect(changed.status).toBe(422);
      expect(changed.body.message).toContain('spec.channel is immutable');
      const kept = await api!.admin.client.get('/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/default/clusterstacks/immutable');
      expect(kept.spec.channel).toBe('stable');
    });
  });
});
