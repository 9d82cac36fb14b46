// Turns a Plan into the output tree: the ClusterClass side of every kept release and the addons of
// every Cluster, one object per file, plus kustomizations, a README and a provenance record.
// Helm comes in through two narrow functions; this module does no I/O of its own.
import type { CapiCluster, KubeObject, ObjectReference } from '../api/types.js';
import { formatProblem } from '../core/problem.js';
import { stackPrefix } from '../core/release-tag.js';
import type { ClusterResolution, StackResolution } from '../core/resolve-releases.js';
import { groupOf } from '../inputs/classify-inputs.js';
import type { LoadedRelease, Plan } from '../plan/build-plan.js';
import type { ChartSource, ReleaseContent } from '../release/load-release.js';
import type { ChartRenderRequest } from '../../renderers/renderer.js';
import type { ValuesTemplateItem, ValuesTemplateResult } from '../../renderers/values-template.js';
import { sha256Digest } from '../release/content-digest.js';
import type { RenderedTree } from '../../gitops/publisher.js';
import { OUTPUT_README_TEMPLATE } from '../../gitops/templates/output-readme.js';
import { ARGOCD_SYNC_WAVE_ANNOTATION, syncWaveFor } from '../../gitops/wiring/argocd-sync-waves.js';
import { renderWiring, type WiringOptions } from '../../gitops/wiring/render-wiring.js';
import { checkWiringOptions } from '../../gitops/wiring/wiring-options.js';
import { canonicalJson, sortKeysDeep } from './canonical-json.js';
import { fileNamesFor, placeObjects, readManifests, serializeObject } from './manifest-objects.js';
import { HelmRenderError } from '../../renderers/helm-errors.js';
import { compileTemplate } from './sandboxed-template.js';
import { applySecretPolicy, type SecretPolicy, SecretRefusedError } from './secret-policy.js';

export const ADDON_RELEASE_NAME = 'cluster-addon';
export const ADDON_NAMESPACE = 'kube-system';
/** The stage directory of a legacy (single umbrella chart) addon release. */
export const LEGACY_STAGE = 'cluster-addon';
export const PROVENANCE_FILE = 'provenance.json';
export const README_FILE = 'README.md';
export const KUSTOMIZATION_FILE = 'kustomization.yaml';
/**
 * Version of how objects are written. Part of every digest, so a tree written by an older version
 * (format 1 re-serialized helm's output and changed its meaning) is rendered again, never reused.
 */
export const OUTPUT_FORMAT = 2;

/** What rendering needs from the outside: helm, through two functions. */
export interface RenderDependencies {
  renderChart(request: ChartRenderRequest): Promise<string>;
  evaluateValues(items: ValuesTemplateItem[], kubeVersion: string): Promise<ValuesTemplateResult[]>;
}

export interface RenderProgress {
  releasesDone: number;
  releasesTotal: number;
  clustersDone: number;
  clustersTotal: number;
}

export interface RenderOptions {
  secrets: SecretPolicy;
  /** Flux or Argo CD wiring to generate beside the tree (under flux/ or argocd/); none when absent. */
  gitops?: WiringOptions;
  /** The tree the target holds now; units whose inputs did not change keep their files from it. */
  previous: RenderedTree;
  readmeTemplate?: string;
  onProgress?: (progress: RenderProgress) => void;
}

export interface WithheldEntry {
  kind: 'release' | 'cluster';
  namespace: string;
  name: string;
  reason: string;
  /** True when the previous output was kept in place of a new one. */
  previousKept: boolean;
}

/** One directory of output and the digests that decide whether it must be rendered again. */
export interface UnitRecord {
  dir: string;
  kind: 'release' | 'cluster-stage';
  namespace: string;
  /** The release name, or the cluster name. */
  name: string;
  release: string;
  stage?: string;
  order?: number;
  addonVersion?: string;
  /** Digest of everything that goes into the values template and the chart. */
  inputDigest: string;
  /** Digest of chart, evaluated values and Kubernetes version. */
  renderDigest: string;
  files: string[];
  /** What the render of this unit is worth a look for (duplicate keys, unknown scopes, dropped Secrets). */
  notes?: string[];
}

