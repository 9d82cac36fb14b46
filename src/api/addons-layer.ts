// The AddonsLayer input (kraan.io/v1alpha1, Kraan's API): an ordered, versioned, gated set of
// addons for workload clusters. Kraan's own fields are read as Kraan reads them, so existing
// objects validate unchanged; the fields marked "ours" add what many clusters need (which Clusters
// a layer goes to, and a Helm chart as source).
import type { Problem } from '../core/problem.js';
import { type LabelSelector, validateLabelSelector } from '../core/label-selector.js';
import { normalizeVersion } from '../core/layer-version.js';
import type { ObjectMeta } from './types.js';

export const KRAAN_GROUP = 'kraan.io';
const ADDONS_LAYER_API_VERSION = `${KRAAN_GROUP}/v1alpha1`;
export const ADDONS_LAYER_KIND = 'AddonsLayer';
/** The stack's own addon stages, as a dependency: every layer may say it comes after them. */
export const CLUSTER_STACK_LAYER = 'cluster-stack';

interface AddonsLayerSpec {
  /**
   * Kraan: the layer's version; other layers depend on `name@version` (or on `name`, whatever its
   * version). Kraan's CRD requires it but its own samples omit it: absent, the layer is unversioned.
   */
  version?: string;
  /** Kraan: keep the layer from being applied (the wiring is rendered suspended). */
  hold?: boolean;
  /** Kraan: how often the engine reconciles the layer (a Go duration such as `1m`). */
  interval?: string;
  /** Kraan: how long applying may take; defaults to the interval. */
  timeout?: string;
  prereqs?: {
    /** Kraan: the lowest Kubernetes version the layer is certified for ("1.30" means >= 1.30.0). */
    k8sVersion?: string;
    /** Kraan: `name@version` (or `name`: at its current version) of layers that must be applied and ready first; ours: `cluster-stack`. */
    dependsOn?: string[];
  };
  /**
   * Kraan: `path` is a directory (starting with `./`) of the repository holding the inputs: plain
   * manifests, or a Helm chart when it has a Chart.yaml. `kind`, `name` and `namespace` name Kraan's
   * Flux source (a GitRepository); they are accepted and not used (the inputs' repository is the source).
   * Ours: `chart` instead of `path`, a chart from an OCI registry or an HTTP chart repository.
   */
  source: { kind?: string; name?: string; namespace?: string; path?: string; chart?: LayerChartRef };
  /**
   * Ours: the CAPI Clusters the layer goes to; `{}` or absent is every Cluster (Kraan applies a
   * layer to the cluster it runs in; here every workload cluster is one, and the plan says so).
   */
  clusterSelector?: LabelSelector;
  /** Ours: namespace for namespaced objects that name none, and for a chart's `--namespace` (default `default`). */
  namespace?: string;
  /** Ours, for charts: Helm values. */
  values?: Record<string, unknown>;
  /** Ours, for charts: values as a Go template over .Cluster, .ControlPlane and .InfraCluster (applied before `values`). */
  valuesTemplate?: string;
}

/**
 * Ours: a Helm chart from a repository. `oci://host/path/chart` with `version` as the tag (as `helm
 * pull oci://...` takes it), or an HTTP chart repository `https://host/path` (its `index.yaml`,
 * or that file's URL) with the chart's `name`. `digest` (`sha256:<hex>`) pins the content: the OCI
 * manifest's digest, or the chart archive's for an HTTP repository.
 */
export interface LayerChartRef {
  repository: string;
  name?: string;
  version: string;
  digest?: string;
}

export interface AddonsLayer {
  apiVersion: typeof ADDONS_LAYER_API_VERSION;
  kind: typeof ADDONS_LAYER_KIND;
  metadata: ObjectMeta;
  spec: AddonsLayerSpec;
  status?: Record<string, unknown>;
}

/** A parsed `prereqs.dependsOn` entry. */
export interface LayerDependency {
  layer: string;
  /** Absent for `cluster-stack`, and for a bare name (Kraan: the dependency at whatever version it is). */
  version?: string;
}

