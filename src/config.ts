// The one place that reads the environment: flags, environment variables and defaults are resolved
// here into a frozen object that everything else receives.
import os from 'node:os';
import path from 'node:path';
import { COMMAND_LINE_EXIT_CODE, Failure } from './core/failure.js';

export interface Config {
  /** Downloaded releases and extracted charts. */
  cacheDir: string;
  /** The helm binary; undefined means: the bundled one, then PATH. */
  helmBinary?: string;
  /** GitHub token for release listing and pull requests; never logged. */
  githubToken?: string;
  /** GitHub API base URL (GitHub Enterprise: https://host/api/v3). */
  githubApiUrl?: string;
  /** Registry credentials for OCI sources and outputs; never logged. */
  registryUsername?: string;
  registryPassword?: string;
  /** Token for HTTPS Git remotes; never logged or written to .git/config. */
  gitToken?: string;
  gitAuthorName: string;
  gitAuthorEmail: string;
  /** PATH for child processes (helm, git). */
  pathEnv: string;
  /** The environment child processes (git) inherit: HOME, proxies, CA bundles. */
  childEnv: Readonly<Record<string, string>>;
  /** Remote reads (GitHub, downloads, OCI registries): how long they may take. */
  timeouts: Readonly<RemoteTimeouts>;
  /** How long one helm process may run before it is stopped and its unit withheld. */
  helmTimeouts: Readonly<HelmTimeouts>;
  /** How long a run waits for another run holding the output's lock; 0 fails at once. */
  lockTimeoutMs: number;
  /** A render removing more than this share (0..1) of the published releases or clusters is refused. */
  maxDeleteShare: number;
}

/** The limits every remote read runs under. */
export interface RemoteTimeouts {
  /** Opening the connection (TCP and TLS). */
  connectMs: number;
  /** No response headers, or no body bytes, for this long fails the attempt (it may be retried). */
  readMs: number;
  /** One remote operation (listing a source, fetching a release, pushing an artifact) in total: headers, bodies, retries and waits. */
  totalMs: number;
}

/** The limits helm processes run under; a unit whose helm runs past one is withheld alone. */
export interface HelmTimeouts {
  /** One Cluster's addon values template (evaluated together with others, then alone when that takes too long). */
  valuesMs: number;
  /** One chart render (`helm template` of a release's ClusterClass or a Cluster's addon stage). */
  chartMs: number;
}

/**
 * A values template evaluates in milliseconds, and a batch of hundreds in one helm process in about
 * a second: 20 s is a wide margin on a loaded machine, while a template that loops costs its Cluster
 * only 20 s per run. A chart render takes seconds at most (a CNI-sized chart about one): a minute.
 */
export const DEFAULT_HELM_TIMEOUTS: Readonly<HelmTimeouts> = Object.freeze({ valuesMs: 20_000, chartMs: 60_000 });

export const DEFAULT_TIMEOUTS: Readonly<RemoteTimeouts> = Object.freeze({
  connectMs: 10_000,
  readMs: 30_000,
  totalMs: 5 * 60_000,
});
const DEFAULT_LOCK_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_DELETE_SHARE = 0.5;

export const ENVIRONMENT = {
  cacheDir: 'CLUSTERSTACK_CACHE_DIR',
  helmBinary: 'CLUSTERSTACK_HELM',
  githubToken: 'GITHUB_TOKEN',
  githubApiUrl: 'GITHUB_API_URL',
  registryUsername: 'CLUSTERSTACK_REGISTRY_USERNAME',
  registryPassword: 'CLUSTERSTACK_REGISTRY_PASSWORD',
  gitToken: 'CLUSTERSTACK_GIT_TOKEN',
  gitAuthorName: 'CLUSTERSTACK_GIT_AUTHOR_NAME',
  gitAuthorEmail: 'CLUSTERSTACK_GIT_AUTHOR_EMAIL',
  connectTimeout: 'CLUSTERSTACK_CONNECT_TIMEOUT',
  readTimeout: 'CLUSTERSTACK_READ_TIMEOUT',
  remoteTimeout: 'CLUSTERSTACK_REMOTE_TIMEOUT',
  valuesTimeout: 'CLUSTERSTACK_VALUES_TIMEOUT',
  chartTimeout: 'CLUSTERSTACK_CHART_TIMEOUT',
  lockTimeout: 'CLUSTERSTACK_LOCK_TIMEOUT',
  maxDeleteShare: 'CLUSTERSTACK_MAX_DELETE_SHARE',
} as const;

