// A generated cluster stack release with the weight of a published one, for `npm run bench`: a
// CNI-sized addon chart (a few hundred templates, a helpers file that templates lean on, two
// subcharts, a large values.yaml) taking about half a second of `helm template` per render, and a
// small metrics-server-sized chart, as the two stages of one multi-stage release. Written from
// scratch by `writeHeavyRelease`; nothing here is copied from a real chart. No `tpl`: helm 3.10
// parses every template of the chart again on each `tpl` call, which a chart this size turns into
// minutes per render.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

const HEAVY_TAG = 'docker-heavy-1-30-v1';
export const HEAVY_CLASS = 'docker-heavy-1-30-v1';
const KUBERNETES = 'v1.30.4';

export interface HeavyShape {
  /** Templates in the CNI chart itself. */
  cniTemplates: number;
  /** Templates in each of its two subcharts. */
  subchartTemplates: number;
  /** Every this many templates one is switched on by default; the rest are parsed but render nothing, as feature-gated templates do. */
  enabledEvery: number;
  /** Entries in the option list that every rendered template writes out (args, config keys). */
  listLength: number;
  /** Feature switches in values.yaml that every rendered template walks, writing the few that are on and hashing them all. */
  features: number;
}

/**
 * Shaped after a CNI chart as released: a few hundred templates, most behind a feature switch
 * that is off by default, so one render yields a few dozen objects (about 30 here; Cilium 1.16
 * yields 20-30 with its defaults) and roughly a hundred kilobytes, while the templates that do
 * render walk long lists of switches and hash their configuration, which is where helm spends
 * its time. Calibrated to take about as long per `helm template` as DENSE_HEAVY_SHAPE.
 */
const DEFAULT_HEAVY_SHAPE: HeavyShape = {
  cniTemplates: 260,
  subchartTemplates: 40,
  enabledEvery: 16,
  listLength: 24,
  features: 2000,
};

/**
 * Every template renders (about 450 objects, 700 KiB per render): ten times the output of a real
 * CNI chart for the same helm time, which weighs on everything done per object and per byte
 * after helm. Kept as the stress case (`--heavy-shape dense`).
 */
const DENSE_HEAVY_SHAPE: HeavyShape = {
  cniTemplates: 260,
  subchartTemplates: 40,
  enabledEvery: 1,
  listLength: 24,
  features: 0,
};

/** The shapes `--heavy-shape` names. */
const HEAVY_SHAPES: Record<string, HeavyShape> = { released: DEFAULT_HEAVY_SHAPE, dense: DENSE_HEAVY_SHAPE };

export function heavyShape(name: string | undefined): { name: string; shape: HeavyShape } {
  const key = name ?? 'released';
  const shape = HEAVY_SHAPES[key];
  if (!shape) throw new Error(`--heavy-shape ${key}: not a shape; use one of ${Object.keys(HEAVY_SHAPES).join(', ')}`);
  return { name: key, shape };
}

async function write(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
}

function chartYaml(name: string, description: string, dependencies: string[] = []): string {
  const deps =
    dependencies.length === 0
      ? ''
      : `dependencies:\n${dependencies.map((dep) => `  - name: ${dep}\n    version: 0.1.0\n`).join('')}`;
  return `apiVersion: v2\nname: ${name}\ndescription: ${description}\ntype: application\nversion: 0.1.0\nappVersion: "1.0.0"\n${deps}`;
}

/** Helpers the templates include many times over, as real CNI charts do (labels, images, names, probes). */
function helpers(chart: string): string {
  return `{{- define "${chart}.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "${chart}.fullname" -}}
{{- printf "%s-%s" (include "${chart}.name" .) .Values.clusterName | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "${chart}.labels" -}}
app.kubernetes.io/name: {{ include "${chart}.name" . }}
app.kubernetes.io/part-of: {{ .Values.clusterName | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- range $key, $value := .Values.commonLabels }}
{{ $key }}: {{ $value | quote }}
{{- end }}
{{- end -}}

{{- define "${chart}.image" -}}
{{- $image := .image -}}
{{- printf "%s/%s:%s" $image.registry $image.repository $image.tag -}}
{{- if $image.digest }}{{ printf "@%s" $image.digest }}{{ end -}}
{{- end -}}

{{- define "${chart}.probe" -}}
httpGet:
  path: {{ .path }}
  port: {{ .port }}
initialDelaySeconds: {{ .delay | default 5 }}
periodSeconds: {{ .period | default 10 }}
failureThreshold: {{ .failures | default 3 }}
{{- end -}}

{{- define "${chart}.features" -}}
{{- range $key, $feature := .Values.features }}
{{ $key }}: {{ if $feature.enabled }}{{ $feature.value | quote }}{{ else }}"off"{{ end }}
{{- end }}
{{- end -}}

{{- define "${chart}.options" -}}
{{- range $index, $option := .options }}
{{ $option.name }}: {{ printf "%s-%s" $.root.Values.clusterName $option.value | quote }}
{{- end }}
{{- end -}}
`;
}

