// Options several commands share (release sources, cache, helm) and turning them into objects.
// The provider and layer chart fetchers load their modules (registry client, chart repositories)
// on first use: plan over inputs without providers or chart layers never needs them.
import path from 'node:path';
import { access, constants } from 'node:fs/promises';
import { type Config, ConfigError, ENVIRONMENT, resolveConfig } from '../config.js';
import { Failure } from '../core/failure.js';
import { readInputFiles } from '../inputs/read-input-files.js';
import { buildPlan, type Plan } from '../plan/build-plan.js';
import {
  checkSourceLocation,
  createSourceOpener,
  type SourceOpener,
  type SourceOptions,
} from '../sources/open-release-source.js';
import type { ProviderFetcher } from '../providers/provider-fetcher.js';
import { createConnectingFetch } from '../http/remote-fetch.js';
import { makePrivateDir } from '../cache/private-cache-file.js';
import type { LayerChartFetcher } from '../sources/helm-chart-source.js';
import { type CliIo, UsageError } from './cli-io.js';
import { CrdRuleVerdicts } from '../inputs/crd-rule-verdicts.js';

export const SOURCE_OPTIONS = {
  'release-source': { type: 'string' },
  'cache-dir': { type: 'string' },
  'plain-http': { type: 'boolean', default: false },
  'github-api-url': { type: 'string' },
  'connect-timeout': { type: 'string' },
  'read-timeout': { type: 'string' },
  'remote-timeout': { type: 'string' },
  'layer-root': { type: 'string' },
} as const;

export const SOURCE_HELP = `  --release-source <src>   a directory (one sub-directory per release tag, or an OCI image layout),
                           github:<owner>/<repo>, or oci://<registry>/<repo>
  --cache-dir <dir>        where downloaded releases are cached (CLUSTERSTACK_CACHE_DIR)
  --plain-http             talk plain HTTP to OCI registries (local registries only)
  --github-api-url <url>   GitHub Enterprise API, e.g. https://github.example.com/api/v3 (GITHUB_API_URL)
  --connect-timeout <d>    opening a connection to GitHub or a registry (default 10s; CLUSTERSTACK_CONNECT_TIMEOUT)
  --read-timeout <d>       no answer, or no bytes, for this long fails an attempt (default 30s; CLUSTERSTACK_READ_TIMEOUT)
  --remote-timeout <d>     total time for one listing or one release download, retries included
                           (default 5m; CLUSTERSTACK_REMOTE_TIMEOUT)
  --layer-root <dir>       the repository AddonsLayer source paths (./addons/...) are relative to
                           (default: the Git work tree holding the layer's file)`;

/** The time limits of helm processes: render, plan and the controller take them. */
export const HELM_TIMEOUT_OPTIONS = {
  'values-timeout': { type: 'string' },
  'chart-timeout': { type: 'string' },
} as const;

export const HELM_TIMEOUT_HELP = `  --values-timeout <d>     one Cluster's addon values template; a template still running then (a loop)
                           withholds that Cluster alone (default 20s; CLUSTERSTACK_VALUES_TIMEOUT)
  --chart-timeout <d>      one chart render (helm template); a render still running then withholds its
                           release or Cluster alone (default 60s; CLUSTERSTACK_CHART_TIMEOUT)`;

export interface SourceFlags {
  'release-source'?: string | undefined;
  'cache-dir'?: string | undefined;
  'plain-http'?: boolean | undefined;
  'github-api-url'?: string | undefined;
  'connect-timeout'?: string | undefined;
  'read-timeout'?: string | undefined;
  'remote-timeout'?: string | undefined;
  'layer-root'?: string | undefined;
  'lock-timeout'?: string | undefined;
  'max-delete-share'?: string | undefined;
  'values-timeout'?: string | undefined;
  'chart-timeout'?: string | undefined;
  helm?: string | undefined;
}

export function isRemoteLocation(location: string): boolean {
  return location.startsWith('github:') || location.startsWith('oci://');
}

/**
 * A local source path is resolved against the working directory; remote ones stay as given. A
 * malformed remote one (`github:only-owner`) is a bad value of `flag`: a usage error (exit 2).
 */
