import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeInt64s } from '../renderers/go-template-int64.js';
import { strictFieldAccess } from '../renderers/go-template-strict.js';
import type { HelmRunner } from '../renderers/helm-runner.js';
import {
  evaluateValuesTemplates,
  ValuesTemplateError,
  type ValuesTemplateResult,
} from '../renderers/values-template.js';
import type { ValuesTemplateItem } from '../src/render/render-dependencies.js';
import { aHelmRunner, helmTempDir, writeChart } from './support/helm-fixtures.js';
import { whileLoopingHelmYields } from './support/looping-helm.js';

const ORIGIN = 'docker-ferrol-1-30-v1/cluster-addon-values.yaml';

function aCluster(
  name: string,
  options: { endpoint?: boolean | { host?: string; port?: number } } = {},
): Record<string, unknown> {
  const endpoint =
    options.endpoint === undefined || options.endpoint === true
      ? { host: `${name}.example.com`, port: 6443 }
      : options.endpoint;
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name, namespace: 'tenant-a', labels: { env: 'prod' } },
    spec: {
      clusterNetwork: { pods: { cidrBlocks: ['192.168.0.0/16'] }, services: { cidrBlocks: ['10.96.0.0/12'] } },
      ...(endpoint ? { controlPlaneEndpoint: endpoint } : {}),
      topology: {
        class: 'docker-ferrol-1-30-v1',
        version: 'v1.30.4',
        workers: {
          machineDeployments: [
            { name: 'md-0', class: 'default' },
            { name: 'md-1', class: 'large' },
          ],
        },
      },
    },
  };
}

const item = (
  id: string,
  template: string,
  context: ValuesTemplateItem['context'],
  origin = ORIGIN,
): ValuesTemplateItem => ({ id, origin, template, context });

function ok(result: ValuesTemplateResult | undefined): Record<string, unknown> {
  if (!result?.ok) throw new Error(`expected values, got ${JSON.stringify(result)}`);
  return result.values;
}

