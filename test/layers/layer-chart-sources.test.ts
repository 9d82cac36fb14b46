// AddonsLayers whose source is a Helm chart from a repository, for real: a chart packaged by helm and
// pushed with `helm push` to a real docker-registry, and an HTTP chart repository (`helm repo index`)
// served by a small node server. Bad repositories (an unknown version, an archive that does not
// match the index, a registry that is down, an archive escaping its directory, a pinned digest
// that does not match) withhold their layer alone, with the reason; everything else renders.
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyExampleReleases, runClusterstack, tempDir, writeTree } from '../support/cli.js';
import { kustomizeBuild } from '../support/engine-schemas/kustomize-build.js';
import { parseObject } from '../support/engine-schemas/wiring-checks.js';
import { GitSandbox } from '../support/git-repos.js';
import { FLEET_CLUSTER as CLUSTER, FLEET_STACK as STACK } from '../support/layer-fleet.js';
import { freePort, startRegistry, type TestRegistry } from '../support/registry/index.js';

const HELM = path.resolve('node_modules/.bin/helm');
const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

const CHART = {
  'Chart.yaml': 'apiVersion: v2\nname: monitoring\nversion: 1.2.0\n',
  'values.yaml': 'replicas: 1\nclusterName: unset\n',
  'templates/configmap.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mon-{{ .Values.clusterName }}\ndata:\n  replicas: {{ .Values.replicas | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n',
};

function layer(name: string, source: string, namespace = name): string {
  return `---
apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata: {name: ${name}}
spec:
  version: 1.0.0
  source: ${source}
  clusterSelector: {}
  namespace: ${namespace}
  values: {replicas: 3}
  valuesTemplate: |
    clusterName: {{ .Cluster.metadata.name }}
`;
}

