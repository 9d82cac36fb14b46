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

export const PLAN_USAGE = `Usage: clusterstack plan <files or dirs...> --release-source <source> [--json]

Reads ClusterStacks, Clusters and provider objects from the given YAML files and directories,
resolves which releases each ClusterStack keeps and which release each Cluster uses, and prints it.

Options:
${SOURCE_HELP}
  --json                   print one JSON report instead of tables
${SCHEDULER_CONFIG_HELP}
                           (plan schedules as a first render would: it does not read a target)

Examples:
  # The quick start: what the bundled example keeps and uses, from its local release source
  clusterstack plan examples/quickstart/manifests --release-source examples/quickstart/releases

  # Your ClusterStacks and Clusters (exported to fleet/) against the releases on GitHub
  clusterstack plan fleet/ --release-source github:SovereignCloudStack/cluster-stacks

  # Against an OCI registry, as JSON for a script
  clusterstack plan fleet/ --release-source oci://registry.scs.community/kaas/cluster-stacks --json`;

export async function planCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine('plan', { args, allowPositionals: true, options: { ...SOURCE_OPTIONS, json: { type: 'boolean', default: false }, 'scheduler-config': { type: 'string' } } });
  if (positionals.length === 0) throw new UsageError('plan needs at least one input file or directory');
  const releaseSource = values['release-source'];
  if (!releaseSource) throw new UsageError('plan needs --release-source (a directory, github:owner/repo or oci://registry/repo)');
  const config = configFromFlags(values, io);
  const location = resolveLocation(releaseSource, io.cwd);
  const warn = values.json ? undefined : (message: string): void => io.stderr(`warning: ${message}\n`);
  const scheduler = await readSchedulerConfigOption(values['scheduler-config'], io.cwd);
  // The scheduler configuration is no input object, even inside an input directory.
  const plan = await planFromInputs(positionals, location, config, values, io, warn, values['scheduler-config'] ? [path.resolve(io.cwd, values['scheduler-config'])] : []);
  const report = planReport(plan);
  await addConflictNotes(report, plan, config, values.json ? undefined : warn);
  const requests = scheduler ? clusterRequestsReport(planClusterRequests(plan, scheduler, new Map())) : undefined;
  if (values.json) io.stdout(`${JSON.stringify({ ...report, ...requests }, null, 2)}\n`);
  else io.stdout(formatPlanReport({ ...report, warnings: [] }) + (requests ? formatClusterRequestsReport(requests) : ''));
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
