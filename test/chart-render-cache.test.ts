// plan's cache of ClusterClass renders (src/plan/chart-render-cache.ts) with the real helm: an
// unchanged request is answered from the cache without helm; a changed chart, values, namespace,
// Kubernetes version or helm binary renders again; a damaged entry is never used; a failing chart
// is never stored.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHelmDependencies } from '../renderers/helm-dependencies.js';
import { helmBinaryIdentity, resolveHelmBinary } from '../renderers/helm-binary.js';
import { CHART_RENDERS_DIR, cachedRenderChart, ChartRenderCache } from '../src/plan/chart-render-cache.js';
import { treeDigest } from '../src/release/content-digest.js';
import type { ChartRenderRequest } from '../src/render/render-dependencies.js';
import { decodeYamlDocuments } from '../src/yaml/kube-yaml.js';
import { helmTempDir, writeChart, writeScript } from './support/helm-fixtures.js';

interface ConfigMap {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  data: Record<string, string>;
}

function configMap(output: string): ConfigMap {
  const objects = decodeYamlDocuments(output).map((document) => document.value).filter(Boolean) as ConfigMap[];
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
    'templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\n  namespace: {{ .Release.Namespace }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n',
  });
});

afterAll(() => root.cleanup());

/** A cached renderer over the real helm, counting helm renders; `identity` names the helm binary. */
function cachedHelm(cacheDir: string, identity: () => Promise<string | undefined> = () => helmBinaryIdentity({ configured: helm })) {
  let helmRenders = 0;
  const deps = createHelmDependencies({ configured: helm, pathEnv: process.env.PATH ?? '', workDir: path.join(cacheDir, 'helm') });
  const cached = cachedRenderChart(new ChartRenderCache(cacheDir), identity, async () => async (request) => {
    helmRenders += 1;
    return deps.renderChart(request);
  });
  return { ...cached, helmRenders: () => helmRenders };
}

async function request(overrides: Partial<ChartRenderRequest> = {}): Promise<ChartRenderRequest> {
  return { releaseName: 'greeting', chart: { dir: chartDir, digest: await treeDigest(chartDir), origin: 'greeting' }, namespace: 'fleet', kubeVersion: '1.30.4', values: [], ...overrides };
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
    await writeFile(template, original.replace('  name: greeting\n', '  name: greeting\n  labels:\n    edited: "yes"\n'));
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
    expect(identity).toMatch(new RegExp(`^${helm.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} size=\\d+ mtime=[\\d.]+ ino=\\d+$`));
    expect(await helmBinaryIdentity({ pathEnv: path.dirname(helm), bundledPath: null })).toBe(identity);
    const other = await writeScript(path.join(root.dir, 'other-helm'), 'echo v3.99.0');
    expect(await helmBinaryIdentity({ configured: other })).toMatch(/^.*other-helm size=\d+ /);
    expect(await helmBinaryIdentity({ configured: path.join(root.dir, 'no-helm') })).toBeUndefined();
    expect(await helmBinaryIdentity({ pathEnv: path.join(root.dir, 'empty'), bundledPath: null })).toBeUndefined();
  });
});
