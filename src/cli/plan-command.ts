// `clusterstack plan <files or dirs...> --release-source <source> [--json]`
// What only some runs need loads when they need it (a target's readers, ClusterRequests, upgrade
// orders, helm): plan on plain inputs starts fast (docs/operations.md, "A command is slow to start").
import path from 'node:path';
import {
  formatPlanReport,
  type PlanReport,
  planReport,
  reportHasProblems,
  retryableProblems,
} from '../plan/plan-report.js';
import { type CliIo, EXIT_FAILURE, EXIT_OK, EXIT_PROBLEMS, UsageError } from './cli-io.js';
import { parseCommandLine } from './parse-command-line.js';
import {
  checkCacheDir,
  configFromFlags,
  HELM_TIMEOUT_HELP,
  HELM_TIMEOUT_OPTIONS,
  resolveLocation,
  SOURCE_HELP,
  SOURCE_OPTIONS,
  planFromInputs,
} from './common-options.js';
import { readSchedulerConfigOption, SCHEDULER_CONFIG_HELP } from './scheduler-config-option.js';
import { localOutputDirectory } from './output-settings.js';
import { PLAN_TARGET_HELP, PLAN_TARGET_OPTIONS, planTargetSettings, readPlanTarget } from './plan-target.js';
import type { ClusterMove, SequenceEngine } from '../../gitops/upgrade-sequence.js';
import { loadedRelease, type Plan } from '../plan/build-plan.js';
import type { ClusterRequestsReport } from '../cluster-requests/requests-report.js';
import type { UnitRecord } from '../output/provenance.js';
import { NOTHING_PUBLISHED, type PublishedState, readPublishedState } from '../output/published-state.js';
import type { PlannedClusterRequests } from '../cluster-requests/plan-cluster-requests.js';
import type { RunPlan } from '../run-plan/decide-run.js';
import { endPhase } from './phase-timings.js';
import { planRenderCheck } from './plan-render-check.js';
import { type PlanFlags, planRunOptions } from './plan-run-options.js';
import { SECRET_HELP, SECRET_OPTIONS, secretPolicyFrom, secretSettingsFrom } from './secret-options.js';
import { holdPublishedClusters } from '../plan/held-published-clusters.js';
import type { Config } from '../config.js';
import { compareText } from '../core/compare-text.js';

export const PLAN_USAGE = `Usage: clusterstack plan <files or dirs...> --release-source <source> [--json] [target]

Reads ClusterStacks, Clusters and provider objects from the given YAML files and directories,
resolves which releases each ClusterStack keeps and which release each Cluster uses, and prints it.

Options:
${SOURCE_HELP}
${HELM_TIMEOUT_HELP}
${SECRET_HELP}
                           (as given to render: they are part of every unit's digest, so a tree
                           rendered with --secrets encrypt shows its units as reused only with them)
  --json                   print one JSON report instead of tables
${SCHEDULER_CONFIG_HELP}
                           (without a target plan schedules as a first render would)
  --gitops flux|argocd, --argocd-namespace <ns>
                           with a target: name the engine objects in each Cluster's upgrade order

${PLAN_TARGET_HELP}

Examples:
  # The quick start: what the bundled example keeps and uses, from its local release source
  clusterstack plan examples/quickstart/manifests --release-source examples/quickstart/releases

  # Your ClusterStacks and Clusters (exported to fleet/) against the releases on GitHub
  clusterstack plan fleet/ --release-source github:SovereignCloudStack/cluster-stacks

  # What changes against the published Git repository, with each Cluster's upgrade order
  clusterstack plan fleet/ --release-source github:SovereignCloudStack/cluster-stacks --git https://git.example.com/fleet-out.git --gitops flux

  # Against an OCI registry, as JSON for a script
  clusterstack plan fleet/ --release-source oci://registry.scs.community/kaas/cluster-stacks --json

  # Which cluster each ClusterRequest keeps or gets, against what out/gitops-repo holds
  clusterstack plan examples/quickstart/manifests examples/cluster-requests/requests.yaml \\
    --release-source examples/quickstart/releases --scheduler-config examples/cluster-requests/scheduler.yaml --git out/gitops-repo`;