/** The flag and environment variable of each helm limit, as messages name them. */
export const HELM_TIMEOUT_SETTINGS = Object.freeze({
  values: `--values-timeout (${ENVIRONMENT.valuesTimeout})`,
  chart: `--chart-timeout (${ENVIRONMENT.chartTimeout})`,
});

export type ConfigFlags = Partial<Pick<Config, 'cacheDir' | 'helmBinary' | 'githubApiUrl'>> & {
  /** Durations and shares as the user typed them; checked here. */
  connectTimeout?: string;
  readTimeout?: string;
  remoteTimeout?: string;
  valuesTimeout?: string;
  chartTimeout?: string;
  lockTimeout?: string;
  maxDeleteShare?: string;
};

/** `50%`, `0.5` or `1` (everything may go); throws naming `what` on anything else. */
function parseShare(value: string, what: string): number {
  const match = /^(\d+(?:\.\d+)?)(%)?$/.exec(value.trim());
  const share = match ? Number(match[1]) / (match[2] ? 100 : 1) : Number.NaN;
  if (!(share >= 0 && share <= 1))
    throw new ConfigError(`${what} must be a share between 0 and 1 or a percentage (e.g. 0.5 or 50%), not "${value}"`);
  return share;
}

/** A flag or environment variable with a value that cannot work; the CLI reports it as a usage error. */
export class ConfigError extends Failure {
  constructor(message: string) {
    super('fix-input', message);
    this.name = 'ConfigError';
  }

  /** A wrong command line has its own exit code; to the controller it is an input to fix. */
  override get exitCode(): number {
    return COMMAND_LINE_EXIT_CODE;
  }
}

