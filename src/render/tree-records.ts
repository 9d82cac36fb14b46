// The records a rendered tree carries: provenance.json (inputs, releases, units and their digests)
// and the summary behind its README, pull request bodies and reports.
import type { KubeObject } from '../api/types.js';
import { groupOf } from '../inputs/classify-inputs.js';
import {
  OUTPUT_FORMAT,
  type Provenance,
  type ProviderRecord,
  type SharedObjectRecord,
  type UnitRecord,
  type WithheldEntry,
} from '../output/provenance.js';
import type { RenderSummary } from '../output/render-summary.js';
import { releaseDir } from '../output/tree-layout.js';
import { loadedRelease, type Plan } from '../plan/build-plan.js';
import { sha256Digest } from '../release/content-digest.js';
import { parseReleaseTag } from '../core/release-tag.js';
import { formatDotVersion } from '../core/stack-version.js';
import { canonicalJson } from './canonical-json.js';
import { summarizeLayers } from './layer-summary.js';
import { type PendingUnit, stableContext } from './render-units.js';
import { describeIdentity } from './shared-objects.js';
import { withoutLabelsAndAnnotations } from './template-reads.js';
import { compareText } from '../core/compare-text.js';

/**
 * A Secret as provenance.json may record it: without its data. A digest of secret values committed to
 * Git could be brute-forced when they are short; what they change shows in the rendered files anyway.
 */
function withoutSecretData(object: KubeObject): KubeObject {
  if (object.kind !== 'Secret' || groupOf(object.apiVersion) !== '') return object;
  const {
    data: _data,
    stringData: _stringData,
    ...rest
  } = object as KubeObject & { data?: unknown; stringData?: unknown };
  return {
    ...rest,
    ...(_data !== undefined || _stringData !== undefined
      ? { keys: Object.keys({ ...(_data as object), ...(_stringData as object) }).sort() }
      : {}),
  } as KubeObject;
}

/** The provenance record of a render. */
export function buildProvenance(
  plan: Plan,
  units: UnitRecord[],
  withheld: WithheldEntry[],
  valuesFailures: Provenance['valuesFailures'],
  providers: ProviderRecord[] = [],
  sharedObjects: SharedObjectRecord[] = [],
): Provenance {
  const objects = [
    ...plan.inputs.clusterStacks.map((s) => s.object as unknown as KubeObject),
    ...plan.inputs.clusters.map((c) => c.object as KubeObject),
    ...plan.inputs.providerReleases.map((p) => p.object),
    ...plan.inputs.providers.map((p) => p.object as KubeObject),
    ...plan.inputs.others.map((o) => o.object),
    ...plan.inputs.addonsLayers.map((l) => l.object as unknown as KubeObject),
  ];
  const inputs = objects
    .map((object) => ({
      kind: `${groupOf(object.apiVersion) || 'core'}/${object.kind}`,
      namespace: object.metadata.namespace ?? 'default',
      name: object.metadata.name,
      digest: sha256Digest(canonicalJson(withoutSecretData(withoutLabelsAndAnnotations(stableContext(object))))),
    }))
    .sort((a, b) => compareText(`${a.kind}/${a.namespace}/${a.name}`, `${b.kind}/${b.namespace}/${b.name}`));
  const releases = [...plan.releases.values()]
    .filter((release) => release.content)
    .map((release) => ({
      name: release.tag,
      source: release.source.location.startsWith('/') ? 'local directory' : release.source.location,
      digest: release.content!.digest,
    }))
    .sort((a, b) => compareText(a.name, b.name));
  // Providers join the digest only when there are any, so trees without them keep their digests.
  const providerDigests = providers.map((p) => [p.dir, p.version, p.inputDigest]);
  const inputDigest = sha256Digest(
    canonicalJson({
      inputs,
      releases,
      units: units.map((u) => [u.dir, u.renderDigest]),
      ...(providers.length > 0 ? { providers: providerDigests } : {}),
    }),
  );
  return {
    generator: 'clusterstack-gitops',
    format: OUTPUT_FORMAT,
    inputDigest,
    inputs,
    releases,
    units,
    withheld,
    ...(sharedObjects.length > 0 ? { sharedObjects } : {}),
    valuesFailures,
    ...(providers.length > 0 ? { providers } : {}),
  };
}

/** The summary of a render, per stack, release and cluster. */
export function buildSummary(
  plan: Plan,
  records: UnitRecord[],
  withheld: WithheldEntry[],
  inputDigest: string,
  clusterUnits: Map<string, PendingUnit[]>,
  sharedObjects: SharedObjectRecord[] = [],
): RenderSummary {
  const withheldKeys = new Map(withheld.map((entry) => [`${entry.kind}/${entry.namespace}/${entry.name}`, entry]));
  const layers = summarizeLayers(plan, records, withheld);
  const keptForHeld = releasesKeptForHeldClusters(plan, withheld);
  return {
    inputDigest,
    stacks: stackSummaries(plan, records, withheldKeys, keptForHeld),
    clusters: clusterSummaries(plan, withheldKeys, clusterUnits),
    ...(layers ? { layers } : {}),
    // A release kept only for a held Cluster is listed in its stack's table; the Cluster says why.
    withheld: withheld.filter((entry) => !keptForHeld.has(entry)),
    sharedObjects: sharedObjects.map((shared) => ({
      path: shared.path,
      object: describeIdentity(shared),
      renderedBy: shared.renderedBy,
    })),
    notes: records.flatMap((record) => (record.notes ?? []).map((note) => `${record.dir}: ${note}`)),
  };
}

