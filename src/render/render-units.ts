// The units a plan asks for: the ClusterClass side of every kept release and one unit per addon
// stage of every Cluster, each with the digest of everything that goes into it.
import { clusterReference } from '../api/capi-cluster.js';
import type { CapiCluster, KubeObject } from '../api/types.js';
import { formatProblem, type Problem } from '../core/problem.js';
import { stackPrefix } from '../core/release-tag.js';
import type { ClusterResolution, StackResolution } from '../release/resolve-releases.js';
import { groupOf } from '../inputs/classify-inputs.js';
import { OUTPUT_FORMAT, type UnitRecord, type WithheldEntry } from '../output/provenance.js';
import { releaseDir, stageDir } from '../output/tree-layout.js';
import { loadedRelease, type LoadedRelease, type Plan } from '../plan/build-plan.js';
import { sha256Digest } from '../release/content-digest.js';
import type { ChartSource, ReleaseContent } from '../release/load-release.js';
import { canonicalDigestWithHole, canonicalJson } from './canonical-json.js';
import { readableContext } from './template-reads.js';
import { targetApiVersions } from '../core/kube-api-versions.js';
import type { ValuesTemplateItem } from './render-dependencies.js';
import { type SecretEncryption, secretsDigestPart } from '../secrets/secrets-digest.js';
import type { SecretPolicy } from './secret-policy.js';

const ADDON_RELEASE_NAME = 'cluster-addon';
const ADDON_NAMESPACE = 'kube-system';
/** The stage directory of a legacy (single umbrella chart) addon release. */
const LEGACY_STAGE = 'cluster-addon';

/** A unit before it is rendered (frozen once planned: evaluated values are kept beside it). */
export interface PendingUnit {
  record: Omit<UnitRecord, 'renderDigest' | 'files'>;
  chart: ChartSource;
  releaseName: string;
  renderNamespace: string;
  defaultNamespace: string;
  kubeVersion: string;
  /** What helm is told the target serves (`--api-versions`, src/core/kube-api-versions.ts); part of both digests. */
  apiVersions: string[];
  includeCrds: boolean;
  /** Whether the management-side annotations are added to its objects (see UnitSettings). */
  annotated: boolean;
  /** Values layered on top of the evaluated template (user values from the ClusterStack). */
  extraValues?: Record<string, unknown>;
  template?: { text: string; origin: string; context: ValuesTemplateItem['context'] };
  /** The values known before rendering; a unit with a template gets its evaluated values at render. */
  values: Record<string, unknown>[];
  /** Plain manifests (an addon layer's directory): used as they are, instead of rendering `chart`. */
  manifests?: string;
}

/** What every unit's digest depends on beyond its own inputs. */
export interface UnitSettings {
  secrets: SecretPolicy;
  /** With `encrypt`: the recipients, part of every digest. */
  encryption?: SecretEncryption;
  /** Names the annotations added to management-side objects (e.g. Argo CD sync waves), or undefined. */
  managementAnnotations?: string;
}

/** The units of a plan, per cluster too, and what is withheld before anything renders. */
export function planUnits(
  plan: Plan,
  settings: UnitSettings,
): { units: PendingUnit[]; clusterUnits: Map<string, PendingUnit[]>; withheld: WithheldEntry[] } {
  const withheld: WithheldEntry[] = [];
  const units: PendingUnit[] = [];
  const others = plan.inputs.others.map((sourced) => sourced.object);

  // ClusterClass side: every kept release of every resolved stack (another shard's stacks: none).
  for (const stack of plan.resolution.clusterStacks.filter((s) => !s.publishedByAnotherShard)) {
    for (const decision of stack.releases.filter((release) => release.kept)) {
      const loaded = loadedRelease(plan, stack.namespace, decision.name);
      const reason = releaseWithheldReason(decision, loaded);
      if (reason || !loaded?.content) {
        withheld.push({
          kind: 'release',
          namespace: stack.namespace,
          name: decision.name,
          reason: reason ?? 'release could not be loaded',
          previousKept: false,
        });
        continue;
      }
      units.push(releaseUnit(stack, loaded.content, settings));
    }
  }

  // Addon side: every Cluster whose class resolved, one unit per stage.
  const clusterUnits = new Map<string, PendingUnit[]>();
  const stageDigests = new StageDigests(secretsDigestPart(settings.secrets, settings.encryption));
  for (const cluster of plan.resolution.clusters.filter((c) => c.managed)) {
    const loaded = loadedRelease(plan, cluster.stack?.namespace ?? cluster.namespace, cluster.release);
    const reason =
      cluster.problems.length > 0
        ? cluster.problems.map(clusterProblemText).join('; ')
        : !loaded?.content
          ? `release ${cluster.release} could not be loaded: ${(loaded?.problems ?? []).map(formatProblem).join('; ') || 'it is not kept by its ClusterStack'}`
          : undefined;
    if (reason || !loaded?.content) {
      withheld.push({
        kind: 'cluster',
        namespace: cluster.namespace,
        name: cluster.name,
        reason: reason ?? 'release missing',
        previousKept: false,
      });
      continue;
    }
    const stack = plan.resolution.clusterStacks.find(
      (s) => s.namespace === cluster.stack?.namespace && s.name === cluster.stack?.name,
    )!;
    const pending = addonUnits(cluster, stack, loaded.content, others, stageDigests);
    clusterUnits.set(`${cluster.namespace}/${cluster.name}`, pending);
    units.push(...pending);
  }
  return { units, clusterUnits, withheld };
}