function durationSetting(
  flag: string | undefined,
  env: NodeJS.ProcessEnv,
  variable: string,
  flagName: string,
  fallback: number,
  minimum: number,
): number {
  const value = nonEmpty(flag) ?? nonEmpty(env[variable]);
  if (value === undefined) return fallback;
  let ms: number;
  try {
    ms = parseDuration(value, `${flagName} / ${variable}`);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  if (ms < minimum) throw new ConfigError(`${flagName} / ${variable} must be at least ${minimum} ms, not "${value}"`);
  return ms;
}

/** An http(s) URL, or a ConfigError naming `what`: a value that fails every request later is refused now. */
function httpUrlSetting(value: string | undefined, what: string): string | undefined {
  if (value === undefined) return undefined;
  const protocol = URL.canParse(value) ? new URL(value).protocol : undefined;
  if (protocol !== 'https:' && protocol !== 'http:')
    throw new ConfigError(
      `${what} must be an http:// or https:// URL such as https://github.example.com/api/v3, not "${value}"`,
    );
  return value;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** The remote timeouts: flag, then environment, then default. */
function remoteTimeoutsFrom(flags: ConfigFlags, env: NodeJS.ProcessEnv): Readonly<RemoteTimeouts> {
  return Object.freeze({
    connectMs: durationSetting(
      flags.connectTimeout,
      env,
      ENVIRONMENT.connectTimeout,
      '--connect-timeout',
      DEFAULT_TIMEOUTS.connectMs,
      1,
    ),
    readMs: durationSetting(
      flags.readTimeout,
      env,
      ENVIRONMENT.readTimeout,
      '--read-timeout',
      DEFAULT_TIMEOUTS.readMs,
      1,
    ),
    totalMs: durationSetting(
      flags.remoteTimeout,
      env,
      ENVIRONMENT.remoteTimeout,
      '--remote-timeout',
      DEFAULT_TIMEOUTS.totalMs,
      1,
    ),
  });
}

/** The helm timeouts: flag, then environment, then default. */
function helmTimeoutsFrom(flags: ConfigFlags, env: NodeJS.ProcessEnv): Readonly<HelmTimeouts> {
  return Object.freeze({
    valuesMs: durationSetting(
      flags.valuesTimeout,
      env,
      ENVIRONMENT.valuesTimeout,
      '--values-timeout',
      DEFAULT_HELM_TIMEOUTS.valuesMs,
      1,
    ),
    chartMs: durationSetting(
      flags.chartTimeout,
      env,
      ENVIRONMENT.chartTimeout,
      '--chart-timeout',
      DEFAULT_HELM_TIMEOUTS.chartMs,
      1,
    ),
  });
}

/** Flags win over the environment, which wins over defaults. */
export function resolveConfig(env: NodeJS.ProcessEnv, flags: ConfigFlags = {}): Readonly<Config> {
  const config: Config = {
    cacheDir: path.resolve(
      flags.cacheDir ??
        nonEmpty(env[ENVIRONMENT.cacheDir]) ??
        path.join(env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'clusterstack-gitops'),
    ),
    gitAuthorName: nonEmpty(env[ENVIRONMENT.gitAuthorName]) ?? 'clusterstack-gitops',
    gitAuthorEmail: nonEmpty(env[ENVIRONMENT.gitAuthorEmail]) ?? 'clusterstack-gitops@localhost',
    pathEnv: env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    childEnv: Object.freeze(
      Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined)),
    ),
    timeouts: remoteTimeoutsFrom(flags, env),
    helmTimeouts: helmTimeoutsFrom(flags, env),
    lockTimeoutMs: durationSetting(
      flags.lockTimeout,
      env,
      ENVIRONMENT.lockTimeout,
      '--lock-timeout',
      DEFAULT_LOCK_TIMEOUT_MS,
      0,
    ),
    maxDeleteShare: parseShare(
      nonEmpty(flags.maxDeleteShare) ?? nonEmpty(env[ENVIRONMENT.maxDeleteShare]) ?? String(DEFAULT_MAX_DELETE_SHARE),
      '--max-delete-share / CLUSTERSTACK_MAX_DELETE_SHARE',
    ),
  };
  const optional: [keyof Config, string | undefined][] = [
    ['helmBinary', flags.helmBinary ?? nonEmpty(env[ENVIRONMENT.helmBinary])],
    ['githubToken', nonEmpty(env[ENVIRONMENT.githubToken]) ?? nonEmpty(env.GH_TOKEN)],
    [
      'githubApiUrl',
      httpUrlSetting(
        flags.githubApiUrl ?? nonEmpty(env[ENVIRONMENT.githubApiUrl]),
        `--github-api-url / ${ENVIRONMENT.githubApiUrl}`,
      ),
    ],
    ['registryUsername', nonEmpty(env[ENVIRONMENT.registryUsername])],
    ['registryPassword', nonEmpty(env[ENVIRONMENT.registryPassword])],
    ['gitToken', nonEmpty(env[ENVIRONMENT.gitToken])],
  ];
  for (const [key, value] of optional)
    if (value !== undefined) (config as unknown as Record<string, string>)[key] = value;
  return Object.freeze(config);
}

