// `clusterstack plan <files or dirs...> --release-source <source> [--json]`
import path from 'node:path';
import { parseArgs } from 'node:util';
import { resolveConfig } from '../config.js';
import { readInputFiles } from '../inputs/read-input-files.js';
import { buildPlan } from '../plan/build-plan.js';
import { formatPlanReport, planReport, reportHasProblems } from '../plan/plan-report.js';
import { createSourceOpener } from '../sources/open-release-source.js';
import { type CliIo, EXIT_OK, EXIT_PROBLEMS, UsageError } from './cli-io.js';

export const PLAN_USAGE = `Usage: clusterstack plan <files or dirs...> --release-source <dir | github:owner/repo | oci://registry/repo> [--json]

Reads ClusterStacks, Clusters and provider objects from the given YAML files and directories,
resolves which releases each ClusterStack keeps and which release each Cluster uses, and prints it.`;

export async function planCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'release-source': { type: 'string' },
      'cache-dir': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  if (positionals.length === 0) throw new UsageError('plan needs at least one input file or directory');
  const releaseSource = values['release-source'];
  if (!releaseSource) throw new UsageError('plan needs --release-source (a directory, github:owner/repo or oci://registry/repo)');
  const config = resolveConfig(io.env, values['cache-dir'] ? { cacheDir: values['cache-dir'] } : {});
  const inputs = positionals.map((input) => path.resolve(io.cwd, input));
  const sourceLocation = isRemote(releaseSource) ? releaseSource : path.resolve(io.cwd, releaseSource);
  const manifests = await readInputFiles(inputs, isRemote(releaseSource) ? [] : [sourceLocation]);
  const plan = await buildPlan({
    manifests,
    defaultSource: sourceLocation,
    openSource: createSourceOpener({ cacheDir: config.cacheDir }),
    workDir: config.cacheDir,
    onWarning: values.json ? undefined : (message) => io.stderr(`warning: ${message}\n`),
  });
  const report = planReport(plan);
  if (values.json) io.stdout(`${JSON.stringify(report, null, 2)}\n`);
  else io.stdout(formatPlanReport({ ...report, warnings: [] }));
  return reportHasProblems(report) ? EXIT_PROBLEMS : EXIT_OK;
}

export function isRemote(location: string): boolean {
  return location.startsWith('github:') || location.startsWith('oci://');
}