export interface Provenance {
  generator: 'clusterstack-gitops';
  format: typeof OUTPUT_FORMAT;
  inputDigest: string;
  inputs: { kind: string; namespace: string; name: string; digest: string }[];
  releases: { name: string; source: string; digest: string }[];
  units: UnitRecord[];
  withheld: WithheldEntry[];
  /** Values templates that failed, by unit and input digest: unchanged inputs fail again without helm. */
  valuesFailures: { dir: string; inputDigest: string; reason: string }[];
}

export interface RenderSummary {
  inputDigest: string;
  stacks: {
    namespace: string;
    name: string;
    /** `<provider>-<name>-<maj>-<min>` and channel: which release tags belong to the stack. */
    prefix: string;
    channel: string;
    latestRelease: string | null;
    usableVersions: string;
    releases: { name: string; version: string; status: string; reasons: string[] }[];
  }[];
  clusters: { namespace: string; name: string; release: string; addonVersion: string; stages: string[]; status: string }[];
  withheld: WithheldEntry[];
  /** Notes of every published unit, prefixed with its directory. */
  notes: string[];
}

export interface RenderOutcome {
  tree: RenderedTree;
  provenance: Provenance;
  summary: RenderSummary;
  withheld: WithheldEntry[];
  /** Notes of the published units (also in summary and README): worth a look, never a failure. */
  notes: string[];
  stats: { unitsRendered: number; unitsReused: number };
}

interface PendingUnit {
  record: Omit<UnitRecord, 'renderDigest' | 'files'>;
  chart: ChartSource;
  releaseName: string;
  renderNamespace: string;
  defaultNamespace: string;
  kubeVersion: string;
  includeCrds: boolean;
  /** Argo CD sync-wave annotations on the objects (management side, when Argo CD applies the tree). */
  syncWaves: boolean;
  /** Values layered on top of the evaluated template (user values from the ClusterStack). */
  extraValues?: Record<string, unknown>;
  template?: { text: string; origin: string; context: ValuesTemplateItem['context'] };
  values: Record<string, unknown>[];
}

/** Removes fields that change on every write but say nothing about the object's content. */
function stableContext(object: KubeObject): KubeObject {
  const copy = structuredClone(object);
  const metadata = copy.metadata as unknown as Record<string, unknown>;
  delete metadata.managedFields;
  delete metadata.resourceVersion;
  return copy;
}

function findReferenced(ref: ObjectReference | undefined, cluster: CapiCluster, others: KubeObject[]): KubeObject | undefined {
  if (!ref?.kind || !ref.name) return undefined;
  const namespace = ref.namespace ?? cluster.metadata.namespace ?? 'default';
  return others.find(
    (object) =>
      object.kind === ref.kind &&
      object.metadata.name === ref.name &&
      (object.metadata.namespace ?? 'default') === namespace &&
      (!ref.apiVersion || groupOf(object.apiVersion) === groupOf(ref.apiVersion)),
  );
}

function previousProvenance(previous: RenderedTree): { units: Map<string, UnitRecord>; failures: Map<string, string> } {
  const text = previous.get(PROVENANCE_FILE);
  try {
    const provenance = (text ? JSON.parse(text) : {}) as Partial<Provenance>;
    return {
      units: new Map((provenance.units ?? []).map((unit) => [unit.dir, unit])),
      failures: new Map((provenance.valuesFailures ?? []).map((failure) => [`${failure.dir} ${failure.inputDigest}`, failure.reason])),
    };
  } catch {
    return { units: new Map(), failures: new Map() }; // a damaged record only costs a full render
  }
}

/** The previous unit's files, if the previous tree still has all of them. */
function previousFiles(unit: UnitRecord | undefined, previous: RenderedTree): Map<string, string> | undefined {
  if (!unit) return undefined;
  const files = new Map<string, string>();
  for (const file of unit.files) {
    const content = previous.get(`${unit.dir}/${file}`);
    if (content === undefined) return undefined;
    files.set(file, content);
  }
  return files;
}

