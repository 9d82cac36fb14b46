// Charts that choose an API by capability (`.Capabilities.APIVersions.Has`) pick what the target
// cluster serves: rendered with --api-versions for the target minor, the Cluster API and the CRDs
// the release ships; what helm's own list still makes a chart choose wrongly is withheld, named.
// Runs once per supported helm (vitest.config.ts), and once on the bundled 3.10.1 fallback, whose
// own list (Kubernetes 1.25's) is what --api-versions adds to most.
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveHelmBinary } from '../renderers/helm-binary.js';
import { HelmRenderer } from '../renderers/helm-renderer.js';
import { crdApiVersions, servedApiProblem, targetApiVersions } from '../src/core/kube-api-versions.js';
import { chartCrdApiVersions } from '../src/release/chart-crds.js';
import {
  clusterYaml,
  copyExampleReleases,
  FERROL_STACK_YAML,
  runClusterstack,
  tempDir,
  writeTree,
} from './support/cli.js';
import { aHelmRunner, helmTempDir, writeChart } from './support/helm-fixtures.js';

const WIDGET_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.org}
spec:
  group: example.org
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
    - {name: v1alpha1, served: false, storage: false, schema: {openAPIV3Schema: {type: object}}}
`;

/** A chart in the shape of Kyverno's: each API chosen by what helm says the cluster serves. */
const CAPABILITIES_CHART: Record<string, string> = {
  'Chart.yaml': 'apiVersion: v2\nname: capabilities\nversion: 0.1.0\n',
  'crds/widgets.yaml': WIDGET_CRD,
  'templates/flowschema.yaml': `{{- if .Capabilities.APIVersions.Has "flowcontrol.apiserver.k8s.io/v1" }}
apiVersion: flowcontrol.apiserver.k8s.io/v1
{{- else }}
apiVersion: flowcontrol.apiserver.k8s.io/v1beta2
{{- end }}
kind: FlowSchema
metadata: {name: by-capability}
spec: {priorityLevelConfiguration: {name: workload-low}}
`,
  'templates/pdb.yaml': `{{- if .Capabilities.APIVersions.Has "policy/v1" }}
apiVersion: policy/v1
{{- else }}
apiVersion: policy/v1beta1
{{- end }}
kind: PodDisruptionBudget
metadata: {name: by-capability}
spec: {minAvailable: 1, selector: {matchLabels: {app: x}}}
`,
  'templates/widget.yaml': `{{- if .Capabilities.APIVersions.Has "example.org/v1/Widget" }}
apiVersion: example.org/v1
kind: Widget
metadata: {name: only-where-served}
{{- end }}
`,
  'templates/machine-health.yaml': `{{- if .Capabilities.APIVersions.Has "cluster.x-k8s.io/v1beta1/MachineHealthCheck" }}
apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-api-served}
{{- end }}
`,
};

/** apiVersion by kind in a rendered stream. */
function apiVersionsByKind(output: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const match of output.matchAll(/^apiVersion: (\S+)\nkind: (\S+)$/gm)) found[match[2]!] = match[1]!;
  return found;
}

describe('API versions as the target cluster serves them', () => {
  let chartDir: string;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    const temp = await helmTempDir('capabilities');
    cleanup = temp.cleanup;
    chartDir = await writeChart(path.join(temp.dir, 'capabilities'), CAPABILITIES_CHART);
  });
  afterAll(async () => cleanup?.());

  async function render(binary: string | undefined, kubeVersion: string): Promise<Record<string, string>> {
    const { runner, cleanup: done } = await aHelmRunner(binary ? { binary } : {});
    try {
      const apiVersions = targetApiVersions(kubeVersion, await chartCrdApiVersions([chartDir]));
      const output = await new HelmRenderer(runner).renderChart({
        releaseName: 'caps',
        chart: { dir: chartDir, digest: 'sha256:caps', origin: 'capabilities' },
        namespace: 'default',
        kubeVersion,
        apiVersions,
      });
      return apiVersionsByKind(output);
    } finally {
      await done();
    }
  }

  it('on the supported helm under test: 1.33 gets flowcontrol v1 and policy/v1; 1.25 gets policy/v1 and, from helm’s own list, a flowcontrol v1 that 1.25 does not serve, which is named', async () => {
    const helm = await resolveHelmBinary({ pathEnv: process.env.PATH ?? '' });
    expect(helm.warning, `${helm.version} is a supported helm`).toBeUndefined();
    const at133 = await render(helm.path, '1.33.4');
    expect(at133).toEqual({
      FlowSchema: 'flowcontrol.apiserver.k8s.io/v1',
      PodDisruptionBudget: 'policy/v1',
      Widget: 'example.org/v1',
      ConfigMap: 'v1',
    });
    expect(Object.values(at133).map((version) => servedApiProblem(version, '1.33.4'))).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    const at125 = await render(helm.path, '1.25.16');
    expect(at125).toEqual({
      FlowSchema: 'flowcontrol.apiserver.k8s.io/v1',
      PodDisruptionBudget: 'policy/v1',
      Widget: 'example.org/v1',
      ConfigMap: 'v1',
    });
    expect(servedApiProblem(at125.FlowSchema!, '1.25.16')).toBe(
      'flowcontrol.apiserver.k8s.io/v1 is not served by Kubernetes 1.25 (served from 1.29)',
    );
  });

  it('on the bundled helm 3.10.1, whose own list stops at Kubernetes 1.25: 1.25 gets flowcontrol v1beta2, and 1.33 gets v1 only because --api-versions says it is served', async () => {
    const bundled = await resolveHelmBinary({ pathEnv: '' });
    expect(bundled.version).toBe('v3.10.1');
    expect(await render(bundled.path, '1.25.16')).toMatchObject({
      FlowSchema: 'flowcontrol.apiserver.k8s.io/v1beta2',
      PodDisruptionBudget: 'policy/v1',
    });
    expect(await render(bundled.path, '1.33.4')).toMatchObject({
      FlowSchema: 'flowcontrol.apiserver.k8s.io/v1',
      PodDisruptionBudget: 'policy/v1',
    });
  });

  it('render: the release’s CRDs are served to its charts, and a stage rendering an API its Kubernetes no longer serves is withheld, named, nothing written for it', async () => {
    const releases = await copyExampleReleases();
    const v1 = path.join(releases, 'docker-ferrol-1-30-v1');
    await rm(path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1.tgz'));
    const removed = {
      ...CAPABILITIES_CHART,
      'templates/old.yaml':
        'apiVersion: flowcontrol.apiserver.k8s.io/v1beta2\nkind: PriorityLevelConfiguration\nmetadata: {name: pinned-old}\nspec: {type: Limited}\n',
    };
    const inputs = await writeTree({
      'inputs.yaml': `${FERROL_STACK_YAML}${clusterYaml('one', 'docker-ferrol-1-30-v1')}`,
    });

    await writeChart(path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1'), CAPABILITIES_CHART);
    const out = path.join(await tempDir(), 'out');
    const good = await runClusterstack(['render', inputs, '--release-source', releases, '--output', out, '--json']);
    expect(good.code, good.stderr).toBe(0);
    const addon = path.join(out, 'current', 'clusters', 'cluster-stacks', 'one', 'cluster-addon');
    const files = await readdir(addon);
    const rendered = Object.fromEntries(
      await Promise.all(
        files
          .filter((file) => file !== 'kustomization.yaml')
          .map(async (file) => [file, await readFile(path.join(addon, file), 'utf8')]),
      ),
    );
    expect(apiVersionsByKind(Object.values(rendered).join('---\n'))).toMatchObject({
      FlowSchema: 'flowcontrol.apiserver.k8s.io/v1',
      PodDisruptionBudget: 'policy/v1',
      Widget: 'example.org/v1',
      ConfigMap: 'v1',
    });

    await writeChart(path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1'), removed);
    const second = path.join(await tempDir(), 'out');
    const refused = await runClusterstack([
      'render',
      inputs,
      '--release-source',
      releases,
      '--output',
      second,
      '--json',
    ]);
    expect(refused.code, refused.stderr).toBe(0);
    const report = JSON.parse(refused.stdout) as { withheld: { kind: string; name: string; reason: string }[] };
    expect(report.withheld).toHaveLength(1);
    expect(report.withheld[0]).toMatchObject({ kind: 'cluster', name: 'one' });
    expect(report.withheld[0]!.reason).toContain(
      'PriorityLevelConfiguration pinned-old: flowcontrol.apiserver.k8s.io/v1beta2 is not served by Kubernetes 1.30 (served from 1.23 until 1.28), so the cluster would refuse it',
    );
    await expect(readdir(path.join(second, 'current', 'clusters', 'cluster-stacks', 'one'))).rejects.toThrow(/ENOENT/);
  });
});

describe('the served API table', () => {
  it('gives each minor what Kubernetes serves by default: flowcontrol and policy across their removals', () => {
    const flowcontrol = (minor: number) =>
      targetApiVersions(`1.${minor}.0`).filter((version) => version.startsWith('flowcontrol.'));
    expect(flowcontrol(25)).toEqual(['flowcontrol.apiserver.k8s.io/v1beta1', 'flowcontrol.apiserver.k8s.io/v1beta2']);
    expect(flowcontrol(28)).toEqual(['flowcontrol.apiserver.k8s.io/v1beta2', 'flowcontrol.apiserver.k8s.io/v1beta3']);
    expect(flowcontrol(29)).toEqual(['flowcontrol.apiserver.k8s.io/v1', 'flowcontrol.apiserver.k8s.io/v1beta3']);
    expect(flowcontrol(33)).toEqual(['flowcontrol.apiserver.k8s.io/v1']);
    expect(targetApiVersions('v1.24.3')).toEqual(
      expect.arrayContaining(['policy/v1', 'policy/v1beta1', 'batch/v1beta1']),
    );
    expect(targetApiVersions('v1.25.0')).not.toContain('policy/v1beta1');
    expect(targetApiVersions('1.33.1')).toEqual(
      expect.arrayContaining(['v1', 'apps/v1', 'cluster.x-k8s.io/v1beta1', 'cluster.x-k8s.io/v1beta2/Cluster']),
    );
    // Beyond the table's last minor: as its last.
    expect(targetApiVersions('1.45.0')).toEqual(targetApiVersions('1.37.0'));
  });

  it('is sorted and without duplicates, so it digests the same every time', () => {
    const list = targetApiVersions('1.30.2', ['example.org/v1', 'apps/v1', 'example.org/v1']);
    expect(list).toEqual([...new Set(list)].sort());
  });

  it('takes only the served versions of a CRD, as group/version and group/version/Kind', () => {
    expect(
      crdApiVersions([
        {
          kind: 'CustomResourceDefinition',
          spec: {
            group: 'example.org',
            names: { kind: 'Widget' },
            versions: [
              { name: 'v1', served: true },
              { name: 'v1alpha1', served: false },
            ],
          },
        },
        { kind: 'ConfigMap' },
        null,
      ]),
    ).toEqual(['example.org/v1', 'example.org/v1/Widget']);
  });

  it('names an unserved built-in with the minors that serve it; says nothing of CRDs', () => {
    expect(servedApiProblem('policy/v1beta1', '1.30.2')).toBe(
      'policy/v1beta1 is not served by Kubernetes 1.30 (served from 1.16 until 1.24)',
    );
    expect(servedApiProblem('policy/v1', '1.30.2')).toBeUndefined();
    expect(servedApiProblem('example.org/v1', '1.30.2')).toBeUndefined();
  });
});
