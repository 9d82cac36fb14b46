// Addon layers end to end: the CLI with real helm, real git, real `kubectl kustomize`, and the
// generated Flux and Argo CD wiring checked against the engines' published schemas.
import { execFileSync } from 'node:child_process';
import { cp, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyExampleReleases, runClusterstack, tempDir, writeTree } from '../support/cli.js';
import { ARGOCD_SCHEMAS } from '../support/engine-schemas/argocd-schemas.js';
import { FLUX_SCHEMAS } from '../support/engine-schemas/flux-schemas.js';
import { KUSTOMIZE_SCHEMAS } from '../support/engine-schemas/kubernetes-schemas.js';
import { kustomizeBuild } from '../support/engine-schemas/kustomize-build.js';
import { kustomizationProblems, parseObject, schemaProblems } from '../support/engine-schemas/wiring-checks.js';
import { GitSandbox } from '../support/git-repos.js';

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

const STACK = ['29', '30']
  .map(
    (minor) => `---
apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-${minor}, namespace: fleet}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.${minor}", noProvider: true, autoSubscribe: false, versions: [v1]}
`,
  )
  .join('');

/** The quick start's releases plus a Kubernetes 1.29 copy of its v1 release. */
async function fleetReleases(): Promise<string> {
  const releases = await copyExampleReleases();
  const from = path.join(releases, 'docker-ferrol-1-30-v1');
  const to = path.join(releases, 'docker-ferrol-1-29-v1');
  await cp(from, to, { recursive: true });
  for (const part of ['cluster-addon', 'cluster-class'])
    await rename(
      path.join(to, `docker-ferrol-1-30-${part}-v1.tgz`),
      path.join(to, `docker-ferrol-1-29-${part}-v1.tgz`),
    );
  await writeFile(
    path.join(to, 'metadata.yaml'),
    'apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\nversions:\n  clusterStack: v1\n  kubernetes: v1.29.8\n  components:\n    clusterAddon: v1\n    nodeImage: v1\n',
  );
  return releases;
}

function cluster(name: string, version: string, labels = '{env: prod}'): string {
  return `---
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: ${name}, namespace: fleet, labels: ${labels}}
spec:
  clusterNetwork: {pods: {cidrBlocks: [10.1.0.0/16]}}
  controlPlaneEndpoint: {host: ${name}.example.test, port: 6443}
  topology: {class: docker-ferrol-1-${version.split('.')[1]}-v1, version: ${version}}
`;
}

function layers(
  options: { baseVersion?: string; appsNeeds?: string; baseHold?: boolean; extra?: string } = {},
): string {
  return `apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata: {name: bootstrap}
spec:
  version: 1.0.0
  interval: 1m
  source: {name: addons, namespace: gotk-system, path: ./addons/bootstrap}
  prereqs: {k8sVersion: "1.29", dependsOn: [cluster-stack]}
  clusterSelector: {}
---
apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata: {name: base}
spec:
  version: ${options.baseVersion ?? '1.2.0'}
  hold: ${options.baseHold ?? false}
  source: {name: addons, namespace: gotk-system, path: ./addons/base}
  prereqs: {dependsOn: [bootstrap@1.0.0]}
  clusterSelector: {matchLabels: {env: prod}}
---
apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata: {name: apps}
spec:
  version: 2.0.0
  source: {path: ./addons/apps}
  prereqs: {k8sVersion: "1.30", dependsOn: [base@${options.appsNeeds ?? '1.2.0'}]}
  clusterSelector: {matchExpressions: [{key: env, operator: In, values: [prod]}]}
  namespace: apps
  values: {replicas: 2}
  valuesTemplate: |
    clusterName: {{ .Cluster.metadata.name }}
    endpoint: {{ .Cluster.spec.controlPlaneEndpoint.host }}
${options.extra ?? ''}`;
}

const ADDONS: Record<string, string> = {
  'addons/bootstrap/namespace.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n',
  'addons/bootstrap/kustomization.yaml': 'resources: [namespace.yaml]\n',
  'addons/base/settings.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base-settings\ndata:\n  mode: "0400"\n  enabled: "yes"\n---\n# kept as written\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: base\n  namespace: kube-system\nautomountServiceAccountToken: no\n',
  'addons/apps/Chart.yaml': 'apiVersion: v2\nname: apps\nversion: 0.1.0\n',
  'addons/apps/values.yaml': 'replicas: 1\nclusterName: unset\n',
  'addons/apps/templates/configmap.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: apps-{{ .Values.clusterName }}\ndata:\n  endpoint: {{ .Values.endpoint | quote }}\n  replicas: {{ .Values.replicas | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n',
};