const SPEC_FIELDS = [
  'version',
  'hold',
  'interval',
  'timeout',
  'prereqs',
  'source',
  'clusterSelector',
  'namespace',
  'values',
  'valuesTemplate',
];
const PREREQ_FIELDS = ['k8sVersion', 'dependsOn'];
const SOURCE_FIELDS = ['kind', 'name', 'namespace', 'path', 'chart'];
const CHART_FIELDS = ['repository', 'name', 'version', 'digest'];
const CHART_NAME = /^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/;
const SHA256_DIGEST = /^sha256:[0-9a-f]{64}$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
// Flux's duration pattern (Kraan takes Go durations; these are the ones Flux accepts too).
const DURATION = /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `base@1.2.0` -> {layer, version}, `base` -> {layer} (as Kraan reads it); a problem message when the entry does not parse. */
export function parseLayerDependency(entry: unknown): LayerDependency | string {
  if (typeof entry !== 'string' || entry === '')
    return `must be "<layer>@<version>" such as base@1.2.0, or "<layer>", found ${JSON.stringify(entry ?? null)}`;
  if (entry === CLUSTER_STACK_LAYER) return { layer: CLUSTER_STACK_LAYER };
  const at = entry.lastIndexOf('@');
  if (at < 0)
    return DNS_LABEL.test(entry)
      ? { layer: entry }
      : `"${entry}" is not a layer name (lowercase letters, digits and "-")`;
  const layer = entry.slice(0, at);
  const version = entry.slice(at + 1);
  if (layer === CLUSTER_STACK_LAYER)
    return `"${entry}": ${CLUSTER_STACK_LAYER} (the stack's own addons) takes no version; write ${CLUSTER_STACK_LAYER}`;
  if (!DNS_LABEL.test(layer)) return `"${entry}": "${layer}" is not a layer name (lowercase letters, digits and "-")`;
  if (normalizeVersion(version) === undefined)
    return `"${entry}": "${version}" is not a version (numbers such as 1.2.0, "v" optional)`;
  return { layer, version };
}

function unknownFields(value: Record<string, unknown>, known: string[], path: string, problems: Problem[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key))
      problems.push({
        path: `${path}.${key}`,
        message: `is not a field of an AddonsLayer; known fields are ${known.join(', ')} (check the spelling)`,
      });
  }
}

/** spec.prereqs: a Kubernetes version gate and dependencies on other layers (never on itself). */
function validatePrereqs(prereqs: unknown, name: unknown, problems: Problem[]): void {
  if (prereqs === undefined) return;
  if (!isRecord(prereqs))
    problems.push({ path: 'spec.prereqs', message: 'must be a mapping with k8sVersion and/or dependsOn' });
  else {
    unknownFields(prereqs, PREREQ_FIELDS, 'spec.prereqs', problems);
    const gate = prereqs.k8sVersion;
    // Kraan writes the field always (no omitempty): an empty string means no gate.
    if (gate !== undefined && gate !== '' && (typeof gate !== 'string' || normalizeVersion(gate) === undefined)) {
      problems.push({
        path: 'spec.prereqs.k8sVersion',
        message: `must be a Kubernetes version such as "1.30" (meaning 1.30.0 or newer; quote it), found ${JSON.stringify(gate)}`,
      });
    }
    const dependsOn = prereqs.dependsOn;
    if (dependsOn !== undefined && dependsOn !== null) {
      if (!Array.isArray(dependsOn))
        problems.push({ path: 'spec.prereqs.dependsOn', message: 'must be a list such as [base@1.2.0]' });
      else {
        dependsOn.forEach((entry: unknown, index) => {
          const parsed = parseLayerDependency(entry);
          if (typeof parsed === 'string') problems.push({ path: `spec.prereqs.dependsOn[${index}]`, message: parsed });
          else if (parsed.layer === name)
            problems.push({
              path: `spec.prereqs.dependsOn[${index}]`,
              message: `a layer cannot depend on itself (${String(entry)})`,
            });
        });
      }
    }
  }
}