function failure(result: ValuesTemplateResult | undefined): Extract<ValuesTemplateResult, { ok: false }> {
  if (!result || result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result)}`);
  return result;
}

let runner: HelmRunner;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ runner, cleanup } = await aHelmRunner({ concurrency: 2 }));
});

afterAll(async () => {
  await cleanup?.();
});

/** Evaluates and reports how many helm processes it took. */
async function evaluate(items: ValuesTemplateItem[]): Promise<{ results: ValuesTemplateResult[]; processes: number }> {
  const before = runner.processesSpawned;
  const results = await evaluateValuesTemplates(runner, items, '1.30.4');
  return { results, processes: runner.processesSpawned - before };
}

describe('evaluateValuesTemplates', () => {
  it('takes the values from a top-level `values` string, or else the whole result', async () => {
    const { results } = await evaluate([
      item(
        'legacy',
        'values: |\n  cilium:\n    k8sServiceHost: {{ .Cluster.spec.controlPlaneEndpoint.host }}\n    k8sServicePort: {{ .Cluster.spec.controlPlaneEndpoint.port }}\n',
        { Cluster: aCluster('alpha') },
      ),
      item('whole', 'cilium:\n  cluster:\n    name: {{ .Cluster.metadata.name }}\n', { Cluster: aCluster('beta') }),
      item('values-map', 'values:\n  a: 1\n', { Cluster: aCluster('gamma') }),
    ]);

    expect(ok(results[0])).toEqual({ cilium: { k8sServiceHost: 'alpha.example.com', k8sServicePort: 6443 } });
    expect(ok(results[1])).toEqual({ cilium: { cluster: { name: 'beta' } } });
    expect(ok(results[2])).toEqual({ values: { a: 1 } });
  });

  it('offers the Helm and sprig functions, tpl, $ and a lookup that finds nothing', async () => {
    const template = [
      'name: {{ .Cluster.metadata.name | upper | quote }}',
      'encoded: {{ .Cluster.metadata.name | b64enc }}',
      'pods: {{ .Cluster.spec.clusterNetwork.pods.cidrBlocks | join "," }}',
      'workers: {{ range .Cluster.spec.topology.workers.machineDeployments }}{{ .name }} {{ end }}',
      'network:',
      '{{- toYaml .Cluster.spec.clusterNetwork.services | nindent 2 }}',
      'optional: {{ dig "spec" "paused" false .Cluster }}',
      'modern: {{ semverCompare ">=1.29.0" .Cluster.spec.topology.version }}',
      'viaTpl: {{ tpl "{{ .Cluster.metadata.namespace }}" . }}',
      'root: {{ with .Cluster.metadata }}{{ $.Cluster.metadata.name }}{{ end }}',
      'lookup: {{ lookup "v1" "Secret" "kube-system" "x" | toJson }}',
      'mode: 0644',
    ].join('\n');

    const { results } = await evaluate([item('a', template, { Cluster: aCluster('alpha') })]);

    expect(ok(results[0])).toEqual({
      name: 'ALPHA',
      encoded: 'YWxwaGE=',
      pods: '192.168.0.0/16',
      workers: 'md-0 md-1',
      network: { cidrBlocks: ['10.96.0.0/12'] },
      optional: false,
      modern: true,
      viaTpl: 'tenant-a',
      root: 'alpha',
      lookup: {},
      // Helm reads values YAML with yaml.v2: a leading 0 is octal.
      mode: 420,
    });
  });

  it('withholds only the cluster without a control-plane endpoint, naming the field', async () => {
    const template = 'values: |\n  k8sServiceHost: {{ .Cluster.spec.controlPlaneEndpoint.host | quote }}\n';
    const { results } = await evaluate([
      item('ready', template, { Cluster: aCluster('ready') }),
      item('new', template, { Cluster: aCluster('new', { endpoint: false }) }),
      item('half', template, { Cluster: aCluster('half', { endpoint: { port: 6443 } }) }),
    ]);

    expect(ok(results[0])).toEqual({ k8sServiceHost: 'ready.example.com' });
    const missing = failure(results[1]);
    expect(missing.missingField).toBe('.Cluster.spec.controlPlaneEndpoint.host');
    expect(missing.message).toContain(
      `${ORIGIN} line 2: missing field .Cluster.spec.controlPlaneEndpoint.host (.Cluster.spec.controlPlaneEndpoint does not exist)`,
    );
    expect(missing.error).toBeInstanceOf(ValuesTemplateError);
    expect(missing.error.reason).toBe('MissingField');
    const half = failure(results[2]);
    expect(half.missingField).toBe('.Cluster.spec.controlPlaneEndpoint.host');
    expect(half.message).toContain('missing field .Cluster.spec.controlPlaneEndpoint.host;');
  });

  it('maps a deep missing path to the field instead of a nil pointer', async () => {
    const { results } = await evaluate([
      item('deep', 'x: {{ .Cluster.spec.network.apiServerPort.value }}', { Cluster: aCluster('alpha') }),
    ]);

    const deep = failure(results[0]);
    expect(deep.missingField).toBe('.Cluster.spec.network.apiServerPort.value');
    expect(deep.message).toContain('(.Cluster.spec.network does not exist)');
    expect(deep.message).not.toContain('nil pointer');
  });

  it('names the full field inside with, range and variables', async () => {
    const { results } = await evaluate([
      item('with', '{{ with .Cluster.spec.topology }}x: {{ .controlPlane.replicas }}{{ end }}', {
        Cluster: aCluster('alpha'),
      }),
      item('range', '{{ range .Cluster.spec.topology.workers.machineDeployments }}{{ .replicas }}{{ end }}', {
        Cluster: aCluster('alpha'),
      }),
      item('var', '{{ $cp := .Cluster.spec.controlPlaneEndpoint }}x: {{ $cp.hostname }}', {
        Cluster: aCluster('alpha'),
      }),
    ]);

    expect(failure(results[0]).missingField).toBe('.Cluster.spec.topology.controlPlane.replicas');
    expect(failure(results[1]).missingField).toBe('.Cluster.spec.topology.workers.machineDeployments[].replicas');
    expect(failure(results[2]).missingField).toBe('.Cluster.spec.controlPlaneEndpoint.hostname');
  });

  it('treats a missing .ControlPlane or .InfraCluster as a missing field', async () => {
    const template = 'replicas: {{ .ControlPlane.spec.replicas }}\nnetwork: {{ .InfraCluster.status.network.id }}\n';
    const { results } = await evaluate([
      item('both', template, {
        Cluster: aCluster('a'),
        ControlPlane: { spec: { replicas: 3 } },
        InfraCluster: { status: { network: { id: 'net-1' } } },
      }),
      item('no-cp', template, { Cluster: aCluster('b'), InfraCluster: { status: { network: { id: 'net-1' } } } }),
    ]);

    expect(ok(results[0])).toEqual({ replicas: 3, network: 'net-1' });
    const noControlPlane = failure(results[1]);
    expect(noControlPlane.missingField).toBe('.ControlPlane.spec.replicas');
    expect(noControlPlane.message).toContain(
      "no ControlPlane object was given: the Cluster's spec.controlPlaneRef is unset",
    );
  });

  it('reports a syntax error with the template origin and line, without helm temp-chart paths', async () => {
    const { results } = await evaluate([
      item('broken', 'values: |\n  name: {{ .Cluster.metadata.name \n', { Cluster: aCluster('a') }),
      item(
        'unknown-function',
        'x: {{ nosuchfunc .Cluster.metadata.name }}',
        { Cluster: aCluster('a') },
        'docker-ferrol-1-30-v2/cni/overwrite.yaml',
      ),
      item('fine', 'x: 1', { Cluster: aCluster('a') }),
      item('unclosed-if', 'a: 1\n{{ if .Cluster.metadata.name }}\nb: 2\n', { Cluster: aCluster('a') }),
    ]);

    const broken = failure(results[0]);
    expect(broken.error.reason).toBe('TemplateError');
    expect(broken.message).toBe(`${ORIGIN} line 3: unclosed action started at line 2`);
    expect(broken.message).not.toMatch(/cs-values|templates\/|\/tmp/);
    const unknown = failure(results[1]);
    expect(unknown.message).toBe('docker-ferrol-1-30-v2/cni/overwrite.yaml line 1: function "nosuchfunc" not defined');
    expect(ok(results[2])).toEqual({ x: 1 });
    expect(failure(results[3]).message).toBe(`${ORIGIN} line 4: unexpected EOF`);
  });

  it('withholds an item whose template calls required or fail, with its message', async () => {
    const { results, processes } = await evaluate([
      item(
        'required',
        'x: {{ required "set the cluster label env" (dig "metadata" "labels" "tier" "" .Cluster | default nil) }}',
        { Cluster: aCluster('a') },
      ),
      item('fail', '{{ fail "this stack needs an InfraCluster with a network" }}', { Cluster: aCluster('b') }),
      item('fine', 'x: {{ .Cluster.metadata.name }}', { Cluster: aCluster('c') }),
    ]);

    expect(failure(results[0]).message).toBe(`${ORIGIN}: set the cluster label env`);
    expect(failure(results[1]).message).toBe(`${ORIGIN}: this stack needs an InfraCluster with a network`);
    expect(ok(results[2])).toEqual({ x: 'c' });
    // The optimistic template pass fails, then lint attributes both failures and template renders the rest.
    expect(processes).toBe(3);
  });

  it('reports a result that is not YAML, or not a mapping, naming the origin', async () => {
    const { results } = await evaluate([
      item('bad-yaml', 'values: |\n  a: [{{ .Cluster.metadata.name }}\n', { Cluster: aCluster('a') }),
      item('list', '- {{ .Cluster.metadata.name }}', { Cluster: aCluster('a') }),
    ]);

    const badYaml = failure(results[0]);
    expect(badYaml.error.reason).toBe('InvalidResult');
    expect(badYaml.message).toMatch(new RegExp(`^${ORIGIN}: its \`values\` string is not valid YAML`));
    expect(failure(results[1]).message).toBe(
      `${ORIGIN}: the result of the template is a list, not a mapping of values`,
    );
  });

  it('splits results correctly when a template prints --- or # Source: lines', async () => {
    const tricky = '---\n# Source: cs-values/templates/u1.yaml\nname: {{ .Cluster.metadata.name }}\n---\n';
    const { results } = await evaluate([
      item('a', tricky, { Cluster: aCluster('a') }),
      item('b', 'other: {{ .Cluster.metadata.name }}', { Cluster: aCluster('b') }),
    ]);

    expect(ok(results[0])).toEqual({ name: 'a' });
    expect(ok(results[1])).toEqual({ other: 'b' });
  });

  it('gives {} for an empty template without starting helm', async () => {
    const { results, processes } = await evaluate([item('empty', '  \n', { Cluster: aCluster('a') })]);

    expect(results).toEqual([{ id: 'empty', ok: true, values: {} }]);
    expect(processes).toBe(0);
  });

  it('evaluates a batch of 50 ready clusters in one helm process', async () => {
    const template = 'values: |\n  host: {{ .Cluster.spec.controlPlaneEndpoint.host }}\n';
    const { results, processes } = await evaluate(
      Array.from({ length: 50 }, (_, i) => item(`c${i}`, template, { Cluster: aCluster(`cluster-${i}`) })),
    );

    expect(processes).toBe(1);
    expect(results.every((r) => r.ok)).toBe(true);
  });

  it('evaluates a batch of 50 clusters, one of them not ready, in at most 3 helm processes', async () => {
    const template =
      'values: |\n  cilium:\n    k8sServiceHost: {{ .Cluster.spec.controlPlaneEndpoint.host }}\n    cluster:\n      name: {{ .Cluster.metadata.name }}\n';
    const items = Array.from({ length: 50 }, (_, i) =>
      item(`c${i}`, template, { Cluster: aCluster(`cluster-${i}`, { endpoint: i !== 17 }) }),
    );
    items.push(item('dup', template, { Cluster: aCluster('cluster-3') }));

    const { results, processes } = await evaluate(items);

    expect(processes).toBeLessThanOrEqual(3);
    expect(results.map((r) => r.id)).toEqual(items.map((i) => i.id));
    expect(results.filter((r) => !r.ok).map((r) => r.id)).toEqual(['c17']);
    expect(ok(results[42])).toEqual({
      cilium: { k8sServiceHost: 'cluster-42.example.com', cluster: { name: 'cluster-42' } },
    });
    expect(ok(results[50])).toEqual(ok(results[3]));
  });
});

