// Cluster API v1beta2 end to end through the CLI (real helm): a v1beta2 Cluster renders exactly as
// its v1beta1 twin, and a Cluster whose class cannot be read is never dropped: the run stops naming
// file, line and field, or with --allow-partial withholds that Cluster alone, its addons and its
// release kept, while everything else publishes.
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CapiCluster } from '../src/api/types.js';
import { decodeYamlDocument } from '../src/yaml/kube-yaml.js';
import {
  clusterYaml,
  copyExampleReleases,
  FERROL_STACK_YAML,
  readTree,
  renderWithReport,
  tempDir,
  writeTree,
} from './support/cli.js';
import {
  buildV1beta2Releases,
  V1BETA2_CLASS,
  V1BETA2_RELEASE,
  V1BETA2_STACK,
  v1beta2TwinObjects,
} from './support/v1beta2-stack-releases.js';

const readOutput = (output: string): Promise<Record<string, string>> => readTree(path.join(output, 'current'));

/** The files a render publishes for its units (provenance.json and README.md record the inputs, which differ). */
function unitFiles(tree: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(tree).filter(([file]) => file.startsWith('clusters/') || file.startsWith('management/')),
  );
}

describe('Cluster API v1beta2 Clusters', () => {
  let releases: string;
  beforeAll(async () => {
    releases = await buildV1beta2Releases();
  });

  it('renders a v1beta2 Cluster byte-identical to its v1beta1 twin, reading classRef, the apiGroup references and the v1beta2 ClusterClass', async () => {
    const outputs: Record<string, string>[] = [];
    for (const version of ['v1beta1', 'v1beta2'] as const) {
      const inputs = await writeTree({ 'stack.yaml': V1BETA2_STACK, 'clusters.yaml': v1beta2TwinObjects(version) });
      const out = path.join(await tempDir(), 'out');
      const run = await renderWithReport([inputs, '--release-source', releases, '--output', out]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.report.withheld).toEqual([]);
      outputs.push(unitFiles(await readOutput(out)));
    }
    const [v1beta1, v1beta2] = outputs as [Record<string, string>, Record<string, string>];
    expect(v1beta2).toEqual(v1beta1);
    const settings =
      v1beta2['clusters/fleet/alpha/cni/configmap-cni-settings.kube-system.yaml'] ??
      v1beta2['clusters/fleet/alpha/cni/configmap-cni-settings.yaml'];
    expect(settings, Object.keys(v1beta2).join('\n')).toBeDefined();
    for (const line of [
      'endpoint: "alpha.example.test"',
      'port: "6443"',
      'podCidrs: "192.168.0.0/16"',
      'serviceDomain: "cluster.local"',
      'controlPlane: "alpha-cp"',
      'controlPlaneReplicas: "3"',
      'controlPlaneVersion: "v1.33.7"',
    ])
      expect(settings).toContain(line);
    expect(v1beta2[`management/fleet/${V1BETA2_RELEASE}/clusterclass-${V1BETA2_CLASS}.yaml`]).toContain(
      'apiVersion: cluster.x-k8s.io/v1beta2',
    );
  });

  it('writes the Cluster made for a ClusterRequest in v1beta2, naming its class in classRef', async () => {
    const request =
      'apiVersion: clusters.openmcp.cloud/v1alpha1\nkind: ClusterRequest\nmetadata: {name: r1, namespace: team-a}\nspec: {purpose: workload}\n';
    const scheduler =
      'scheduler:\n  purposeMappings:\n    workload:\n      template:\n        metadata: {namespace: team-a}\n        spec: {profile: fleet.docker.scs2-1-33, tenancy: Exclusive}\n';
    const inputs = await writeTree({ 'stack.yaml': V1BETA2_STACK, 'requests.yaml': request });
    const config = path.join(await tempDir(), 'scheduler.yaml');
    await writeTree({ 'scheduler.yaml': scheduler }, path.dirname(config));
    const out = path.join(await tempDir(), 'out');
    const run = await renderWithReport([
      inputs,
      '--release-source',
      releases,
      '--output',
      out,
      '--scheduler-config',
      config,
    ]);
    expect(run.code, run.stderr).toBe(0);
    const tree = await readOutput(out);
    const files = Object.keys(tree).filter(
      (file) => file.startsWith('management/_cluster-requests/clusters/') && !file.endsWith('kustomization.yaml'),
    );
    expect(files).toHaveLength(1);
    const cluster = decodeYamlDocument(tree[files[0]!]!).value as CapiCluster;
    expect(cluster.apiVersion).toBe('cluster.x-k8s.io/v1beta2');
    expect(cluster.spec?.topology).toEqual({
      classRef: { name: V1BETA2_CLASS, namespace: 'fleet' },
      version: 'v1.33.7',
    });
  });
});