function valuesYaml(chart: string, shape: HeavyShape, count: number): string {
  const options = Array.from(
    { length: shape.listLength },
    (_, i) => `    - name: option-${i}\n      value: "${chart}-${i}"\n`,
  ).join('');
  const components = Array.from(
    { length: count },
    (_, i) =>
      `  c${i}:\n    enabled: ${i % shape.enabledEvery === 0}\n    replicas: ${1 + (i % 3)}\n    port: ${9000 + i}\n`,
  ).join('');
  const features = Array.from(
    { length: shape.features },
    (_, i) => `  f${String(i).padStart(4, '0')}:\n    enabled: ${i % 50 === 0}\n    value: "${chart}-feature-${i}"\n`,
  ).join('');
  return `clusterName: unset
podCIDR: 10.0.0.0/16
nameOverride: ""
commonLabels:
  team: platform
  tier: network
image:
  registry: registry.example.test
  repository: ${chart}/agent
  tag: v1.0.0
  digest: ""
resources:
  requests:
    cpu: 100m
    memory: 128Mi
  limits:
    memory: 512Mi
shared:
  options:
${options}components:
${components}features:${features === '' ? ' {}\n' : `\n${features}`}`;
}

/** One component, rendered when switched on: a ConfigMap of options (and switches) and, for every third one switched on, a Deployment. */
function componentTemplate(chart: string, index: number, shape: HeavyShape): string {
  // The switches: all of them hashed into an annotation (work for helm, a line of output), the few that are on written out.
  const featureAnnotation =
    shape.features > 0
      ? `  annotations:\n    checksum/features: {{ include "${chart}.features" . | sha256sum }}\n`
      : '';
  const featureData =
    shape.features > 0
      ? `  {{- range $key, $feature := .Values.features }}\n  {{- if $feature.enabled }}\n  feature-{{ $key }}: {{ $feature.value | quote }}\n  {{- end }}\n  {{- end }}\n`
      : '';
  const deployment =
    Math.floor(index / shape.enabledEvery) % 3 === 0
      ? `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "${chart}.fullname" . }}-c${index}
  labels:
    {{- include "${chart}.labels" . | nindent 4 }}
spec:
  replicas: {{ $c.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/component: c${index}
  template:
    metadata:
      labels:
        app.kubernetes.io/component: c${index}
        {{- include "${chart}.labels" . | nindent 8 }}
      annotations:
        checksum/options: {{ include "${chart}.options" (dict "options" .Values.shared.options "root" .) | sha256sum }}
    spec:
      containers:
        - name: c${index}
          image: {{ include "${chart}.image" (dict "image" .Values.image) | quote }}
          args:
            {{- range .Values.shared.options }}
            - --{{ .name }}={{ $.Values.clusterName }}-{{ .value }}
            {{- end }}
          ports:
            - containerPort: {{ $c.port }}
          livenessProbe:
            {{- include "${chart}.probe" (dict "path" "/healthz" "port" $c.port) | nindent 12 }}
          readinessProbe:
            {{- include "${chart}.probe" (dict "path" "/readyz" "port" $c.port "delay" 2) | nindent 12 }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
`
      : '';
  return `{{- $c := .Values.components.c${index} }}
{{- if $c.enabled }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "${chart}.fullname" . }}-c${index}
  labels:
    {{- include "${chart}.labels" . | nindent 4 }}
${featureAnnotation}data:
  pod-cidr: {{ .Values.podCIDR | quote }}
  {{- include "${chart}.options" (dict "options" .Values.shared.options "root" .) | nindent 2 }}
${featureData}${deployment}{{- end }}
`;
}

async function writeChart(
  dir: string,
  chart: string,
  description: string,
  templates: number,
  shape: HeavyShape,
  subcharts: string[] = [],
): Promise<void> {
  await write(path.join(dir, 'Chart.yaml'), chartYaml(chart, description, subcharts));
  await write(path.join(dir, 'values.yaml'), valuesYaml(chart, shape, templates));
  await write(path.join(dir, 'templates', '_helpers.tpl'), helpers(chart));
  for (let index = 0; index < templates; index += 1) {
    // Spread over folders, as large charts organise theirs.
    await write(
      path.join(dir, 'templates', `part-${index % 8}`, `component-${index}.yaml`),
      componentTemplate(chart, index, shape),
    );
  }
  for (const sub of subcharts) {
    await writeChart(path.join(dir, 'charts', sub), sub, `the ${sub} part of ${chart}`, shape.subchartTemplates, shape);
  }
}

