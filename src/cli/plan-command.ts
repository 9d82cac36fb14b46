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
import type { OutputSettings } from './output-publisher.js';
import { readProvenance, type ProviderRecord } from '../output/provenance.js';

export const PLAN_USAGE = `Usage: clusterstack plan <files or dirs...> --release-source <source> [--output <dir> | --git <repo> | --oci <ref>] [--json]

Reads ClusterStacks, Clusters and provider objects from the given YAML files and directories,
resolves which releases each ClusterStack keeps and which release each Cluster uses, and prints it.

Options:
${SOURCE_HELP}
  --json                   print one JSON report instead of tables
  --output <dir>, --git <path or URL> [--branch <b>] [--path <p>], --oci <oci://registry/repo:tag>
                           compare with what that target published (its provenance.json): each
                           provider is added, upgraded, unchanged, refused (a downgrade) or removed.
                           The target is only read: nothing is written, locked or created there
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
    },
  });
  if (positionals.length === 0) throw new UsageError('plan needs at least one input file or directory');
  const releaseSource = values['release-source'];
  if (!releaseSource) throw new UsageError('plan needs --release-source (a directory, github:owner/repo or oci://registry/repo)');
  const config = configFromFlags(values, io);
  const location = resolveLocation(releaseSource, io.cwd);
  const warn = values.json ? undefined : (message: string): void => io.stderr(`warning: ${message}\n`);
  const scheduler = await readSchedulerConfigOption(values['scheduler-config'], io.cwd);
  // The scheduler configuration is no input object, even inside an input directory.
  const plan = await planFromInputs(positionals, location, config, values, io, warn, values['scheduler-config'] ? [path.resolve(io.cwd, values['scheduler-config'])] : []);
  const target = values.output || values.git || values.oci ? await readTargetProviders({ output: values.output, git: values.git, oci: values.oci, plainHttp: values['plain-http'], branch: values.branch, path: values.path }, config, io.cwd) : undefined;
  const report = planReport(plan, target);
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

/**
 * The providers the target's provenance.json records, read through the target's own publisher and
 * nothing more: no lock taken, a Git path that holds no repository reads as empty (never created),
 * a killed run's work tree is not repaired. A remote is read through the clone in the cache.
 */
async function readTargetProviders(settings: OutputSettings, config: ReturnType<typeof configFromFlags>, cwd: string): Promise<{ name: string; providers: ProviderRecord[] }> {
  // Loaded only when a target is given: plan without one starts as before.
  const { createOutputPublisher } = await import('./output-publisher.js');
  const publisher = createOutputPublisher(settings, config, cwd, undefined, { readOnly: true });
  const previous = await publisher.readPrevious();
  return { name: publisher.target, providers: readProvenance(previous)?.providers ?? [] };
}
