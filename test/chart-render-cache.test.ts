// plan's cache of ClusterClass renders (src/render/chart-render-cache.ts) with the real helm: an
// unchanged request is answered from the cache without helm; a changed chart, values, namespace,
// Kubernetes version or helm binary renders again; a damaged entry is never used; a failing chart
// is never stored; no Secret value rests in it, and values templates leave only their verdicts.
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHelmDependencies } from '../renderers/helm-dependencies.js';
import { helmBinaryIdentity, resolveHelmBinary } from '../renderers/helm-binary.js';
import {
  CHART_RENDERS_DIR,
  cachedRenderChart,
  cachedValuesVerdicts,
  ChartRenderCache,
} from '../src/render/chart-render-cache.js';
import { withSecretValueDigests } from '../src/render/secret-value-digests.js';
import { readManifests } from '../src/render/manifest-objects.js';
import { treeDigest } from '../src/release/content-digest.js';
import type { ChartRenderRequest, ValuesTemplateItem } from '../src/render/render-dependencies.js';
import { decodeYamlDocuments } from '../src/yaml/kube-yaml.js';
import { helmTempDir, writeChart, writeScript } from './support/helm-fixtures.js';

interface ConfigMap {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  data: Record<string, string>;
}

function configMap(output: string): ConfigMap {
  const objects = decodeYamlDocuments(output)
    .map((document) => document.value)
    .filter(Boolean) as ConfigMap[];
  expect(objects).toHaveLength(1);
  return objects[0]!;
}

let root: { dir: string; cleanup: () => Promise<void> };
let chartDir: string;
let helm: string;

beforeAll(async () => {
  root = await helmTempDir('chart-render-cache');
  helm = (await resolveHelmBinary({ pathEnv: process.env.PATH })).path;
  chartDir = await writeChart(path.join(root.dir, 'chart'), {
    'Chart.yaml': 'apiVersion: v2\nname: greeting\nversion: 0.1.0\n',
    'values.yaml': 'greeting: hello\n',
    'templates/cm.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\n  namespace: {{ .Release.Namespace }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n',
  });
});

afterAll(() => root.cleanup());

/** A cached renderer over the real helm, counting helm renders; `identity` names the helm binary. */
function cachedHelm(
  cacheDir: string,
  identity: () => Promise<string | undefined> = () => helmBinaryIdentity({ configured: helm }),
) {
  let helmRenders = 0;
  const deps = createHelmDependencies({
    configured: helm,
    pathEnv: process.env.PATH ?? '',
    workDir: path.join(cacheDir, 'helm'),
  });
  const cached = cachedRenderChart(new ChartRenderCache(cacheDir), identity, async () => async (request) => {
    helmRenders += 1;
    return deps.renderChart(request);
  });
  return { ...cached, helmRenders: () => helmRenders };
}

async function request(overrides: Partial<ChartRenderRequest> = {}): Promise<ChartRenderRequest> {
  return {
    releaseName: 'greeting',
    chart: { dir: chartDir, digest: await treeDigest(chartDir), origin: 'greeting' },
    namespace: 'fleet',
    kubeVersion: '1.30.4',
    values: [],
    ...overrides,
  };
}

async function entries(cacheDir: string): Promise<string[]> {
  return readdir(path.join(cacheDir, CHART_RENDERS_DIR)).catch(() => []);
}

