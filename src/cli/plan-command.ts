// `clusterstack plan <files or dirs...> --release-source <source> [--json]`
import path from 'node:path';
import { createHelmDependencies } from '../../renderers/helm-dependencies.js';
import { formatPlanReport, planReport, reportHasProblems, retryableProblems } from '../plan/plan-report.js';
import { checkReleaseConflicts } from '../render/check-release-conflicts.js';
import { type CliIo, EXIT_FAILURE, EXIT_OK, EXIT_PROBLEMS, UsageError } from './cli-io.js';
import { parseCommandLine } from './parse-command-line.js';
import { configFromFlags, resolveLocation, SOURCE_HELP, SOURCE_OPTIONS, planFromInputs } from './common-options.js';
import { planClusterRequests } from '../cluster-requests/plan-cluster-requests.js';
import { clusterRequestsReport, formatClusterRequestsReport } from '../cluster-requests/requests-report.js';
import { readSchedulerConfigOption, SCHEDULER_CONFIG_HELP } from './scheduler-config-option.js';
import { type OutputSettings } from './output-publisher.js';
import { type ClusterMove, type SequenceEngine, upgradeSequence } from '../../gitops/upgrade-sequence.js';
import { loadedRelease } from '../plan/build-plan.js';
import { readProvenance } from '../output/provenance.js';
import type { RenderedTree } from '../output/rendered-tree.js';

export const PLAN_USAGE = `Usage: clusterstack plan <files or dirs...> --release-source <source> [--output <dir> | --git <repo> | --oci <ref>] [--json]

Reads ClusterStacks, Clusters and provider objects from the given YAML files and directories,
resolves which releases each ClusterStack keeps and which release each Cluster uses, and prints it.

Options:
${SOURCE_HELP}
  --json                   print one JSON report instead of tables
  --output <dir>, --git <path or URL> [--branch <b>] [--path <p>], --oci <oci://registry/repo:tag>
                           compare with what that target published (only read: nothing is written,
                           locked or created there): each provider is added, upgraded, unchanged,
                           refused (a downgrade) or removed; each Cluster moving to a release with
                           another cluster addon version gets its upgrade order (addons published
                           first, what the BeforeClusterUpgrade hook waits for, then the control
                           plane); --gitops flux|argocd names the engine objects
${SCHEDULER_CONFIG_HELP}
                           (without a target, plan schedules as a first render would)

Examples:
  # The quick start: what the bundled example keeps and uses, from its local release source
  clusterstack plan examples/quickstart/manifests --release-source examples/quickstart/releases

  # Your ClusterStacks and Clusters (exported to fleet/) against the releases on GitHub
  clusterstack plan fleet/ --release-source github:SovereignCloudStack/cluster-stacks

  # What changes against the published Git repository, with each Cluster's upgrade order
  clusterstack plan fleet/ --release-source github:SovereignCloudStack/cluster-stacks --git https://git.example.com/fleet-out.git --gitops flux

  # Against an OCI registry, as JSON for a script
  clusterstack plan fleet/ --release-source oci://registry.scs.community/kaas/cluster-stacks --json`;

export async function planCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine('plan', {
    args,
    allowPositionals: true,
    options: {
      ...SOURCE_OPTIONS,
      json: { type: 'boolean', default: false },
      'scheduler-config': { type: 'string' },
      output: { type: 'string' },
      git: { type: 'string' },
      oci: { type: 'string' },
      branch: { type: 'string', default: 'main' },
      path: { type: 'string', default: '' },
      gitops: { type: 'string', default: 'none' },
      'argocd-namespace': { type: 'string', default: 'argocd' },
    },
  });
  if ([values.output, values.git, values.oci].filter(Boolean).length > 1) throw new UsageError('plan compares with one target: give --output <dir>, --git <repo> or --oci <ref>, not more');
  const gitops = values.gitops;
  if (gitops !== 'none' && gitops !== 'flux' && gitops !== 'argocd') throw new UsageError(`--gitops must be none, flux or argocd, not "${gitops}"`);
  if (positionals.length === 0) throw new UsageError('plan needs at least one input file or directory');
  const releaseSource = values['release-source'];
  if (!releaseSource) throw new UsageError('plan needs --release-source (a directory, github:owner/repo or oci://registry/repo)');
  const config = configFromFlags(values, io);
  const location = resolveLocation(releaseSource, io.cwd);
  const warn = values.json ? undefined : (message: string): void => io.stderr(`warning: ${message}\n`);
  const scheduler = await readSchedulerConfigOption(values['scheduler-config'], io.cwd);
  // The scheduler configuration is no input object, even inside an input directory.
  const plan = await planFromInputs(positionals, location, config, values, io, warn, values['scheduler-config'] ? [path.resolve(io.cwd, values['scheduler-config'])] : []);
  const target = values.output || values.git || values.oci ? await readTarget({ output: values.output, git: values.git, oci: values.oci, plainHttp: values['plain-http'], branch: values.branch, path: values.path }, config, io.cwd) : undefined;
  const previous = target?.previous;
  const report = planReport(plan, target ? { name: target.name, providers: readProvenance(target.previous)?.providers ?? [] } : undefined);
  await addConflictNotes(report, plan, config, values.json ? undefined : warn);
  const requests = scheduler ? clusterRequestsReport(planClusterRequests(plan, scheduler, previous ?? new Map())) : undefined;
  const upgrades = previous ? upgradeOrder(plan, previous, { engine: gitops, argocdNamespace: values['argocd-namespace'] }) : undefined;
  if (values.json) io.stdout(`${JSON.stringify({ ...report, ...requests, ...(upgrades ? { upgrades } : {}) }, null, 2)}\n`);
  else io.stdout(formatPlanReport({ ...report, warnings: [] }) + (requests ? formatClusterRequestsReport(requests) : '') + (upgrades ? formatUpgradeOrder(upgrades) : ''));
  // A remote that failed is not the inputs' fault: exit 3, so CI retries rather than blames the change.
  if (retryableProblems(plan).length > 0) return EXIT_FAILURE;
  return reportHasProblems(report) ? EXIT_PROBLEMS : EXIT_OK;
}