function releaseDir(namespace: string, release: string): string {
  return `management/${namespace}/${release}`;
}

function clusterDir(cluster: ClusterResolution): string {
  return `clusters/${cluster.namespace}/${cluster.name}`;
}

export async function renderOutput(plan: Plan, deps: RenderDependencies, options: RenderOptions): Promise<RenderOutcome> {
  // Bad wiring options are a user error: say so before any helm process runs.
  if (options.gitops) checkWiringOptions(options.gitops);
  const syncWaves = options.gitops?.engine === 'argocd';
  const { units: before, failures: failedBefore } = previousProvenance(options.previous);
  const withheld: WithheldEntry[] = [];
  const units: PendingUnit[] = [];
  const others = plan.inputs.others.map((sourced) => sourced.object);

  // ClusterClass side: every kept release of every resolved stack.
  for (const stack of plan.resolution.clusterStacks) {
    for (const decision of stack.releases.filter((release) => release.kept)) {
      const loaded = plan.releases.get(decision.name);
      const reason = releaseWithheldReason(decision, loaded);
      if (reason || !loaded?.content) {
        withheld.push({ kind: 'release', namespace: stack.namespace, name: decision.name, reason: reason ?? 'release could not be loaded', previousKept: false });
        continue;
      }
      units.push(releaseUnit(stack, loaded.content, syncWaves, options.secrets));
    }
  }

  // Addon side: every Cluster whose class resolved, one unit per stage.
  const clusterUnits = new Map<string, PendingUnit[]>();
  for (const cluster of plan.resolution.clusters.filter((c) => c.managed)) {
    const loaded = cluster.release ? plan.releases.get(cluster.release) : undefined;
    const reason =
      cluster.problems.length > 0
        ? cluster.problems.map((problem) => problem.message).join('; ')
        : !loaded?.content
          ? `release ${cluster.release} could not be loaded: ${(loaded?.problems ?? []).map(formatProblem).join('; ') || 'it is not kept by its ClusterStack'}`
          : undefined;
    if (reason || !loaded?.content) {
      withheld.push({ kind: 'cluster', namespace: cluster.namespace, name: cluster.name, reason: reason ?? 'release missing', previousKept: false });
      continue;
    }
    const stack = plan.resolution.clusterStacks.find((s) => s.namespace === cluster.stack?.namespace && s.name === cluster.stack?.name)!;
    const pending = addonUnits(cluster, stack, loaded.content, others, options.secrets);
    clusterUnits.set(`${cluster.namespace}/${cluster.name}`, pending);
    units.push(...pending);
  }

  // Values templates: skipped where the unit's inputs are unchanged, the rest in one batch per Kubernetes version.
  const reused = new Map<string, Map<string, string>>();
  const needValues = units.filter((unit) => {
    const old = before.get(unit.record.dir);
    if (old && old.inputDigest === unit.record.inputDigest) {
      const files = previousFiles(old, options.previous);
      if (files) {
        reused.set(unit.record.dir, files);
        return false;
      }
    }
    return unit.template !== undefined;
  });
  // A cluster whose values failed before with the same inputs fails again without helm.
  const failedClusters = new Map<string, string>();
  const clusterKey = (unit: PendingUnit): string => `${unit.record.namespace}/${unit.record.name}`;
  for (const unit of units) {
    const known = failedBefore.get(`${unit.record.dir} ${unit.record.inputDigest}`);
    if (known !== undefined && !failedClusters.has(clusterKey(unit))) failedClusters.set(clusterKey(unit), known);
  }
  const toEvaluate = needValues.filter((unit) => !failedClusters.has(clusterKey(unit)));
  for (const [kubeVersion, batch] of groupBy(toEvaluate, (unit) => unit.kubeVersion)) {
    const results = await deps.evaluateValues(
      batch.map((unit) => ({ id: unit.record.dir, origin: unit.template!.origin, template: unit.template!.text, context: unit.template!.context })),
      kubeVersion,
    );
    const byId = new Map(results.map((result) => [result.id, result]));
    for (const unit of batch) {
      const result = byId.get(unit.record.dir);
      if (result?.ok) unit.values = [result.values];
      // A missing field is a state to wait out, a broken template the release's fault: either way
      // only this cluster is withheld, and the same inputs fail again without helm next time.
      else if (!failedClusters.has(clusterKey(unit))) failedClusters.set(clusterKey(unit), result ? describeValuesFailure(result) : 'values template was not evaluated');
    }
  }
  const valuesFailures: Provenance['valuesFailures'] = units
    .filter((unit) => unit.record.kind === 'cluster-stage' && failedClusters.has(clusterKey(unit)))
    .map((unit) => ({ dir: unit.record.dir, inputDigest: unit.record.inputDigest, reason: failedClusters.get(clusterKey(unit))! }));

  // A cluster with any failing stage is withheld whole: half an addon set is worse than the old one.
  const active = units.filter((unit) => unit.record.kind !== 'cluster-stage' || !failedClusters.has(`${unit.record.namespace}/${unit.record.name}`));
  for (const [key, reason] of failedClusters) {
    const [namespace, name] = key.split('/') as [string, string];
    withheld.push({ kind: 'cluster', namespace, name, reason, previousKept: false });
  }

  // Render what changed; reuse what did not (including charts that generate random data).
  const rendered = new Map<string, Map<string, string>>();
  const records: UnitRecord[] = [];
  const refusals: SecretRefusedError[] = [];
  const unitFailures = new Map<PendingUnit, string>();
  const progress: RenderProgress = {
    releasesDone: 0,
    releasesTotal: active.filter((u) => u.record.kind === 'release').length,
    clustersDone: 0,
    clustersTotal: new Set(active.filter((u) => u.record.kind === 'cluster-stage').map((u) => `${u.record.namespace}/${u.record.name}`)).size,
  };
  const clusterStagesLeft = new Map<string, number>();
  for (const unit of active) if (unit.record.kind === 'cluster-stage') clusterStagesLeft.set(`${unit.record.namespace}/${unit.record.name}`, (clusterStagesLeft.get(`${unit.record.namespace}/${unit.record.name}`) ?? 0) + 1);
  let unitsRendered = 0;
  await Promise.all(
    active.map(async (unit) => {
      const values = [...unit.values, ...(unit.extraValues ? [unit.extraValues] : [])];
      let renderDigest = sha256Digest(canonicalJson({ format: OUTPUT_FORMAT, chart: unit.chart.digest, values, kubeVersion: unit.kubeVersion, releaseName: unit.releaseName, namespace: unit.renderNamespace, includeCrds: unit.includeCrds, secrets: options.secrets, syncWaves: unit.syncWaves }));
      let files = reused.get(unit.record.dir);
      const old = before.get(unit.record.dir);
      let notes = old?.notes;
      // Reused by input digest: values were not evaluated, so the old render digest still holds.
      if (files && old) renderDigest = old.renderDigest;
      else if (old && old.renderDigest === renderDigest) files = previousFiles(old, options.previous);
      if (!files) {
        let output: string;
        try {
          output = await deps.renderChart({ releaseName: unit.releaseName, chart: unit.chart, namespace: unit.renderNamespace, kubeVersion: unit.kubeVersion, values, includeCrds: unit.includeCrds });
        } catch (error) {
          // The chart failed for this unit (a template error, a `fail`): withhold the unit alone.
          if (!(error instanceof HelmRenderError)) throw error;
          unitFailures.set(unit, error.message);
          return;
        }
        unitsRendered += 1;
        let result: UnitFiles;
        try {
          result = objectFiles(output, unit, options.secrets);
        } catch (error) {
          if (error instanceof SecretRefusedError) {
            refusals.push(error);
            return;
          }
          throw error;
        }
        if (result.problems.length > 0) {
          unitFailures.set(unit, result.problems.join('; '));
          return;
        }
        files = result.files;
        notes = result.notes.length > 0 ? result.notes : undefined;
      }
      rendered.set(unit.record.dir, files);
      records.push({ ...unit.record, renderDigest, files: [...files.keys()].sort(), ...(notes ? { notes } : {}) });
      if (unit.record.kind === 'release') progress.releasesDone += 1;
      else {
        const key = `${unit.record.namespace}/${unit.record.name}`;
        const left = (clusterStagesLeft.get(key) ?? 1) - 1;
        clusterStagesLeft.set(key, left);
        if (left === 0) progress.clustersDone += 1;
      }
      options.onProgress?.({ ...progress });
    }),
  );
  if (refusals.length > 0) {
    throw refusals.length === 1 ? refusals[0]! : new SecretRefusedError(refusals.map((r) => r.unit).join(', '), refusals.flatMap((r) => r.findings));
  }
  withholdFailedUnits(unitFailures, rendered, records, withheld);

  // Withheld units that were published before keep their previous output: withholding never prunes.
  for (const entry of withheld) {
    const dirs = entry.kind === 'release'
      ? [releaseDir(entry.namespace, entry.name)]
      : [...before.keys()].filter((dir) => dir.startsWith(`clusters/${entry.namespace}/${entry.name}/`));
    for (const dir of dirs) {
      const old = before.get(dir);
      const files = previousFiles(old, options.previous);
      if (!old || !files || rendered.has(dir)) continue;
      rendered.set(dir, files);
      records.push(old);
      entry.previousKept = true;
    }
  }

  records.sort((a, b) => a.dir.localeCompare(b.dir));
  withheld.sort((a, b) => `${a.kind}/${a.namespace}/${a.name}`.localeCompare(`${b.kind}/${b.namespace}/${b.name}`));
  valuesFailures.sort((a, b) => a.dir.localeCompare(b.dir));
  const provenance = buildProvenance(plan, records, withheld, valuesFailures);
  const summary = buildSummary(plan, records, withheld, provenance.inputDigest, clusterUnits);
  const notes = summary.notes;
  const tree = assembleTree(rendered, records, provenance, summary, options.readmeTemplate);
  // The wiring follows the units: a release or cluster that leaves the tree leaves the wiring too.
  if (options.gitops) for (const [file, content] of renderWiring(records, options.gitops)) tree.set(file, content);
  return { tree: new Map([...tree.entries()].sort(([a], [b]) => a.localeCompare(b))), provenance, summary, withheld, notes, stats: { unitsRendered, unitsReused: records.length - unitsRendered } };
}

