// What lands in the output must mean, to Kubernetes, exactly what helm rendered. Renders charts of
// our own that hold every trap seen in real cluster stacks (octal modes, YAML 1.1 booleans, huge
// integers, duplicate keys, unknown tags, Lists, flow-style documents, multi-line double-quoted
// descriptions) and compares every object, decoded by sigs.k8s.io/yaml over go-yaml v2 (the oracle),
// with helm's own output for the same chart and values. Also runs `kubectl kustomize` over the
// output, as Flux and Argo CD do, and checks that the meaning survives that too.
import { execFile } from 'node:child_process';
import { cp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveHelmBinary } from '../renderers/helm-binary.js';
import { copyExampleReleases, runClusterstack, tempDir, writeTree } from './support/cli.js';
import { kubernetesDecode } from './support/kube-yaml-oracle.js';

const run = promisify(execFile);
const ADDONS = path.resolve('test/fixtures/charts/fidelity-addons');
const CLUSTER_CLASS = path.resolve('test/fixtures/charts/fidelity-cluster-class');
const KUBE_VERSION = 'v1.30.2';

const STACK = `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: cluster-stacks}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", noProvider: true, autoSubscribe: false, versions: [v1]}
---
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: one, namespace: cluster-stacks, generation: 12345678}
spec:
  controlPlaneEndpoint: {host: one.example.test, port: 6443}
  topology: {class: docker-ferrol-1-30-v1, version: v1.30.2}
`;

// The values template prints the endpoint port with printf "%d" and a large integer: both must come
// out as integers, as the cluster-stack-operator evaluates them.
const VALUES_TEMPLATE = `values: |
  clusterName: {{ .Cluster.metadata.name }}
  apiServer: https://{{ .Cluster.spec.controlPlaneEndpoint.host }}:{{ printf "%d" .Cluster.spec.controlPlaneEndpoint.port }}
  generation: {{ .Cluster.metadata.generation }}
`;
const EVALUATED_VALUES = 'clusterName: one\napiServer: https://one.example.test:6443\ngeneration: 12345678\n';

type Decoded = Record<string, any>;

/** JSON that keeps every digit of big integers: Go's JSON text with long numbers quoted. */
function losslessParse(json: string): Decoded {
  return JSON.parse(json.replace(/(?<=[:[,])(-?\d{16,})(?=[,\]}])/g, '"#int:$1"')) as Decoded;
}

/** Every object of a YAML stream as Kubernetes decodes it, List items flattened, by `Kind/name`. */
async function decodeObjects(stream: string): Promise<Map<string, Decoded>> {
  const objects = new Map<string, Decoded>();
  for (const document of await kubernetesDecode(stream)) {
    if ('error' in document)
      throw new Error(`Kubernetes cannot decode a document at line ${document.line}: ${document.error}`);
    const object = losslessParse(document.json);
    if (object === null) continue;
    for (const item of object.kind === 'List' ? object.items : [object])
      objects.set(`${item.kind}/${item.metadata.name}`, item);
  }
  return objects;
}

async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.yaml') && entry.name !== 'kustomization.yaml')
      found.push(path.join(entry.parentPath, entry.name));
  }
  return found.sort();
}

/** The objects of our output directory, each file decoded on its own. */
async function decodeOutput(dir: string): Promise<Map<string, Decoded>> {
  const objects = new Map<string, Decoded>();
  for (const file of await filesUnder(dir)) {
    const decoded = await decodeObjects(await readFile(file, 'utf8'));
    expect(decoded.size, `${file} holds one object`).toBe(1);
    for (const [key, object] of decoded) objects.set(key, object);
  }
  return objects;
}

function withAdditions(
  object: Decoded,
  namespace: string | undefined,
  annotations: Record<string, string> = {},
): Decoded {
  const copy = structuredClone(object);
  if (namespace) copy.metadata.namespace = namespace;
  if (Object.keys(annotations).length > 0) copy.metadata.annotations = { ...copy.metadata.annotations, ...annotations };
  return copy;
}