/** A Cluster's problem as a withheld reason: where (file and line, field) and what. */
function clusterProblemText(problem: Problem): string {
  const where = [problem.source, problem.path].filter(Boolean).join(' ');
  return where ? `${where}: ${problem.message}` : problem.message;
}

/** Every values document helm gets for `unit`: `values` (the evaluated template, or the static ones) then the user's. */
export function chartValues(
  unit: PendingUnit,
  values: readonly Record<string, unknown>[] = unit.values,
): Record<string, unknown>[] {
  return [...values, ...(unit.extraValues ? [unit.extraValues] : [])];
}

/**
 * The digest of exactly what helm is given for `unit` with `values` (chartValues): equal digests
 * render equal output, so a unit whose render digest the target records is reused without helm.
 */
export function renderDigestOf(
  unit: PendingUnit,
  values: readonly Record<string, unknown>[],
  secretsPart: unknown,
  annotationsId: string | undefined,
): string {
  return sha256Digest(
    canonicalJson({
      format: OUTPUT_FORMAT,
      chart: unit.chart.digest,
      values,
      kubeVersion: unit.kubeVersion,
      apiVersions: unit.apiVersions,
      releaseName: unit.releaseName,
      namespace: unit.renderNamespace,
      includeCrds: unit.includeCrds,
      secrets: secretsPart,
      annotations: unit.annotated ? (annotationsId ?? null) : null,
    }),
  );
}

/** The `namespace/name` of a unit's cluster (or release); a layer's is `namespace/cluster/layers/<layer>` (it fails alone). */
export function ownerKey(unit: PendingUnit): string {
  const key = `${unit.record.namespace}/${unit.record.name}`;
  return unit.record.layer ? `${key}/layers/${unit.record.layer.name}` : key;
}

/**
 * The object without the fields that change on every write but say nothing about its content. A
 * copy of the top and of its metadata only: every reader (digests, the values templates' context)
 * reads it, none writes into it, and a deep copy of every Cluster on every render was a tenth of a
 * one-cluster change at 2000 Clusters.
 */
export function stableContext(object: KubeObject): KubeObject {
  const {
    managedFields: _managedFields,
    resourceVersion: _resourceVersion,
    ...metadata
  } = object.metadata as unknown as Record<string, unknown>;
  return { ...object, metadata } as unknown as KubeObject;
}

/** The object a Cluster's control plane or infrastructure reference names (v1beta1 or v1beta2 shape), among the inputs. */
function findReferenced(
  cluster: CapiCluster,
  field: 'controlPlaneRef' | 'infrastructureRef',
  others: KubeObject[],
): KubeObject | undefined {
  const ref = clusterReference(cluster, field);
  if (!ref) return undefined;
  return others.find(
    (object) =>
      object.kind === ref.kind &&
      object.metadata.name === ref.name &&
      (object.metadata.namespace ?? 'default') === ref.namespace &&
      (ref.group === undefined || groupOf(object.apiVersion) === ref.group),
  );
}

function releaseWithheldReason(
  decision: StackResolution['releases'][number],
  loaded: LoadedRelease | undefined,
): string | undefined {
  if (!loaded?.content)
    return `release could not be loaded: ${(loaded?.problems ?? []).map(formatProblem).join('; ') || 'unknown error'}`;
  if (!decision.ready) return decision.readyMessage ?? 'provider release is not ready';
  return undefined;
}

// The secret policy is part of every input digest: output reused from a run that allowed
// Secrets must not slip past a run that refuses them.
function releaseUnit(stack: StackResolution, content: ReleaseContent, settings: UnitSettings): PendingUnit {
  const releaseName = stackPrefix(content.parsed);
  const namespace = stack.namespace;
  const kubeVersion = content.metadata.kubernetesVersion;
  const apiVersions = targetApiVersions(kubeVersion, content.crdApiVersions);
  const inputDigest = sha256Digest(
    canonicalJson({
      format: OUTPUT_FORMAT,
      chart: content.clusterClassChart.digest,
      releaseName,
      namespace,
      kubeVersion,
      apiVersions,
      annotations: settings.managementAnnotations ?? null,
      secrets: secretsDigestPart(settings.secrets, settings.encryption),
    }),
  );
  return {
    record: {
      dir: releaseDir(namespace, content.tag),
      kind: 'release',
      namespace,
      name: content.tag,
      release: content.tag,
      inputDigest,
    },
    chart: content.clusterClassChart,
    releaseName,
    renderNamespace: namespace,
    defaultNamespace: namespace,
    kubeVersion,
    apiVersions,
    includeCrds: false,
    annotated: settings.managementAnnotations !== undefined,
    values: [],
  };
}