// Steps against one published output, in order (shuffle: false): the --allow-partial renders publish
// alpha's change and the last one removes bravo, which the "writes nothing" steps compare against.
describe('a Cluster whose class cannot be read', { shuffle: false }, () => {
  // alpha uses the quick start's stack, bravo the v1beta2 stack, whose release only bravo keeps.
  const stacks = `${FERROL_STACK_YAML}---\n${V1BETA2_STACK.replace('versions: [v1]', 'versions: []')}`;
  const bravo = (topology: string): string =>
    v1beta2TwinObjects('v1beta2', 'bravo').replace(`    classRef: {name: ${V1BETA2_CLASS}}\n`, topology);
  const clusters = (alphaHost: string, bravoTopology = `    classRef: {name: ${V1BETA2_CLASS}}\n`): string =>
    clusterYaml('alpha', 'docker-ferrol-1-30-v1', alphaHost) + bravo(bravoTopology);
  let releases: string;
  let inputs: string;
  let out: string;
  let published: Record<string, string>;

  beforeAll(async () => {
    releases = await buildV1beta2Releases(await copyExampleReleases());
    inputs = await writeTree({ 'stacks.yaml': stacks, 'clusters.yaml': clusters('alpha.example.test') });
    out = path.join(await tempDir(), 'out');
    const first = await renderWithReport([inputs, '--release-source', releases, '--output', out]);
    expect(first.code, first.stderr).toBe(0);
    published = await readOutput(out);
    expect(Object.keys(published)).toContain(`management/fleet/${V1BETA2_RELEASE}/clusterclass-${V1BETA2_CLASS}.yaml`);
    expect(Object.keys(published).some((file) => file.startsWith('clusters/fleet/bravo/cni/'))).toBe(true);
  });

  /** The line bravo's document starts on (its apiVersion, two lines above its metadata), counted from 1. */
  /** The 1-based line of bravo's class field: its classRef line, else (a field missing) its topology line. */
  const bravoLine = (topology: string): number => {
    const lines = clusters('alpha.example.test', topology).split('\n');
    const topologyLine =
      lines.findIndex(
        (line, index) => line === '  topology:' && index > lines.indexOf('metadata: {name: bravo, namespace: fleet}'),
      ) + 1;
    return topology.startsWith('    classRef:') ? topologyLine + 1 : topologyLine;
  };

  it.each([
    [
      'a list as classRef.name',
      `    classRef: {name: [${V1BETA2_CLASS}]}\n`,
      /spec\.topology\.classRef\.name: is a list .*; it must be the ClusterClass name, a string/,
    ],
    [
      'no class at all',
      '',
      /spec\.topology\.classRef: is missing: a Cluster with spec\.topology must name its ClusterClass/,
    ],
    [
      "v1beta1's class field in a v1beta2 Cluster",
      `    class: ${V1BETA2_CLASS}\n`,
      /spec\.topology\.classRef: is missing.*cluster\.x-k8s\.io\/v1beta2 names it in spec\.topology\.classRef\.name/,
    ],
    [
      'a typo of the class',
      '    classRef: {name: docker-scs2-1-33-v1.}\n',
      /spec\.topology\.classRef\.name: names docker-scs2-1-33-v1\., which is not a cluster stack class .*did you mean docker-scs2-1-33-v1\?/,
    ],
    [
      'a foreign class for a Cluster the tree renders',
      '    classRef: {name: my-own-class}\n',
      /spec\.topology\.classRef\.name: names my-own-class, which is not a cluster stack class, but the published tree holds this Cluster's addons \(release docker-scs2-1-33-v1\)/,
    ],
  ])('stops on %s, naming file, line and field, and writes nothing', async (_name, topology, message) => {
    const broken = await writeTree({
      'stacks.yaml': stacks,
      'clusters.yaml': clusters('alpha-new.example.test', topology),
    });
    const run = await renderWithReport([broken, '--release-source', releases, '--output', out]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`clusters\\.yaml:${bravoLine(topology)} Cluster fleet/bravo`));
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain('--allow-partial');
    expect(await readOutput(out)).toEqual(published);
  });

  it.each([
    ['a list as classRef.name', `    classRef: {name: [${V1BETA2_CLASS}]}\n`],
    ['a foreign class', '    classRef: {name: my-own-class}\n'],
  ])(
    'with --allow-partial publishes the rest and keeps the Cluster with %s, its addons and its release as published',
    async (_name, topology) => {
      const broken = await writeTree({
        'stacks.yaml': stacks,
        'clusters.yaml': clusters('alpha-new.example.test', topology),
      });
      const run = await renderWithReport([broken, '--release-source', releases, '--output', out, '--allow-partial']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.report.withheld).toEqual([
        expect.objectContaining({
          kind: 'cluster',
          namespace: 'fleet',
          name: 'bravo',
          reason: expect.stringMatching(/clusters\.yaml:\d+ spec\.topology\.classRef\.name: /),
          previousOutputKept: true,
        }),
        expect.objectContaining({
          kind: 'release',
          namespace: 'fleet',
          name: V1BETA2_RELEASE,
          reason: expect.stringContaining('kept for Cluster fleet/bravo'),
          previousOutputKept: true,
        }),
      ]);
      const tree = await readOutput(out);
      for (const [file, text] of Object.entries(published))
        if (file.startsWith('clusters/fleet/bravo/') || file.startsWith(`management/fleet/${V1BETA2_RELEASE}/`))
          expect(tree[file], file).toBe(text);
      // alpha's change is published: its addons are rendered for its new endpoint.
      expect(
        Object.entries(tree).some(
          ([file, text]) =>
            file.startsWith('clusters/cluster-stacks/alpha/') && text.includes('alpha-new.example.test'),
        ),
      ).toBe(true);
      expect(tree['README.md']).toMatch(
        new RegExp(`cluster fleet/bravo: \\S*clusters\\.yaml:${bravoLine(topology)} spec\\.topology\\.classRef\\.name`),
      );
      // The README lists the release in its stack's table as kept for the held Cluster; Withheld names the Cluster alone.
      const readme = tree['README.md']!;
      expect(readme).toContain(
        `| \`${V1BETA2_RELEASE}\` | v1 | kept for a held Cluster, previous output kept | kept for Cluster fleet/bravo, whose withheld addons are kept and use it |`,
      );
      const withheldSection = readme.slice(readme.indexOf('## Withheld'));
      expect(withheldSection).toContain('- cluster fleet/bravo: ');
      expect(withheldSection).not.toContain(`release fleet/${V1BETA2_RELEASE}`);
    },
  );

  it('lets the Cluster go, and its release with it, once it is deleted from the inputs', async () => {
    const gone = await writeTree({
      'stacks.yaml': stacks,
      'clusters.yaml': clusterYaml('alpha', 'docker-ferrol-1-30-v1', 'alpha.example.test'),
    });
    const run = await renderWithReport([gone, '--release-source', releases, '--output', out, '--allow-mass-delete']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.report.withheld).toEqual([]);
    const files = Object.keys(await readOutput(out));
    expect(
      files.some(
        (file) => file.startsWith('clusters/fleet/bravo/') || file.startsWith(`management/fleet/${V1BETA2_RELEASE}/`),
      ),
    ).toBe(false);
  });
});
