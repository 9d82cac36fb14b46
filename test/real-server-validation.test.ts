// Every object we render and every example we ship, validated by a real kube-apiserver against
// the real CRDs of its kind (Cluster API core, kubeadm bootstrap and control plane, the Docker
// provider, cluster-api-operator, Flux, Argo CD, openMCP, and ours): server-side apply, dry run, strict
// field validation, as Flux applies. Kinds the server has no CRD or built-in type for (Kraan's
// AddonsLayer: the Go module proxy refuses its module) are listed as unchecked, never counted as passing.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateClusterStack } from '../src/api/validate.js';
import { runClusterstack, tempDir, writeTree } from './support/cli.js';
import { fullClusterAddon, fullClusterStack, fullClusterStackRelease } from './support/full-crd-objects.js';
import {
  crdFilesServing,
  describeVerdicts,
  documentsOfFiles,
  engineCrdFiles,
  kindsOfFiles,
  validateOnServer,
  type ObjectVerdict,
} from './support/real-kube-api/index.js';
import { leaseRealKubeApi, type LeasedKubeApi } from './support/real-controller-fixture.js';
import { checkCrdRules } from './support/crd-rule-check.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const execFileAsync = promisify(execFile);
const CRD_ENGINES = [
  'cluster-api',
  'cluster-api-docker',
  'cluster-api-operator',
  'source-controller',
  'kustomize-controller',
  'argo-cd',
  'openmcp',
];

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

const GITOPS_URL = 'https://git.example.com/platform/fleet.git';

/** The inputs of a ClusterStack on `channel` for the fixture releases. */
function fixtureStack(name: string, channel: string, versions: string[]): string {
  return (
    `apiVersion: clusterstack.x-k8s.io/v1alpha1\nkind: ClusterStack\nmetadata: {name: ${name}, namespace: cluster-stacks}\n` +
    `spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", channel: ${channel}, noProvider: true, versions: [${versions.join(', ')}]}\n`
  );
}

/** The examples we ship as objects: charts (rendered by the cases), release contents and chart sources are not objects to apply. */
function exampleFiles(): string[] {
  const examples = path.join(ROOT, 'examples');
  return yamlFiles(
    examples,
    (relative) =>
      /(^|\/)(releases|chart-sources)$/.test(relative) || existsSync(path.join(examples, relative, 'Chart.yaml')),
  );
}

/**
 * What each case renders: `render <inputs> --output <dir> --gitops-url ...` with these arguments
 * (inputs first). A thunk, for inputs written first (the fixture releases' stacks and Cluster).
 */
const RENDERS: Record<string, () => Promise<string[]>> = {
  'quick start (Flux)': async () => [
    'examples/quickstart/manifests',
    '--release-source',
    'examples/quickstart/releases',
    '--gitops',
    'flux',
  ],
  'quick start (Argo CD)': async () => [
    'examples/quickstart/manifests',
    '--release-source',
    'examples/quickstart/releases',
    '--gitops',
    'argocd',
  ],
  'cluster-requests example': async () => [
    'examples/quickstart/manifests',
    'examples/cluster-requests/requests.yaml',
    '--release-source',
    'examples/quickstart/releases',
    '--scheduler-config',
    'examples/cluster-requests/scheduler.yaml',
    '--gitops',
    'flux',
  ],
  'sops-secrets example': async () => [
    'examples/sops-secrets/manifests',
    '--release-source',
    'examples/sops-secrets/releases',
    '--secrets',
    'allow',
    '--gitops',
    'flux',
  ],
  'fixture releases': async () => [
    await writeTree({
      'stacks.yaml': `${fixtureStack('docker-ferrol-1-30-alpha', 'alpha', ['v1-alpha.5', 'v1-alpha.6', 'v1-alpha.10', 'v2-alpha.4'])}---\n${fixtureStack('docker-ferrol-1-30-custom', 'custom', ['v0-sha.hipstsw'])}`,
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
    }),
    '--release-source',
    'test/fixtures/releases',
    '--gitops',
    'flux',
  ],
};

type RenderTitle = keyof typeof RENDERS;

/** A render's result: its exit code and stderr, and the tree it wrote. */
interface Rendered {
  code: number;
  stderr: string;
  tree: string;
}

/** Runs one render of RENDERS into a fresh directory. */
async function render(title: RenderTitle): Promise<Rendered> {
  const [inputs, ...options] = await RENDERS[title]!();
  const out = await tempDir('csk-validate-');
  const result = await runClusterstack(['render', inputs!, ...options, '--output', out, '--gitops-url', GITOPS_URL], {
    cwd: ROOT,
  });
  return { code: result.code, stderr: result.stderr, tree: path.join(out, 'current') };
}

