// What `clusterstack plan` prints: a JSON report and a readable table, both from one Plan.
import { layerRef } from '../core/layer-version.js';
import { formatProblem, type Problem } from '../core/problem.js';
import { loadedRelease, type Plan } from './build-plan.js';
import type { ProviderRecord } from '../output/provenance.js';
import { type ProviderChangeKind, providerPlanChanges } from '../providers/provider-plan-changes.js';

export interface PlanReport {
  clusterStacks: {
    namespace: string;
    name: string;
    latestRelease: string | null;
    usableVersions: string;
    releases: {
      name: string;
      version: string;
      kept: boolean;
      ready: boolean;
      reasons: string[];
      usedBy: string[];
      problems: string[];
    }[];
    problems: string[];
    notes: string[];
  }[];
  clusters: {
    namespace: string;
    name: string;
    class: string | null;
    release: string | null;
    addonVersion: string | null;
    problems: string[];
  }[];
  /** Addon layers per cluster (only when the inputs have AddonsLayers). */
  layers?: PlanLayer[];
  problems: string[];
  warnings: string[];
  /** Cluster API providers, when the inputs hold any. */
  providers?: {
    kind: string;
    namespace: string;
    name: string;
    version: string;
    pinned: boolean;
    contract: string | null;
    source: string | null;
    problems: string[];
    /** Against the target's published tree (plan with --output, --git or --oci): what a render would do. */
    change?: ProviderChangeKind;
    previousVersion?: string | null;
    note?: string;
  }[];
  /** The target whose provenance.json the provider changes are compared with (plan with an output). */
  comparedWith?: string;
  /** What a render would withhold, with render's reason (absent when helm could not be run to check). */
  withheld?: PlannedUnit[];
  /** Clusters and layers plan sees no reason to withhold, whose addon charts only render shows. */
  decidedAtRender?: PlannedUnit[];
}

/** A release, a Cluster or one layer of a Cluster, with why render withholds it or what only render decides. */
interface PlannedUnit {
  kind: 'release' | 'cluster' | 'provider' | 'layer';
  namespace: string;
  name: string;
  layer?: string;
  reason: string;
}

interface PlanLayer {
  namespace: string;
  cluster: string;
  layer: string;
  version: string;
  /** `render`, `hold` (rendered suspended), or why not: `K8sVersion`, `ApplyPending` (Kraan's state names). */
  state: 'render' | 'hold' | 'K8sVersion' | 'ApplyPending';
  reason?: string;
  after: string[];
  waitingOn: string[];
  /** For a layer with a Kubernetes gate: the version it was checked against and its origin (the workload API server, or spec.topology.version). */
  kubernetesVersion?: { version: string; origin: string };
}

function planLayers(plan: Plan): PlanLayer[] {
  return (plan.layers?.resolution.clusters ?? []).flatMap((cluster) =>
    cluster.layers.map((decision) => ({
      namespace: cluster.namespace,
      cluster: cluster.name,
      layer: decision.layer,
      version: decision.version,
      state: decision.withheld?.state ?? (decision.hold ? 'hold' : 'render'),
      ...(decision.withheld ? { reason: decision.withheld.reason } : {}),
      after: [
        ...(decision.afterStack ? ['cluster-stack'] : []),
        ...decision.dependsOn.map((d) => layerRef(d.layer, d.version)),
      ],
      waitingOn: decision.waitingOn,
      ...(decision.kubernetesVersion ? { kubernetesVersion: decision.kubernetesVersion } : {}),
    })),
  );
}

/**
 * The plan as a report. With `target` (the providers the target's provenance.json records, and its
 * printable name), each provider says what a render would change, removals included.
 */
export function planReport(plan: Plan, target?: { name: string; providers: readonly ProviderRecord[] }): PlanReport {
  const report: PlanReport = {
    clusterStacks: plan.resolution.clusterStacks.map((stack) => ({
      namespace: stack.namespace,
      name: stack.name,
      latestRelease: stack.latestRelease ?? null,
      usableVersions: stack.usableVersions,
      releases: stack.releases.map((release) => ({
        name: release.name,
        version: release.version,
        kept: release.kept,
        ready: release.ready,
        reasons: release.reasons,
        usedBy: release.usedBy,
        problems: (loadedRelease(plan, stack.namespace, release.name)?.problems ?? []).map(formatProblem),
      })),
      problems: stack.problems.map(formatProblem),
      notes: stack.notes,
    })),
    clusters: plan.resolution.clusters
      .filter((cluster) => cluster.managed)
      .map((cluster) => ({
        namespace: cluster.namespace,
        name: cluster.name,
        class: cluster.className ?? null,
        release: cluster.release ?? null,
        addonVersion:
          (cluster.release &&
            loadedRelease(plan, cluster.stack?.namespace ?? cluster.namespace, cluster.release)?.content?.metadata
              .clusterAddonVersion) ||
          null,
        problems: cluster.problems.map(formatProblem),
      })),
    ...(plan.layers ? { layers: planLayers(plan) } : {}),
    problems: plan.problems.map(formatProblem),
    warnings: plan.warnings,
  };
  if (plan.providers) report.providers = providerEntries(plan.providers);
  if (target) compareProviders(report, plan, target);
  return report;
}