describe('plan chart render cache', () => {
  it('answers an unchanged render from the cache, in a later run, without helm', async () => {
    const cacheDir = path.join(root.dir, 'unchanged');
    const first = cachedHelm(cacheDir);
    const rendered = await first.renderChart(await request());
    expect(configMap(rendered).data).toEqual({ greeting: 'hello', kube: 'v1.30.4' });
    expect(first.stats()).toEqual({ hits: 0, rendered: 1 });
    // A later run (a new renderer over the same directory) starts no helm and gets the same bytes.
    const later = cachedHelm(cacheDir);
    expect(await later.renderChart(await request())).toBe(rendered);
    expect(later.stats()).toEqual({ hits: 1, rendered: 0 });
    expect(later.helmRenders()).toBe(0);
    expect(await entries(cacheDir)).toHaveLength(1);
  });

  it('renders again when the values, the chart, the namespace, the Kubernetes version or the helm binary change', async () => {
    const cacheDir = path.join(root.dir, 'changes');
    const renderer = cachedHelm(cacheDir);
    await renderer.renderChart(await request());

    const otherValues = await renderer.renderChart(await request({ values: [{ greeting: 'bonjour' }] }));
    expect(configMap(otherValues).data.greeting).toBe('bonjour');
    expect(renderer.helmRenders()).toBe(2);

    const otherNamespace = await renderer.renderChart(await request({ namespace: 'other' }));
    expect(configMap(otherNamespace).metadata.namespace).toBe('other');
    const otherKube = await renderer.renderChart(await request({ kubeVersion: '1.31.1' }));
    expect(configMap(otherKube).data.kube).toBe('v1.31.1');
    expect(renderer.helmRenders()).toBe(4);

    // The chart changes in place: its digest changes, and the stale render is not used.
    const template = path.join(chartDir, 'templates/cm.yaml');
    const original = await readFile(template, 'utf8');
    await writeFile(
      template,
      original.replace('  name: greeting\n', '  name: greeting\n  labels:\n    edited: "yes"\n'),
    );
    try {
      const edited = await renderer.renderChart(await request());
      expect(configMap(edited).metadata.labels).toEqual({ edited: 'yes' });
      expect(renderer.helmRenders()).toBe(5);
    } finally {
      await writeFile(template, original);
    }
    // Back to the original chart: that render is still in the cache.
    expect(configMap(await renderer.renderChart(await request())).metadata.labels).toBeUndefined();
    expect(renderer.helmRenders()).toBe(5);

    // Another helm binary (an upgrade, another --helm) renders again.
    const otherHelm = cachedHelm(cacheDir, async () => `${await helmBinaryIdentity({ configured: helm })} upgraded`);
    await otherHelm.renderChart(await request());
    expect(otherHelm.stats()).toEqual({ hits: 0, rendered: 1 });
  });

  it('never uses a damaged entry: it is removed and the chart rendered again', async () => {
    const cacheDir = path.join(root.dir, 'damaged');
    const rendered = await cachedHelm(cacheDir).renderChart(await request());
    const [file] = await entries(cacheDir);
    const entryFile = path.join(cacheDir, CHART_RENDERS_DIR, file!);
    const entry = JSON.parse(await readFile(entryFile, 'utf8')) as { output: string };
    await writeFile(entryFile, JSON.stringify({ ...entry, output: entry.output.replace('hello', 'tampered') }));
    const again = cachedHelm(cacheDir);
    expect(await again.renderChart(await request())).toBe(rendered);
    expect(again.stats()).toEqual({ hits: 0, rendered: 1 });
    await writeFile(entryFile, 'not json');
    const third = cachedHelm(cacheDir);
    expect(configMap(await third.renderChart(await request())).data.greeting).toBe('hello');
    expect(third.stats().rendered).toBe(1);
  });

  it('stores nothing for a chart helm refuses, and nothing when no helm can be named', async () => {
    const cacheDir = path.join(root.dir, 'failing');
    const broken = await writeChart(path.join(root.dir, 'broken'), {
      'Chart.yaml': 'apiVersion: v2\nname: broken\nversion: 0.1.0\n',
      'templates/cm.yaml': '{{ fail "this chart refuses to render" }}\n',
    });
    const renderer = cachedHelm(cacheDir);
    const brokenRequest = await request({ chart: { dir: broken, digest: await treeDigest(broken), origin: 'broken' } });
    await expect(renderer.renderChart(brokenRequest)).rejects.toThrow(/this chart refuses to render/);
    await expect(renderer.renderChart(brokenRequest)).rejects.toThrow(/this chart refuses to render/);
    expect(renderer.helmRenders()).toBe(2);
    expect(await entries(cacheDir)).toEqual([]);

    const unnamed = cachedHelm(cacheDir, async () => undefined);
    await unnamed.renderChart(await request());
    await unnamed.renderChart(await request());
    expect(unnamed.stats()).toEqual({ hits: 0, rendered: 2 });
    expect(await entries(cacheDir)).toEqual([]);
  });

  it('names the helm binary by its path and file: another file is another identity, none when nothing is executable', async () => {
    const identity = await helmBinaryIdentity({ configured: helm });
    expect(identity).toMatch(
      new RegExp(`^${helm.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} size=\\d+ mtime=[\\d.]+ ino=\\d+$`),
    );
    expect(await helmBinaryIdentity({ pathEnv: path.dirname(helm), bundledPath: null })).toBe(identity);
    const other = await writeScript(path.join(root.dir, 'other-helm'), 'echo v3.99.0');
    expect(await helmBinaryIdentity({ configured: other })).toMatch(/^.*other-helm size=\d+ /);
    expect(await helmBinaryIdentity({ configured: path.join(root.dir, 'no-helm') })).toBeUndefined();
    expect(await helmBinaryIdentity({ pathEnv: path.join(root.dir, 'empty'), bundledPath: null })).toBeUndefined();
  });
});