function releaseWithheldReason(decision: StackResolution['releases'][number], loaded: LoadedRelease | undefined): string | undefined {
  if (!loaded?.content) return `release could not be loaded: ${(loaded?.problems ?? []).map(formatProblem).join('; ') || 'unknown error'}`;
  if (!decision.ready) return decision.readyMessage ?? 'provider release is not ready';
  return undefined;
}

function describeValuesFailure(result: Extract<ValuesTemplateResult, { ok: false }>): string {
  if (result.missingField) return `addon values need ${result.missingField}, which the Cluster does not have yet (${result.message})`;
  return result.message;
}

// The secret policy is part of every input digest: output reused from a run that allowed
// Secrets must not slip past a run that refuses them.
function releaseUnit(stack: StackResolution, content: ReleaseContent, syncWaves: boolean, secrets: SecretPolicy): PendingUnit {
  const releaseName = stackPrefix(content.parsed);
  const namespace = stack.namespace;
  const kubeVersion = content.metadata.kubernetesVersion;
  const inputDigest = sha256Digest(canonicalJson({ format: OUTPUT_FORMAT, chart: content.clusterClassChart.digest, releaseName, namespace, kubeVersion, syncWaves, secrets }));
  return {
    record: { dir: releaseDir(namespace, content.tag), kind: 'release', namespace, name: content.tag, release: content.tag, inputDigest },
    chart: content.clusterClassChart,
    releaseName,
    renderNamespace: namespace,
    defaultNamespace: namespace,
    kubeVersion,
    includeCrds: false,
    syncWaves,
    values: [],
  };
}