/** `clusterstack controller` settings: flags win over the environment, which wins over defaults. */
export interface ControllerSettings {
  /** Release source for stacks that name none (a directory, github:owner/repo, oci://registry/repo). */
  releaseSource: string;
  /** Output: a Git repository (path or URL) or a directory; exactly one is set. */
  git?: string;
  output?: string;
  /** An OCI artifact reference `oci://registry/repo:tag` to push the tree to instead. */
  oci?: string;
  ociSource?: string;
  /** With a GitHub --git URL: publish through a pull request. */
  pullRequest: boolean;
  prBranch?: string;
  prWhenUnnecessary: string;
  githubRepo?: string;
  branch: string;
  /** Directory inside the repository for the tree ('' = root). */
  path: string;
  secrets: string;
  /** none | flux | argocd (checked by the command). */
  gitops: string;
  /** Where Flux or Argo CD fetch the tree from, for the generated wiring (default: the --git URL). */
  gitopsUrl?: string;
  gitopsNamespace?: string;
  gitopsName: string;
  gitopsSecret?: string;
  /** Watch only this namespace; undefined = all. */
  namespace?: string;
  /** `[host]:port` of /healthz, /readyz and /metrics; '0' disables the server. */
  metricsAddr: string;
  leaderElect: boolean;
  leaseNamespace: string;
  leaseName: string;
  /** This replica's name in the Lease and in Events: the pod name. */
  identity: string;
  /** Where Argo CD cluster Secrets are kept. */
  argocdNamespace: string;
  /** Render AddonsLayers; their source paths are relative to this directory. */
  layerRoot?: string;
  /** openMCP scheduler configuration file: ClusterProfiles and ClusterRequests. */
  schedulerConfig?: string;
  /** A kubeconfig file; undefined = the in-cluster service account. */
  kubeconfig?: string;
  /** Running in a pod: the API server's service address is in the environment (KUBERNETES_SERVICE_HOST/PORT). */
  inCluster: boolean;
  logLevel: string;
  /** Changes within this window go out in one publish. */
  batchWindowMs: number;
  /** Sources are listed again and the target compared at least this often. */
  resyncMs: number;
  /** Leader election's timing: a standby takes a lease unrenewed this long; a leader gives up after renewDeadlineMs; both look every retryPeriodMs. */
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** Sharded: how soon a shard handing objects over reads the new shards' subtrees again. */
  handoverRecheckMs: number;
}

const CONTROLLER_ENVIRONMENT = {
  releaseSource: 'CLUSTERSTACK_RELEASE_SOURCE',
  git: 'CLUSTERSTACK_GIT',
  output: 'CLUSTERSTACK_OUTPUT',
  oci: 'CLUSTERSTACK_OCI',
  ociSource: 'CLUSTERSTACK_OCI_SOURCE',
  pullRequest: 'CLUSTERSTACK_PULL_REQUEST',
  prBranch: 'CLUSTERSTACK_PR_BRANCH',
  prWhenUnnecessary: 'CLUSTERSTACK_PR_WHEN_UNNECESSARY',
  githubRepo: 'CLUSTERSTACK_GITHUB_REPO',
  branch: 'CLUSTERSTACK_BRANCH',
  path: 'CLUSTERSTACK_PATH',
  secrets: 'CLUSTERSTACK_SECRETS',
  gitops: 'CLUSTERSTACK_GITOPS',
  gitopsUrl: 'CLUSTERSTACK_GITOPS_URL',
  gitopsNamespace: 'CLUSTERSTACK_GITOPS_NAMESPACE',
  gitopsName: 'CLUSTERSTACK_GITOPS_NAME',
  gitopsSecret: 'CLUSTERSTACK_GITOPS_SECRET',
  namespace: 'CLUSTERSTACK_WATCH_NAMESPACE',
  metricsAddr: 'CLUSTERSTACK_METRICS_ADDR',
  leaderElect: 'CLUSTERSTACK_LEADER_ELECT',
  leaseNamespace: 'CLUSTERSTACK_LEASE_NAMESPACE',
  argocdNamespace: 'CLUSTERSTACK_ARGOCD_NAMESPACE',
  layerRoot: 'CLUSTERSTACK_LAYER_ROOT',
  schedulerConfig: 'CLUSTERSTACK_SCHEDULER_CONFIG',
  logLevel: 'CLUSTERSTACK_LOG_LEVEL',
  batchWindow: 'CLUSTERSTACK_BATCH_WINDOW',
  resync: 'CLUSTERSTACK_RESYNC',
  leaseDuration: 'CLUSTERSTACK_LEADER_ELECT_LEASE_DURATION',
  renewDeadline: 'CLUSTERSTACK_LEADER_ELECT_RENEW_DEADLINE',
  retryPeriod: 'CLUSTERSTACK_LEADER_ELECT_RETRY_PERIOD',
  handoverRecheck: 'CLUSTERSTACK_HANDOVER_RECHECK',
  /** Set from the downward API in deploy/: the pod's name and namespace. */
  podName: 'POD_NAME',
  podNamespace: 'POD_NAMESPACE',
  kubeconfig: 'KUBECONFIG',
} as const;