/** What a Cluster's values templates see: .Cluster, .ControlPlane and .InfraCluster (when given). */
export function clusterContext(cluster: CapiCluster, others: KubeObject[]): ValuesTemplateItem['context'] {
  const context: ValuesTemplateItem['context'] = { Cluster: stableContext(cluster) };
  const controlPlane = findReferenced(cluster, 'controlPlaneRef', others);
  const infraCluster = findReferenced(cluster, 'infrastructureRef', others);
  if (controlPlane) context.ControlPlane = stableContext(controlPlane);
  if (infraCluster) context.InfraCluster = stableContext(infraCluster);
  return context;
}

/**
 * One plan's addon digests: per release, stage and stack values, everything but the Cluster's
 * context is written and hashed once (canonicalDigestWithHole), and the API versions listed once.
 */
class StageDigests {
  private readonly digesters = new Map<ReleaseContent, Map<string, Map<unknown, (context: unknown) => string>>>();
  private readonly apiVersions = new Map<ReleaseContent, string[]>();

  constructor(readonly secrets: unknown) {}

  apiVersionsOf(content: ReleaseContent): string[] {
    let versions = this.apiVersions.get(content);
    if (!versions) {
      versions = targetApiVersions(content.metadata.kubernetesVersion, content.crdApiVersions);
      this.apiVersions.set(content, versions);
    }
    return versions;
  }

  /** The digester of one stage (`fixed` builds its members other than `context`, asked once). */
  digester(
    content: ReleaseContent,
    stage: string,
    extra: unknown,
    fixed: () => Record<string, unknown>,
  ): (context: unknown) => string {
    const byStage = this.digesters.get(content) ?? new Map<string, Map<unknown, (context: unknown) => string>>();
    this.digesters.set(content, byStage);
    const byExtra = byStage.get(stage) ?? new Map<unknown, (context: unknown) => string>();
    byStage.set(stage, byExtra);
    let digest = byExtra.get(extra);
    if (!digest) {
      digest = canonicalDigestWithHole(fixed(), 'context');
      byExtra.set(extra, digest);
    }
    return digest;
  }
}

function addonUnits(
  cluster: ClusterResolution,
  stack: StackResolution,
  content: ReleaseContent,
  others: KubeObject[],
  digests: StageDigests,
): PendingUnit[] {
  const context = clusterContext(cluster.cluster, others);
  const kubeVersion = content.metadata.kubernetesVersion;
  const apiVersions = digests.apiVersionsOf(content);
  const addonVersion = content.metadata.clusterAddonVersion;
  const spec = stack.stack.spec;
  const base = { namespace: cluster.namespace, name: cluster.name, release: content.tag, addonVersion };
  const stages =
    content.addons.format === 'legacy'
      ? [
          {
            name: LEGACY_STAGE,
            order: 0,
            chart: content.addons.chart,
            valuesTemplate: content.addons.valuesTemplate,
            extra: spec.addonValues,
            origin: `${content.tag}/cluster-addon-values.yaml`,
          },
        ]
      : content.addons.stages
          .filter((stage) => stage.action === 'apply' && stage.chart)
          .map((stage) => ({
            name: stage.name,
            order: stage.order,
            chart: stage.chart!,
            valuesTemplate: stage.valuesTemplate,
            extra: spec.addonStageValues?.[stage.name],
            origin: `${content.tag}/${stage.name}/overwrite.yaml`,
          }));
  return stages.map((stage) => {
    // Nothing release-specific beyond the addon content: a Cluster moving between releases that
    // share an addon version keeps its output byte for byte.
    // Only what the values template can read of the context: a label it cannot see renders nothing new.
    const inputDigest = digests.digester(content, stage.name, stage.extra, () => ({
      format: OUTPUT_FORMAT,
      chart: stage.chart.digest,
      template: stage.valuesTemplate,
      extra: stage.extra ?? null,
      kubeVersion,
      apiVersions,
      stage: stage.name,
      addonVersion,
      secrets: digests.secrets,
    }))(readableContext(stage.valuesTemplate, context));
    const unit: PendingUnit = {
      record: {
        ...base,
        dir: stageDir(cluster.namespace, cluster.name, stage.name),
        kind: 'cluster-stage',
        stage: stage.name,
        order: stage.order,
        inputDigest,
      },
      chart: stage.chart,
      releaseName: ADDON_RELEASE_NAME,
      renderNamespace: ADDON_NAMESPACE,
      defaultNamespace: ADDON_NAMESPACE,
      kubeVersion,
      apiVersions,
      includeCrds: true,
      annotated: false,
      values: [],
    };
    if (stage.extra) unit.extraValues = stage.extra;
    if (stage.valuesTemplate.trim() !== '')
      unit.template = { text: stage.valuesTemplate, origin: stage.origin, context };
    return unit;
  });
}
