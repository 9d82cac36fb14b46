import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../src/api/types.js';
import { fileNamesFor, placeObjects, readManifests } from '../src/render/manifest-objects.js';
import { decodeYamlDocument, sameYamlValue } from '../src/yaml/kube-yaml.js';

const ORIGIN = 'docker-ferrol-1-30-v1/cluster-addon for Cluster ns/one';
const doc = (template: string, body: string): string => `---\n# Source: addons/templates/${template}\n${body}`;

describe('readManifests', () => {
  it('keeps each document’s own text and reads its Kubernetes meaning', () => {
    const output =
      doc('a.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  mode: "0400"\n  octal: 0400\n') +
      doc('b.yaml', '# only a comment\n');
    const reading = readManifests(output, ORIGIN);
    expect(reading.problems).toEqual([]);
    expect(reading.objects).toHaveLength(1);
    expect(reading.objects[0]!.text).toBe(
      '# Source: addons/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  mode: "0400"\n  octal: 0400\n',
    );
    expect(reading.objects[0]!.object).toMatchObject({ data: { mode: '0400', octal: 256 } });
  });

  it('names the release, chart, template and line of a document that is not YAML', () => {
    const reading = readManifests(
      doc('broken.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\ndata: {}\n'),
      ORIGIN,
    );
    expect(reading.objects).toEqual([]);
    expect(reading.problems).toEqual([
      expect.stringMatching(
        /^docker-ferrol-1-30-v1\/cluster-addon for Cluster ns\/one, template addons\/templates\/broken\.yaml: is not valid YAML: .*\(line \d+ of that document\)$/,
      ),
    ]);
  });

  it('refuses a document without kind, a scalar document and an object without a name', () => {
    const reading = readManifests(
      doc('a.yaml', 'apiVersion: v1\nmetadata: {name: x}\n') +
        doc('b.yaml', 'just text\n') +
        doc('c.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n'),
      ORIGIN,
    );
    expect(reading.problems).toEqual([
      expect.stringMatching(
        /template addons\/templates\/a\.yaml: has no kind; every document must be a Kubernetes object/,
      ),
      expect.stringMatching(/template addons\/templates\/b\.yaml: is not a Kubernetes object \(it is a string/),
      expect.stringMatching(/template addons\/templates\/c\.yaml: ConfigMap has no metadata\.name/),
    ]);
  });

  it('refuses a name the API server refuses for its kind, and keeps every name it accepts', () => {
    const reading = readManifests(
      doc('cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n') +
        doc('svc.yaml', 'apiVersion: v1\nkind: Service\nmetadata:\n  name: api.internal\n') +
        doc(
          'role.yaml',
          'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: system:controller:addon\n',
        ) +
        doc('crd.yaml', 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: widget.one\n'),
      ORIGIN,
    );
    expect(reading.problems).toEqual([
      `${ORIGIN}, template addons/templates/cm.yaml: ConfigMap name "Bad_Name" must be an RFC 1123 subdomain (lowercase letters, digits, "-" and ".", starting and ending with a letter or digit); Kubernetes refuses it; rename it in the chart (or the values that make it)`,
      expect.stringMatching(
        /template addons\/templates\/svc\.yaml: Service name "api\.internal" must be an RFC 1123 label/,
      ),
    ]);
    expect(reading.objects.map((entry) => entry.object.metadata.name)).toEqual([
      'system:controller:addon',
      'widget.one',
    ]);
  });

  it('refuses a namespace the API server refuses, only where the kind lives in one', () => {
    const reading = readManifests(
      doc('cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: Team_A\n') +
        doc(
          'crb.yaml',
          'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: b\n  namespace: Team_A\n',
        ),
      ORIGIN,
    );
    // A cluster-scoped object's namespace is dropped by the API server, not refused.
    expect(reading.problems).toEqual([
      expect.stringMatching(
        /template addons\/templates\/cm\.yaml: ConfigMap Team_A\/a: namespace "Team_A" must be an RFC 1123 label/,
      ),
    ]);
  });

  it('refuses ConfigMap and Secret data over 1 MiB, counted as the API server counts it', () => {
    const big = 'x'.repeat(600 * 1024);
    const base64 = Buffer.alloc(600 * 1024).toString('base64');
    const reading = readManifests(
      doc(
        'cm.yaml',
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  a: ${big}\nbinaryData:\n  b: ${base64}\n`,
      ) +
        doc(
          'secret.yaml',
          `apiVersion: v1\nkind: Secret\nmetadata:\n  name: big\ndata:\n  a: ${base64}\nstringData:\n  b: ${big}\n`,
        ) +
        // stringData replaces data of the same key: 600 KiB in all.
        doc(
          'fits.yaml',
          `apiVersion: v1\nkind: Secret\nmetadata:\n  name: fits\ndata:\n  a: ${base64}\nstringData:\n  a: ${big}\n`,
        ),
      ORIGIN,
    );
    expect(reading.problems).toEqual([
      `${ORIGIN}, template addons/templates/cm.yaml: ConfigMap big holds 1228800 bytes of data, over the 1048576 (1 MiB) Kubernetes allows in a ConfigMap; split it or move the content elsewhere`,
      expect.stringMatching(
        /template addons\/templates\/secret\.yaml: Secret big holds 1228800 bytes of data, over the 1048576/,
      ),
    ]);
    expect(reading.objects.map((entry) => entry.object.metadata.name)).toEqual(['fits']);
  });

  it("refuses any object over etcd's 1.5 MiB request limit, also one that aliases make large", () => {
    const schema = `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  description: ${'d'.repeat(1600 * 1024)}\n`;
    const aliased = `apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  a: &text ${'t'.repeat(400 * 1024)}\n  b: *text\n  c: *text\n  d: *text\n`;
    const reading = readManifests(doc('crd.yaml', schema) + doc('widget.yaml', aliased), ORIGIN);
    expect(reading.problems).toEqual([
      expect.stringMatching(
        /template addons\/templates\/crd\.yaml: CustomResourceDefinition widgets\.example\.com is 16\d{5} bytes as JSON, over the 1572864 \(1\.5 MiB\) etcd stores in one object by default/,
      ),
      expect.stringMatching(/template addons\/templates\/widget\.yaml: Widget w is 16\d{5} bytes as JSON/),
    ]);
  });

  it('refuses an object with only generateName: it cannot be applied from Git', () => {
    const reading = readManifests(
      doc('job.yaml', 'apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\nspec: {}\n'),
      ORIGIN,
    );
    expect(reading.problems).toEqual([
      expect.stringMatching(
        /Job has only metadata\.generateName "migrate-": .*Argo CD and Flux could never find it again/,
      ),
    ]);
  });

  it('applies the items of a List, each as its own object', () => {
    const reading = readManifests(
      doc(
        'list.yaml',
        'apiVersion: v1\nkind: ConfigMapList\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: one}, data: {on: "x"}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: two}}\n',
      ),
      ORIGIN,
    );
    expect(reading.objects.map((entry) => entry.object.metadata.name)).toEqual(['one', 'two']);
    const first = reading.objects[0]!;
    expect(sameYamlValue(decodeYamlDocument(first.text).value, first.object)).toBe(true);
    expect(first.object).toMatchObject({ data: { true: 'x' } });
  });

  it('accepts duplicate keys as Kubernetes does (last wins), warns with the key and line, and writes the document without them', () => {
    const reading = readManifests(
      doc('role.yaml', 'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: first\n  name: last\n'),
      ORIGIN,
    );
    expect(reading.problems).toEqual([]);
    expect(reading.warnings).toEqual([
      expect.stringMatching(
        /template addons\/templates\/role\.yaml: key "name" appears more than once \(line 6 of that document\)/,
      ),
    ]);
    expect(reading.objects[0]!.object.metadata.name).toBe('last');
    expect(reading.objects[0]!.text).not.toMatch(/first/);
    expect(reading.objects[0]!.text).toMatch(/^# Source: addons\/templates\/role\.yaml\n/);
  });

  it('ignores unknown tags as Kubernetes does and writes the document without them', () => {
    const reading = readManifests(
      doc('cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {mode: !fast 12}\n'),
      ORIGIN,
    );
    expect(reading.objects[0]!.object).toMatchObject({ data: { mode: '12' } });
    expect(reading.objects[0]!.text).not.toContain('!fast');
    expect(decodeYamlDocument(reading.objects[0]!.text).value).toMatchObject({ data: { mode: '12' } });
  });

  it('rewrites YAML 1.1 booleans and dates into forms kustomize reads alike, keeping the meaning', () => {
    const reading = readManifests(
      doc(
        'cm.yaml',
        'apiVersion: v1\nkind: Thing\nmetadata: {name: x}\nspec: {enabled: yes, since: 2001-12-14, on: key}\n',
      ),
      ORIGIN,
    );
    const { text, object } = reading.objects[0]!;
    expect(object).toMatchObject({ spec: { enabled: true, since: '2001-12-14', true: 'key' } });
    expect(text).toContain('enabled: true');
    expect(text).toContain('since: "2001-12-14"');
    expect(text).toContain('"true": key');
  });
});

describe('readManifests over many renders of one chart', () => {
  it("gives every render of the same document the same meaning, and placing one render's object leaves the others alone", () => {
    const body =
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {app: web}\nspec:\n  replicas: 0400\n';
    const renders = Array.from({ length: 3 }, () => readManifests(doc('web.yaml', body), ORIGIN).objects[0]!);
    for (const entry of renders)
      expect(entry.object).toEqual({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', labels: { app: 'web' } },
        spec: { replicas: 256 },
      });
    // Decoded again at its second sighting, then kept and shared (which is why nothing may write into a decoded object).
    expect(renders[2]!.object).toBe(renders[1]!.object);
    // Each Cluster's render is placed on its own: a namespace and an annotation for one only.
    const [first] = placeObjects([renders[0]!], {
      defaultNamespace: 'one',
      annotationsFor: () => ({ 'example.com/wave': '1' }),
    }).objects;
    const [second] = placeObjects([renders[1]!], {
      defaultNamespace: 'two',
      annotationsFor: () => ({ 'example.com/wave': '2' }),
    }).objects;
    expect(first!.object.metadata).toEqual({
      name: 'web',
      namespace: 'one',
      labels: { app: 'web' },
      annotations: { 'example.com/wave': '1' },
    });
    expect(second!.object.metadata).toEqual({
      name: 'web',
      namespace: 'two',
      labels: { app: 'web' },
      annotations: { 'example.com/wave': '2' },
    });
    expect(renders[2]!.object.metadata).toEqual({ name: 'web', labels: { app: 'web' } });
    expect(readManifests(doc('web.yaml', body), ORIGIN).objects[0]!.object.metadata).toEqual({
      name: 'web',
      labels: { app: 'web' },
    });
  });
});

describe('placeObjects', () => {
  const read = (body: string) => readManifests(doc('t.yaml', body), ORIGIN).objects;
  const meaningKept = (entry: { text: string; object: KubeObject }): boolean =>
    sameYamlValue(decodeYamlDocument(entry.text).value, entry.object);

  it('inserts the namespace as one line into a block-style metadata, keeping every other byte', () => {
    const [placed] = placeObjects(
      read(
        'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n    # indented by four\n    name: web\nspec: {replicas: 1}\n',
      ),
      { defaultNamespace: 'kube-system' },
    ).objects;
    expect(placed!.text).toBe(
      '# Source: addons/templates/t.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n    namespace: kube-system\n    # indented by four\n    name: web\nspec: {replicas: 1}\n',
    );
    expect(meaningKept(placed!)).toBe(true);
  });

  it('adds annotations beside existing ones, never overwriting what the chart set', () => {
    const objects = read(
      'apiVersion: cluster.x-k8s.io/v1beta1\nkind: ClusterClass\nmetadata:\n  name: c\n  namespace: stacks\n  annotations:\n    argocd.argoproj.io/sync-wave: "5"\n    a: b\n---\napiVersion: cluster.x-k8s.io/v1beta1\nkind: ClusterClass\nmetadata:\n  name: d\n  annotations:\n    a: b\n',
    );
    const placed = placeObjects(objects, {
      defaultNamespace: 'stacks',
      annotationsFor: () => ({ 'argocd.argoproj.io/sync-wave': '0' }),
    }).objects;
    expect(placed[0]!.text).toBe(objects[0]!.text); // the chart's wave stays, the namespace was there
    expect(placed[1]!.object.metadata).toEqual({
      name: 'd',
      namespace: 'stacks',
      annotations: { a: 'b', 'argocd.argoproj.io/sync-wave': '0' },
    });
    expect(placed[1]!.text).toContain('  annotations:\n    argocd.argoproj.io/sync-wave: "0"\n    a: b\n');
    expect(placed.every(meaningKept)).toBe(true);
  });

  it('re-encodes documents where no line can be inserted (flow style, JSON, empty annotations, an empty namespace)', () => {
    const objects = read(
      '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json"}, "data": {"mode": "0400"}}\n---\n' +
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flow, annotations: {}}\n---\n' +
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: empty\n  namespace: ""\n',
    );
    const placed = placeObjects(objects, {
      defaultNamespace: 'kube-system',
      annotationsFor: () => ({ 'example.com/a': 'on' }),
    }).objects;
    for (const entry of placed) {
      expect(entry.object.metadata.namespace).toBe('kube-system');
      expect(entry.object.metadata.annotations).toEqual({ 'example.com/a': 'on' });
      expect(meaningKept(entry)).toBe(true);
    }
    expect(placed[0]!.object).toMatchObject({ data: { mode: '0400' } });
  });

  it('proves an insertion on the metadata block alone, and re-encodes when the block leans on the rest of the document', () => {
    const objects = read(
      // a column-0 comment inside the block, and a multi-line scalar after it
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: commented\n# a comment in column 0\n  labels:\n    a: b\ndata:\n  text: |\n    line one\n    line two\n---\n' +
        // metadata taking its labels from an anchor outside the block
        'apiVersion: v1\nkind: ConfigMap\nx-common: &common\n  a: "on"\nmetadata:\n  name: merged\n  labels: *common\n---\n' +
        // a merge key inside the block
        'apiVersion: v1\nkind: ConfigMap\nx-base: &base\n  name: based\nmetadata:\n  <<: *base\n',
    );
    const placed = placeObjects(objects, { defaultNamespace: 'kube-system' }).objects;
    expect(placed.map((entry) => entry.object.metadata)).toEqual([
      { name: 'commented', labels: { a: 'b' }, namespace: 'kube-system' },
      { name: 'merged', labels: { a: 'on' }, namespace: 'kube-system' },
      { name: 'based', namespace: 'kube-system' },
    ]);
    expect(placed[0]!.text).toContain(
      'metadata:\n  namespace: kube-system\n  name: commented\n# a comment in column 0\n',
    );
    for (const entry of placed) expect(meaningKept(entry)).toBe(true);
  });

  it('adds no namespace to cluster-scoped kinds, and reports kinds whose scope it cannot know', () => {
    const objects = read(
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n---\n' +
        'apiVersion: cilium.io/v2alpha1\nkind: CiliumLoadBalancerIPPool\nmetadata: {name: p}\n---\n' +
        'apiVersion: widgets.example.org/v1\nkind: Widget\nmetadata: {name: w}\n---\n' +
        'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.org}\nspec: {group: example.org, scope: Namespaced, names: {kind: Gadget, plural: gadgets}}\n---\n' +
        'apiVersion: example.org/v1\nkind: Gadget\nmetadata: {name: g}\n',
    );
    const { objects: placed, notes } = placeObjects(objects, { defaultNamespace: 'kube-system' });
    expect(placed.map((entry) => entry.object.metadata.namespace)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      'kube-system',
    ]);
    expect(notes).toEqual([
      'Widget (widgets.example.org): scope unknown (no CustomResourceDefinition in this render), left without a namespace as the chart wrote it',
    ]);
  });
});

describe('fileNamesFor', () => {
  it('names files by kind and name, adding the namespace or API group only to tell objects apart', () => {
    const object = (apiVersion: string, kind: string, name: string, namespace?: string): KubeObject => ({
      apiVersion,
      kind,
      metadata: { name, ...(namespace ? { namespace } : {}) },
    });
    expect(
      fileNamesFor(
        [
          object('v1', 'Service', 'web', 'kube-system'),
          object('v1', 'Service', 'web', 'other'),
          object('v1', 'Event', 'x'),
          object('events.k8s.io/v1', 'Event', 'x'),
        ],
        'kube-system',
      ),
    ).toEqual(['service-web.yaml', 'service-web.other.yaml', 'event-x.core.yaml', 'event-x.events.k8s.io.yaml']);
  });
});