export type ControllerFlags = Partial<
  Record<
    keyof Omit<
      ControllerSettings,
      | 'leaderElect'
      | 'pullRequest'
      | 'batchWindowMs'
      | 'resyncMs'
      | 'inCluster'
      | 'leaseDurationMs'
      | 'renewDeadlineMs'
      | 'retryPeriodMs'
      | 'handoverRecheckMs'
    >,
    string
  >
> & {
  leaderElect?: boolean;
  pullRequest?: boolean;
  batchWindow?: string;
  resync?: string;
  leaseDuration?: string;
  renewDeadline?: string;
  retryPeriod?: string;
  handoverRecheck?: string;
};

/** `500ms`, `2s`, `5m`, `1h` or plain milliseconds; throws on anything else. */
export function parseDuration(value: string, what: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (!match) throw new Error(`${what} must be a duration such as 500ms, 2s or 5m, not "${value}"`);
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(match[1]) * factor);
}

/** Each recheck fetches the branch: below this a shard handing over would fetch without pause. */
const MIN_HANDOVER_RECHECK_MS = 100;

function handoverRecheckMs(value: string): number {
  const what = `--handover-recheck / ${CONTROLLER_ENVIRONMENT.handoverRecheck}`;
  const ms = parseDuration(value, what);
  if (ms < MIN_HANDOVER_RECHECK_MS)
    throw new Error(
      `${what} must be at least ${MIN_HANDOVER_RECHECK_MS}ms (each recheck fetches the branch), not "${value}"`,
    );
  return ms;
}

function booleanSetting(value: string | undefined, what: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (/^(true|1|yes)$/i.test(value.trim())) return true;
  if (/^(false|0|no)$/i.test(value.trim())) return false;
  throw new Error(`${what} must be true or false, not "${value}"`);
}

/**
 * The Lease's duration, renew deadline and retry period (client-go's defaults 15 s, 10 s, 2 s); the
 * duration must exceed the deadline, and the deadline the period, or a live leader loses its lease.
 */
function leaderElectionTiming(
  flags: ControllerFlags,
  pick: (flag: string | undefined, variable: string) => string | undefined,
): Pick<ControllerSettings, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'> {
  const E = CONTROLLER_ENVIRONMENT;
  const setting = (flag: string, given: string | undefined, variable: string, fallback: string) => {
    const what = `--leader-elect-${flag} / ${variable}`;
    const value = parseDuration(pick(given, variable) ?? fallback, what);
    if (value <= 0) throw new Error(`${what} must be longer than 0`);
    return { value, what };
  };
  const duration = setting('lease-duration', flags.leaseDuration, E.leaseDuration, '15s');
  const deadline = setting('renew-deadline', flags.renewDeadline, E.renewDeadline, '10s');
  const period = setting('retry-period', flags.retryPeriod, E.retryPeriod, '2s');
  if (duration.value <= deadline.value)
    throw new Error(
      `${duration.what} (${duration.value} ms) must be longer than ${deadline.what} (${deadline.value} ms)`,
    );
  if (deadline.value <= period.value)
    throw new Error(`${deadline.what} (${deadline.value} ms) must be longer than ${period.what} (${period.value} ms)`);
  return { leaseDurationMs: duration.value, renewDeadlineMs: deadline.value, retryPeriodMs: period.value };
}