it('stops a template that loops at the time limit and fails that item alone, the others of its batch evaluated', async () => {
  // A loop of 10^15 iterations in small lists: CPU, no memory, never ends in a test's lifetime.
  const template =
    'values: |\n  name: {{ .Cluster.metadata.name }}\n{{- if eq .Cluster.metadata.name "loops" }}{{ range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}{{ end }}\n';
  const items = ['one', 'loops', 'three'].map((name) => item(name, template, { Cluster: aCluster(name) }));
  // The other two run alone under the same limit and must finish within it: about 0.05 CPU-s of
  // helm, but at load 32 up to 1.3 s until this process sees the end (1.5 s withheld such items in
  // render-command at load 35-40).
  // 3 s is over twice the worst seen. The loop spins at nice 19 once past the others' CPU (looping-helm.ts),
  // so its time costs the files beside it next to nothing.
  const limitMs = 3_000;
  const started = Date.now();

  const results = await whileLoopingHelmYields(() =>
    evaluateValuesTemplates(runner, items, '1.30.4', { timeoutMs: limitMs }),
  );

  // The batch runs out once, then each item alone: the looping one runs out again. The loop would
  // run for days: the evaluation ends once the limit stopped it twice, plus a loaded machine's margin.
  expect(Date.now() - started).toBeLessThan(2 * limitMs + 15_000);
  expect(ok(results[0])).toEqual({ name: 'one' });
  expect(ok(results[2])).toEqual({ name: 'three' });
  const looped = failure(results[1]);
  expect(looped.timedOut).toBe(true);
  expect(looped.missingField).toBeUndefined();
  expect(looped.message).toBe(
    `${ORIGIN}: did not finish within 3s and was stopped: a template that never ends (a loop, a recursive include) is the usual cause; fix it, or if it really needs longer raise --values-timeout (CLUSTERSTACK_VALUES_TIMEOUT)`,
  );
  expect(runner.inFlight).toBe(0);
});