function addonUnits(cluster: ClusterResolution, stack: StackResolution, content: ReleaseContent, others: KubeObject[], secrets: SecretPolicy): PendingUnit[] {
  const context: ValuesTemplateItem['context'] = { Cluster: stableContext(cluster.cluster) };
  const controlPlane = findReferenced(cluster.cluster.spec?.controlPlaneRef, cluster.cluster, others);
  const infraCluster = findReferenced(cluster.cluster.spec?.infrastructureRef, cluster.cluster, others);
  if (controlPlane) context.ControlPlane = stableContext(controlPlane);
  if (infraCluster) context.InfraCluster = stableContext(infraCluster);
  const kubeVersion = content.metadata.kubernetesVersion;
  const addonVersion = content.metadata.clusterAddonVersion;
  const spec = stack.stack.spec;
  const base = { namespace: cluster.namespace, name: cluster.name, release: content.tag, addonVersion };
  const stages =
    content.addons.format === 'legacy'
      ? [{ name: LEGACY_STAGE, order: 0, chart: content.addons.chart, valuesTemplate: content.addons.valuesTemplate, extra: spec.addonValues, origin: `${content.tag}/cluster-addon-values.yaml` }]
      : content.addons.stages
          .filter((stage) => stage.action === 'apply' && stage.chart)
          .map((stage) => ({ name: stage.name, order: stage.order, chart: stage.chart!, valuesTemplate: stage.valuesTemplate, extra: spec.addonStageValues?.[stage.name], origin: `${content.tag}/${stage.name}/overwrite.yaml` }));
  return stages.map((stage) => {
    // Nothing release-specific beyond the addon content: a Cluster moving between releases that
    // share an addon version keeps its output byte for byte.
    const inputDigest = sha256Digest(canonicalJson({ format: OUTPUT_FORMAT, chart: stage.chart.digest, template: stage.valuesTemplate, context, extra: stage.extra ?? null, kubeVersion, stage: stage.name, addonVersion, secrets }));
    const unit: PendingUnit = {
      record: { ...base, dir: `${clusterDir(cluster)}/${stage.name}`, kind: 'cluster-stage', stage: stage.name, order: stage.order, inputDigest },
      chart: stage.chart,
      releaseName: ADDON_RELEASE_NAME,
      renderNamespace: ADDON_NAMESPACE,
      defaultNamespace: ADDON_NAMESPACE,
      kubeVersion,
      includeCrds: true,
      syncWaves: false,
      values: [],
    };
    if (stage.extra) unit.extraValues = stage.extra;
    if (stage.valuesTemplate.trim() !== '') unit.template = { text: stage.valuesTemplate, origin: stage.origin, context };
    return unit;
  });
}

