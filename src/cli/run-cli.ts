// Dispatches `clusterstack <command>` and maps every error to a message and an exit code.
import { failureKindOf } from '../core/failure.js';
import { InputError } from '../core/problem.js';
import { type CliIo, EXIT_FAILURE, EXIT_PROBLEMS, EXIT_USAGE, UsageError } from './cli-io.js';

/** Errors a person fixes by changing inputs, charts or configuration (exit 1, not 3). */
const USER_FIXABLE = new Set(['SecretRefusedError', 'HelmRenderError', 'HelmNotFoundError', 'TemplateError', 'UnsafeArchiveError', 'ManifestParseError', 'ValuesTemplateError']);

type Command = (args: string[], io: CliIo) => Promise<number>;

// Commands load on demand: `render` need not pay for the controller's Kubernetes client at start-up.
const COMMANDS: Record<string, { load: () => Promise<{ run: Command; usage: string }>; summary: string }> = {
  plan: { load: async () => import('./plan-command.js').then((m) => ({ run: m.planCommand, usage: m.PLAN_USAGE })), summary: 'resolve which releases each stack keeps and which each cluster uses' },
  render: { load: async () => import('./render-command.js').then((m) => ({ run: m.renderCommand, usage: m.RENDER_USAGE })), summary: 'render ClusterClasses and cluster addons into a directory or Git repository' },
  releases: { load: async () => import('./releases-command.js').then((m) => ({ run: m.releasesCommand, usage: m.RELEASES_USAGE })), summary: 'list the releases a source offers (releases list --source ...)' },
  cache: { load: async () => import('./cache-command.js').then((m) => ({ run: m.cacheCommand, usage: m.CACHE_USAGE })), summary: 'show the release cache size, or prune releases no stack keeps' },
  controller: { load: async () => import('./controller-command.js').then((m) => ({ run: m.controllerCommand, usage: m.CONTROLLER_USAGE })), summary: 'run in the management cluster: watch, render and publish on every change, report status' },
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
  const entry = COMMANDS[name];
  if (!entry) {
    io.stderr(`error: unknown command "${name}"\n\n${usage()}`);
    return EXIT_USAGE;
  }
  const command = await entry.load();
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
  if (error instanceof UsageError || (error as Error | undefined)?.name === 'ConfigError' || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
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
  if (error instanceof Error && (USER_FIXABLE.has(error.name) || failureKindOf(error) === 'fix-input')) {
    io.stderr(`error: ${error.message}\n`);
    return EXIT_PROBLEMS;
  }
  io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  return EXIT_FAILURE;
}
