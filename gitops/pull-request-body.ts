// The pull request a render proposes: what appears and disappears per ClusterStack, what changes per
// Cluster, what is withheld and why, and a Mermaid diagram of stacks -> releases -> clusters.
import { PULL_REQUEST_BODY_TEMPLATE } from './templates/pull-request-body.js';
import { stackPrefix, tryParseReleaseTag } from '../src/core/release-tag.js';
import { channelOf } from '../src/core/stack-version.js';
import type { ChangeKind, TreeChanges } from '../src/output/tree-changes.js';
import type { RenderSummary } from '../src/output/render-summary.js';
import type { WithheldEntry } from '../src/output/provenance.js';
import { describeProviderChange } from '../src/output/provider-changes.js';
import { clusterDir, releaseDir } from '../src/output/tree-layout.js';
import { compileTemplate } from '../src/render/sandboxed-template.js';
import { type SequenceEngine, upgradeSequence } from './upgrade-sequence.js';

interface PullRequestData {
  inputDigest: string;
  stacks: {
    namespace: string;
    name: string;
    latestRelease: string | null;
    usableVersions: string;
    added: string[];
    removed: string[];
    updated: string[];
  }[];
  clusters: {
    namespace: string;
    cluster: string;
    change: ChangeKind;
    release: string;
    addons: string;
    stages: string;
  }[];
  /** Addon layers per cluster, when there are AddonsLayers. */
  layers: NonNullable<RenderSummary['layers']>;
  /** Clusters moving to a release with other addons: the order the upgrade takes. */
  upgrades: {
    namespace: string;
    cluster: string;
    from: string;
    to: string;
    addonsFrom: string;
    addonsTo: string;
    stages: string;
    steps: string[];
  }[];
  withheld: WithheldEntry[];
  /** Objects in shared directories this change adds, removes or updates, with the releases rendering them now. */
  shared: { path: string; change: ChangeKind; renderedBy: string }[];
  /** One line per Cluster API provider added, removed, upgraded or downgraded. */
  providers: string[];
  /** Helm hook objects of the units this change touches, and what becomes of each. */
  hooks: {
    object: string;
    events: string;
    weight: number;
    decision: string;
    where: string;
    reason: string;
    units: string;
  }[];
  /** ClusterRequests left Pending (with --scheduler-config): refused, waiting, or holding a kept cluster. */
  pendingRequests: NonNullable<RenderSummary['clusterRequests']>['requests'];
  mermaid: string;
}

/** Mermaid labels: quotes and markup characters would end the label or be read as syntax. */
function label(text: string): string {
  return `"${text.replace(/[&"<>#]/g, (c) => `#${c.charCodeAt(0)};`)}"`;
}

/** A flowchart: each ClusterStack, its kept releases, and the clusters using each release. */
export function mermaidDiagram(summary: RenderSummary): string {
  const lines = ['flowchart LR'];
  summary.stacks.forEach((stack, s) => {
    lines.push(`  s${s}[${label(`ClusterStack ${stack.namespace}/${stack.name}`)}]`);
    stack.releases.forEach((release, r) => {
      const id = `s${s}r${r}`;
      const status = release.status === 'yes' ? '' : ` (${release.status})`;
      lines.push(`  ${id}(${label(`${release.name}${status}`)})`, `  s${s} --> ${id}`);
      summary.clusters
        .filter((cluster) => cluster.release === release.name && cluster.namespace === stack.namespace)
        .forEach((cluster, c) =>
          lines.push(
            `  ${id}c${c}[/${label(`${cluster.name}${cluster.status === 'rendered' ? '' : ` (${cluster.status})`}`)}/]`,
            `  ${id} --> ${id}c${c}`,
          ),
        );
    });
  });
  return lines.join('\n');
}

/** The stack a release tag belongs to (also for releases it no longer keeps). */
function stackOf(
  release: string,
  summary: RenderSummary,
  namespace: string,
): RenderSummary['stacks'][number] | undefined {
  const tag = tryParseReleaseTag(release);
  return summary.stacks.find(
    (stack) =>
      stack.namespace === namespace &&
      tag !== undefined &&
      stackPrefix(tag) === stack.prefix &&
      channelOf(tag.version) === stack.channel,
  );
}

