// Dispatches `clusterstack <command>` and maps every error to a message and an exit code.
import { ConfigError } from '../config.js';
import { exitCodeOf, failureKindOf } from '../core/failure.js';
import { type CliIo, EXIT_OK, EXIT_USAGE, isWorkingDirectoryGone, UsageError, workingDirectoryGone } from './cli-io.js';
import { didYouMean } from '../core/did-you-mean.js';
import { exitCodesHelp } from './exit-codes-help.js';
import { endPhase, formatPhaseTimings, resetPhases, timingsWanted } from './phase-timings.js';

type Command = (args: string[], io: CliIo) => Promise<number>;

// Commands load on demand: `render` need not pay for the controller's Kubernetes client at start-up.
const COMMANDS: Record<string, { load: () => Promise<{ run: Command; usage: string }>; summary: string }> = {
  plan: {
    load: async () => import('./plan-command.js').then((m) => ({ run: m.planCommand, usage: m.PLAN_USAGE })),
    summary: 'resolve which releases each stack keeps and which each cluster uses',
  },
  render: {
    load: async () => import('./render-command.js').then((m) => ({ run: m.renderCommand, usage: m.RENDER_USAGE })),
    summary: 'render ClusterClasses and cluster addons into a directory or Git repository',
  },
  releases: {
    load: async () =>
      import('./releases-command.js').then((m) => ({ run: m.releasesCommand, usage: m.RELEASES_USAGE })),
    summary: 'list the releases a source offers (releases list --source ...)',
  },
  cache: {
    load: async () => import('./cache-command.js').then((m) => ({ run: m.cacheCommand, usage: m.CACHE_USAGE })),
    summary: 'show the release cache size, or prune releases no stack keeps',
  },
  controller: {
    load: async () =>
      import('./controller-command.js').then((m) => ({ run: m.controllerCommand, usage: m.CONTROLLER_USAGE })),
    summary: 'run in the management cluster: watch, render and publish on every change, report status',
  },
  version: {
    load: async () => import('./version-command.js').then((m) => ({ run: m.versionCommand, usage: m.VERSION_USAGE })),
    summary: 'print the versions of clusterstack, helm and Node.js (also --version)',
  },
};

const HELP_FLAGS = new Set(['--help', '-h']);

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, command]) => `  ${name.padEnd(16)}${command.summary}`);
  return `Usage: clusterstack <command> [options]

Commands:
${lines.join('\n')}

Flags:
  -h, --help      show help (clusterstack <command> --help, or clusterstack help <command>)
  --version       print the versions, as clusterstack version does

Examples:
  # Render the quick start's example into a new local Git repository (no cluster, no network)
  clusterstack render examples/quickstart/manifests --release-source examples/quickstart/releases --git out/gitops-repo

  # See which releases each ClusterStack keeps and which release each Cluster uses
  clusterstack plan examples/quickstart/manifests --release-source examples/quickstart/releases

${exitCodesHelp()}

Run clusterstack <command> --help for its options and examples.
`;
}

function commandHelp(commandUsage: string): string {
  return `${commandUsage}\n\n${exitCodesHelp()}\n`;
}

/** Runs one command line to its end and returns the exit code; nothing it raises escapes. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  // The marks of this run (and main's `node` mark before it) are forgotten at its end, printed or not.
  try {
    return await dispatch(argv, io);
  } finally {
    if (timingsWanted(io.env)) io.stderr(formatPhaseTimings());
    resetPhases();
  }
}

async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  if (!first || HELP_FLAGS.has(first)) {
    io.stdout(usage());
    return first ? EXIT_OK : EXIT_USAGE;
  }
  // `help <command>` is what git and helm users type; `--version` is what everyone types.
  const name = first === '--version' ? 'version' : first === 'help' ? (rest[0] ?? '--help') : first;
  if (name === '--help' || name === 'help') {
    io.stdout(usage());
    return EXIT_OK;
  }
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!entry) {
    // A mistyped flag here can only be one of the two flags that stand in for a command.
    const suggestion = name.startsWith('-')
      ? didYouMean(name, ['--help', '--version'])
      : didYouMean(name, [...Object.keys(COMMANDS), 'help']);
    io.stderr(
      `error: ${name.startsWith('-') ? `unknown flag ${name}` : `unknown command "${name}"`}${suggestion}\nRun 'clusterstack --help' for the commands.\n`,
    );
    return EXIT_USAGE;
  }
  const command = await entry.load();
  // Up to here the process was getting ready; from here on the command does its own work.
  endPhase('modules', name);
  endPhase('start-up');
  if (first === 'help' || rest.some((arg) => HELP_FLAGS.has(arg))) {
    io.stdout(commandHelp(command.usage));
    return EXIT_OK;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    // A document nested deeper than this thread's stack reads (kube-yaml.ts DeepNestingError): the
    // whole command again where the stack holds Kubernetes' depth. Checked by its marker, so that
    // commands that never read YAML do not load the reader.
    if (io.rerunOnDeepStack && (error as { needsDeepStack?: unknown } | null)?.needsDeepStack === true)
      return io.rerunOnDeepStack();
    return reportError(error, io, name);
  }
}

/**
 * One place turns a failure into what the user sees and the exit code: the command line (2),
 * else the kind of failure by the table in core/failure.ts (fix the input 1, retry 3, a bug 4).
 */
function reportError(thrown: unknown, io: CliIo, command: string): number {
  // Node's own error for a removed working directory, from wherever a relative path was resolved.
  const error = isWorkingDirectoryGone(thrown) ? workingDirectoryGone() : thrown;
  const message = error instanceof Error ? error.message : String(error);
  const exitCode = exitCodeOf(error);
  if (error instanceof UsageError || error instanceof ConfigError) {
    io.stderr(`error: ${message}\nRun 'clusterstack ${command} --help' for its options and examples.\n`);
    return exitCode;
  }
  const kind = failureKindOf(error);
  if (kind === 'internal') {
    // Nothing declared what should happen next: we did not foresee it, so it is ours to fix.
    const stack = error instanceof Error && error.stack ? `\n${error.stack.split('\n').slice(1).join('\n')}` : '';
    io.stderr(
      `error: ${message}\nThis is a bug in clusterstack (an error of a kind it does not know): please report it with this output and the command line.${stack}\n`,
    );
    return exitCode;
  }
  // A wait ends a run as done (the table's exit code): what waits is left for a later run.
  io.stderr(`${kind === 'wait' ? 'waiting' : 'error'}: ${message}\n`);
  return exitCode;
}