export async function planCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine('plan', {
    args,
    allowPositionals: true,
    options: {
      ...SOURCE_OPTIONS,
      ...HELM_TIMEOUT_OPTIONS,
      ...PLAN_TARGET_OPTIONS,
      ...SECRET_OPTIONS,
      json: { type: 'boolean', default: false },
      'scheduler-config': { type: 'string' },
      gitops: { type: 'string', default: 'none' },
      'argocd-namespace': { type: 'string', default: 'argocd' },
    },
  });
  const gitops = values.gitops;
  if (gitops !== 'none' && gitops !== 'flux' && gitops !== 'argocd')
    throw new UsageError(`--gitops must be none, flux or argocd, not "${gitops}"`);
  if (positionals.length === 0) throw new UsageError('plan needs at least one input file or directory');
  const releaseSource = values['release-source'];
  if (!releaseSource)
    throw new UsageError('plan needs --release-source (a directory, github:owner/repo or oci://registry/repo)');
  // As render takes them: the policy and recipients are part of every unit's digest.
  const secrets = secretPolicyFrom(values.secrets);
  const secretSettings = await secretSettingsFrom(secrets, values, io.env, io.cwd);
  const config = configFromFlags(values, io);
  await checkCacheDir(config, values, io);
  const location = resolveLocation(releaseSource, io.cwd, '--release-source');
  const warn = values.json ? undefined : (message: string): void => io.stderr(`warning: ${message}\n`);
  // Which helm a render would use, found while the plan is read (one `helm version`).
  const helmInUse = helmInUseNote(config);
  const scheduler = await readSchedulerConfigOption(values['scheduler-config'], io.cwd);
  const targetSettings = planTargetSettings(values);
  const outputDir = targetSettings ? localOutputDirectory(targetSettings, io.cwd) : undefined;
  // The scheduler configuration is no input object, even inside an input directory; nor is the target.
  const plan = await planFromInputs(positionals, location, config, values, io, warn, [
    ...(values['scheduler-config'] ? [path.resolve(io.cwd, values['scheduler-config'])] : []),
    ...(outputDir ? [outputDir] : []),
  ]);
  endPhase('inputs-and-releases');
  // The published tree, read and never written: providers compare with it, requests keep the
  // clusters it gave them, Clusters moving to another addon version get their upgrade order.
  const target = targetSettings ? await readPlanTarget(targetSettings, config, io.cwd) : undefined;
  const previous = target?.tree;
  if (target) endPhase('target');
  // Read once and decided as render decides: the same published state, the same plan.
  const published = previous ? readPublishedState(previous) : NOTHING_PUBLISHED;
  const run = await decidePlan(plan, published, { secrets, ...secretSettings, engine: gitops, scheduler });
  // The report's stacks and Clusters are the inputs' (held Clusters marked, as render holds them);
  // its providers compare the inputs' versions with the published ones (provider-plan-changes.ts).
  const checked = previous ? holdPublishedClusters(plan, published).plan : plan;
  const report = planReport(checked, target ? { name: target.target, providers: published.providers } : undefined);
  // What render would withhold, decided by render's own steps over what plan can see.
  const check = await planRenderCheck(checked, config);
  addRenderCheck(report, check, warn);
  endPhase('render-check', check.summary);
  const helm = await helmInUse;
  if (helm.warning) {
    report.warnings.push(helm.warning);
    warn?.(helm.warning);
  }
  const requests = run.requests ? await clusterRequestsSection(run.requests, target !== undefined) : undefined;
  const upgrades = previous
    ? await upgradeOrder(plan, [...published.units.values()], {
        engine: gitops,
        argocdNamespace: values['argocd-namespace'],
      })
    : undefined;
  const units = unitsReport(run);
  if (values.json)
    io.stdout(
      `${JSON.stringify({ ...report, helm: helm.json, ...(target ? { target: target.target } : {}), ...requests?.report, ...(upgrades ? { upgrades } : {}), units: units.units, leaving: units.leaving }, null, 2)}\n`,
    );
  else
    io.stdout(
      formatPlanReport({ ...report, warnings: [] }) +
        (requests ? `${target ? `ClusterRequests against ${target.target}:\n` : ''}${requests.text}` : '') +
        (upgrades ? formatUpgradeOrder(upgrades) : '') +
        (target ? formatUnits(units, target.target) : '') +
        `${helm.line}\n`,
    );
  endPhase('report');
  // A remote that failed is not the inputs' fault: exit 3, so CI retries rather than blames the change.
  if (retryableProblems(plan).length > 0) return EXIT_FAILURE;
  return reportHasProblems(report) ? EXIT_PROBLEMS : EXIT_OK;
}