/** Each ClusterStack with its kept releases and whether each is published, withheld or kept for a held Cluster. */
function stackSummaries(
  plan: Plan,
  records: UnitRecord[],
  withheldKeys: Map<string, WithheldEntry>,
  keptForHeld: ReturnType<typeof releasesKeptForHeldClusters>,
): RenderSummary['stacks'] {
  const published = new Set(records.map((record) => record.dir));
  // A stack another shard publishes is that shard's README's to describe, not this tree's.
  return plan.resolution.clusterStacks
    .filter((stack) => !stack.publishedByAnotherShard)
    .map((stack) => ({
      namespace: stack.namespace,
      name: stack.name,
      prefix: `${stack.stack.spec.provider}-${stack.stack.spec.name}-${stack.stack.spec.kubernetesVersion.replace('.', '-')}`,
      channel: stack.stack.spec.channel ?? 'stable',
      latestRelease: stack.latestRelease ?? null,
      usableVersions: stack.usableVersions,
      releases: [
        ...stack.releases
          .filter((release) => release.kept)
          .map((release) => {
            const entry = withheldKeys.get(`release/${stack.namespace}/${release.name}`);
            const status = entry
              ? entry.previousKept
                ? 'previous output kept'
                : 'withheld'
              : published.has(releaseDir(stack.namespace, release.name))
                ? 'yes'
                : 'no';
            return { name: release.name, version: release.version, status, reasons: release.reasons };
          }),
        ...[...keptForHeld]
          .filter(([, held]) => held.stack === stack)
          .map(([entry, held]) => ({
            name: entry.name,
            version: held.version,
            status: 'kept for a held Cluster, previous output kept',
            reasons: [entry.reason],
          })),
      ],
    }));
}

/** Each Cluster we render addons for: its release, stages and whether it was rendered or withheld. */
function clusterSummaries(
  plan: Plan,
  withheldKeys: Map<string, WithheldEntry>,
  clusterUnits: Map<string, PendingUnit[]>,
): RenderSummary['clusters'] {
  return plan.resolution.clusters
    .filter((cluster) => cluster.managed)
    .map((cluster) => {
      const entry = withheldKeys.get(`cluster/${cluster.namespace}/${cluster.name}`);
      const stages = (clusterUnits.get(`${cluster.namespace}/${cluster.name}`) ?? []).map((unit) => unit.record.stage!);
      return {
        namespace: cluster.namespace,
        name: cluster.name,
        release: cluster.release ?? '',
        addonVersion:
          (cluster.release &&
            loadedRelease(plan, cluster.stack?.namespace ?? cluster.namespace, cluster.release)?.content?.metadata
              .clusterAddonVersion) ||
          '-',
        stages,
        status: entry ? (entry.previousKept ? 'withheld, previous output kept' : 'withheld') : 'rendered',
        ...(cluster.cluster.spec?.topology?.version
          ? { kubernetesVersion: cluster.cluster.spec.topology.version }
          : {}),
        ...afterUpgradeStagesOf(plan, cluster),
      };
    });
}

/**
 * The withheld release entries that no stack keeps: releases whose previous output stays only
 * because a withheld Cluster's kept addons use it (withhold-units.ts holdReleasesOfKeptClusters),
 * each with the stack whose release it is (same namespace and tag prefix) and its version.
 */
function releasesKeptForHeldClusters(
  plan: Plan,
  withheld: readonly WithheldEntry[],
): Map<WithheldEntry, { stack: Plan['resolution']['clusterStacks'][number]; version: string }> {
  const found = new Map<WithheldEntry, { stack: Plan['resolution']['clusterStacks'][number]; version: string }>();
  for (const entry of withheld) {
    if (entry.kind !== 'release') continue;
    const stacks = plan.resolution.clusterStacks.filter((stack) => stack.namespace === entry.namespace);
    if (stacks.some((stack) => stack.releases.some((release) => release.kept && release.name === entry.name))) continue;
    let tag: ReturnType<typeof parseReleaseTag>;
    try {
      tag = parseReleaseTag(entry.name);
    } catch {
      continue;
    }
    const stack = stacks.find((candidate) => {
      const spec = candidate.stack.spec;
      return (
        spec.provider === tag.provider &&
        spec.name === tag.name &&
        spec.kubernetesVersion === `${tag.kubernetesMajor}.${tag.kubernetesMinor}`
      );
    });
    if (stack)
      found.set(entry, {
        stack,
        version:
          stack.releases.find((release) => release.name === entry.name)?.version ?? formatDotVersion(tag.version),
      });
  }
  return found;
}

/** The stages a Cluster's release lists under AfterClusterUpgrade (for the upgrade order), when there are any. */
function afterUpgradeStagesOf(
  plan: Plan,
  cluster: Plan['resolution']['clusters'][number],
): { afterUpgradeStages?: string[] } {
  const content = cluster.release
    ? loadedRelease(plan, cluster.stack?.namespace ?? cluster.namespace, cluster.release)?.content
    : undefined;
  if (content?.addons.format !== 'multi-stage') return {};
  const stages = (content.addons.config.addonStages.AfterClusterUpgrade ?? []).map((stage) => stage.name);
  return stages.length > 0 ? { afterUpgradeStages: stages } : {};
}