/** The report's entries of the planned providers (cert-manager last), before any comparison. */
function providerEntries(providers: NonNullable<Plan['providers']>): NonNullable<PlanReport['providers']> {
  const entries: NonNullable<PlanReport['providers']> = providers.providers.map((planned) => ({
    kind: planned.provider.kind,
    namespace: planned.provider.metadata.namespace ?? 'default',
    name: planned.provider.metadata.name,
    version: planned.version,
    pinned: planned.pinned,
    contract: planned.contract ?? null,
    source: planned.release?.source ?? null,
    problems: planned.problems.map(formatProblem),
  }));
  const certManager = providers.certManager;
  if (certManager) {
    entries.push({
      kind: 'CertManager',
      namespace: 'cert-manager',
      name: 'cert-manager',
      version: certManager.version,
      pinned: true,
      contract: null,
      source: certManager.release?.source ?? null,
      problems: certManager.problems.map(formatProblem),
    });
  }
  return entries;
}

/** What a render would change in each provider against the target's, removals and refusals included. */
function compareProviders(
  report: PlanReport,
  plan: Plan,
  target: { name: string; providers: readonly ProviderRecord[] },
): void {
  report.comparedWith = target.name;
  const entries = report.providers ?? [];
  for (const change of plan.providers
    ? providerPlanChanges(plan.providers, target.providers)
    : target.providers.map((record) => ({
        ...record,
        change: 'removed' as const,
        from: record.version,
        to: undefined,
        note: undefined,
      }))) {
    let entry = entries.find(
      (candidate) =>
        candidate.kind === change.kind && candidate.namespace === change.namespace && candidate.name === change.name,
    );
    if (!entry) {
      entry = {
        kind: change.kind,
        namespace: change.namespace,
        name: change.name,
        version: '',
        pinned: true,
        contract: null,
        source: null,
        problems: [],
      };
      entries.push(entry);
    }
    entry.change = change.change;
    entry.previousVersion = change.from ?? null;
    if (change.note) entry.note = change.note;
    // The lock: a render publishes the version first rendered, not the newest.
    if (change.change === 'unchanged' && change.to) entry.version = change.to;
    if (change.change === 'refused')
      report.problems.push(`${change.kind} ${change.namespace}/${change.name}: ${change.note}`);
  }
  report.providers = entries;
}

/** Problems caused by a remote that failed (retrying later may help), not by the inputs. */
export function retryableProblems(plan: Plan): Problem[] {
  const all = [
    ...plan.problems,
    ...[...plan.releases.values()].flatMap((release) => release.problems),
    ...plan.resolution.clusterStacks.flatMap((stack) => stack.problems),
  ];
  return all.filter((problem) => problem.retryable === true);
}

/** Whether anything in the report needs the user's attention (the command then exits non-zero). */
export function reportHasProblems(report: PlanReport): boolean {
  return (
    report.problems.length > 0 ||
    report.clusterStacks.some(
      (stack) => stack.problems.length > 0 || stack.releases.some((release) => release.problems.length > 0),
    ) ||
    report.clusters.some((cluster) => cluster.problems.length > 0)
  );
}

