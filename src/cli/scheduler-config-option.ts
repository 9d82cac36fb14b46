// `--scheduler-config <file>` (render, plan, controller): openMCP's scheduler configuration, read
// and validated once before anything else happens, so a broken file stops the run with nothing written.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { SchedulerConfig } from '../cluster-requests/scheduler-config.js';
import { UsageError } from './cli-io.js';

export const SCHEDULER_CONFIG_HELP = `  --scheduler-config <file>  openMCP scheduler configuration (scope, strategy, purposeMappings):
                           publish a ClusterProfile per ClusterStack and turn ClusterRequests into
                           Clusters`;

/** The scheduler configuration named by the flag, if any. */
export async function readSchedulerConfigOption(
  file: string | undefined,
  cwd: string,
): Promise<SchedulerConfig | undefined> {
  if (file === undefined || file === '') return undefined;
  let text: string;
  try {
    text = await readFile(path.resolve(cwd, file), 'utf8');
  } catch (error) {
    // A file the flag names that is not there is a bad flag value, as for --sops-config and the templates.
    throw new UsageError(
      `--scheduler-config ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  // Loaded only when the flag is given: a run without ClusterRequests does not pay for it.
  const { parseSchedulerConfig } = await import('../cluster-requests/scheduler-config.js');
  return parseSchedulerConfig(text, file);
}
