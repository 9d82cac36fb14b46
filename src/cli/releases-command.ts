// `clusterstack releases list --source <src> [--provider --name --kubernetes-version --channel] [--json]`
import { kubernetesMinorOf } from '../core/release-tag.js';
import { compareReleases } from '../release/resolve-releases.js';
import { channelOf, formatDotVersion } from '../core/stack-version.js';
import { type CliIo, EXIT_OK, UsageError } from './cli-io.js';
import { didYouMean } from '../core/did-you-mean.js';
import { parseCommandLine } from './parse-command-line.js';
import { checkCacheDir, configFromFlags, resolveLocation, SOURCE_OPTIONS, sourceOpenerFrom } from './common-options.js';
import { compareText } from '../core/compare-text.js';

export const RELEASES_USAGE = `Usage: clusterstack releases list --source <source> [filters] [--json]

Lists the releases a source offers, oldest first within each stack and channel.

Options:
  --source <src>               a directory, github:<owner>/<repo> or oci://<registry>/<repo>
  --provider <p>, --name <n>   only releases of this provider / stack name
  --kubernetes-version <1.30>  only releases for this Kubernetes minor
  --channel <c>                only releases of this channel (stable, custom, alpha, ...)
  --cache-dir, --plain-http, --github-api-url   as for render
  --json                       print a JSON array

Examples:
  # The quick start's local releases
  clusterstack releases list --source examples/quickstart/releases

  # Stable releases for Kubernetes 1.30 on GitHub (GITHUB_TOKEN raises the rate limit)
  clusterstack releases list --source github:SovereignCloudStack/cluster-stacks --kubernetes-version 1.30 --channel stable

  # One provider's releases in an OCI registry, as JSON
  clusterstack releases list --source oci://registry.scs.community/kaas/cluster-stacks --provider openstack --json`;

export async function releasesCommand(args: string[], io: CliIo): Promise<number> {
  const [action, ...rest] = args;
  if (action !== 'list')
    throw new UsageError(
      `releases needs a subcommand: list${action ? ` (not "${action}"${didYouMean(action, ['list'])})` : ''}`,
    );
  const { values } = parseCommandLine('releases list', {
    args: rest,
    options: {
      ...SOURCE_OPTIONS,
      source: { type: 'string' },
      provider: { type: 'string' },
      name: { type: 'string' },
      'kubernetes-version': { type: 'string' },
      channel: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const kubernetesVersion = kubernetesMinorFilter(values['kubernetes-version']);
  // Channels are `stable`, `custom` or a pre-release label (`alpha`): lowercase, as version tags spell them.
  if (values.channel !== undefined && !/^[a-z][a-z0-9]*$/.test(values.channel))
    throw new UsageError(
      `--channel must be a channel such as stable, custom or alpha (lowercase letters and digits), not "${values.channel}"`,
    );
  const location = values.source ?? values['release-source'];
  if (!location)
    throw new UsageError('releases list needs --source (a directory, github:owner/repo or oci://registry/repo)');
  const config = configFromFlags(values, io);
  await checkCacheDir(config, values, io);
  const warn = (message: string): void => io.stderr(`warning: ${message}\n`);
  const source = sourceOpenerFrom(
    config,
    values,
    warn,
  )(resolveLocation(location, io.cwd, values.source !== undefined ? '--source' : '--release-source'));
  const listing = await source.list();
  for (const skipped of listing.skipped) warn(`skipped "${skipped.name}": ${skipped.reason}`);
  const matching = listing.releases
    .filter(
      (release) =>
        (values.provider === undefined || release.parsed.provider === values.provider) &&
        (values.name === undefined || release.parsed.name === values.name),
    )
    .filter((release) => kubernetesVersion === undefined || kubernetesMinorOf(release.parsed) === kubernetesVersion)
    .filter((release) => values.channel === undefined || channelOf(release.parsed.version) === values.channel);
  // Group by stack and channel (versions only compare within one), oldest first inside each group.
  const groupKey = (release: (typeof matching)[number]): string =>
    `${release.tag.split('-').slice(0, 4).join('-')} ${channelOf(release.parsed.version)}`;
  matching.sort((a, b) => compareText(groupKey(a), groupKey(b)) || compareReleases(a, b));
  const rows = matching.map((release) => ({
    tag: release.tag,
    provider: release.parsed.provider,
    name: release.parsed.name,
    kubernetesVersion: kubernetesMinorOf(release.parsed),
    channel: channelOf(release.parsed.version),
    version: formatDotVersion(release.parsed.version),
    publishedAt: release.publishedAt ?? null,
  }));
  if (values.json) {
    io.stdout(`${JSON.stringify(rows, null, 2)}\n`);
    return EXIT_OK;
  }
  if (rows.length === 0) {
    io.stdout(`No matching releases in ${source.location}.\n`);
    return EXIT_OK;
  }
  io.stdout(releaseTable(rows));
  return EXIT_OK;
}

/** The rows as an aligned text table, one release a line under a header. */
function releaseTable(
  rows: { tag: string; kubernetesVersion: string; channel: string; version: string; publishedAt: string | null }[],
): string {
  const header = ['TAG', 'K8S', 'CHANNEL', 'VERSION', 'PUBLISHED'];
  const table = [
    header,
    ...rows.map((row) => [row.tag, row.kubernetesVersion, row.channel, row.version, row.publishedAt ?? '-']),
  ];
  const widths = header.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  return `${table
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

/** `--kubernetes-version 1.30` (or `v1.30`) as release tags hold it; anything else is a usage error, not a filter that matches nothing. */
function kubernetesMinorFilter(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const match = /^v?(\d+)\.(\d+)$/.exec(value.trim());
  if (!match)
    throw new UsageError(`--kubernetes-version must be a Kubernetes minor version such as 1.30, not "${value}"`);
  return `${Number(match[1])}.${Number(match[2])}`;
}