function unitName(unit: PlannedUnit): string {
  return `${unit.kind} ${unit.namespace}/${unit.name}${unit.layer ? ` layer ${unit.layer}` : ''}`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** One stack's lines: its releases (kept, and the last five dropped), notes and problems, then a blank line. */
function formatStack(stack: PlanReport['clusterStacks'][number]): string[] {
  const out: string[] = [];
  out.push(
    `ClusterStack ${stack.namespace}/${stack.name}  latest: ${stack.latestRelease ?? '-'}  usable: ${stack.usableVersions || '-'}`,
  );
  const kept = stack.releases.filter((release) => release.kept);
  const dropped = stack.releases.filter((release) => !release.kept);
  const rows = [['  RELEASE', 'VERSION', 'KEPT', 'READY', 'WHY']];
  for (const release of kept)
    rows.push([`  ${release.name}`, release.version, 'yes', release.ready ? 'yes' : 'no', release.reasons.join('; ')]);
  for (const release of dropped.slice(-5))
    rows.push([`  ${release.name}`, release.version, 'no', release.ready ? 'yes' : 'no', release.reasons.join('; ')]);
  out.push(table(rows));
  if (dropped.length > 5) out.push(`  ... and ${dropped.length - 5} older releases dropped`);
  for (const note of stack.notes) out.push(`  note: ${note}`);
  for (const problem of [...stack.problems, ...stack.releases.flatMap((release) => release.problems)])
    out.push(`  problem: ${problem}`);
  out.push('');
  return out;
}

/** The providers' table (with a CHANGE column when compared with a target), then their notes. */
function formatProviders(providers: NonNullable<PlanReport['providers']>, comparedWith: string | undefined): string[] {
  const out: string[] = [];
  const compared = comparedWith !== undefined;
  const rows = [['PROVIDER', 'VERSION', 'CONTRACT', 'SOURCE', ...(compared ? ['CHANGE'] : [])]];
  for (const provider of providers) {
    const change =
      provider.change === 'upgraded' || provider.change === 'downgraded' || provider.change === 'refused'
        ? `${provider.change} ${provider.previousVersion} -> ${provider.version}`
        : provider.change === 'removed'
          ? `removed (was ${provider.previousVersion})`
          : (provider.change ?? '-');
    const lockNote = !compared && !provider.pinned ? ' (newest; kept once published)' : '';
    rows.push([
      `${provider.kind} ${provider.namespace}/${provider.name}`,
      `${provider.version || '-'}${lockNote}`,
      provider.contract ?? '-',
      provider.source ?? '-',
      ...(compared ? [change] : []),
    ]);
  }
  out.push(...(compared ? [`Providers compared with ${comparedWith}:`] : []), table(rows), '');
  for (const provider of providers.filter((entry) => entry.note && entry.change !== 'refused'))
    out.push(`note: ${provider.kind} ${provider.namespace}/${provider.name}: ${provider.note}`);
  return out;
}

/** A readable summary: stacks with their releases and reasons, clusters, problems. */
export function formatPlanReport(report: PlanReport): string {
  const out: string[] = [];
  for (const stack of report.clusterStacks) out.push(...formatStack(stack));
  if (report.clusters.length > 0) {
    const rows = [['CLUSTER', 'RELEASE', 'ADDONS', 'PROBLEMS']];
    for (const cluster of report.clusters) {
      rows.push([
        `${cluster.namespace}/${cluster.name}`,
        cluster.release ?? '-',
        cluster.addonVersion ?? '-',
        cluster.problems.length > 0 ? cluster.problems.join('; ') : '-',
      ]);
    }
    out.push(table(rows), '');
  }
  if (report.layers && report.layers.length > 0) {
    const rows = [['CLUSTER', 'LAYER', 'VERSION', 'STATE', 'AFTER', 'WHY / WAITING ON']];
    for (const layer of report.layers) {
      rows.push([
        `${layer.namespace}/${layer.cluster}`,
        layer.layer,
        layer.version || '-',
        layer.state,
        layer.after.join(', ') || '-',
        layer.reason ?? (layer.waitingOn.length > 0 ? layer.waitingOn.join(', ') : '-'),
      ]);
    }
    out.push(table(rows), '');
  }
  if (report.providers && report.providers.length > 0)
    out.push(...formatProviders(report.providers, report.comparedWith));
  if (report.withheld && report.withheld.length > 0) {
    out.push('A render would withhold (what it published before stays):');
    for (const unit of report.withheld) out.push(`  ${unitName(unit)}: ${unit.reason}`);
    out.push('');
  }
  if (report.decidedAtRender && report.decidedAtRender.length > 0) {
    const names = report.decidedAtRender.map(unitName);
    const shown = names.length > 5 ? `${names.slice(0, 5).join(', ')} and ${names.length - 5} more` : names.join(', ');
    out.push(
      `Decided at render (plan renders no addon chart): ${shown}. A chart that renders no object or a document Kubernetes would refuse withholds its Cluster (or layer) there.`,
      '',
    );
  }
  for (const warning of report.warnings) out.push(`warning: ${warning}`);
  for (const problem of report.problems) out.push(`problem: ${problem}`);
  return `${out.join('\n').trimEnd()}\n`;
}
