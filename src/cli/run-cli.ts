// Dispatches `clusterstack <command>` and maps every error to a message and an exit code.
import { InputError } from '../core/problem.js';
import { type CliIo, EXIT_FAILURE, EXIT_PROBLEMS, EXIT_USAGE, UsageError } from './cli-io.js';
import { PLAN_USAGE, planCommand } from './plan-command.js';
import { RENDER_USAGE, renderCommand } from './render-command.js';
import { RELEASES_USAGE, releasesCommand } from './releases-command.js';
import { CACHE_USAGE, cacheCommand } from './cache-command.js';
import { CONTROLLER_USAGE, controllerCommand } from './controller-command.js';

/** Errors a person fixes by changing inputs, charts or configuration (exit 1, not 3). */
const USER_FIXABLE = new Set(['SecretRefusedError', 'HelmRenderError', 'HelmNotFoundError', 'TemplateError', 'UnsafeArchiveError', 'ManifestParseError', 'ValuesTemplateError']);

type Command = (args: string[], io: CliIo) => Promise<number>;

const COMMANDS: Record<string, { run: Command; usage: string; summary: string }> = {
  plan: { run: planCommand, usage: PLAN_USAGE, summary: 'resolve which releases each stack keeps and which each cluster uses' },
  render: { run: renderCommand, usage: RENDER_USAGE, summary: 'render ClusterClasses and cluster addons into a directory or Git repository' },
  releases: { run: releasesCommand, usage: RELEASES_USAGE, summary: 'list the releases a source offers (releases list --source ...)' },
  cache: { run: cacheCommand, usage: CACHE_USAGE, summary: 'show the release cache size, or prune releases no stack keeps' },
  controller: { run: controllerCommand, usage: CONTROLLER_USAGE, summary: 'run in the management cluster: watch, render and publish on every change, report status' },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, command]) => `  ${name.padEnd(16)}${command.summary}`);
  return `Usage: clusterstack <command> [options]\n\nCommands:\n${lines.join('\n')}\n\nRun clusterstack <command> --help for its options.\n`;
}

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(usage());
    return name ? 0 : EXIT_USAGE;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.stderr(`error: unknown command "${name}"\n\n${usage()}`);
    return EXIT_USAGE;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout(`${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    return reportError(error, io, command.usage);
  }
}

function reportError(error: unknown, io: CliIo, commandUsage: string): number {
  if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    io.stderr(`error: ${(error as Error).message}\n\n${commandUsage}\n`);
    return EXIT_USAGE;
  }
  if (error instanceof InputError && error.message) {
    io.stderr(`error: ${error.message}\n`);
    return EXIT_PROBLEMS;
  }
  // Errors that say whether retrying can help (sources, publishers) decide the exit code themselves.
  const retryable = (error as { retryable?: unknown }).retryable;
  if (typeof retryable === 'boolean') {
    io.stderr(`error: ${(error as Error).message}\n`);
    return retryable ? EXIT_FAILURE : EXIT_PROBLEMS;
  }
  if (error instanceof Error && USER_FIXABLE.has(error.name)) {
    io.stderr(`error: ${error.message}\n`);
    return EXIT_PROBLEMS;
  }
  io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  return EXIT_FAILURE;
}