/** A Git work tree with the stack, three Clusters (one at 1.29), the layers and their sources. */
async function inputRepository(files: Record<string, string> = {}): Promise<string> {
  const repo = await writeTree({
    'manifests/stack.yaml': STACK,
    'manifests/clusters.yaml':
      cluster('one', 'v1.29.8') + cluster('two', 'v1.30.2') + cluster('three', 'v1.30.2', '{env: dev}'),
    'manifests/layers.yaml': layers(),
    ...ADDONS,
    ...files,
  });
  execFileSync('git', ['init', '-q', repo]);
  return repo;
}

async function render(
  repo: string,
  releases: string,
  target: string,
  extra: string[] = [],
): Promise<{ code: number; stderr: string; report: Record<string, any> }> {
  const result = await runClusterstack([
    'render',
    path.join(repo, 'manifests'),
    '--release-source',
    releases,
    '--git',
    target,
    '--json',
    ...extra,
  ]);
  return { code: result.code, stderr: result.stderr, report: result.stdout ? JSON.parse(result.stdout) : {} };
}

const under = (files: Record<string, string>, prefix: string): string[] =>
  Object.keys(files)
    .filter((file) => file.startsWith(prefix))
    .sort();

function treeOf(files: Record<string, string>): Map<string, string> {
  return new Map(Object.entries(files));
}