/** Resolves the controller's settings once; throws an Error naming the flag or variable that is wrong. */
export function resolveControllerSettings(
  env: NodeJS.ProcessEnv,
  flags: ControllerFlags = {},
): Readonly<ControllerSettings> {
  const E = CONTROLLER_ENVIRONMENT;
  const pick = (flag: string | undefined, variable: string): string | undefined =>
    nonEmpty(flag) ?? nonEmpty(env[variable]);
  const releaseSource = pick(flags.releaseSource, E.releaseSource);
  if (!releaseSource)
    throw new Error(
      `controller needs --release-source (or ${E.releaseSource}): a directory, github:owner/repo or oci://registry/repo`,
    );
  const podNamespace = nonEmpty(env[E.podNamespace]);
  const settings: ControllerSettings = {
    releaseSource,
    branch: pick(flags.branch, E.branch) ?? 'main',
    path: pick(flags.path, E.path) ?? '',
    secrets: pick(flags.secrets, E.secrets) ?? 'refuse',
    gitops: pick(flags.gitops, E.gitops) ?? 'none',
    gitopsName: pick(flags.gitopsName, E.gitopsName) ?? 'clusterstacks',
    metricsAddr: pick(flags.metricsAddr, E.metricsAddr) ?? ':8080',
    leaderElect: flags.leaderElect ?? booleanSetting(nonEmpty(env[E.leaderElect]), E.leaderElect) ?? false,
    pullRequest: flags.pullRequest ?? booleanSetting(nonEmpty(env[E.pullRequest]), E.pullRequest) ?? false,
    prWhenUnnecessary: pick(flags.prWhenUnnecessary, E.prWhenUnnecessary) ?? 'close',
    leaseNamespace: pick(flags.leaseNamespace, E.leaseNamespace) ?? podNamespace ?? 'clusterstack-system',
    leaseName: pick(flags.leaseName, 'CLUSTERSTACK_LEASE_NAME') ?? 'clusterstack-gitops-controller',
    identity: pick(flags.identity, E.podName) ?? `${os.hostname()}-${process.pid}`,
    argocdNamespace: pick(flags.argocdNamespace, E.argocdNamespace) ?? 'argocd',
    logLevel: pick(flags.logLevel, E.logLevel) ?? 'info',
    batchWindowMs: parseDuration(
      pick(flags.batchWindow, E.batchWindow) ?? '200ms',
      `--batch-window / ${E.batchWindow}`,
    ),
    resyncMs: parseDuration(pick(flags.resync, E.resync) ?? '5m', `--resync / ${E.resync}`),
    ...leaderElectionTiming(flags, pick),
    handoverRecheckMs: handoverRecheckMs(pick(flags.handoverRecheck, E.handoverRecheck) ?? '5s'),
    inCluster:
      nonEmpty(env['KUBERNETES_SERVICE_HOST']) !== undefined && nonEmpty(env['KUBERNETES_SERVICE_PORT']) !== undefined,
  };
  const optional: [keyof ControllerSettings, string | undefined][] = [
    ['git', pick(flags.git, E.git)],
    ['output', pick(flags.output, E.output)],
    ['oci', pick(flags.oci, E.oci)],
    ['ociSource', pick(flags.ociSource, E.ociSource)],
    ['prBranch', pick(flags.prBranch, E.prBranch)],
    ['githubRepo', pick(flags.githubRepo, E.githubRepo)],
    ['gitopsUrl', pick(flags.gitopsUrl, E.gitopsUrl)],
    ['gitopsNamespace', pick(flags.gitopsNamespace, E.gitopsNamespace)],
    ['gitopsSecret', pick(flags.gitopsSecret, E.gitopsSecret)],
    ['namespace', pick(flags.namespace, E.namespace)],
    ['schedulerConfig', pick(flags.schedulerConfig, E.schedulerConfig)],
    ['kubeconfig', pick(flags.kubeconfig, E.kubeconfig)],
    ['layerRoot', pick(flags.layerRoot, E.layerRoot)],
  ];
  for (const [key, value] of optional)
    if (value !== undefined) (settings as unknown as Record<string, string>)[key] = value;
  if ([settings.git, settings.output, settings.oci].filter(Boolean).length !== 1)
    throw new Error(
      `controller needs exactly one of --git <repo> (${E.git}), --output <dir> (${E.output}) or --oci <oci://registry/repo:tag> (${E.oci})`,
    );
  return Object.freeze(settings);
}