/** Adds what render would withhold (and the check's warnings, also printed) to the report. */
function addRenderCheck(
  report: PlanReport,
  check: Awaited<ReturnType<typeof planRenderCheck>>,
  warn: ((message: string) => void) | undefined,
): void {
  for (const message of check.warnings) {
    report.warnings.push(message);
    warn?.(message);
  }
  for (const conflict of check.foresight?.conflicts ?? []) {
    const stack = report.clusterStacks.find(
      (entry) =>
        entry.namespace === conflict.namespace && entry.releases.some((release) => release.name === conflict.release),
    );
    stack?.notes.push(`release ${conflict.release} will be withheld: it ${conflict.reason}`);
  }
  if (check.foresight) {
    report.withheld = check.foresight.withheld;
    report.decidedAtRender = check.foresight.decidedAtRender;
  }
}

/**
 * The helm a render would use, for the report (`helm` in JSON, its last line in text), and a warning
 * when it is below the supported range or missing: the plan stands either way.
 */
async function helmInUseNote(
  config: Readonly<Config>,
): Promise<{ json: { version: string; source: string; path: string } | null; line: string; warning?: string }> {
  const { describeHelm, resolveHelmBinary } = await import('../../renderers/helm-binary.js');
  try {
    const helm = await resolveHelmBinary({
      ...(config.helmBinary ? { configured: config.helmBinary } : {}),
      pathEnv: config.pathEnv,
    });
    return {
      json: { version: helm.version, source: helm.source, path: helm.path },
      line: describeHelm(helm),
      ...(helm.warning ? { warning: helm.warning } : {}),
    };
  } catch (error) {
    return { json: null, line: 'helm: none usable', warning: `a render would fail: ${(error as Error).message}` };
  }
}

/**
 * The run's complete plan, decided as render decides it (src/pipeline/plan-run.ts), with the options
 * render would have for these flags (plan-run-options.ts): the same secret policy and recipients,
 * the engine's annotations, requests scheduled with --scheduler-config.
 */
async function decidePlan(plan: Plan, published: PublishedState, flags: PlanFlags): Promise<RunPlan> {
  const { planRun, runSettings } = await import('../pipeline/plan-run.js');
  return planRun(plan, published, await runSettings(planRunOptions(flags), published));
}

/** Which cluster each ClusterRequest keeps or gets, as the run's plan scheduled them: loaded only with --scheduler-config. */
async function clusterRequestsSection(
  planned: PlannedClusterRequests,
  againstTarget: boolean,
): Promise<{ report: ClusterRequestsReport; text: string }> {
  const { clusterRequestsReport, formatClusterRequestsReport } = await import('../cluster-requests/requests-report.js');
  const report = clusterRequestsReport(planned, againstTarget);
  return { report, text: formatClusterRequestsReport(report) };
}

/** One unit of the run's plan as `plan` reports it. */
interface UnitEntry {
  dir: string;
  decision: 'reuse' | 'render' | 'withhold';
  reason: string;
  inputDigest: string;
}