interface UnitFiles {
  files: Map<string, string>;
  /** Why the unit cannot be published (documents Kubernetes would refuse). */
  problems: string[];
  notes: string[];
}

/** One unit's helm output as files; throws SecretRefusedError when the policy refuses an object. */
function objectFiles(output: string, unit: PendingUnit, policy: SecretPolicy): UnitFiles {
  const subject = unit.record.kind === 'release' ? `release ${unit.record.release}` : `Cluster ${unit.record.namespace}/${unit.record.name} (stage ${unit.record.stage}, release ${unit.record.release})`;
  const reading = readManifests(output, `${unit.chart.origin} for ${subject}`);
  if (reading.problems.length > 0) return { files: new Map(), problems: reading.problems, notes: [] };
  const placed = placeObjects(reading.objects, {
    defaultNamespace: unit.defaultNamespace,
    ...(unit.syncWaves ? { annotationsFor: (object: KubeObject) => syncWaveAnnotation(object.kind) } : {}),
  });
  const kept = applySecretPolicy(placed.objects, policy, subject);
  const dropped = kept.dropped.map((finding) => `${finding.object.kind} ${finding.object.metadata.namespace ? `${finding.object.metadata.namespace}/` : ''}${finding.object.metadata.name} left out (--secrets drop): it ${finding.why}`);
  const names = fileNamesFor(kept.objects.map((entry) => entry.object), unit.defaultNamespace);
  return {
    files: new Map(kept.objects.map((entry, index) => [names[index]!, entry.text])),
    problems: [],
    notes: [...reading.warnings, ...placed.notes, ...dropped],
  };
}