describe('render fidelity (what Kubernetes reads equals what helm rendered)', () => {
  let out: string;
  let report: Record<string, any>;
  let helmAddons: Map<string, Decoded>;
  let helmClass: Map<string, Decoded>;

  beforeAll(async () => {
    const releases = await copyExampleReleases();
    const v1 = path.join(releases, 'docker-ferrol-1-30-v1');
    await rm(path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1.tgz'));
    await rm(path.join(v1, 'docker-ferrol-1-30-cluster-class-v1.tgz'));
    await cp(ADDONS, path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1'), { recursive: true });
    await cp(CLUSTER_CLASS, path.join(v1, 'docker-ferrol-1-30-cluster-class-v1'), { recursive: true });
    await writeFile(path.join(v1, 'cluster-addon-values.yaml'), VALUES_TEMPLATE);
    out = path.join(await tempDir(), 'out');
    const inputs = await writeTree({ 'inputs.yaml': STACK });
    const result = await runClusterstack([
      'render',
      inputs,
      '--release-source',
      releases,
      '--output',
      out,
      '--gitops',
      'argocd',
      '--gitops-url',
      'https://git.example.test/fleet.git',
      '--json',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    report = JSON.parse(result.stdout);
    out = path.join(out, 'current'); // --output keeps the tree behind a 'current' link

    // helm's own output for the same charts, arguments and values.
    const helm = (await resolveHelmBinary({ pathEnv: process.env.PATH ?? '' })).path;
    const scratch = await tempDir();
    await writeFile(path.join(scratch, 'values.yaml'), EVALUATED_VALUES);
    const addons = await run(helm, [
      'template',
      'cluster-addon',
      ADDONS,
      '--namespace',
      'kube-system',
      '--kube-version',
      KUBE_VERSION,
      '--include-crds',
      '-f',
      path.join(scratch, 'values.yaml'),
    ]);
    const clusterClass = await run(helm, [
      'template',
      'docker-ferrol-1-30',
      CLUSTER_CLASS,
      '--namespace',
      'cluster-stacks',
      '--kube-version',
      KUBE_VERSION,
    ]);
    helmAddons = await decodeObjects(addons.stdout);
    helmClass = await decodeObjects(clusterClass.stdout);
    // A render, two helm runs and the Go oracle's first build; once per helm, the projects in parallel.
  }, 180_000);

  it('writes every addon object so that it decodes to helm’s object, plus a namespace only where the kind is known to be namespaced', async () => {
    const ours = await decodeOutput(path.join(out, 'clusters/cluster-stacks/one'));
    const namespaced = new Set([
      'DaemonSet/agent',
      'Settings/scalars',
      'ConfigMap/tagged',
      'ConfigMap/listed-one',
      'ConfigMap/listed-two',
      'ConfigMap/from-json',
    ]);
    expect([...ours.keys()].sort()).toEqual([...helmAddons.keys()].sort());
    for (const [key, helmObject] of helmAddons) {
      expect(ours.get(key), key).toEqual(withAdditions(helmObject, namespaced.has(key) ? 'kube-system' : undefined));
    }
    // The traps, spelled out: octal stays octal, YAML 1.1 booleans stay booleans, integers stay exact.
    const agent = ours.get('DaemonSet/agent')!;
    expect(agent.spec.template.spec.volumes[0].projected.defaultMode).toBe(256);
    expect(agent.metadata.labels).toEqual({
      'app.kubernetes.io/name': 'agent',
      'app.kubernetes.io/part-of': 'cilium',
      'app.kubernetes.io/managed-by': 'Helm',
      'app.kubernetes.io/version': '1.16.5',
    });
    expect(agent.spec.template.spec.containers[0].env[0].value).toBe('https://one.example.test:6443');
    const settings = ours.get('Settings/scalars')!.spec;
    expect(settings.booleans.slice(0, 6)).toEqual([true, false, true, false, true, false]);
    expect(settings.true).toBe('a key that Kubernetes reads as "true"');
    expect(settings.octal).toEqual([256, 420, 15, 8]);
    expect(settings.quotedLookalikes).toEqual(['1_000', '+.5', '0X1F', '0400', '1e3', 'null', '~']);
    expect(settings.bigIntegers.slice(0, 3)).toEqual([
      '#int:9007199254740993',
      '#int:9223372036854775807',
      '#int:18446744073709551615',
    ]);
    expect(settings.generation).toBe(12345678);
    expect(settings.date).toBe('2001-12-14');
    expect(ours.get('ClusterRole/agent-role')!.metadata.name).toBe('agent-role');
    expect(ours.get('CiliumLoadBalancerIPPool/default-pool')!.metadata.namespace).toBeUndefined();
  });

  it('writes the ClusterClass side with the namespace and Argo CD sync waves, nothing else changed', async () => {
    const ours = await decodeOutput(path.join(out, 'management/cluster-stacks/docker-ferrol-1-30-v1'));
    const waves: Record<string, string> = {
      'ClusterClass/docker-ferrol-1-30-v1': '0',
      'DockerClusterTemplate/docker-ferrol-1-30-cluster': '-1',
      'KubeadmControlPlaneTemplate/docker-ferrol-1-30-control-plane': '-1',
    };
    expect([...ours.keys()].sort()).toEqual([...helmClass.keys()].sort());
    for (const [key, helmObject] of helmClass) {
      expect(ours.get(key), key).toEqual(
        withAdditions(helmObject, 'cluster-stacks', { 'argocd.argoproj.io/sync-wave': waves[key]! }),
      );
    }
    expect(
      ours.get('ClusterClass/docker-ferrol-1-30-v1')!.spec.variables[0].schema.openAPIV3Schema.description,
    ).toMatch(/^The port the API server listens on\. It is used by every component/);
  });

  it('keeps helm’s bytes for documents it did not need to change', async () => {
    const raw = await readFile(
      path.join(out, 'clusters/cluster-stacks/one/cluster-addon/serviceaccount-agent.yaml'),
      'utf8',
    );
    expect(raw).toBe(
      '# Source: fidelity-addons/templates/scopes.yaml\n# Already namespaced by the chart: untouched.\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: agent\n  namespace: kube-system\n',
    );
    const daemonset = await readFile(
      path.join(out, 'clusters/cluster-stacks/one/cluster-addon/daemonset-agent.yaml'),
      'utf8',
    );
    expect(daemonset).toContain('defaultMode: 0400');
    expect(daemonset).toMatch(/^# Source: fidelity-addons\/templates\/daemonset\.yaml\n# A Cilium-style agent/); // helm's bytes, comments kept
    expect(daemonset).toContain('metadata:\n  namespace: kube-system\n  name: agent\n'); // our one addition, inserted as a line
  });

  it('reports what it accepted but a person should look at: duplicate keys and kinds of unknown scope', () => {
    expect(report.warnings.join('\n')).toMatch(
      /fidelity-addons\/templates\/clusterrole\.yaml: key "name" appears more than once/,
    );
    expect(report.warnings.join('\n')).toMatch(/Widget \(widgets\.example\.org\): scope unknown/);
  });

  it('means the same after `kubectl kustomize`, which Flux and Argo CD run over the output', async () => {
    for (const dir of ['clusters/cluster-stacks/one', 'management']) {
      const built = await run('kubectl', ['kustomize', path.join(out, dir)], { maxBuffer: 64 * 1024 * 1024 });
      const fromKustomize = await decodeObjects(built.stdout);
      const ours = await decodeOutput(path.join(out, dir));
      expect([...fromKustomize.keys()].sort()).toEqual([...ours.keys()].sort());
      for (const [key, object] of ours) expect(fromKustomize.get(key), `${dir} ${key}`).toEqual(object);
    }
  });
});