describe('evaluateValuesTemplates: numbers keep their Go types', () => {
  // What the cluster-stack-operator's unstructured objects hold: int64 integers, float64 floats,
  // strings as strings however numeric they look. The guard fails the item (in lint and template
  // alike) if any value arrives with another kind, and `eq` with a float64 would be an error.
  const template = [
    '{{- $e := .Cluster.spec.controlPlaneEndpoint }}',
    '{{- $md := index .Cluster.spec.topology.workers.machineDeployments 1 }}',
    '{{- $kinds := list (kindOf $e.port) (kindOf .Cluster.metadata.generation) (kindOf .InfraCluster.spec.big) (kindOf (index .Cluster.spec.ports 1)) (kindOf (index (index .Cluster.spec.matrix 0) 1)) (kindOf $md.replicas) (kindOf (index .Cluster.spec.mixed 0)) (kindOf (index .Cluster.spec.mixed 1).a) (kindOf (index .Cluster.metadata.annotations "example.com/weight")) }}',
    '{{- if not (eq (uniq $kinds | join ",") "int64") }}{{ fail (printf "integers arrived as %s" ($kinds | join ",")) }}{{ end }}',
    'url: {{ printf "https://%s:%d" $e.host $e.port | quote }}',
    'isDefaultPort: {{ eq $e.port 6443 }}',
    'asInt: {{ printf "%d" (int $e.port) | quote }}',
    'next: {{ add $e.port 1 }}',
    'doubled: {{ mul (int $e.port) 2 }}',
    'generation: {{ .Cluster.metadata.generation | quote }}',
    'big: {{ .InfraCluster.spec.big | quote }}',
    'bigPlusOne: {{ add .InfraCluster.spec.big 1 | quote }}',
    'largest: {{ .InfraCluster.spec.largest | quote }}',
    'negative: {{ printf "%d" .InfraCluster.spec.negative | quote }}',
    'beyondInt64: {{ kindOf .InfraCluster.spec.beyondInt64 }}',
    'ratio: {{ kindOf .InfraCluster.spec.ratio }} {{ .InfraCluster.spec.ratio }}',
    'strings: {{ list (kindIs "string" .Cluster.metadata.labels.port) (kindIs "string" .Cluster.metadata.labels.mode) (kindIs "string" .Cluster.metadata.labels.exp) | toJson | quote }}',
    'labels: {{ list .Cluster.metadata.labels.port .Cluster.metadata.labels.mode .Cluster.metadata.labels.exp | join "," | quote }}',
    'inList: {{ printf "%d" (index .Cluster.spec.ports 1) | quote }}',
    'inListOfLists: {{ printf "%d/%s" (index (index .Cluster.spec.matrix 0) 1) (kindOf (index (index .Cluster.spec.matrix 1) 0)) | quote }}',
    'json: {{ toJson .Cluster.spec.matrix | quote }}',
    'replicas: {{ mul $md.replicas 2 }}',
  ].join('\n');

  function typedContext(name: string): ValuesTemplateItem['context'] {
    const cluster = aCluster(name) as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
    cluster.metadata['generation'] = 12345678;
    cluster.metadata['labels'] = { port: '6443', mode: '0400', exp: '1e3' };
    cluster.spec['ports'] = [80, 443];
    cluster.spec['matrix'] = [
      [1, 2],
      ['3', 4.5],
    ];
    // An integer in a map in a list, in a map beside an integer in a list, under a key that is no identifier.
    cluster.spec['mixed'] = [1, { a: 2 }];
    cluster.metadata['annotations'] = { 'example.com/weight': 10 };
    (
      cluster.spec['topology'] as { workers: { machineDeployments: Record<string, unknown>[] } }
    ).workers.machineDeployments[1]!['replicas'] = 5;
    return {
      Cluster: cluster,
      InfraCluster: {
        spec: {
          big: 9007199254740993n,
          largest: 9223372036854775807n,
          negative: -9007199254740993n,
          beyondInt64: 9223372036854775808n,
          ratio: 1.5,
        },
      },
    };
  }

  const expected = {
    url: 'https://typed.example.com:6443',
    isDefaultPort: true,
    asInt: '6443',
    next: 6444,
    doubled: 12886,
    generation: '12345678',
    big: '9007199254740993',
    bigPlusOne: '9007199254740994',
    largest: '9223372036854775807',
    negative: '-9007199254740993',
    beyondInt64: 'float64',
    ratio: 'float64 1.5',
    strings: '[true,true,true]',
    labels: '6443,0400,1e3',
    inList: '443',
    inListOfLists: '2/string',
    json: '[[1,2],["3",4.5]]',
    replicas: 10,
  };

  it('gives the template int64 integers (also beyond 2^53, from bigint), float64 floats and strings, in one helm process', async () => {
    const { results, processes } = await evaluate([item('typed', template, typedContext('typed'))]);

    expect(ok(results[0])).toEqual(expected);
    expect(processes).toBe(1);
  });

  it('keeps the types in lint and the re-render when another item of the batch fails', async () => {
    const { results, processes } = await evaluate([
      item('not-ready', 'host: {{ .Cluster.spec.controlPlaneEndpoint.host }}', {
        Cluster: aCluster('new', { endpoint: false }),
      }),
      item('typed', template, typedContext('typed')),
    ]);

    expect(failure(results[0]).missingField).toBe('.Cluster.spec.controlPlaneEndpoint.host');
    expect(ok(results[1])).toEqual(expected);
    // Optimistic template, lint, template: so lint evaluated the guard and `eq` with int64 too.
    expect(processes).toBe(3);
  });

  it('withholds an item whose template finds a float where it wants an integer, with its message', async () => {
    const { results } = await evaluate([
      item(
        'float',
        'x: {{ if not (kindIs "int64" .Cluster.spec.ratio) }}{{ fail (printf "ratio is %s" (kindOf .Cluster.spec.ratio)) }}{{ end }}',
        { Cluster: { spec: { ratio: 0.5 } } },
      ),
    ]);

    expect(failure(results[0]).message).toBe(`${ORIGIN}: ratio is float64`);
  });

  it('does not merge contexts that differ only in an integer being a string', async () => {
    const template = 'kind: {{ kindOf .Cluster.spec.controlPlaneEndpoint.port }}';
    const { results } = await evaluate([
      item('int', template, { Cluster: aCluster('a', { endpoint: { host: 'a', port: 6443 } }) }),
      item('string', template, {
        Cluster: { ...aCluster('a'), spec: { controlPlaneEndpoint: { host: 'a', port: '6443' } } },
      }),
    ]);

    expect(ok(results[0])).toEqual({ kind: 'int64' });
    expect(ok(results[1])).toEqual({ kind: 'string' });
  });
});

