// What `clusterstack plan` prints: a JSON report and a readable table, both from one Plan.
import { formatProblem, type Problem } from '../core/problem.js';
import { loadedRelease, type Plan } from './build-plan.js';

export interface PlanReport {
  clusterStacks: {
    namespace: string;
    name: string;
    latestRelease: string | null;
    usableVersions: string;
    releases: { name: string; version: string; kept: boolean; ready: boolean; reasons: string[]; usedBy: string[]; problems: string[] }[];
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
  problems: string[];
  warnings: string[];
  /** Cluster API providers, when the inputs hold any. */
  providers?: { kind: string; namespace: string; name: string; version: string; pinned: boolean; contract: string | null; source: string | null; problems: string[] }[];
}

export function planReport(plan: Plan): PlanReport {
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
        addonVersion: (cluster.release && loadedRelease(plan, cluster.stack?.namespace ?? cluster.namespace, cluster.release)?.content?.metadata.clusterAddonVersion) || null,
        problems: cluster.problems.map(formatProblem),
      })),
    problems: plan.problems.map(formatProblem),
    warnings: plan.warnings,
  };
  if (plan.providers) {
    report.providers = plan.providers.providers.map((planned) => ({
      kind: planned.provider.kind,
      namespace: planned.provider.metadata.namespace ?? 'default',
      name: planned.provider.metadata.name,
      version: planned.version,
      pinned: planned.pinned,
      contract: planned.contract ?? null,
      source: planned.release?.source ?? null,
      problems: planned.problems.map(formatProblem),
    }));
  }
  return report;
}

/** Problems caused by a remote that failed (retrying later may help), not by the inputs. */
export function retryableProblems(plan: Plan): Problem[] {
  const all = [...plan.problems, ...[...plan.releases.values()].flatMap((release) => release.problems), ...plan.resolution.clusterStacks.flatMap((stack) => stack.problems)];
  return all.filter((problem) => problem.retryable === true);
}

/** Whether anything in the report needs the user's attention (the command then exits non-zero). */
export function reportHasProblems(report: PlanReport): boolean {
  return (
    report.problems.length > 0 ||
    report.clusterStacks.some((stack) => stack.problems.length > 0 || stack.releases.some((release) => release.problems.length > 0)) ||
    report.clusters.some((cluster) => cluster.problems.length > 0)
  );
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd()).join('\n');
}

/** A readable summary: stacks with their releases and reasons, clusters, problems. */
export function formatPlanReport(report: PlanReport): string {
  const out: string[] = [];
  for (const stack of report.clusterStacks) {
    out.push(`ClusterStack ${stack.namespace}/${stack.name}  latest: ${stack.latestRelease ?? '-'}  usable: ${stack.usableVersions || '-'}`);
    const kept = stack.releases.filter((release) => release.kept);
    const dropped = stack.releases.filter((release) => !release.kept);
    const rows = [['  RELEASE', 'VERSION', 'KEPT', 'READY', 'WHY']];
    for (const release of kept) rows.push([`  ${release.name}`, release.version, 'yes', release.ready ? 'yes' : 'no', release.reasons.join('; ')]);
    for (const release of dropped.slice(-5)) rows.push([`  ${release.name}`, release.version, 'no', release.ready ? 'yes' : 'no', release.reasons.join('; ')]);
    out.push(table(rows));
    if (dropped.length > 5) out.push(`  ... and ${dropped.length - 5} older releases dropped`);
    for (const note of stack.notes) out.push(`  note: ${note}`);
    for (const problem of [...stack.problems, ...stack.releases.flatMap((release) => release.problems)]) out.push(`  problem: ${problem}`);
    out.push('');
  }
  if (report.clusters.length > 0) {
    const rows = [['CLUSTER', 'RELEASE', 'ADDONS', 'PROBLEMS']];
    for (const cluster of report.clusters) {
      rows.push([`${cluster.namespace}/${cluster.name}`, cluster.release ?? '-', cluster.addonVersion ?? '-', cluster.problems.length > 0 ? cluster.problems.join('; ') : '-']);
    }
    out.push(table(rows), '');
  }
  if (report.providers && report.providers.length > 0) {
    const rows = [['PROVIDER', 'VERSION', 'CONTRACT', 'SOURCE']];
    for (const provider of report.providers) {
      rows.push([`${provider.kind} ${provider.namespace}/${provider.name}`, `${provider.version || '-'}${provider.pinned ? '' : ' (newest; kept once published)'}`, provider.contract ?? '-', provider.source ?? '-']);
    }
    out.push(table(rows), '');
  }
  for (const warning of report.warnings) out.push(`warning: ${warning}`);
  for (const problem of report.problems) out.push(`problem: ${problem}`);
  return `${out.join('\n').trimEnd()}\n`;
}