/** A ustar archive written by hand: helm and node-tar refuse to write an entry named `../...`. */
function rawTar(entries: { name: string; content: string }[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const content = Buffer.from(entry.content);
    const header = Buffer.alloc(512);
    header.write(entry.name, 0, 100, 'utf8');
    header.write('0000644\0', 100, 8, 'ascii');
    header.write('0000000\0', 108, 8, 'ascii');
    header.write('0000000\0', 116, 8, 'ascii');
    header.write(`${content.length.toString(8).padStart(11, '0')}\0`, 124, 12, 'ascii');
    header.write(`${(1_700_000_000).toString(8).padStart(11, '0')}\0`, 136, 12, 'ascii');
    header.fill(' ', 148, 156);
    header.write('0', 156, 1, 'ascii');
    header.write('ustar\0', 257, 6, 'ascii');
    header.write('00', 263, 2, 'ascii');
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
    blocks.push(header, content, Buffer.alloc((512 - (content.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** Serves `root` read-only over HTTP on 127.0.0.1. */
async function serveDirectory(root: string): Promise<{ url: string; server: Server }> {
  const port = await freePort();
  const server = createServer((request, response) => {
    const file = path.join(root, decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname));
    if (!file.startsWith(root)) return void response.writeHead(403).end();
    readFile(file).then(
      (body) => response.writeHead(200, { 'content-length': body.length }).end(body),
      () => response.writeHead(404).end('not found'),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}`, server };
}

describe('layer sources from OCI and HTTP chart repositories (real helm, registry and HTTP)', () => {
  let registry: TestRegistry;
  let http: { url: string; server: Server };
  let repo: string;
  let releases: string;
  let cacheDir: string;
  let remote: string;
  let work: string;
  let first: { code: number; stderr: string; report: Record<string, any> };
  let files: Record<string, string>;

  async function render(): Promise<{ code: number; stderr: string; report: Record<string, any> }> {
    const result = await runClusterstack([
      'render',
      path.join(repo, 'manifests'),
      '--release-source',
      releases,
      '--git',
      remote,
      '--json',
      '--plain-http',
      '--cache-dir',
      cacheDir,
    ]);
    return { code: result.code, stderr: result.stderr, report: result.stdout ? JSON.parse(result.stdout) : {} };
  }

  beforeAll(async () => {
    work = await tempDir('layer-charts-');
    const helmEnv = {
      ...process.env,
      HOME: work,
      HELM_CACHE_HOME: path.join(work, 'helm-cache'),
      HELM_CONFIG_HOME: path.join(work, 'helm-config'),
      HELM_DATA_HOME: path.join(work, 'helm-data'),
    };
    const chartDir = path.join(work, 'src/monitoring');
    for (const [file, text] of Object.entries(CHART)) {
      await mkdir(path.dirname(path.join(chartDir, file)), { recursive: true });
      await writeFile(path.join(chartDir, file), text);
    }
    const served = path.join(work, 'served');
    for (const dir of ['stable', 'tampered', 'evil']) await mkdir(path.join(served, dir), { recursive: true });
    execFileSync(HELM, ['package', chartDir, '--destination', path.join(served, 'stable')], { env: helmEnv });
    const archive = path.join(served, 'stable/monitoring-1.2.0.tgz');

    // OCI: pushed by helm itself.
    registry = await startRegistry();
    execFileSync(HELM, ['push', archive, `oci://${registry.host}/charts`], { env: helmEnv, stdio: 'pipe' });

    // HTTP: an index made by helm; a copy whose archive was altered after indexing; one escaping its directory.
    http = await serveDirectory(served);
    execFileSync(HELM, ['repo', 'index', path.join(served, 'stable'), '--url', `${http.url}/stable`], { env: helmEnv });
    const index = await readFile(path.join(served, 'stable/index.yaml'), 'utf8');
    await writeFile(
      path.join(served, 'tampered/index.yaml'),
      index.replaceAll(`${http.url}/stable`, `${http.url}/tampered`),
    );
    const altered = gzipSync(
      rawTar([
        { name: 'monitoring/Chart.yaml', content: CHART['Chart.yaml'] },
        {
          name: 'monitoring/templates/configmap.yaml',
          content: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: planted}\n',
        },
      ]),
    );
    await writeFile(path.join(served, 'tampered/monitoring-1.2.0.tgz'), altered);
    const evil = gzipSync(
      rawTar([
        { name: 'monitoring/Chart.yaml', content: CHART['Chart.yaml'] },
        { name: '../../../evil.yaml', content: 'owned' },
      ]),
    );
    await writeFile(path.join(served, 'evil/monitoring-1.2.0.tgz'), evil);
    const evilDigest = execFileSync('sha256sum', [path.join(served, 'evil/monitoring-1.2.0.tgz')], {
      encoding: 'utf8',
    }).split(' ')[0];
    await writeFile(
      path.join(served, 'evil/index.yaml'),
      `apiVersion: v1\nentries:\n  monitoring:\n  - name: monitoring\n    version: 1.2.0\n    digest: ${evilDigest}\n    urls: [monitoring-1.2.0.tgz]\n`,
    );

    const down = `127.0.0.1:${await freePort()}`;
    repo = await writeTree({
      'manifests/stack.yaml': STACK,
      'manifests/cluster.yaml': CLUSTER,
      'manifests/layers.yaml': [
        layer('base', '{path: ./addons/base}'),
        layer('mon-oci', `{chart: {repository: "oci://${registry.host}/charts/monitoring", version: "1.2.0"}}`),
        layer('mon-http', `{chart: {repository: "${http.url}/stable", name: monitoring, version: "1.2.0"}}`),
        layer(
          'bad-version',
          `{chart: {repository: "${http.url}/stable/index.yaml", name: monitoring, version: "9.9.9"}}`,
        ),
        layer('bad-digest', `{chart: {repository: "${http.url}/tampered", name: monitoring, version: "1.2.0"}}`),
        layer(
          'bad-pin',
          `{chart: {repository: "oci://${registry.host}/charts/monitoring", version: "1.2.0", digest: "sha256:${'0'.repeat(64)}"}}`,
        ),
        layer('down', `{chart: {repository: "oci://${down}/charts/monitoring", version: "1.2.0"}}`),
        layer('evil', `{chart: {repository: "${http.url}/evil", name: monitoring, version: "1.2.0"}}`),
      ].join(''),
      'addons/base/settings.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base-settings}\ndata: {a: b}\n',
    });
    execFileSync('git', ['init', '-q', repo]);
    releases = await copyExampleReleases();
    cacheDir = path.join(work, 'cache');
    remote = sandbox.bareRepo('layer-charts');
    first = await render();
    if (process.env.DEBUG_LAYER_CHARTS) console.log(JSON.stringify(first, null, 1));
    files = sandbox.files(remote, 'main');
  }, 120_000);

  afterAll(async () => {
    await registry?.stop();
    await new Promise((resolve) => http?.server.close(resolve));
  });

  it('renders the chart from the registry and from the HTTP repository with values templated over .Cluster', () => {
    expect(first.code).toBe(0);
    for (const [layerName, namespace] of [
      ['mon-oci', 'mon-oci'],
      ['mon-http', 'mon-http'],
    ]) {
      const object = parseObject(files[`clusters/fleet/one/layers/${layerName}/configmap-mon-one.yaml`]!);
      expect(object).toMatchObject({
        metadata: { name: 'mon-one', namespace },
        data: { replicas: '3', kube: 'v1.30.2' },
      });
      expect(
        kustomizeBuild(new Map(Object.entries(files)), `clusters/fleet/one/layers/${layerName}`).map(
          (o) => o.metadata.name,
        ),
      ).toEqual(['mon-one']);
    }
    expect(files['clusters/fleet/one/layers/base/configmap-base-settings.yaml']).toBeDefined();
    expect(files['clusters/fleet/one/cluster-addon/kustomization.yaml']).toBeDefined();
  });

  it('withholds each bad layer alone, naming it and what to do, and writes nothing of it', async () => {
    const withheld = Object.fromEntries(
      (first.report.withheld as { layer: string; reason: string }[]).map((entry) => [entry.layer, entry.reason]),
    );
    expect(Object.keys(withheld).sort()).toEqual(['bad-digest', 'bad-pin', 'bad-version', 'down', 'evil']);
    expect(withheld['bad-version']).toBe(
      `bad-version@1.0.0: its chart could not be fetched: ${http.url}/stable/index.yaml has no version 9.9.9 of chart monitoring; it has 1.2.0`,
    );
    expect(withheld['bad-digest']).toMatch(
      /^bad-digest@1\.0\.0: its chart could not be fetched: monitoring 1\.2\.0 from .*\/tampered\/index\.yaml: the archive from .* has digest sha256:[0-9a-f]{64}, but the index says sha256:[0-9a-f]{64}; it was altered/,
    );
    expect(withheld['bad-pin']).toContain(
      `bad-pin@1.0.0: its chart could not be fetched: oci://${registry.host}/charts/monitoring:1.2.0: its manifest digest is sha256:`,
    );
    expect(withheld['bad-pin']).toContain(`but the layer pins spec.source.chart.digest sha256:${'0'.repeat(64)}`);
    expect(withheld.down).toMatch(/^down@1\.0\.0: its chart could not be fetched: .*127\.0\.0\.1/);
    expect(withheld.evil).toMatch(
      /^evil@1\.0\.0: its chart could not be fetched: .*\.\.\/\.\.\/\.\.\/evil\.yaml.*points outside the archive directory/,
    );
    for (const name of Object.keys(withheld))
      expect(Object.keys(files).filter((file) => file.includes(`/layers/${name}/`))).toEqual([]);
    // The archive escaping its directory wrote nothing anywhere near the cache.
    const written = await readdir(work, { recursive: true });
    expect(written.filter((file) => String(file).endsWith('evil.yaml'))).toEqual([]);
    expect(first.report.warnings).toContainEqual(
      expect.stringContaining('AddonsLayer down: its chart could not be fetched'),
    );
  });

  it('serves fetched charts from the cache, verified, when the repositories are gone', async () => {
    await registry.stop();
    await new Promise((resolve) => http.server.close(resolve));
    const again = await render();
    expect(again.code).toBe(0);
    // Only the reports change (the HTTP repository's layers now fail to reach it); the charts' output stays.
    expect((again.report.files.written as string[]).filter((file) => file.startsWith('clusters/'))).toEqual([]);
    const now = sandbox.files(remote, 'main');
    for (const layerName of ['mon-oci', 'mon-http'])
      expect(now[`clusters/fleet/one/layers/${layerName}/configmap-mon-one.yaml`]).toBe(
        files[`clusters/fleet/one/layers/${layerName}/configmap-mon-one.yaml`],
      );
    expect(again.report.withheld.find((entry: { layer?: string }) => entry.layer === 'bad-version').reason).toContain(
      'cannot be reached',
    );
  });
});

describe('chart source validation', () => {
  it.each([
    [
      'both path and chart',
      '{path: ./addons/base, chart: {repository: "oci://r.example/charts/x", version: "1.0.0"}}',
      'spec.source: give either path (a directory of the repository) or chart',
    ],
    [
      'an HTTP repository without a chart name',
      '{chart: {repository: "https://charts.example.test", version: "1.0.0"}}',
      'spec.source.chart.name: is required for an HTTP chart repository',
    ],
    [
      'a version range',
      '{chart: {repository: "oci://r.example/charts/x", version: "^1.0"}}',
      "spec.source.chart.version: must be the chart's exact version",
    ],
    [
      'credentials in the URL',
      '{chart: {repository: "https://user:pw@charts.example.test", name: x, version: "1.0.0"}}',
      'spec.source.chart.repository: must be oci://<registry>/<path>/<chart> or an HTTP chart repository',
    ],
    [
      'a malformed digest',
      '{chart: {repository: "oci://r.example/charts/x", version: "1.0.0", digest: "md5:abc"}}',
      'spec.source.chart.digest: must be sha256:<64 hex digits>',
    ],
  ])('refuses %s before anything is written', async (_what, source, message) => {
    const repo = await writeTree({
      'manifests/stack.yaml': STACK,
      'manifests/cluster.yaml': CLUSTER,
      'manifests/layers.yaml': layer('charted', source),
      'addons/base/a.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n',
    });
    execFileSync('git', ['init', '-q', repo]);
    const remote = sandbox.bareRepo(`chart-bad-${Math.random().toString(16).slice(2)}`);
    const result = await runClusterstack([
      'render',
      path.join(repo, 'manifests'),
      '--release-source',
      await copyExampleReleases(),
      '--git',
      remote,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
    expect(result.stderr).not.toContain('pw@');
    expect(sandbox.head(remote, 'main')).toBe('');
  });
});