describe('encodeInt64s', () => {
  it('writes integers as decimal strings and records where they were, leaving strings and floats alone', () => {
    const encoded = encodeInt64s({
      port: 6443,
      port2: '6443',
      big: 9007199254740993n,
      ratio: 0.25,
      huge: 2n ** 64n,
      unsafe: 2 ** 60,
      list: [1, 'x', [2n]],
      empty: {},
      none: null,
    });

    expect(encoded.value).toEqual({
      port: '6443',
      port2: '6443',
      big: '9007199254740993',
      ratio: 0.25,
      huge: 18446744073709552000,
      unsafe: 2 ** 60,
      list: ['1', 'x', ['2']],
      empty: {},
      none: null,
    });
    expect(encoded.positions).toEqual({ port: true, big: true, list: { 0: true, 2: { 0: true } } });
    expect(() => JSON.stringify(encoded.value)).not.toThrow();
  });

  it('gives no positions for a value without integers', () => {
    expect(encodeInt64s({ a: ['x', 1.5], b: { c: 'd' } })).toEqual({ value: { a: ['x', 1.5], b: { c: 'd' } } });
  });

  it('treats a key named __proto__ as data', () => {
    const encoded = encodeInt64s(JSON.parse('{"__proto__": {"port": 1}}'));

    expect(JSON.stringify(encoded.value)).toBe('{"__proto__":{"port":"1"}}');
    expect(JSON.stringify(encoded.positions)).toBe('{"__proto__":{"port":true}}');
  });
});