/** The run's unit decisions (render may still withhold a unit it renders: see decidedAtRender) and what leaves the tree. */
function unitsReport(run: RunPlan): { units: UnitEntry[]; leaving: string[] } {
  const units = run.units.units.map(({ unit, decision }) => ({
    dir: unit.record.dir,
    decision: decision.kind,
    reason: decision.reason,
    inputDigest: unit.record.inputDigest,
  }));
  return { units: units.sort((a, b) => compareText(a.dir, b.dir)), leaving: [...run.leaving] };
}

function formatUnits({ units, leaving }: { units: UnitEntry[]; leaving: string[] }, target: string): string {
  const count = (decision: UnitEntry['decision']): number => units.filter((unit) => unit.decision === decision).length;
  const lines = [
    '',
    `Units against ${target}: ${count('reuse')} reused, ${count('render')} to render (what only helm's output shows is decided at render), ${count('withhold')} withheld`,
  ];
  for (const unit of units.filter((entry) => entry.decision !== 'reuse'))
    lines.push(`  ${unit.decision} ${unit.dir}: ${unit.reason}`);
  for (const dir of leaving) lines.push(`  leaves ${dir}`);
  return `${lines.join('\n')}\n`;
}

/** One Cluster's upgrade order in the plan report. */
type UpgradeOrderEntry = Omit<ClusterMove, 'withheld'> & { steps: string[] };

/**
 * Clusters whose class moves (against what the target holds) to a release with another cluster
 * addon version, each with its upgrade order. `plan` renders nothing, so step 1 is what the render
 * will publish; a render that withholds them says so in its own report and in the hook's answer.
 */
async function upgradeOrder(
  plan: Awaited<ReturnType<typeof planFromInputs>>,
  units: UnitRecord[],
  engine: SequenceEngine,
): Promise<UpgradeOrderEntry[]> {
  const { upgradeSequence } = await import('../../gitops/upgrade-sequence.js');
  const entries: UpgradeOrderEntry[] = [];
  for (const cluster of plan.resolution.clusters) {
    if (!cluster.managed || !cluster.release) continue;
    const before = units.filter(
      (unit) => unit.kind === 'cluster-stage' && unit.namespace === cluster.namespace && unit.name === cluster.name,
    );
    const from = before[0];
    if (!from || from.release === cluster.release) continue;
    const content = loadedRelease(plan, cluster.stack?.namespace ?? cluster.namespace, cluster.release)?.content;
    const addonsTo = content?.metadata.clusterAddonVersion ?? '-';
    if (from.addonVersion === addonsTo) continue;
    const stages =
      content?.addons.format === 'multi-stage'
        ? content.addons.stages.filter((stage) => stage.action === 'apply').map((stage) => stage.name)
        : ['cluster-addon'];
    const after =
      content?.addons.format === 'multi-stage'
        ? (content.addons.config.addonStages.AfterClusterUpgrade ?? []).map((stage) => stage.name)
        : [];
    const move: ClusterMove = {
      namespace: cluster.namespace,
      cluster: cluster.name,
      from: from.release,
      to: cluster.release,
      addonsFrom: from.addonVersion ?? '-',
      addonsTo,
      stages,
      ...(cluster.cluster.spec?.topology?.version ? { kubernetesVersion: cluster.cluster.spec.topology.version } : {}),
      ...(after.length > 0 ? { afterUpgradeStages: after } : {}),
    };
    entries.push({ ...move, steps: upgradeSequence(move, engine) });
  }
  return entries;
}

function formatUpgradeOrder(entries: UpgradeOrderEntry[]): string {
  if (entries.length === 0)
    return '\nUpgrade order: no Cluster moves to a release with another cluster addon version.\n';
  const lines = [
    '',
    "Upgrade order (the target release's addons are published first; the runtime extension's hooks hold the control plane until they are applied):",
  ];
  for (const entry of entries) {
    lines.push(
      `  ${entry.namespace}/${entry.cluster}: ${entry.from} -> ${entry.to} (cluster addon ${entry.addonsFrom} -> ${entry.addonsTo})`,
    );
    for (const step of entry.steps) lines.push(`    ${step}`);
  }
  return `${lines.join('\n')}\n`;
}