function pullRequestData(changes: TreeChanges, summary: RenderSummary, engine: SequenceEngine): PullRequestData {
  const stacks = summary.stacks.map((stack) => ({
    namespace: stack.namespace,
    name: stack.name,
    latestRelease: stack.latestRelease,
    usableVersions: stack.usableVersions,
    added: [] as string[],
    removed: [] as string[],
    updated: [] as string[],
  }));
  for (const change of changes.releases) {
    const owner = stackOf(change.release, summary, change.namespace);
    const entry = stacks.find((stack) => stack.namespace === owner?.namespace && stack.name === owner?.name);
    if (entry) entry[change.change].push(change.release);
  }
  return {
    inputDigest: summary.inputDigest,
    stacks: stacks.filter((stack) => stack.added.length + stack.removed.length + stack.updated.length > 0),
    clusters: changes.clusters.map((change) => ({
      namespace: change.namespace,
      cluster: change.cluster,
      change: change.change,
      release:
        change.releaseBefore && change.releaseAfter && change.releaseBefore !== change.releaseAfter
          ? `${change.releaseBefore} → ${change.releaseAfter}`
          : (change.releaseAfter ?? change.releaseBefore ?? '-'),
      addons:
        change.addonVersionBefore && change.addonVersionAfter && change.addonVersionBefore !== change.addonVersionAfter
          ? `${change.addonVersionBefore} → ${change.addonVersionAfter}`
          : (change.addonVersionAfter ?? change.addonVersionBefore ?? '-'),
      stages: change.stages.join(', ') || '-',
    })),
    layers: summary.layers ?? [],
    upgrades: changes.clusters
      .filter(
        (change) =>
          change.releaseBefore &&
          change.releaseAfter &&
          change.releaseBefore !== change.releaseAfter &&
          change.addonVersionBefore !== change.addonVersionAfter,
      )
      .map((change) => {
        const cluster = summary.clusters.find(
          (entry) => entry.namespace === change.namespace && entry.name === change.cluster,
        );
        const withheld = changes.withheld.find(
          (entry) => entry.kind === 'cluster' && entry.namespace === change.namespace && entry.name === change.cluster,
        );
        const move = {
          namespace: change.namespace,
          cluster: change.cluster,
          from: change.releaseBefore!,
          to: change.releaseAfter!,
          addonsFrom: change.addonVersionBefore ?? '-',
          addonsTo: change.addonVersionAfter ?? '-',
        };
        const steps = upgradeSequence(
          {
            ...move,
            stages: change.stages,
            ...(cluster?.kubernetesVersion ? { kubernetesVersion: cluster.kubernetesVersion } : {}),
            ...(cluster?.afterUpgradeStages ? { afterUpgradeStages: cluster.afterUpgradeStages } : {}),
            ...(withheld ? { withheld: withheld.reason } : {}),
          },
          engine,
        );
        return { ...move, stages: change.stages.join(', ') || '-', steps };
      }),
    withheld: changes.withheld,
    shared: (changes.shared ?? []).map((entry) => ({
      ...entry,
      renderedBy: summary.sharedObjects?.find((shared) => shared.path === entry.path)?.renderedBy.join(', ') || '-',
    })),
    providers: (changes.providers ?? []).map(describeProviderChange),
    hooks: changedUnitHooks(changes, summary),
    pendingRequests: (summary.clusterRequests?.requests ?? []).filter((request) => request.phase !== 'Granted'),
    mermaid: mermaidDiagram(summary),
  };
}

/** Units listed by name in the body's hook table; more are counted (a fleet renders the same hooks for every cluster). */
const LISTED_UNITS = 3;

/** The summary's hook entries for the units whose files this change touches, those units named (or counted). */
function changedUnitHooks(changes: TreeChanges, summary: RenderSummary): PullRequestData['hooks'] {
  const changed = new Set([
    ...changes.releases.map((change) => releaseDir(change.namespace, change.release)),
    ...changes.clusters.flatMap((change) =>
      change.stages.map((stage) => `${clusterDir(change.namespace, change.cluster)}/${stage}`),
    ),
  ]);
  return (summary.helmHooks ?? []).flatMap((entry) => {
    const units = entry.units.filter((unit) => changed.has(unit));
    if (units.length === 0) return [];
    const named = units
      .slice(0, LISTED_UNITS)
      .map((unit) => `\`${unit}\``)
      .join(', ');
    return [
      {
        object: entry.object,
        events: entry.events,
        weight: entry.weight,
        decision: entry.decision,
        where: entry.where,
        reason: entry.reason,
        units: units.length > LISTED_UNITS ? `${named} and ${units.length - LISTED_UNITS} more` : named,
      },
    ];
  });
}

/** The pull request's body, from the default template or the user's; `engine` names the objects the upgrade order waits for. */
export function renderPullRequestBody(
  changes: TreeChanges,
  summary: RenderSummary,
  template?: string,
  engine: SequenceEngine = { engine: 'none' },
): string {
  return compileTemplate(
    template ?? PULL_REQUEST_BODY_TEMPLATE,
    template ? 'pull request template' : 'default pull request template',
  )(pullRequestData(changes, summary, engine));
}