/** spec.source: a directory of the inputs' repository (inside it) or a chart reference, not both. */
function validateSource(source: unknown, problems: Problem[]): void {
  if (!isRecord(source))
    problems.push({
      path: 'spec.source',
      message:
        'is required: {path: ./<directory>} in the repository holding the inputs, or {chart: {repository, name, version}}',
    });
  else {
    unknownFields(source, SOURCE_FIELDS, 'spec.source', problems);
    const path = source.path;
    if (source.chart !== undefined) {
      if (path !== undefined)
        problems.push({
          path: 'spec.source',
          message: 'give either path (a directory of the repository) or chart (a chart from a repository), not both',
        });
      problems.push(...validateChartRef(source.chart));
    } else if (typeof path !== 'string' || !path.startsWith('./'))
      problems.push({
        path: 'spec.source.path',
        message: `must be a directory of the inputs' repository starting with "./" (as in Kraan), found ${JSON.stringify(path ?? null)}`,
      });
    else if (escapesRoot(path))
      problems.push({
        path: 'spec.source.path',
        message: `"${path}" leads outside the repository; layer sources must be inside it`,
      });
    for (const field of ['kind', 'name', 'namespace'] as const) {
      if (source[field] !== undefined && typeof source[field] !== 'string')
        problems.push({ path: `spec.source.${field}`, message: 'must be a string' });
    }
  }
}

/** Every problem of an AddonsLayer, or an empty list when it is valid. */
export function validateAddonsLayer(object: unknown): Problem[] {
  if (!isRecord(object)) return [{ message: 'an AddonsLayer must be a YAML mapping' }];
  const problems: Problem[] = [];
  if (object.apiVersion !== ADDONS_LAYER_API_VERSION)
    problems.push({
      path: 'apiVersion',
      message: `must be ${ADDONS_LAYER_API_VERSION}, found ${JSON.stringify(object.apiVersion ?? null)}`,
    });
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const name = metadata.name;
  if (typeof name !== 'string' || !DNS_LABEL.test(name) || name.length > 63) {
    problems.push({
      path: 'metadata.name',
      message: `must be a lowercase DNS label (letters, digits, "-"; at most 63): it names the layer's directory and wiring; found ${JSON.stringify(name ?? null)}`,
    });
  } else if (name === CLUSTER_STACK_LAYER) {
    problems.push({
      path: 'metadata.name',
      message: `"${CLUSTER_STACK_LAYER}" stands for the stack's own addon stages; give the layer another name`,
    });
  }
  const spec = object.spec;
  if (!isRecord(spec)) {
    problems.push({ path: 'spec', message: 'is required, with version and source.path' });
    return problems;
  }
  unknownFields(spec, SPEC_FIELDS, 'spec', problems);

  if (
    spec.version !== undefined &&
    (typeof spec.version !== 'string' || normalizeVersion(spec.version) === undefined)
  ) {
    problems.push({
      path: 'spec.version',
      message: `must be a version such as "1.2.0" (numbers, "v" optional; quote it), found ${JSON.stringify(spec.version)}`,
    });
  }
  if (spec.hold !== undefined && typeof spec.hold !== 'boolean')
    problems.push({ path: 'spec.hold', message: `must be true or false, found ${JSON.stringify(spec.hold)}` });
  for (const field of ['interval', 'timeout'] as const) {
    const value = spec[field];
    if (value !== undefined && (typeof value !== 'string' || !DURATION.test(value)))
      problems.push({
        path: `spec.${field}`,
        message: `must be a duration such as 1m, 30s or 1h30m, found ${JSON.stringify(value)}`,
      });
  }

  validatePrereqs(spec.prereqs, name, problems);
  validateSource(spec.source, problems);

  if (spec.clusterSelector !== undefined && spec.clusterSelector !== null)
    problems.push(...validateLabelSelector(spec.clusterSelector, 'spec.clusterSelector'));
  if (spec.namespace !== undefined && (typeof spec.namespace !== 'string' || !DNS_LABEL.test(spec.namespace)))
    problems.push({
      path: 'spec.namespace',
      message: `must be a namespace name, found ${JSON.stringify(spec.namespace)}`,
    });
  if (spec.values !== undefined && !isRecord(spec.values))
    problems.push({ path: 'spec.values', message: 'must be a mapping of Helm values' });
  if (spec.valuesTemplate !== undefined && typeof spec.valuesTemplate !== 'string')
    problems.push({ path: 'spec.valuesTemplate', message: 'must be a string (a Go template producing Helm values)' });
  return problems;
}