/**
 * Notes, per ClusterStack, the kept releases a render would withhold for rendering an object an
 * older kept release renders differently (one helm process per kept release, nothing written).
 * Without a usable helm the check is skipped with a warning; the plan itself stands.
 */
async function addConflictNotes(report: ReturnType<typeof planReport>, plan: Awaited<ReturnType<typeof planFromInputs>>, config: ReturnType<typeof configFromFlags>, warn?: (message: string) => void): Promise<void> {
  const helm = createHelmDependencies({ ...(config.helmBinary ? { configured: config.helmBinary } : {}), pathEnv: config.pathEnv, workDir: path.join(config.cacheDir, 'helm') });
  let conflicts: Awaited<ReturnType<typeof checkReleaseConflicts>>;
  try {
    conflicts = await checkReleaseConflicts(plan, helm);
  } catch (error) {
    const message = `objects shared between releases were not checked: ${(error as Error).message}`;
    report.warnings.push(message);
    warn?.(message);
    return;
  }
  for (const conflict of conflicts) {
    const stack = report.clusterStacks.find((entry) => entry.namespace === conflict.namespace && entry.releases.some((release) => release.name === conflict.release));
    stack?.notes.push(`release ${conflict.release} will be withheld: it ${conflict.reason}`);
  }
}

/** One Cluster's upgrade order in the plan report. */
type UpgradeOrderEntry = Omit<ClusterMove, 'withheld'> & { steps: string[] };

/**
 * Clusters whose class moves (against what the target holds) to a release with another cluster
 * addon version, each with its upgrade order. `plan` renders nothing, so step 1 is what the render
 * will publish; a render that withholds them says so in its own report and in the hook's answer.
 */
function upgradeOrder(plan: Awaited<ReturnType<typeof planFromInputs>>, previous: RenderedTree, engine: SequenceEngine): UpgradeOrderEntry[] {
  const units = readProvenance(previous)?.units ?? [];
  const entries: UpgradeOrderEntry[] = [];
  for (const cluster of plan.resolution.clusters) {
    if (!cluster.managed || !cluster.release) continue;
    const before = units.filter((unit) => unit.kind === 'cluster-stage' && unit.namespace === cluster.namespace && unit.name === cluster.name);
    const from = before[0];
    if (!from || from.release === cluster.release) continue;
    const content = loadedRelease(plan, cluster.stack?.namespace ?? cluster.namespace, cluster.release)?.content;
    const addonsTo = content?.metadata.clusterAddonVersion ?? '-';
    if (from.addonVersion === addonsTo) continue;
    const stages = content?.addons.format === 'multi-stage' ? content.addons.stages.filter((stage) => stage.action === 'apply').map((stage) => stage.name) : ['cluster-addon'];
    const after = content?.addons.format === 'multi-stage' ? (content.addons.config.addonStages.AfterClusterUpgrade ?? []).map((stage) => stage.name) : [];
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
  if (entries.length === 0) return '\nUpgrade order: no Cluster moves to a release with another cluster addon version.\n';
  const lines = ['', 'Upgrade order (the target release\'s addons are published first; the runtime extension\'s hooks hold the control plane until they are applied):'];
  for (const entry of entries) {
    lines.push(`  ${entry.namespace}/${entry.cluster}: ${entry.from} -> ${entry.to} (cluster addon ${entry.addonsFrom} -> ${entry.addonsTo})`);
    for (const step of entry.steps) lines.push(`    ${step}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * What the target holds, read through the target's own publisher and nothing more: no lock taken,
 * a Git path that holds no repository reads as empty (never created), a killed run's work tree is
 * not repaired. A remote is read through the clone in the cache.
 */
async function readTarget(settings: OutputSettings, config: ReturnType<typeof configFromFlags>, cwd: string): Promise<{ name: string; previous: RenderedTree }> {
  // Loaded only when a target is given: plan without one starts as before.
  const { createOutputPublisher } = await import('./output-publisher.js');
  const publisher = createOutputPublisher(settings, config, cwd, undefined, { readOnly: true });
  return { name: publisher.target, previous: await publisher.readPrevious() };
}