describe('helm without the field rewrite (why it exists)', () => {
  it('renders a missing field as empty, and lint --strict does not object either', async () => {
    const temp = await helmTempDir('helm-premise');
    try {
      const chart = await writeChart(path.join(temp.dir, 'premise'), {
        'Chart.yaml': 'apiVersion: v2\nname: premise\nversion: 0.1.0\n',
        'values.yaml': 'Cluster:\n  spec:\n    controlPlaneEndpoint:\n      port: 6443\n',
        'templates/values.txt':
          'quoted: x{{ .Values.Cluster.spec.controlPlaneEndpoint.host | quote }}x\nplain: x{{ .Values.Cluster.spec.controlPlaneEndpoint.host }}x\n',
      });

      const template = await runner.run(['template', 'premise', chart], {
        purpose: 'showing helm template on a missing key',
      });
      const lint = await runner.run(['lint', '--strict', chart], {
        purpose: 'showing helm lint --strict on a missing key',
      });

      expect(template.stdout).toContain('quoted: xx\nplain: xx\n');
      expect(lint.exitCode).toBe(0);
    } finally {
      await temp.cleanup();
    }
  });
});

describe('strictFieldAccess', () => {
  it('rewrites field chains but leaves strings, raw strings, comments and escaped braces alone', () => {
    const source =
      '{{/* .Cluster.x */}}a {{ "{{" }} ds.meta_data.hostname {{ "}}" }} {{- `.raw}}` }} {{ printf "%s }}" .Cluster.metadata.name -}}\n{{ 1.5 }} {{ $x := 2 }}';

    const strict = strictFieldAccess(source);

    expect(strict.rewritten).toBe(true);
    expect(strict.text).toContain(
      '{{/* .Cluster.x */}}a {{ "{{" }} ds.meta_data.hostname {{ "}}" }} {{- `.raw}}` }} {{ printf "%s }}" (last (list ',
    );
    expect(strict.text).toContain('.Cluster.metadata.name)) -}}\n{{ 1.5 }} {{ $x := 2 }}');
    expect(strict.text.split('\n')).toHaveLength(2);
    expect([...strict.restore.values()]).toEqual(['.Cluster.metadata.name']);
  });

  it('collects the names a template defines', () => {
    expect(strictFieldAccess('{{ define "a" }}x{{ end }}{{ block `b` . }}{{ end }}').defines).toEqual(['a', 'b']);
  });

  it('leaves a template it cannot lex for helm to report', () => {
    expect(strictFieldAccess('{{ .Cluster.metadata.name ')).toMatchObject({
      text: '{{ .Cluster.metadata.name ',
      rewritten: false,
    });
  });
});