/** Problems of `spec.source.chart`. */
function validateChartRef(chart: unknown): Problem[] {
  const at = 'spec.source.chart';
  if (!isRecord(chart))
    return [
      {
        path: at,
        message: 'must be {repository: oci://host/path/chart or https://host/path, name (HTTP repositories), version}',
      },
    ];
  const problems: Problem[] = [];
  unknownFields(chart, CHART_FIELDS, at, problems);
  const repository = chart.repository;
  const isOci = typeof repository === 'string' && repository.startsWith('oci://');
  if (typeof repository !== 'string' || !(isOci || /^https?:\/\/[^/@\s]+(\/\S*)?$/.test(repository))) {
    // Never echo a URL with credentials in it.
    const found =
      typeof repository === 'string' && repository.includes('@')
        ? 'a URL with credentials in it (only public repositories are supported)'
        : JSON.stringify(repository ?? null);
    problems.push({
      path: `${at}.repository`,
      message: `must be oci://<registry>/<path>/<chart> or an HTTP chart repository https://<host>/<path> (no credentials in it), found ${found}`,
    });
  }
  if (chart.name !== undefined && (typeof chart.name !== 'string' || !CHART_NAME.test(chart.name)))
    problems.push({
      path: `${at}.name`,
      message: `must be a chart name (lowercase letters, digits, "-", "_", "."), found ${JSON.stringify(chart.name)}`,
    });
  if (typeof repository === 'string' && !isOci && chart.name === undefined)
    problems.push({
      path: `${at}.name`,
      message: 'is required for an HTTP chart repository: the chart to take from its index.yaml',
    });
  if (isOci && typeof chart.name === 'string' && !repository.replace(/\/+$/, '').endsWith(`/${chart.name}`))
    problems.push({
      path: `${at}.name`,
      message: `names the chart, which for oci:// is the last part of the repository: ${repository} does not end in /${chart.name}`,
    });
  if (typeof chart.version !== 'string' || chart.version === '' || !/^v?[0-9A-Za-z.+_-]+$/.test(chart.version))
    problems.push({
      path: `${at}.version`,
      message: `must be the chart's exact version such as "1.2.3" (quote it; ranges are not taken: the render must not change by itself), found ${JSON.stringify(chart.version ?? null)}`,
    });
  if (chart.digest !== undefined && (typeof chart.digest !== 'string' || !SHA256_DIGEST.test(chart.digest)))
    problems.push({
      path: `${at}.digest`,
      message: `must be sha256:<64 hex digits>, found ${JSON.stringify(chart.digest)}`,
    });
  return problems;
}

/** Whether a relative path climbs above its root (`./a/../../b`). */
function escapesRoot(relative: string): boolean {
  let depth = 0;
  for (const part of relative.split(/[/\\]+/)) {
    if (part === '' || part === '.') continue;
    depth += part === '..' ? -1 : 1;
    if (depth < 0) return true;
  }
  return false;
}

/** The parsed dependencies of a valid layer. */
export function dependenciesOf(layer: AddonsLayer): LayerDependency[] {
  return (layer.spec.prereqs?.dependsOn ?? []).map((entry) => parseLayerDependency(entry) as LayerDependency);
}