describe('plan chart render cache: no Secret value rests in it', () => {
  const TOKEN = 'plain-s3cret-token';
  const KEY = 'base64-s3cret-key';
  const secretChart = (): Promise<string> =>
    writeChart(path.join(root.dir, 'secret-chart'), {
      'Chart.yaml': 'apiVersion: v2\nname: secretive\nversion: 0.1.0\n',
      'templates/secret.yaml': `apiVersion: v1\nkind: Secret\nmetadata:\n  name: credentials\nstringData:\n  token: ${TOKEN}\ndata:\n  key: {{ "${KEY}" | b64enc }}\n`,
      'templates/list.yaml': `apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: listed}\n  stringData: {token: ${TOKEN}}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: plain}\n  data: {greeting: hello}\n`,
      'templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  greeting: hello\n',
    });

  it('keeps each secret object as its identity and a digest, in the cache and in the answer, in private files', async () => {
    const cacheDir = path.join(root.dir, 'secrets');
    const dir = await secretChart();
    const secretRequest = await request({ chart: { dir, digest: await treeDigest(dir), origin: 'secretive' } });
    const renderer = cachedHelm(cacheDir);
    const answer = await renderer.renderChart(secretRequest);
    for (const text of [
      answer,
      ...(await Promise.all(
        (await entries(cacheDir)).map((name) => readFile(path.join(cacheDir, CHART_RENDERS_DIR, name), 'utf8')),
      )),
    ]) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(KEY);
      expect(text).not.toContain(Buffer.from(KEY).toString('base64'));
    }
    // Plan still reads every object, each named as before; the secret ones hold a digest of what they held.
    const reading = readManifests(answer, 'secretive');
    expect(reading.problems).toEqual([]);
    expect(reading.objects.map(({ object }) => `${object.kind}/${object.metadata.name}`).sort()).toEqual([
      'ConfigMap/greeting',
      'ConfigMap/plain',
      'Secret/credentials',
      'Secret/listed',
    ]);
    expect(reading.objects.find(({ object }) => object.metadata.name === 'credentials')!.object).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'credentials' },
      contentDigest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    // A later run answers the same from the cache.
    const later = cachedHelm(cacheDir);
    expect(await later.renderChart(secretRequest)).toBe(answer);
    expect(later.helmRenders()).toBe(0);
    // Another secret value is another digest: plan's comparisons between releases still see it.
    const other = withSecretValueDigests(
      `apiVersion: v1\nkind: Secret\nmetadata: {name: credentials}\nstringData: {token: other}\n`,
    )!;
    const same = withSecretValueDigests(
      `apiVersion: v1\nkind: Secret\nmetadata: {name: credentials}\nstringData: {token: ${TOKEN}}\n`,
    )!;
    expect(other).not.toBe(same);
    expect(same).not.toContain(TOKEN);
    // An output without secret objects keeps its bytes; one with a document that does not decode is not kept.
    expect(withSecretValueDigests('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n')).toBe(
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n',
    );
    expect(withSecretValueDigests(`kind: Secret\nstringData: {token: ${TOKEN}}\n  bad: [\n`)).toBeUndefined();

    expect((await stat(cacheDir)).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(cacheDir, CHART_RENDERS_DIR))).mode & 0o777).toBe(0o700);
    for (const name of await entries(cacheDir))
      expect((await stat(path.join(cacheDir, CHART_RENDERS_DIR, name))).mode & 0o777).toBe(0o600);
  });

  it('empties a chart-renders directory others may read: an earlier version kept Secrets there in plain text', async () => {
    const cacheDir = path.join(root.dir, 'legacy');
    const legacy = path.join(cacheDir, CHART_RENDERS_DIR);
    await mkdir(legacy, { recursive: true });
    await chmod(legacy, 0o755);
    await writeFile(
      path.join(legacy, `${'a'.repeat(64)}.json`),
      JSON.stringify({ schema: 1, output: `token: ${TOKEN}` }),
    );
    const renderer = cachedHelm(cacheDir);
    await renderer.renderChart(await request());
    const names = await entries(cacheDir);
    expect(names).toHaveLength(1);
    expect(names[0]).not.toBe(`${'a'.repeat(64)}.json`);
    expect((await stat(legacy)).mode & 0o777).toBe(0o700);
  });

  it('does not remember a values template stopped at the time limit: a larger limit may let it pass', async () => {
    const cacheDir = path.join(root.dir, 'verdicts-timeout');
    const items: ValuesTemplateItem[] = [
      {
        id: 'slow',
        origin: 'release/slow/overwrite.yaml',
        template: 'x: 1\n',
        context: { Cluster: { metadata: { name: 'one' }, spec: {} } },
      },
    ];
    let evaluations = 0;
    const verdicts = () =>
      cachedValuesVerdicts(
        new ChartRenderCache(cacheDir),
        () => helmBinaryIdentity({ configured: helm }),
        async () => async (batch) => {
          evaluations += batch.length;
          return batch.map((entry) => ({
            id: entry.id,
            ok: false as const,
            timedOut: true as const,
            message: 'did not finish within 1s',
            error: new Error('did not finish within 1s'),
          }));
        },
      );
    expect(await verdicts().evaluateValues(items, '1.30.4')).toEqual([
      expect.objectContaining({ id: 'slow', ok: false, timedOut: true }),
    ]);
    const later = verdicts();
    await later.evaluateValues(items, '1.30.4');
    expect(evaluations).toBe(2);
    expect(later.stats()).toEqual({ hits: 0, rendered: 1 });
    expect(await entries(cacheDir).catch(() => [])).toEqual([]);
  });

  it("keeps values templates' verdicts, never their values: a later run answers them without helm", async () => {
    const cacheDir = path.join(root.dir, 'verdicts');
    const item = (id: string, template: string): ValuesTemplateItem => ({
      id,
      origin: `release/${id}/overwrite.yaml`,
      template,
      context: { Cluster: { metadata: { name: 'one' }, spec: {} } },
    });
    const items = [
      item('ok', `values: |\n  token: ${TOKEN}\n  name: {{ .Cluster.metadata.name }}\n`),
      item('missing', 'host: {{ .Cluster.spec.controlPlaneEndpoint.host }}\n'),
    ];
    let evaluations = 0;
    const verdicts = () =>
      cachedValuesVerdicts(
        new ChartRenderCache(cacheDir),
        () => helmBinaryIdentity({ configured: helm }),
        async () => {
          const deps = createHelmDependencies({
            configured: helm,
            pathEnv: process.env.PATH ?? '',
            workDir: path.join(cacheDir, 'helm'),
          });
          return async (batch, kubeVersion) => {
            evaluations += batch.length;
            return deps.evaluateValues(batch, kubeVersion);
          };
        },
      );
    const first = await verdicts().evaluateValues(items, '1.30.4');
    expect(first.map((result) => [result.id, result.ok])).toEqual([
      ['ok', true],
      ['missing', false],
    ]);
    const later = verdicts();
    const again = await later.evaluateValues(items, '1.30.4');
    expect(evaluations).toBe(2);
    expect(later.stats()).toEqual({ hits: 2, rendered: 0 });
    expect(again[0]).toEqual({ id: 'ok', ok: true, values: {} });
    expect(again[1]).toMatchObject({
      id: 'missing',
      ok: false,
      missingField: (first[1] as { missingField?: string }).missingField,
      message: (first[1] as { message: string }).message,
    });
    for (const name of await entries(cacheDir))
      expect(await readFile(path.join(cacheDir, CHART_RENDERS_DIR, name), 'utf8')).not.toContain(TOKEN);
  });
});