export function resolveLocation(location: string, cwd: string, flag: string): string {
  try {
    checkSourceLocation(location);
  } catch (error) {
    throw new UsageError(`${flag}: ${(error as Error).message}`);
  }
  return isRemoteLocation(location) ? location : path.resolve(cwd, location);
}

export function configFromFlags(flags: SourceFlags, io: CliIo): Readonly<Config> {
  return resolveConfig(io.env, {
    ...(flags['cache-dir'] ? { cacheDir: path.resolve(io.cwd, flags['cache-dir']) } : {}),
    ...(flags['github-api-url'] ? { githubApiUrl: flags['github-api-url'] } : {}),
    ...(flags.helm ? { helmBinary: path.resolve(io.cwd, flags.helm) } : {}),
    ...(flags['connect-timeout'] ? { connectTimeout: flags['connect-timeout'] } : {}),
    ...(flags['read-timeout'] ? { readTimeout: flags['read-timeout'] } : {}),
    ...(flags['remote-timeout'] ? { remoteTimeout: flags['remote-timeout'] } : {}),
    ...(flags['lock-timeout'] ? { lockTimeout: flags['lock-timeout'] } : {}),
    ...(flags['values-timeout'] ? { valuesTimeout: flags['values-timeout'] } : {}),
    ...(flags['chart-timeout'] ? { chartTimeout: flags['chart-timeout'] } : {}),
    ...(flags['max-delete-share'] ? { maxDeleteShare: flags['max-delete-share'] } : {}),
  });
}

/**
 * Makes sure the cache directory exists and can be written, before anything is read: a cache that
 * cannot be used (HOME=/nonexistent, a read-only volume) is named with the ways to move it, never a
 * raw EACCES mid-run. Named by --cache-dir or CLUSTERSTACK_CACHE_DIR it is a bad setting (exit 2);
 * the default under HOME or XDG_CACHE_HOME needs a fix of the environment (exit 1).
 */
export async function checkCacheDir(config: Readonly<Config>, flags: SourceFlags, io: CliIo): Promise<void> {
  try {
    await makePrivateDir(config.cacheDir);
    await access(config.cacheDir, constants.W_OK | constants.X_OK);
  } catch (error) {
    const named = flags['cache-dir']
      ? '--cache-dir'
      : io.env[ENVIRONMENT.cacheDir]?.trim()
        ? ENVIRONMENT.cacheDir
        : undefined;
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    const message = `the cache directory ${config.cacheDir}${named ? ` (${named})` : ' (the default, under XDG_CACHE_HOME or HOME)'} cannot be created or written (${why}); point --cache-dir or ${ENVIRONMENT.cacheDir} at a directory this user may write`;
    throw named ? new ConfigError(message) : new Failure('fix-input', message);
  }
}

/** What createHelmDependencies takes from the configuration: the binary, PATH, work directory and time limits. */
export function helmOptionsFrom(config: Readonly<Config>): {
  configured?: string;
  pathEnv: string;
  workDir: string;
  timeouts: Config['helmTimeouts'];
} {
  return {
    ...(config.helmBinary ? { configured: config.helmBinary } : {}),
    pathEnv: config.pathEnv,
    workDir: path.join(config.cacheDir, 'helm'),
    timeouts: config.helmTimeouts,
  };
}

export function sourceOpenerFrom(
  config: Readonly<Config>,
  flags: SourceFlags,
  onWarning?: (message: string) => void,
  onRequest?: SourceOptions['onRequest'],
): SourceOpener {
  return createSourceOpener(sourceOptionsFrom(config, flags, onWarning, onRequest));
}

/** Fetches Cluster API provider releases with the options release sources use, through `openSource`. */
export function providerFetcherFrom(
  config: Readonly<Config>,
  flags: SourceFlags,
  openSource: SourceOpener,
): ProviderFetcher {
  return lazyProviderFetcher(sourceOptionsFrom(config, flags), openSource);
}