function syncWaveAnnotation(kind: string): Record<string, string> | undefined {
  const wave = syncWaveFor(kind);
  return wave === undefined ? undefined : { [ARGOCD_SYNC_WAVE_ANNOTATION]: wave };
}

/**
 * Takes failed units out of the output and records them as withheld: a release alone, a cluster
 * whole (half an addon set is worse than the old one). Their previous output is kept later.
 */
function withholdFailedUnits(failures: Map<PendingUnit, string>, rendered: Map<string, Map<string, string>>, records: UnitRecord[], withheld: WithheldEntry[]): void {
  const reasons = new Map<string, { kind: WithheldEntry['kind']; namespace: string; name: string; reasons: string[] }>();
  for (const [unit, reason] of failures) {
    const kind = unit.record.kind === 'release' ? 'release' : 'cluster';
    const key = `${kind}/${unit.record.namespace}/${unit.record.name}`;
    const entry = reasons.get(key) ?? { kind, namespace: unit.record.namespace, name: unit.record.name, reasons: [] };
    entry.reasons.push(unit.record.kind === 'release' ? reason : `stage ${unit.record.stage}: ${reason}`);
    reasons.set(key, entry);
  }
  for (const entry of reasons.values()) {
    const prefix = entry.kind === 'release' ? undefined : `clusters/${entry.namespace}/${entry.name}/`;
    for (let index = records.length - 1; index >= 0; index -= 1) {
      const record = records[index]!;
      const matches = prefix ? record.dir.startsWith(prefix) : record.kind === 'release' && record.namespace === entry.namespace && record.name === entry.name;
      if (!matches) continue;
      rendered.delete(record.dir);
      records.splice(index, 1);
    }
    withheld.push({ kind: entry.kind, namespace: entry.namespace, name: entry.name, reason: entry.reasons.sort().join('; '), previousKept: false });
  }
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

function buildProvenance(plan: Plan, units: UnitRecord[], withheld: WithheldEntry[], valuesFailures: Provenance['valuesFailures']): Provenance {
  const objects = [
    ...plan.inputs.clusterStacks.map((s) => s.object as unknown as KubeObject),
    ...plan.inputs.clusters.map((c) => c.object as KubeObject),
    ...plan.inputs.providerReleases.map((p) => p.object),
    ...plan.inputs.others.map((o) => o.object),
  ];
  const inputs = objects
    .map((object) => ({ kind: `${groupOf(object.apiVersion) || 'core'}/${object.kind}`, namespace: object.metadata.namespace ?? 'default', name: object.metadata.name, digest: sha256Digest(canonicalJson(stableContext(object))) }))
    .sort((a, b) => `${a.kind}/${a.namespace}/${a.name}`.localeCompare(`${b.kind}/${b.namespace}/${b.name}`));
  const releases = [...plan.releases.values()]
    .filter((release) => release.content)
    .map((release) => ({ name: release.tag, source: release.source.location.startsWith('/') ? 'local directory' : release.source.location, digest: release.content!.digest }))
    .sort((a, b) => a.name.localeCompare(b.name));
  const inputDigest = sha256Digest(canonicalJson({ inputs, releases, units: units.map((u) => [u.dir, u.renderDigest]) }));
  return { generator: 'clusterstack-gitops', format: OUTPUT_FORMAT, inputDigest, inputs, releases, units, withheld, valuesFailures };
}

function buildSummary(plan: Plan, records: UnitRecord[], withheld: WithheldEntry[], inputDigest: string, clusterUnits: Map<string, PendingUnit[]>): RenderSummary {
  const published = new Set(records.map((record) => record.dir));
  const withheldKeys = new Map(withheld.map((entry) => [`${entry.kind}/${entry.namespace}/${entry.name}`, entry]));
  return {
    inputDigest,
    stacks: plan.resolution.clusterStacks.map((stack) => ({
      namespace: stack.namespace,
      name: stack.name,
      prefix: `${stack.stack.spec.provider}-${stack.stack.spec.name}-${stack.stack.spec.kubernetesVersion.replace('.', '-')}`,
      channel: stack.stack.spec.channel ?? 'stable',
      latestRelease: stack.latestRelease ?? null,
      usableVersions: stack.usableVersions,
      releases: stack.releases
        .filter((release) => release.kept)
        .map((release) => {
          const entry = withheldKeys.get(`release/${stack.namespace}/${release.name}`);
          const status = entry ? (entry.previousKept ? 'previous output kept' : 'withheld') : published.has(releaseDir(stack.namespace, release.name)) ? 'yes' : 'no';
          return { name: release.name, version: release.version, status, reasons: release.reasons };
        }),
    })),
    clusters: plan.resolution.clusters
      .filter((cluster) => cluster.managed)
      .map((cluster) => {
        const entry = withheldKeys.get(`cluster/${cluster.namespace}/${cluster.name}`);
        const stages = (clusterUnits.get(`${cluster.namespace}/${cluster.name}`) ?? []).map((unit) => unit.record.stage!);
        return {
          namespace: cluster.namespace,
          name: cluster.name,
          release: cluster.release ?? '',
          addonVersion: (cluster.release && plan.releases.get(cluster.release)?.content?.metadata.clusterAddonVersion) || '-',
          stages,
          status: entry ? (entry.previousKept ? 'withheld, previous output kept' : 'withheld') : 'rendered',
        };
      }),
    withheld,
    notes: records.flatMap((record) => (record.notes ?? []).map((note) => `${record.dir}: ${note}`)),
  };
}

/** The directories every kustomization lists: each object directory, and the management side above it. */
function kustomizations(tree: Map<string, string>): Map<string, string> {
  const children = new Map<string, Set<string>>();
  const add = (dir: string, entry: string): void => {
    if (!children.has(dir)) children.set(dir, new Set());
    children.get(dir)!.add(entry);
  };
  for (const file of tree.keys()) {
    const parts = file.split('/');
    if (parts[0] !== 'management' && parts[0] !== 'clusters') continue;
    add(parts.slice(0, -1).join('/'), parts.at(-1)!);
    // management/ and management/<ns>/ aggregate (all of it goes to one cluster); under clusters/
    // only a cluster's own directory aggregates its stages: different clusters are different targets.
    const aggregateFrom = parts[0] === 'management' ? 1 : 3;
    for (let depth = parts.length - 2; depth >= aggregateFrom; depth -= 1) add(parts.slice(0, depth).join('/'), parts[depth]!);
  }
  const out = new Map<string, string>();
  for (const [dir, entries] of children) {
    const resources = [...entries].sort();
    out.set(`${dir}/${KUSTOMIZATION_FILE}`, serializeObject({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources } as unknown as KubeObject));
  }
  return out;
}

function assembleTree(rendered: Map<string, Map<string, string>>, records: UnitRecord[], provenance: Provenance, summary: RenderSummary, readmeTemplate?: string): RenderedTree {
  const files = new Map<string, string>();
  for (const record of records) {
    for (const [file, content] of rendered.get(record.dir) ?? []) files.set(`${record.dir}/${file}`, content);
  }
  for (const [file, content] of kustomizations(files)) files.set(file, content);
  files.set(PROVENANCE_FILE, `${JSON.stringify(provenance, null, 2)}\n`);
  files.set(README_FILE, compileTemplate(readmeTemplate ?? OUTPUT_README_TEMPLATE, readmeTemplate ? 'readme template' : 'default README template')(summary));
  return new Map([...files.entries()].sort(([a], [b]) => a.localeCompare(b)));
}