/** A small addon: a Deployment, a Service and a ServiceAccount. */
async function writeSmallChart(dir: string): Promise<void> {
  await write(path.join(dir, 'Chart.yaml'), chartYaml('metrics-server', 'a small metrics-server-like addon'));
  await write(path.join(dir, 'values.yaml'), 'apiServerHost: unset\nreplicas: 1\n');
  await write(
    path.join(dir, 'templates', 'metrics-server.yaml'),
    `apiVersion: v1
kind: ServiceAccount
metadata:
  name: metrics-server
---
apiVersion: v1
kind: Service
metadata:
  name: metrics-server
spec:
  selector:
    app: metrics-server
  ports:
    - port: 443
      targetPort: 10250
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: metrics-server
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app: metrics-server
  template:
    metadata:
      labels:
        app: metrics-server
    spec:
      serviceAccountName: metrics-server
      containers:
        - name: metrics-server
          image: registry.example.test/metrics-server:v0.7.0
          args:
            - --kubelet-preferred-address-types=InternalIP
            - --apiserver-host={{ .Values.apiServerHost }}
`,
  );
}

/** A small cluster-class chart: a ClusterClass naming its release. */
async function writeClusterClassChart(dir: string): Promise<void> {
  await write(
    path.join(dir, 'Chart.yaml'),
    chartYaml('docker-heavy-1-30-cluster-class', 'ClusterClass of the generated heavy stack').replace(
      'version: 0.1.0',
      'version: v1',
    ),
  );
  await write(path.join(dir, 'values.yaml'), 'workers: 3\n');
  await write(
    path.join(dir, 'templates', 'cluster-class.yaml'),
    `apiVersion: cluster.x-k8s.io/v1beta1
kind: ClusterClass
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Version }}
spec:
  controlPlane:
    ref:
      apiVersion: controlplane.cluster.x-k8s.io/v1beta1
      kind: KubeadmControlPlaneTemplate
      name: {{ .Release.Name }}-{{ .Chart.Version }}
`,
  );
}

/**
 * Writes a local release source holding the heavy release into `root` (one sub-directory per tag)
 * and returns the ClusterStack that keeps it.
 */
export async function writeHeavyRelease(
  root: string,
  shape: HeavyShape = DEFAULT_HEAVY_SHAPE,
): Promise<{ releases: string; clusterStack: Record<string, unknown> }> {
  const release = path.join(root, HEAVY_TAG);
  await write(
    path.join(release, 'metadata.yaml'),
    `apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\nversions:\n  clusterStack: v1\n  kubernetes: ${KUBERNETES}\n  components:\n    clusterAddon: v1\n`,
  );
  await write(
    path.join(release, 'clusteraddon.yaml'),
    `apiVersion: clusteraddonconfig.x-k8s.io/v1alpha1\naddonStages:\n  AfterControlPlaneInitialized:\n    - name: cni\n      action: apply\n    - name: metrics-server\n      action: apply\n`,
  );
  await writeClusterClassChart(path.join(release, 'docker-heavy-1-30-cluster-class-v1'));
  const addons = path.join(release, 'docker-heavy-1-30-cluster-addon-v1');
  await writeChart(path.join(addons, 'cni'), 'cni', 'a generated CNI-sized chart', shape.cniTemplates, shape, [
    'hubble',
    'operator',
  ]);
  await write(
    path.join(addons, 'cni', 'overwrite.yaml'),
    'values: |\n  clusterName: {{ .Cluster.metadata.name }}\n  podCIDR: {{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}\n  hubble:\n    clusterName: {{ .Cluster.metadata.name }}\n  operator:\n    clusterName: {{ .Cluster.metadata.name }}\n',
  );
  await writeSmallChart(path.join(addons, 'metrics-server'));
  await write(
    path.join(addons, 'metrics-server', 'overwrite.yaml'),
    'values: |\n  apiServerHost: {{ .Cluster.spec.controlPlaneEndpoint.host }}\n',
  );
  const clusterStack = {
    apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
    kind: 'ClusterStack',
    metadata: { name: 'heavy', namespace: 'cluster-stacks' },
    spec: {
      provider: 'docker',
      name: 'heavy',
      kubernetesVersion: '1.30',
      channel: 'stable',
      versions: ['v1'],
      autoSubscribe: false,
      noProvider: true,
    },
  };
  return { releases: root, clusterStack };
}