/** A ProviderFetcher whose module loads when a provider is first looked up. */
function lazyProviderFetcher(options: SourceOptions, openSource: SourceOpener): ProviderFetcher {
  let loaded: Promise<ProviderFetcher> | undefined;
  const fetcher = (): Promise<ProviderFetcher> =>
    (loaded ??= import('../providers/provider-fetcher.js').then((module) =>
      module.createProviderFetcher(options, openSource),
    ));
  return {
    versions: async (provider, inputs) => (await fetcher()).versions(provider, inputs),
    fetch: async (provider, version, inputs) => (await fetcher()).fetch(provider, version, inputs),
    certManager: async (url, version) => {
      const loadedFetcher = await fetcher();
      if (!loadedFetcher.certManager) throw new Error('this provider fetcher cannot fetch cert-manager');
      return loadedFetcher.certManager(url, version);
    },
  };
}

/** The options release sources (and Cluster API provider fetches) are opened with. */
function sourceOptionsFrom(
  config: Readonly<Config>,
  flags: SourceFlags,
  onWarning?: (message: string) => void,
  onRequest?: SourceOptions['onRequest'],
): SourceOptions {
  return {
    ...(onRequest ? { onRequest } : {}),
    cacheDir: config.cacheDir,
    plainHttp: flags['plain-http'] ?? false,
    fetch: createConnectingFetch(config.timeouts.connectMs),
    timeouts: config.timeouts,
    ...(config.githubToken ? { githubToken: config.githubToken } : {}),
    ...(config.githubApiUrl ? { githubApiUrl: config.githubApiUrl } : {}),
    ...(config.registryUsername && config.registryPassword
      ? { registryCredentials: { username: config.registryUsername, password: config.registryPassword } }
      : {}),
    ...(onWarning ? { onWarning } : {}),
  };
}

/** Fetches AddonsLayer charts from OCI and HTTP repositories with the options release sources use. */
export function layerChartFetcherFrom(config: Readonly<Config>, flags: SourceFlags): LayerChartFetcher {
  const options = sourceOptionsFrom(config, flags);
  let loaded: Promise<LayerChartFetcher> | undefined;
  // Loaded when a layer first names a chart in a repository.
  return async (...args) => {
    loaded ??= import('../sources/helm-chart-source.js').then((module) =>
      module.createLayerChartFetcher({
        cacheDir: options.cacheDir,
        ...(options.fetch ? { fetch: options.fetch } : {}),
        plainHttp: options.plainHttp ?? false,
        ...(options.registryCredentials ? { registryCredentials: options.registryCredentials } : {}),
        ...(options.timeouts ? { timeouts: options.timeouts } : {}),
      }),
    );
    return (await loaded)(...args);
  };
}

/**
 * Reads the input files and plans against the release source, as plan, render and cache prune do.
 * A local release source (and `exclude`, e.g. the output directory) inside an input directory is
 * not read as input.
 */
export async function planFromInputs(
  inputs: string[],
  location: string,
  config: Readonly<Config>,
  flags: SourceFlags,
  io: CliIo,
  onWarning?: (message: string) => void,
  exclude: readonly string[] = [],
): Promise<Plan> {
  // The release source and the output (when they sit inside an input directory) are not inputs.
  const manifests = await readInputFiles(
    inputs.map((input) => path.resolve(io.cwd, input)),
    [...(isRemoteLocation(location) ? [] : [location]), ...exclude],
  );
  const sourceOptions = sourceOptionsFrom(config, flags, onWarning);
  const openSource = createSourceOpener(sourceOptions);
  // Provider releases go through the same sources, cache, tokens, timeouts and registry credentials.
  const providerFetcher = lazyProviderFetcher(sourceOptions, openSource);
  // Layer charts from OCI and HTTP repositories: the same cache, plain-HTTP switch, credentials and timeouts.
  const layerChartFetcher = layerChartFetcherFrom(config, flags);
  // The CRDs' rules, their verdicts remembered: a second plan of unchanged inputs loads no CEL.
  const crdRules = await CrdRuleVerdicts.open(config.cacheDir);
  try {
    return await buildPlan({
      manifests,
      defaultSource: location,
      openSource,
      providerFetcher,
      layerChartFetcher,
      workDir: config.cacheDir,
      checkCrdRules: crdRules.check,
      ...(onWarning ? { onWarning } : {}),
      ...(flags['layer-root'] ? { layerRoot: path.resolve(io.cwd, flags['layer-root']) } : {}),
    });
  } finally {
    // A memo that cannot be written only means evaluating the rules again next time.
    await crdRules.save().catch(() => undefined);
  }
}