/** `kubectl kustomize` of each of deploy/'s kustomizations, each into its own file (empty when it failed), with kubectl's exit code and stderr. */
async function buildDeploy(): Promise<{ dir: string; file: string; status: number; stderr: string }[]> {
  const built = await tempDir('csk-validate-deploy-');
  return Promise.all(
    ['deploy', 'deploy/flux', 'deploy/argocd', 'deploy/namespaced', 'deploy/layers'].map(async (dir) => {
      const file = path.join(built, `${dir.replace(/\//g, '-')}.yaml`);
      const run = await execFileAsync(process.env.KUBECTL ?? 'kubectl', ['kustomize', path.join(ROOT, dir)], {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      }).then(
        ({ stdout, stderr }) => ({ status: 0, stdout, stderr }),
        (error: { code?: number; stdout?: string; stderr?: string; message: string }) => ({
          status: typeof error.code === 'number' ? error.code : -1,
          stdout: error.stdout ?? '',
          stderr: error.stderr || error.message,
        }),
      );
      writeFileSync(file, run.stdout);
      return { dir, file, status: run.status, stderr: run.stderr };
    }),
  );
}

describe('strict server-side validation on a real API server', () => {
  // Leased from the run's broker (a server that already has our CRDs, Cluster API's core, Flux's,
  // Argo CD's and the operator's; the others this file needs are installed as its own and deleted
  // at release), instead of a server of its own: one start fewer, and fewer CRDs to establish.
  let api: LeasedKubeApi | undefined;
  // The renders and deploy/'s build need no server: they run while it starts, one after another
  // (each once), and the case that validates one awaits it.
  const renders = new Map<RenderTitle, Promise<Rendered>>();
  let deployBuilt: ReturnType<typeof buildDeploy>;

  beforeAll(async () => {
    let previous: Promise<unknown> = Promise.resolve();
    for (const title of Object.keys(RENDERS)) {
      const rendered = previous.then(() => render(title));
      renders.set(title, rendered);
      previous = rendered.catch(() => undefined);
    }
    deployBuilt = previous.then(buildDeploy);
    // Awaited by their cases; not an unhandled rejection meanwhile.
    for (const pending of [...renders.values(), deployBuilt]) pending.catch(() => undefined);
    // Each start-up phase's time, for the file's log (where a slow start goes).
    const begun = performance.now();
    const phases: string[] = [];
    const phase = (what: string, since: number): void =>
      void phases.push(`${what} ${((performance.now() - since) / 1000).toFixed(1)} s`);
    api = await leaseRealKubeApi();
    phase('API server leased', begun);
    // Of the engines' CRDs, those serving a kind validated here (each costs the server seconds to
    // establish, most serve nothing here): ours for the admission cases, ClusterClass for the
    // negative control and the examples' kinds while the renders run, then the renders' and deploy/'s.
    const engineCrds = CRD_ENGINES.flatMap((engine) => engineCrdFiles(engine));
    const installed = new Set<string>();
    const installServing = async (what: string, kinds: Set<string>, more: string[] = []): Promise<void> => {
      const files = [...more, ...crdFilesServing(engineCrds, kinds)].filter((file) => !installed.has(file));
      for (const file of files) installed.add(file);
      const since = performance.now();
      const names = await api!.installMissingCrds(files);
      phase(`${what} (${names.length})`, since);
    };
    await installServing('CRDs', new Set([...kindsOfFiles(exampleFiles()), 'cluster.x-k8s.io/ClusterClass']), [
      ...yamlFiles(path.join(ROOT, 'crds')),
    ]);
    const waited = performance.now();
    const rendered = (await Promise.allSettled(renders.values())).flatMap((result) =>
      result.status === 'fulfilled' && result.value.code === 0 ? yamlFiles(result.value.tree) : [],
    );
    const built = (await deployBuilt.catch(() => [])).filter(({ status }) => status === 0).map(({ file }) => file);
    const renderedKinds = kindsOfFiles([...rendered, ...built]);
    phase('waiting for the renders', waited);
    await installServing("renders' CRDs", renderedKinds);
    console.log(
      `real-server-validation start-up: ${phases.join(', ')}; total ${((performance.now() - begun) / 1000).toFixed(1)} s`,
    );
  }, 240_000);

  afterAll(async () => {
    await api?.release();
  });

  /** Validates the files (labelled relative to `base`), prints every verdict, and returns them. */
  async function validate(title: string, base: string, files: string[]): Promise<ObjectVerdict[]> {
    const verdicts = await validateOnServer(
      api!.admin,
      documentsOfFiles(files.map((file) => ({ file, label: path.relative(base, file) }))),
    );
    const unchecked = verdicts.filter((verdict) => verdict.outcome === 'unchecked');
    console.log(
      `${title}: ${verdicts.length - unchecked.length} objects checked, ${unchecked.length} unchecked\n${describeVerdicts(verdicts)}`,
    );
    return verdicts;
  }

  function refused(verdicts: ObjectVerdict[]): string {
    return describeVerdicts(verdicts.filter((verdict) => verdict.outcome === 'refused'));
  }

  function acceptedKinds(verdicts: ObjectVerdict[]): string[] {
    return [
      ...new Set(
        verdicts
          .filter((verdict) => verdict.outcome === 'accepted')
          .map((verdict) => `${verdict.apiVersion} ${verdict.kind}`),
      ),
    ].sort();
  }

  /** The render `title` (started in beforeAll) succeeded; every object of its tree validated: the verdicts. */
  async function validateRender(title: RenderTitle): Promise<ObjectVerdict[]> {
    const { code, stderr, tree } = await renders.get(title)!;
    expect(code, stderr).toBe(0);
    return validate(title, tree, yamlFiles(tree));
  }

  it('the quick start rendered with the Flux wiring: ClusterClass side, addons and wiring all accepted', async () => {
    const verdicts = await validateRender('quick start (Flux)');
    expect(refused(verdicts)).toBe('');
    expect(verdicts.filter((verdict) => verdict.outcome === 'unchecked')).toEqual([]);
    expect(acceptedKinds(verdicts)).toEqual(
      expect.arrayContaining([
        'cluster.x-k8s.io/v1beta1 ClusterClass',
        'infrastructure.cluster.x-k8s.io/v1beta1 DockerClusterTemplate',
        'infrastructure.cluster.x-k8s.io/v1beta1 DockerMachineTemplate',
        'bootstrap.cluster.x-k8s.io/v1beta1 KubeadmConfigTemplate',
        'controlplane.cluster.x-k8s.io/v1beta1 KubeadmControlPlaneTemplate',
        'source.toolkit.fluxcd.io/v1 GitRepository',
        'kustomize.toolkit.fluxcd.io/v1 Kustomization',
        'apps/v1 DaemonSet',
      ]),
    );
  });

  // The wiring writes Applications only (an app of apps per cluster, gitops/wiring/argocd-wiring.ts):
  // no ApplicationSet or AppProject of ours exists to check, though their CRDs are installed.
  it("the quick start rendered with the Argo CD wiring: our Applications accepted by Argo CD's own CRD", async () => {
    const verdicts = await validateRender('quick start (Argo CD)');
    expect(refused(verdicts)).toBe('');
    expect(verdicts.filter((verdict) => verdict.outcome === 'unchecked')).toEqual([]);
    expect(acceptedKinds(verdicts)).toEqual(
      expect.arrayContaining(['argoproj.io/v1alpha1 Application', 'cluster.x-k8s.io/v1beta1 ClusterClass']),
    );
  });

  it("the cluster-requests example rendered: ClusterProfiles accepted by openMCP's own CRD, the requested Clusters by Cluster API's", async () => {
    const verdicts = await validateRender('cluster-requests example');
    expect(refused(verdicts)).toBe('');
    expect(verdicts.filter((verdict) => verdict.outcome === 'unchecked')).toEqual([]);
    expect(acceptedKinds(verdicts)).toEqual(
      expect.arrayContaining(['clusters.openmcp.cloud/v1alpha1 ClusterProfile', 'cluster.x-k8s.io/v1beta1 Cluster']),
    );
    expect(
      verdicts.filter(
        (verdict) => verdict.source.startsWith('management/_cluster-requests/clusters/') && verdict.kind === 'Cluster',
      ),
    ).toHaveLength(3);
  });

  it('the sops-secrets example rendered (Secrets in the clear, as Flux applies them after decrypting) is accepted', async () => {
    const verdicts = await validateRender('sops-secrets example');
    expect(refused(verdicts)).toBe('');
    expect(acceptedKinds(verdicts)).toEqual(
      expect.arrayContaining(['v1 Secret', 'cluster.x-k8s.io/v1beta1 ClusterClass']),
    );
  });

  it('the fixture releases rendered (pre-release and hash channels, with a Cluster for the addons) are accepted', async () => {
    const verdicts = await validateRender('fixture releases');
    expect(refused(verdicts)).toBe('');
    expect(verdicts.filter((verdict) => verdict.outcome === 'unchecked')).toEqual([]);
    expect(
      verdicts.filter((verdict) => verdict.kind === 'ClusterClass' && verdict.outcome === 'accepted'),
    ).toHaveLength(5);
    expect(
      verdicts.some(
        (verdict) => verdict.source.startsWith('clusters/cluster-stacks/echo/') && verdict.outcome === 'accepted',
      ),
    ).toBe(true);
  });

  it('the examples we ship as objects (inputs and layer manifests) are accepted, or listed as unchecked', async () => {
    const verdicts = await validate('examples', path.join(ROOT, 'examples'), exampleFiles());
    expect(refused(verdicts)).toBe('');
    expect(acceptedKinds(verdicts)).toEqual(
      expect.arrayContaining([
        'clusterstack.x-k8s.io/v1alpha1 ClusterStack',
        'cluster.x-k8s.io/v1beta1 Cluster',
        'clusters.openmcp.cloud/v1alpha1 ClusterRequest',
      ]),
    );
  });

  it("the controller's manifests (deploy/, each kustomization as kubectl apply -k builds it) are accepted", async () => {
    const built = await deployBuilt;
    for (const { dir, status, stderr } of built) expect(status, `kubectl kustomize ${dir}: ${stderr}`).toBe(0);
    const files = built.map(({ file }) => file);
    const verdicts = await validate('deploy', path.dirname(files[0]!), files);
    expect(refused(verdicts)).toBe('');
    expect(acceptedKinds(verdicts)).toEqual(
      expect.arrayContaining(['apps/v1 Deployment', 'rbac.authorization.k8s.io/v1 ClusterRole', 'v1 ConfigMap']),
    );
  });

  it('refuses what strict validation exists for: the field name the quick start had wrong (jsonPatch) and a field of the wrong type', async () => {
    const classWith = (definition: string): string =>
      [
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
    const [wrongName, rightName, wrongType] = await validateOnServer(api!.admin, [
      {
        source: 'jsonPatch',
        text: classWith('jsonPatch: [{op: add, path: /spec/template/spec/customImage, value: kindest/node}]'),
      },
      {
        source: 'jsonPatches',
        text: classWith('jsonPatches: [{op: add, path: /spec/template/spec/customImage, value: kindest/node}]'),
      },
      { source: 'wrong type', text: classWith('jsonPatches: {op: add}') },
    ]);
    expect(wrongName).toMatchObject({ outcome: 'refused' });
    // Server-side apply cannot type an object with an unknown field, so it refuses it outright.
    expect(wrongName!.message).toContain('.spec.patches[0].definitions[0].jsonPatch: field not declared in schema');
    expect(rightName).toMatchObject({ outcome: 'accepted' });
    expect(wrongType).toMatchObject({ outcome: 'refused' });
  });

  // The admission cases the CRD emulator of crds.test.ts once answered (schema patterns, required
  // fields, defaults, pruning, strict validation, the channel rules), now answered by the server.
  describe("our CRDs' admission, by the server", () => {
    const NS_PATH = '/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/default';
    const READY = { type: 'Ready', status: 'True', lastTransitionTime: '2024-05-06T07:08:09Z' };
    let counter = 0;
    const aStack = (spec: Record<string, unknown> = {}): Record<string, unknown> => ({
      apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
      kind: 'ClusterStack',
      metadata: { name: `admission-${++counter}`, namespace: 'default' },
      spec: { provider: 'docker', name: 'ferrol', kubernetesVersion: '1.30', noProvider: true, ...spec },
    });
    const withoutField = (object: Record<string, unknown>, field: string): Record<string, unknown> => {
      const spec = { ...(object['spec'] as Record<string, unknown>) };
      delete spec[field];
      return { ...object, spec };
    };
    /** A dry-run create; `strict` refuses unknown fields, as our own spec checks do. */
    const dryCreate = (plural: string, body: unknown, options: { strict?: boolean; yaml?: boolean } = {}) =>
      api!.admin.request('POST', `${NS_PATH}/${plural}`, {
        body,
        query: { dryRun: 'All', ...(options.strict === false ? {} : { fieldValidation: 'Strict' }) },
        ...(options.yaml ? { contentType: 'application/yaml' } : {}),
      });
    /** What the server would store for `body` (it must be admitted). */
    const admitted = async (plural: string, body: unknown, options: { strict?: boolean; yaml?: boolean } = {}) => {
      const response = await dryCreate(plural, body, options);
      expect(response.status, response.text).toBe(201);
      return response.body as { spec: Record<string, unknown>; status?: Record<string, unknown> };
    };
    /** The server's message refusing `body` (it must be refused). */
    const refusal = async (plural: string, body: unknown, options: { yaml?: boolean } = {}): Promise<string> => {
      const response = await dryCreate(plural, body, options);
      expect([400, 422], response.text).toContain(response.status);
      return response.body.message as string;
    };
    /** A dry-run status write on a stored object, as the controller writes status. */
    const statusWrite = (plural: string, name: string, status: Record<string, unknown>) =>
      api!.admin.request('PATCH', `${NS_PATH}/${plural}/${name}/status`, {
        contentType: 'application/merge-patch+json',
        body: { status },
        query: { dryRun: 'All', fieldValidation: 'Strict' },
      });
    const statusRefusal = async (plural: string, name: string, status: Record<string, unknown>): Promise<string> => {
      const response = await statusWrite(plural, name, status);
      expect(response.status, response.text).toBe(422);
      return response.body.message as string;
    };

    beforeAll(async () => {
      for (const [plural, body] of [
        ['clusterstacks', { ...aStack(), metadata: { name: 'status-target', namespace: 'default' } }],
        [
          'clusterstackreleases',
          {
            apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
            kind: 'ClusterStackRelease',
            metadata: { name: 'status-target', namespace: 'default' },
          },
        ],
        [
          'clusteraddons',
          {
            apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
            kind: 'ClusterAddon',
            metadata: { name: 'status-target', namespace: 'default' },
            spec: { clusterRef: { kind: 'Cluster', name: 'bravo' } },
          },
        ],
      ] as const) {
        const response = await api!.admin.request('POST', `${NS_PATH}/${plural}`, {
          body,
          query: { fieldValidation: 'Strict' },
        });
        expect(response.status, response.text).toBe(201);
      }
    });

    it('accepts a CSO-style ClusterStack, read as Kubernetes reads YAML', async () => {
      const yaml = [
        'apiVersion: clusterstack.x-k8s.io/v1alpha1',
        'kind: ClusterStack',
        'metadata: {name: cso-style, namespace: default}',
        'spec:',
        '  provider: docker',
        '  name: ferrol',
        '  kubernetesVersion: "1.27"',
        '  channel: stable',
        '  autoSubscribe: false',
        '  versions: [v1, v2]',
        '  providerRef: {apiVersion: infrastructure.clusterstack.x-k8s.io/v1alpha1, kind: DockerClusterStackReleaseTemplate, name: cspotemplate}',
        '',
      ].join('\n');
      expect((await admitted('clusterstacks', yaml, { yaml: true })).spec).toMatchObject({
        autoSubscribe: false,
        noProvider: false,
        versions: ['v1', 'v2'],
      });
      // Unquoted, YAML reads 1.30 as a number.
      expect(await refusal('clusterstacks', yaml.replace('"1.27"', '1.30'), { yaml: true })).toMatch(
        /spec\.kubernetesVersion: Invalid value: "number": spec\.kubernetesVersion in body must be of type string/,
      );
    });

    it('defaults channel stable, autoSubscribe true and noProvider false', async () => {
      const stored = await admitted(
        'clusterstacks',
        withoutField(
          aStack({ providerRef: { kind: 'DockerClusterStackReleaseTemplate', name: 'images' } }),
          'noProvider',
        ),
      );
      expect(stored.spec).toMatchObject({ channel: 'stable', autoSubscribe: true, noProvider: false });
    });

    it.each([
      ['stable versions', { channel: 'stable', versions: ['v1', 'v3', 'v10'] }],
      ['pre-release versions', { channel: 'alpha', versions: ['v1-alpha.5', 'v2-alpha.10'] }],
      ['hash builds on the custom channel', { channel: 'custom', versions: ['v0-sha.hipstsw', 'v1-sha.abc1234'] }],
      ['release candidates', { channel: 'rc', versions: ['v4-rc.1'] }],
      ['a two-digit Kubernetes minor', { kubernetesVersion: '1.100' }],
      ['a two-digit Kubernetes major', { kubernetesVersion: '10.0' }],
    ])('accepts %s', async (_label, spec) => {
      await admitted('clusterstacks', aStack(spec));
    });

    it('keeps free-form addon values as they are', async () => {
      const addonValues = { cilium: { hubble: { relay: { enabled: true } } }, list: [1, 'two', { three: 3 }] };
      const addonStageValues = { cni: { anything: { goes: ['here'] } } };
      expect((await admitted('clusterstacks', aStack({ addonValues, addonStageValues }))).spec).toMatchObject({
        addonValues,
        addonStageValues,
      });
    });

    const refusals: [string, Record<string, unknown>, RegExp][] = [
      [
        'a provider containing a dash',
        { provider: 'do-cker' },
        /spec\.provider: Invalid value: "do-cker": spec\.provider in body should match/,
      ],
      [
        'a name containing a dash',
        { name: 'fer-rol' },
        /spec\.name: Invalid value: "fer-rol": spec\.name in body should match/,
      ],
      [
        'a name with capitals',
        { name: 'Ferrol' },
        /spec\.name: Invalid value: "Ferrol": spec\.name in body should match/,
      ],
      [
        'an empty provider',
        { provider: '' },
        /spec\.provider: Invalid value: "": spec\.provider in body should be at least 1 chars long/,
      ],
      [
        'an empty name',
        { name: '' },
        /spec\.name: Invalid value: "": spec\.name in body should be at least 1 chars long/,
      ],
      [
        'a kubernetesVersion with a patch level',
        { kubernetesVersion: '1.30.1' },
        /spec\.kubernetesVersion: Invalid value: "1\.30\.1": spec\.kubernetesVersion in body should match/,
      ],
      [
        'a kubernetesVersion with a v prefix',
        { kubernetesVersion: 'v1.30' },
        /spec\.kubernetesVersion: Invalid value: "v1\.30": spec\.kubernetesVersion in body should match/,
      ],
      [
        'a kubernetesVersion with a leading zero, which would not round-trip through release tags',
        { kubernetesVersion: '1.030' },
        /spec\.kubernetesVersion: Invalid value: "1\.030": spec\.kubernetesVersion in body should match/,
      ],
      [
        'a non-boolean autoSubscribe',
        { autoSubscribe: 'yes' },
        /spec\.autoSubscribe: Invalid value: "string": spec\.autoSubscribe in body must be of type boolean/,
      ],
      ...['3', 'v1.alpha-5', 'v1-alpha-5', 'v01', 'v1-Alpha.5', 'v1-alpha.'].map(
        (version): [string, Record<string, unknown>, RegExp] => [
          `a version ${version}`,
          { versions: ['v1', version] },
          /spec\.versions\[1\]: Invalid value: ".*": spec\.versions\[1\] in body should match/,
        ],
      ),
      ...['Alpha', 'pre-release', '1rc', ''].map((channel): [string, Record<string, unknown>, RegExp] => [
        `a channel ${JSON.stringify(channel)}`,
        { channel },
        /spec\.channel: Invalid value: /,
      ]),
    ];
    it.each(refusals)('refuses %s', async (_label, spec, message) => {
      expect(await refusal('clusterstacks', aStack(spec))).toMatch(message);
    });

    it.each(['provider', 'name', 'kubernetesVersion'])('refuses a spec without %s', async (field) => {
      expect(await refusal('clusterstacks', withoutField(aStack(), field))).toMatch(
        new RegExp(`spec\\.${field}: Required value`),
      );
    });

    it('refuses an object without spec', async () => {
      expect(
        await refusal('clusterstacks', {
          apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
          kind: 'ClusterStack',
          metadata: { name: 'no-spec' },
        }),
      ).toMatch(/spec: Required value/);
    });

    it('drops unknown fields silently unless asked to be strict, and then names them', async () => {
      const withTypo = { ...aStack({ autosubscribe: false, versions: ['v1'] }), extra: 1 };
      // The typo is lost and the default applies: the opposite of what the user asked for.
      const stored = await admitted('clusterstacks', withTypo, { strict: false });
      expect(stored.spec).not.toHaveProperty('autosubscribe');
      expect(stored.spec['autoSubscribe']).toBe(true);
      expect(stored).not.toHaveProperty('extra');
      expect(await refusal('clusterstacks', withTypo)).toMatch(
        /strict decoding error: unknown field "extra", unknown field "spec\.autosubscribe"/,
      );
      // Metadata is ObjectMeta: labels and annotations pass.
      await admitted('clusterstacks', {
        ...aStack(),
        metadata: {
          name: 'with-metadata',
          namespace: 'default',
          labels: { a: 'b' },
          annotations: { 'clusterstack.x-k8s.io/release-source': 'github:o/r' },
        },
      });
    });

    describe('every CRD rule, evaluated by the CLI and the controller as the API server evaluates it', () => {
      const ours = (spec: Record<string, unknown>): string[] =>
        checkCrdRules('ClusterStack', aStack(spec)).map((problem) => `${problem.path}: ${problem.message}`);

      it.each([
        ['providerRef missing without noProvider', { noProvider: false }, 'spec.providerRef'],
        ['provider, name and kubernetesVersion over 51 characters', { name: 'f'.repeat(42) }, 'spec'],
        ['a channel that is no channel name', { channel: 'Beta1' }, 'spec.channel'],
        ['a version of another channel', { versions: ['v1', 'v1-alpha.5'] }, 'spec.versions'],
      ])('refuse %s with the same message', async (_label, spec, field) => {
        const problems = checkCrdRules('ClusterStack', aStack(spec));
        expect(problems.map((problem) => problem.path)).toEqual([field]);
        expect(await refusal('clusterstacks', aStack(spec))).toContain(problems[0]!.message);
      });

      it('admit 51 characters exactly, as the API server does', async () => {
        await admitted('clusterstacks', aStack({ name: 'f'.repeat(41) }));
        expect(ours({ name: 'f'.repeat(41) })).toEqual([]);
      });
    });

    describe('the channel rules, said as the controller says them (the CRD rules themselves, src/api/crd-rules.ts)', () => {
      const controller = (spec: Record<string, unknown>): string[] =>
        validateClusterStack(aStack(spec) as never, checkCrdRules)
          .filter((problem) => /^spec\.(channel|versions)/.test(problem.path ?? ''))
          .map((problem) => problem.message);

      it.each([
        ['stable versions', { versions: ['v1', 'v3'] }],
        ['no channel (stable) and no versions', {}],
        ['pre-release versions on their channel', { channel: 'alpha', versions: ['v1-alpha.5', 'v2-alpha.10'] }],
        ['hash builds on custom', { channel: 'custom', versions: ['v0-sha.abc1234'] }],
      ])('admit %s, as the controller does', async (_label, spec) => {
        await admitted('clusterstacks', aStack(spec));
        expect(controller(spec)).toEqual([]);
      });

      it.each([
        [
          'a pre-release version on stable',
          { versions: ['v1', 'v1-alpha.5'] },
          'v1-alpha.5 belongs to the alpha channel, but this ClusterStack follows stable; list only stable versions or change spec.channel',
        ],
        [
          'a hash build outside custom',
          { channel: 'alpha', versions: ['v0-sha.abc1234'] },
          'v0-sha.abc1234 belongs to the custom channel, but this ClusterStack follows alpha; list only alpha versions or change spec.channel',
        ],
        [
          'a stable version on custom',
          { channel: 'custom', versions: ['v3'] },
          'v3 belongs to the stable channel, but this ClusterStack follows custom; list only custom versions or change spec.channel',
        ],
        [
          'another pre-release channel',
          { channel: 'beta', versions: ['v1-alpha.5'] },
          'v1-alpha.5 belongs to the alpha channel, but this ClusterStack follows beta; list only beta versions or change spec.channel',
        ],
        [
          'an unknown channel',
          { channel: 'Beta1' },
          'must be stable, custom or a pre-release channel name such as alpha, found "Beta1"',
        ],
      ])('refuse %s with the message of the controller', async (_label, spec, message) => {
        expect(await refusal('clusterstacks', aStack(spec))).toContain(message);
        expect(controller(spec)).toEqual([message]);
      });
    });

    it.each([
      [
        'clusterstacks',
        'a condition whose status is Maybe',
        { conditions: [{ ...READY, status: 'Maybe' }] },
        /status\.conditions\[0\]\.status: Unsupported value: "Maybe"/,
      ],
      [
        'clusterstacks',
        'a condition without lastTransitionTime',
        { conditions: [{ type: 'Ready', status: 'True' }] },
        /status\.conditions\[0\]\.lastTransitionTime: Required value/,
      ],
      [
        'clusterstacks',
        'a lastTransitionTime that is not RFC 3339',
        { conditions: [{ ...READY, lastTransitionTime: 'yesterday' }] },
        /status\.conditions\[0\]\.lastTransitionTime: Invalid value: "yesterday"/,
      ],
      [
        'clusterstacks',
        'a condition severity Cluster API does not know',
        { conditions: [{ ...READY, status: 'False', severity: 'Fatal' }] },
        /status\.conditions\[0\]\.severity: Unsupported value: "Fatal"/,
      ],
      [
        'clusterstacks',
        'a summary entry with an unknown phase',
        { summary: [{ name: 'docker-ferrol-1-30-v1', ready: false, phase: 'applying' }] },
        /status\.summary\[0\]\.phase: Unsupported value: "applying"/,
      ],
      [
        'clusterstacks',
        'a summary entry without ready',
        { summary: [{ name: 'docker-ferrol-1-30-v1', phase: 'done' }] },
        /status\.summary\[0\]\.ready: Required value/,
      ],
      [
        'clusterstackreleases',
        'a resource status other than synced, not-synced or empty',
        { resources: [{ kind: 'ClusterClass', name: 'x', status: 'Synced' }] },
        /status\.resources\[0\]\.status: Unsupported value: "Synced"/,
      ],
      [
        'clusterstackreleases',
        'a resource without kind',
        { resources: [{ name: 'x' }] },
        /status\.resources\[0\]\.kind: Required value/,
      ],
      [
        'clusterstackreleases',
        'a resource without name',
        { resources: [{ kind: 'ClusterClass' }] },
        /status\.resources\[0\]\.name: Required value/,
      ],
      [
        'clusterstackreleases',
        'a non-boolean ready',
        { ready: 'true' },
        /status\.ready: Invalid value: "string": ready in body must be of type boolean/,
      ],
      [
        'clusteraddons',
        'a stage action other than apply or delete',
        { stages: [{ name: 'cni', action: 'upgrade' }] },
        /status\.stages\[0\]\.action: Unsupported value: "upgrade"/,
      ],
      [
        'clusteraddons',
        'a stage without a name',
        { stages: [{ action: 'apply' }] },
        /status\.stages\[0\]\.name: Required value/,
      ],
      [
        'clusteraddons',
        'a condition whose status is Maybe',
        { conditions: [{ ...READY, status: 'Maybe' }] },
        /status\.conditions\[0\]\.status: Unsupported value: "Maybe"/,
      ],
    ])('refuses in a %s status %s', async (plural, _label, status, message) => {
      expect(await statusRefusal(plural, 'status-target', status)).toMatch(message);
    });

    it('defaults ready to false in the status of a ClusterStackRelease and a ClusterAddon', async () => {
      const release = await statusWrite('clusterstackreleases', 'status-target', { kubernetesVersion: '1.27.3' });
      expect(release.body.status).toEqual({ kubernetesVersion: '1.27.3', ready: false });
      const addon = await statusWrite('clusteraddons', 'status-target', { stages: [] });
      expect(addon.body.status).toMatchObject({ ready: false });
    });

    it('stores an object of each kind with every field of the types filled in, spec and status, dropping nothing', async () => {
      for (const [plural, object] of [
        ['clusterstacks', fullClusterStack],
        ['clusterstackreleases', fullClusterStackRelease],
        ['clusteraddons', fullClusterAddon],
      ] as const) {
        const { status, ...rest } = object as { status: Record<string, unknown> };
        const created = await api!.admin.request('POST', `${NS_PATH}/${plural}`, {
          body: rest,
          query: { fieldValidation: 'Strict' },
        });
        expect(created.status, created.text).toBe(201);
        expect(created.body.spec, plural).toEqual((rest as { spec: unknown }).spec);
        const written = await statusWrite(plural, (rest as { metadata: { name: string } }).metadata.name, status);
        expect(written.status, written.text).toBe(200);
        expect(written.body.status, plural).toEqual(status);
      }
    });

    it('refuses a ClusterAddon whose clusterRef is not an object', async () => {
      expect(
        await refusal('clusteraddons', {
          apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
          kind: 'ClusterAddon',
          metadata: { name: 'bad-ref' },
          spec: { clusterRef: 'bravo' },
        }),
      ).toMatch(/spec\.clusterRef: Invalid value: "string": spec\.clusterRef in body must be of type object/);
    });
  });

  describe("our CRDs' rules, evaluated by the server", () => {
    const stack = (spec: Record<string, unknown>, name = 'docker-ferrol-1-30'): Record<string, unknown> => ({
      apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
      kind: 'ClusterStack',
      metadata: { name, namespace: 'default' },
      spec: {
        provider: 'docker',
        name: 'ferrol',
        kubernetesVersion: '1.30',
        channel: 'stable',
        noProvider: true,
        versions: ['v1'],
        ...spec,
      },
    });
    const create = (body: Record<string, unknown>) =>
      api!.admin.request('POST', '/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/default/clusterstacks', {
        body,
        query: { fieldValidation: 'Strict' },
      });

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
      const changed = await api!.admin.request(
        'PATCH',
        '/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/default/clusterstacks/immutable',
        {
          contentType: 'application/merge-patch+json',
          body: { spec: { channel: 'beta' } },
        },
      );
      expect(changed.status).toBe(422);
      expect(changed.body.message).toContain('spec.channel is immutable');
      const kept = await api!.admin.get(
        '/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/default/clusterstacks/immutable',
      );
      expect(kept.spec.channel).toBe('stable');
    });
  });
});