// Steps of one history on one remote, in order (shuffle: false): the upgrade of the 1.29 Cluster
// comes before the step that holds apps back for base's version alone.
describe('addon layers rendered per Cluster (real helm, git and kustomize)', { shuffle: false }, () => {
  let releases: string;
  let repo: string;
  let remote: string;
  let first: Awaited<ReturnType<typeof render>>;
  let files: Record<string, string>;

  beforeAll(async () => {
    releases = await fleetReleases();
    repo = await inputRepository();
    remote = sandbox.bareRepo('layers');
    first = await render(repo, releases, remote, [
      '--gitops',
      'flux',
      '--gitops-url',
      'https://git.example.test/fleet.git',
    ]);
    if (first.code !== 0) throw new Error(first.stderr);
    files = sandbox.files(remote, 'main');
  });

  it('renders bootstrap, base and apps where selected and gated, and withholds apps on the 1.29 Cluster with the reason', () => {
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(under(files, 'clusters/fleet/two/layers/')).toEqual([
      'clusters/fleet/two/layers/apps/configmap-apps-two.yaml',
      'clusters/fleet/two/layers/apps/kustomization.yaml',
      'clusters/fleet/two/layers/base/configmap-base-settings.yaml',
      'clusters/fleet/two/layers/base/kustomization.yaml',
      'clusters/fleet/two/layers/base/serviceaccount-base.kube-system.yaml',
      'clusters/fleet/two/layers/bootstrap/kustomization.yaml',
      'clusters/fleet/two/layers/bootstrap/namespace-apps.yaml',
    ]);
    expect(under(files, 'clusters/fleet/one/layers/').map((f) => f.split('/')[4])).not.toContain('apps');
    // three is not env=prod: only bootstrap ({} selects every Cluster).
    expect([...new Set(under(files, 'clusters/fleet/three/layers/').map((f) => f.split('/')[4]))]).toEqual([
      'bootstrap',
    ]);
    expect(first.report.withheld).toEqual([
      {
        kind: 'layer',
        namespace: 'fleet',
        name: 'one',
        layer: 'apps',
        reason: 'apps@2.0.0 needs Kubernetes 1.30.0 or newer; the Cluster is at v1.29.8 (spec.topology.version)',
        previousOutputKept: false,
      },
    ]);
    expect(files['README.md']).toContain(
      '| fleet/one | apps | 2.0.0 | withheld | base@1.2.0 | apps@2.0.0 needs Kubernetes 1.30.0 or newer; the Cluster is at v1.29.8 (spec.topology.version) |',
    );
  });

  it('keeps manifest sources as written and puts namespaced objects without a namespace into the layer namespace', () => {
    const text = files['clusters/fleet/two/layers/base/configmap-base-settings.yaml']!;
    expect(text).toBe(
      '# Source: ./addons/base/settings.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: default\n  name: base-settings\ndata:\n  mode: "0400"\n  enabled: "yes"\n',
    );
    // A YAML 1.1 boolean (`no`) is written as Kubernetes reads it, so kustomize reads it alike.
    expect(parseObject(files['clusters/fleet/two/layers/base/serviceaccount-base.kube-system.yaml']!)).toMatchObject({
      metadata: { namespace: 'kube-system' },
      automountServiceAccountToken: false,
    });
    // The chart layer: values template over .Cluster, values on top, --kube-version from the Cluster.
    expect(parseObject(files['clusters/fleet/two/layers/apps/configmap-apps-two.yaml']!)).toMatchObject({
      metadata: { namespace: 'apps' },
      data: { endpoint: 'two.example.test', replicas: '2', kube: 'v1.30.2' },
    });
  });

  it('builds every layer directory with kubectl kustomize, and no cluster kustomization aggregates layers', () => {
    const tree = treeOf(files);
    for (const dir of new Set(
      under(files, 'clusters/')
        .filter((f) => f.includes('/layers/'))
        .map((f) => f.split('/').slice(0, 5).join('/')),
    )) {
      expect(kustomizeBuild(tree, dir).length).toBeGreaterThan(0);
    }
    expect(parseObject(files['clusters/fleet/two/kustomization.yaml']!).resources).toEqual(['cluster-addon']);
  });

  it('wires each layer as one Flux Kustomization for all its versions, after its dependencies, valid against the Flux schema', () => {
    const wiring = new Map(Object.entries(files).filter(([file]) => file.startsWith('flux/')));
    expect(schemaProblems(wiring, [...FLUX_SCHEMAS, ...KUSTOMIZE_SCHEMAS])).toEqual([]);
    expect(kustomizationProblems(wiring)).toEqual([]);
    const apps = parseObject(files['flux/clusters/fleet/two/layers/apps.yaml']!);
    expect(apps.metadata).toMatchObject({
      name: 'two-layer-apps',
      namespace: 'fleet',
      labels: { 'clusterstack.x-k8s.io/layer-version': '2.0.0' },
    });
    expect(apps.spec).toMatchObject({
      path: './clusters/fleet/two/layers/apps',
      dependsOn: [{ name: 'two-layer-base', namespace: 'fleet' }],
      kubeConfig: { secretRef: { name: 'two-kubeconfig', key: 'value' } },
      prune: true,
      wait: true,
    });
    expect(apps.spec.suspend).toBeUndefined();
    // Deleting it (the layer taken off the Cluster) prunes what it applied.
    expect(apps.spec.deletionPolicy).toBeUndefined();
    const bootstrap = parseObject(files['flux/clusters/fleet/two/layers/bootstrap.yaml']!);
    expect(bootstrap.spec).toMatchObject({
      interval: '1m',
      timeout: '1m',
      dependsOn: [{ name: 'two-cluster-addon', namespace: 'fleet' }],
    });
    expect(files['flux/clusters/fleet/one/layers/apps.yaml']).toBeUndefined();
    // The whole flux/ tree builds, as the root Kustomization applies it.
    expect(
      kustomizeBuild(wiring, 'flux')
        .filter((o) => o.metadata.labels?.['clusterstack.x-k8s.io/wiring'] === 'cluster-layer')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual([
      'one-layer-base',
      'one-layer-bootstrap',
      'three-layer-bootstrap',
      'two-layer-apps',
      'two-layer-base',
      'two-layer-bootstrap',
    ]);
  });

  it('renders apps in the commit that upgrades the 1.29 Cluster, changing nothing else of the layers', async () => {
    await writeFile(
      path.join(repo, 'manifests/clusters.yaml'),
      cluster('one', 'v1.30.2') + cluster('two', 'v1.30.2') + cluster('three', 'v1.30.2', '{env: dev}'),
    );
    const before = sandbox.head(remote, 'main');
    const upgraded = await render(repo, releases, remote, [
      '--gitops',
      'flux',
      '--gitops-url',
      'https://git.example.test/fleet.git',
    ]);
    expect(upgraded.code).toBe(0);
    expect(upgraded.report.withheld).toEqual([]);
    const changed = sandbox.git(remote, 'diff', '--name-only', before, 'main').split('\n');
    expect(changed.filter((file) => file.includes('/layers/'))).toEqual([
      'clusters/fleet/one/layers/apps/configmap-apps-one.yaml',
      'clusters/fleet/one/layers/apps/kustomization.yaml',
      'flux/clusters/fleet/one/layers/apps.yaml',
      'flux/clusters/fleet/one/layers/kustomization.yaml',
    ]);
    // Unchanged inputs: nothing committed, no helm started.
    const again = await render(repo, releases, remote, [
      '--gitops',
      'flux',
      '--gitops-url',
      'https://git.example.test/fleet.git',
    ]);
    expect(again.report).toMatchObject({ changed: false, helmProcesses: 0 });
  });

  it("hold suspends the layer's Kustomization and changes nothing else; lifting it resumes", async () => {
    const before = sandbox.head(remote, 'main');
    await writeFile(path.join(repo, 'manifests/layers.yaml'), layers({ baseHold: true }));
    const held = await render(repo, releases, remote, [
      '--gitops',
      'flux',
      '--gitops-url',
      'https://git.example.test/fleet.git',
    ]);
    expect(held.code).toBe(0);
    const changed = sandbox.git(remote, 'diff', '--name-only', before, 'main').split('\n').sort();
    expect(changed).toEqual([
      'README.md',
      'flux/clusters/fleet/one/layers/base.yaml',
      'flux/clusters/fleet/two/layers/base.yaml',
      'provenance.json',
    ]);
    expect(parseObject(sandbox.files(remote, 'main')['flux/clusters/fleet/two/layers/base.yaml']!).spec.suspend).toBe(
      true,
    );
    expect(held.report.units.rendered).toBe(0);
    await writeFile(path.join(repo, 'manifests/layers.yaml'), layers());
    await render(repo, releases, remote, ['--gitops', 'flux', '--gitops-url', 'https://git.example.test/fleet.git']);
    expect(
      parseObject(sandbox.files(remote, 'main')['flux/clusters/fleet/two/layers/base.yaml']!).spec.suspend,
    ).toBeUndefined();
  });

  it('withholds apps needing base@1.2.0 while base is at 1.1.0, keeping what was published, and says so', async () => {
    await writeFile(path.join(repo, 'manifests/layers.yaml'), layers({ baseVersion: '1.1.0' }));
    const result = await render(repo, releases, remote, [
      '--gitops',
      'flux',
      '--gitops-url',
      'https://git.example.test/fleet.git',
    ]);
    expect(result.code).toBe(0);
    expect(result.report.withheld).toEqual([
      {
        kind: 'layer',
        namespace: 'fleet',
        name: 'one',
        layer: 'apps',
        reason: 'base is at 1.1.0, apps needs base@1.2.0',
        previousOutputKept: true,
      },
      {
        kind: 'layer',
        namespace: 'fleet',
        name: 'two',
        layer: 'apps',
        reason: 'base is at 1.1.0, apps needs base@1.2.0',
        previousOutputKept: true,
      },
    ]);
    const now = sandbox.files(remote, 'main');
    expect(now['clusters/fleet/two/layers/apps/configmap-apps-two.yaml']).toBeDefined();
    // The base Kustomization keeps its name and says its version; apps keeps its wiring with what it
    // published (the engine re-applies nothing new for it) until base is at 1.2.0 again.
    expect(parseObject(now['flux/clusters/fleet/two/layers/base.yaml']!).metadata).toMatchObject({
      name: 'two-layer-base',
      labels: { 'clusterstack.x-k8s.io/layer-version': '1.1.0' },
    });
    expect(parseObject(now['flux/clusters/fleet/two/layers/apps.yaml']!).spec.dependsOn).toEqual([
      { name: 'two-layer-base', namespace: 'fleet' },
    ]);
    const plan = await runClusterstack(['plan', path.join(repo, 'manifests'), '--release-source', releases]);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toMatch(
      /fleet\/two\s+apps\s+2\.0\.0\s+ApplyPending\s+-\s+base is at 1\.1\.0, apps needs base@1\.2\.0/,
    );
    await writeFile(path.join(repo, 'manifests/layers.yaml'), layers());
  });
});

describe('addon layers with Argo CD wiring', () => {
  it("adds one child Application per layer in the cluster's app of apps, in sync waves after the stages and dependencies; a held layer and its dependants leave the chain", async () => {
    const releases = await fleetReleases();
    const repo = await inputRepository({ 'manifests/layers.yaml': layers({ baseHold: true }) });
    const remote = sandbox.bareRepo('layers-argo');
    const result = await render(repo, releases, remote, [
      '--gitops',
      'argocd',
      '--gitops-url',
      'https://git.example.test/fleet.git',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const files = sandbox.files(remote, 'main');
    const wiring = new Map(Object.entries(files).filter(([file]) => file.startsWith('argocd/')));
    expect(schemaProblems(wiring, [...ARGOCD_SCHEMAS, ...KUSTOMIZE_SCHEMAS])).toEqual([]);
    expect(kustomizationProblems(wiring)).toEqual([]);
    const children = kustomizeBuild(wiring, 'argocd/cluster-addons/fleet/two');
    const waves = Object.fromEntries(
      children.map((app) => [app.metadata.name, app.metadata.annotations['argocd.argoproj.io/sync-wave']]),
    );
    // base is held and apps depends on it: both sync by hand, in the wave after every other child.
    expect(waves).toEqual({
      'fleet-two-cluster-addon': '0',
      'fleet-two-layer-bootstrap': '1',
      'fleet-two-layer-base': '2',
      'fleet-two-layer-apps': '2',
    });
    const base = children.find((app) => app.metadata.name === 'fleet-two-layer-base')!;
    expect(base.spec.syncPolicy.automated).toBeUndefined();
    expect(base.spec.source.path).toBe('clusters/fleet/two/layers/base');
    expect(base.spec.destination).toEqual({ name: 'fleet-two' });
    expect(
      children.find((app) => app.metadata.name === 'fleet-two-layer-apps')!.spec.syncPolicy.automated,
    ).toBeUndefined();
    expect(
      children.find((app) => app.metadata.name === 'fleet-two-layer-bootstrap')!.spec.syncPolicy.automated,
    ).toEqual({ prune: true, selfHeal: true });
  });
});

describe('bad layer input stops the render before anything is written', () => {
  it.each([
    [
      'a cycle',
      {
        'manifests/layers.yaml': layers({
          extra:
            '---\napiVersion: kraan.io/v1alpha1\nkind: AddonsLayer\nmetadata: {name: cyc-a}\nspec: {version: 1.0.0, source: {path: ./addons/base}, clusterSelector: {}, prereqs: {dependsOn: [cyc-b@1.0.0]}}\n---\napiVersion: kraan.io/v1alpha1\nkind: AddonsLayer\nmetadata: {name: cyc-b}\nspec: {version: 1.0.0, source: {path: ./addons/base}, clusterSelector: {}, prereqs: {dependsOn: [cyc-a@1.0.0]}}\n',
        }),
      },
      'layers depend on each other in a cycle: cyc-a -> cyc-b -> cyc-a',
    ],
    [
      'a dependsOn entry that is not a layer name',
      { 'manifests/layers.yaml': layers({ appsNeeds: '' }).replace('base@]', 'Base]') },
      'spec.prereqs.dependsOn[0]: "Base" is not a layer name',
    ],
    [
      'a source path leaving the repository',
      { 'manifests/layers.yaml': layers().replace('./addons/base', './addons/../../outside') },
      'spec.source.path: "./addons/../../outside" leads outside the repository',
    ],
    [
      'a layer named like a stack stage',
      {
        'manifests/layers.yaml': layers()
          .replace('name: base}', 'name: cluster-addon}')
          .replace('base@1.2.0', 'cluster-addon@1.2.0'),
      },
      'AddonsLayer cluster-addon metadata.name: is also the name of an addon stage of the cluster stack used by fleet/one, fleet/two',
    ],
    [
      'an invalid selector',
      { 'manifests/layers.yaml': layers().replace('{matchLabels: {env: prod}}', '{matchLabels: {env: [prod]}}') },
      'spec.clusterSelector.matchLabels: label values must be strings',
    ],
  ])('%s', async (_what, inputs, message) => {
    const releases = await fleetReleases();
    const repo = await inputRepository(inputs);
    const remote = sandbox.bareRepo(`bad-${Math.random().toString(16).slice(2)}`);
    const result = await render(repo, releases, remote);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
    expect(sandbox.head(remote, 'main')).toBe('');
  });

  it('a source directory linking out of the repository', async () => {
    const outside = await tempDir('outside-');
    await writeFile(path.join(outside, 'secret.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cyc-a}\n');
    const repo = await inputRepository();
    await symlink(path.join(outside, 'secret.yaml'), path.join(repo, 'addons/base/linked.yaml'));
    const remote = sandbox.bareRepo('bad-link');
    const result = await render(repo, await fleetReleases(), remote);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `AddonsLayer base ./addons/base/linked.yaml: is a symbolic link to ${path.join(outside, 'secret.yaml')}, outside the repository; copy the file into the repository instead of linking to it`,
    );
    expect(sandbox.head(remote, 'main')).toBe('');
  });
});

describe('layers go through the same secret policy and strict values as stack addons', () => {
  it('refuses a Secret in a layer by default, naming it, and writes nothing', async () => {
    const repo = await inputRepository({
      'addons/base/token.yaml': 'apiVersion: v1\nkind: Secret\nmetadata: {name: api-token}\nstringData: {token: abc}\n',
    });
    const remote = sandbox.bareRepo('layer-secret');
    const result = await render(repo, await fleetReleases(), remote);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('layer base@1.2.0');
    expect(result.stderr).toContain('Secret');
    expect(result.stderr).not.toContain('abc');
    expect(sandbox.head(remote, 'main')).toBe('');
  });

  it('withholds only the layer whose values template reads a field the Cluster does not have', async () => {
    const repo = await inputRepository({
      'manifests/layers.yaml': layers().replace(
        'endpoint: {{ .Cluster.spec.controlPlaneEndpoint.host }}',
        'endpoint: {{ .Cluster.metadata.annotations.region }}',
      ),
    });
    const remote = sandbox.bareRepo('layer-missing-field');
    const result = await render(repo, await fleetReleases(), remote);
    expect(result.code).toBe(0);
    expect(result.report.withheld).toEqual([
      {
        kind: 'layer',
        namespace: 'fleet',
        name: 'one',
        layer: 'apps',
        reason: 'apps@2.0.0 needs Kubernetes 1.30.0 or newer; the Cluster is at v1.29.8 (spec.topology.version)',
        previousOutputKept: false,
      },
      expect.objectContaining({
        kind: 'layer',
        namespace: 'fleet',
        name: 'two',
        layer: 'apps',
        reason: expect.stringContaining('addon values need .Cluster.metadata.annotations.region'),
      }),
    ]);
    const files = sandbox.files(remote, 'main');
    expect(files['clusters/fleet/two/cluster-addon/kustomization.yaml']).toBeDefined();
    expect(files['clusters/fleet/two/layers/base/kustomization.yaml']).toBeDefined();
  });
});

describe('a layer whose manifests hold no object', () => {
  it('is withheld (its dependents wait), and plan names it with render’s reason', async () => {
    const repo = await inputRepository({ 'addons/base/settings.yaml': '# nothing here yet\n---\n# nor here\n' });
    const releases = await fleetReleases();
    const result = await render(repo, releases, sandbox.bareRepo('layer-empty'));
    expect(result.code).toBe(0);
    const base = result.report.withheld.filter((entry: { layer: string }) => entry.layer === 'base');
    expect(base.map((entry: { name: string }) => entry.name)).toEqual(['one', 'two']);
    expect(base[0].reason).toMatch(
      /the manifests of .*for Cluster fleet\/one \(layer base@1\.2\.0\) renders no object .*add its objects to that directory/,
    );
    expect(result.report.withheld).toContainEqual(
      expect.objectContaining({
        kind: 'layer',
        name: 'two',
        layer: 'apps',
        reason: expect.stringContaining('base@1.2.0 is withheld on this Cluster'),
      }),
    );

    const plan = await runClusterstack(['plan', path.join(repo, 'manifests'), '--release-source', releases, '--json'], {
      env: { CLUSTERSTACK_CACHE_DIR: await tempDir('csk-plan-cache-') },
    });
    const planned = JSON.parse(plan.stdout);
    expect(planned.withheld.filter((entry: { layer?: string }) => entry.layer === 'base')).toEqual(
      base.map(({ previousOutputKept: _kept, ...entry }: Record<string, unknown>) => entry),
    );
    // apps is a chart: plan leaves it to render.
    expect(planned.decidedAtRender).toContainEqual(
      expect.objectContaining({ kind: 'layer', name: 'two', layer: 'apps' }),
    );
  });
});

describe('examples/layers', () => {
  it("plans as its comment says: policy waits for alpha's upgrade, everything else renders", async () => {
    const result = await runClusterstack([
      'plan',
      'examples/quickstart/manifests',
      'examples/layers/layers.yaml',
      '--release-source',
      'examples/quickstart/releases',
      '--layer-root',
      'examples/layers',
      '--json',
    ]);
    expect(result.code).toBe(0);
    const layers = JSON.parse(result.stdout).layers as { cluster: string; layer: string; state: string }[];
    expect(layers.map((l) => `${l.cluster}/${l.layer}: ${l.state}`)).toEqual([
      'alpha/monitoring: render',
      'alpha/policy: K8sVersion',
      'bravo/monitoring: render',
      'bravo/policy: render',
      'charlie/monitoring: render',
      'charlie/policy: render',
      'delta/monitoring: render',
      'delta/policy: render',
    ]);
  });
});
