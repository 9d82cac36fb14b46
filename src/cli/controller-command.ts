// `clusterstack controller --release-source <src> (--git <repo> | --output <dir> | --oci <ref>) [options]`
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import {
  checkOutputSettings,
  createOutputPublisher,
  isUrl,
  type OutputSettings,
  revisionKindOf,
  wiringOptionsFor,
} from './output-publisher.js';
import { checkGitAvailable } from '../../gitops/git-command.js';
import { GitHistoryReader, historyMirrorDir } from '../../gitops/git-history.js';
import { sha256Hex } from '../release/content-digest.js';
import { parseGitOpsEngine, type WiringOptions } from '../../gitops/wiring/render-wiring.js';
import { createHelmDependencies } from '../../renderers/helm-dependencies.js';
import { processSpawner } from '../core/process-spawner.js';
import { type Config, type ControllerSettings, resolveControllerSettings } from '../config.js';
import { resolveRuntimeExtensionSettings, type RuntimeExtensionSettings } from '../runtime-extension-settings.js';
import { type ControllerRuntime, runController } from '../controller/run-controller.js';
import { CacheDirBusyError, claimCacheDir } from '../controller/runtime/cache-dir-lock.js';
import { createKubeClient } from '../controller/runtime/kube-client.js';
import { createLogger, logProcessWarnings } from '../controller/runtime/logger.js';
import { PrometheusMetrics } from '../controller/runtime/metrics.js';
import { onShutdownSignals } from '../controller/runtime/shutdown.js';
import type { SecretPolicy } from '../render/secret-policy.js';
import { type CliIo, EXIT_FAILURE, EXIT_OK, UsageError } from './cli-io.js';
import { controllerSecretSettings, type SecretSettings, secretPolicyFrom } from './secret-options.js';
import { parseCommandLine } from './parse-command-line.js';
import { SchedulerConfigFile } from '../controller/reconcile/scheduler-config-file.js';
import {
  parseShardScope,
  SHARDS_DIR,
  shardObjectName,
  shardsRoot,
  shardSubtree,
  type ShardScope,
} from '../shards/shard-scope.js';
import { directoryShardsReader, gitShardsReader } from '../../gitops/shard-fleet.js';
import {
  checkCacheDir,
  configFromFlags,
  HELM_TIMEOUT_HELP,
  HELM_TIMEOUT_OPTIONS,
  helmOptionsFrom,
  resolveLocation,
  SOURCE_HELP,
  SOURCE_OPTIONS,
  layerChartFetcherFrom,
  providerFetcherFrom,
  sourceOpenerFrom,
} from './common-options.js';

export const CONTROLLER_USAGE = `Usage: clusterstack controller --release-source <source> (--git <repo> | --output <dir> | --oci <ref>) [options]

Runs in the management cluster: watches ClusterStacks, Clusters and what it owns, renders and
publishes on every change (one commit per burst of changes), and writes ClusterStackReleases,
ClusterAddons, status conditions and Events back. Every flag has an environment variable.

Output (one of):
  --git <path or URL>        commit to this repository (CLUSTERSTACK_GIT); HTTPS token from CLUSTERSTACK_GIT_TOKEN
  --output <dir>             write into a directory (CLUSTERSTACK_OUTPUT)
  --oci <oci://reg/repo:tag> push the tree as an OCI artifact (CLUSTERSTACK_OCI; --oci-source)
  --pull-request             with a GitHub --git URL: publish through a pull request
                             (CLUSTERSTACK_PULL_REQUEST; --pr-branch, --pr-when-unnecessary,
                             --github-repo as for render; GITHUB_TOKEN)
  --branch <name>            branch (CLUSTERSTACK_BRANCH, default main)
  --path <subdir>            directory inside the repository (CLUSTERSTACK_PATH, default the root)

Rendering:
${SOURCE_HELP}
  --secrets <policy>         refuse (default) | drop | allow | encrypt (CLUSTERSTACK_SECRETS)
  --age-recipient <age1...>  with encrypt: an age recipient (repeatable; CLUSTERSTACK_AGE_RECIPIENTS,
                             comma-separated); without one, the target's .sops.yaml decides
  --sops-config <file>       with encrypt: a .sops.yaml whose creation_rules pick the recipients
                             (CLUSTERSTACK_SOPS_CONFIG)
  --sops-secret <name>       Flux: the Secret with the age identity (CLUSTERSTACK_SOPS_SECRET, default sops-age)
  --helm <path>              the helm binary (CLUSTERSTACK_HELM)
${HELM_TIMEOUT_HELP}

GitOps (sync state read back into ManifestsSynced conditions):
  --gitops <engine>          none (default) | flux | argocd (CLUSTERSTACK_GITOPS)
  --gitops-url <url>         URL the engine fetches the tree from; with it, the wiring is generated
                             under flux/ or argocd/ (CLUSTERSTACK_GITOPS_URL; default the --git URL)
  --gitops-namespace <ns>    namespace of the wiring objects (default flux-system, or argocd)
  --gitops-name <name>       base name of the wiring objects (default clusterstacks)
  --gitops-secret <name>     Flux: Secret with the clone credentials (its name only)
  --argocd-namespace <ns>    where Argo CD cluster Secrets are kept (CLUSTERSTACK_ARGOCD_NAMESPACE, default argocd)
  --layer-root <dir>         render AddonsLayers (kraan.io), their source paths relative to this checkout
                             (CLUSTERSTACK_LAYER_ROOT; default: layers are not watched)
  --scheduler-config <file>  openMCP scheduler configuration: publish ClusterProfiles, schedule ClusterRequests
                             and write their status (CLUSTERSTACK_SCHEDULER_CONFIG)

Running:
  --namespace <ns>           watch only this namespace (CLUSTERSTACK_WATCH_NAMESPACE; default all)
  --metrics-addr <addr>      /healthz, /readyz, /metrics on [host]:port (CLUSTERSTACK_METRICS_ADDR, default :8080; 0 = off)
  --leader-elect             only the holder of a Lease publishes and writes (CLUSTERSTACK_LEADER_ELECT)
  --lease-namespace <ns>     the Lease's namespace (CLUSTERSTACK_LEASE_NAMESPACE, default POD_NAMESPACE)
  --leader-elect-lease-duration <d>, --leader-elect-renew-deadline <d>, --leader-elect-retry-period <d>
                             a standby takes a Lease unrenewed this long; a leader that cannot renew
                             this long exits 3; how often both try (CLUSTERSTACK_LEADER_ELECT_LEASE_DURATION,
                             _RENEW_DEADLINE, _RETRY_PERIOD; default 15s, 10s, 2s)
  --kubeconfig <file>        default: KUBECONFIG, else the in-cluster service account
  --log-level <level>        debug | info | warn | error (CLUSTERSTACK_LOG_LEVEL, default info)
  --batch-window <duration>  changes within this window share one publish (CLUSTERSTACK_BATCH_WINDOW, default 200ms)
  --resync <duration>        list sources and compare the target at least this often (CLUSTERSTACK_RESYNC, default 5m)
  --shard <name>             run as one shard of the fleet (CLUSTERSTACK_SHARD; with --shard-selector): publish
                             under <path>/shards/<name>, Lease and wiring names suffixed -<name>
  --shard-selector <sel>     the shard's ClusterStacks, Clusters and providers by label, e.g.
                             sharding.clusterstack.x-k8s.io/key=shard1, or '!sharding.clusterstack.x-k8s.io/key'
                             for the main shard (CLUSTERSTACK_SHARD_SELECTOR; docs/sharding.md)
  --handover-recheck <d>     while a shard hands objects over, read the other shards' subtrees this often
                             (CLUSTERSTACK_HANDOVER_RECHECK, default 5s, at least 100ms)

Cluster API runtime extension (lifecycle hooks; off unless an address is given):
  --runtime-extension-addr <addr>      serve the hooks over HTTPS on [host]:port, e.g. :9443
                                       (CLUSTERSTACK_RUNTIME_EXTENSION_ADDR)
  --runtime-extension-cert-dir <dir>   tls.crt and tls.key of the serving certificate, reloaded when
                                       they change (CLUSTERSTACK_RUNTIME_EXTENSION_CERT_DIR,
                                       default /etc/clusterstack/runtime-extension-tls)
  --hook-timeout <duration>            stop waiting for a release's addons: the upgrade then goes on,
                                       with a Warning event (CLUSTERSTACK_HOOK_TIMEOUT, default 30m)
  --hook-on-timeout <action>           proceed (default) | hold: keep holding the upgrade after the
                                       timeout (CLUSTERSTACK_HOOK_ON_TIMEOUT)
  --hook-retry-after <duration>        how soon Cluster API asks again (CLUSTERSTACK_HOOK_RETRY_AFTER, default 10s)
  --hook-failure-policy <policy>       Fail (default: hold while unreachable) | Ignore (CLUSTERSTACK_HOOK_FAILURE_POLICY)
  --runtime-extension-service <name>   the leader writes this selector-less Service's EndpointSlice with
                                       its pod IP, so hooks reach the replica that renders
                                       (CLUSTERSTACK_RUNTIME_EXTENSION_SERVICE; needs POD_IP, POD_NAMESPACE)

Examples:
  # In the management cluster, as deploy/ runs it (settings in deploy/base/config.yaml; or deploy/argocd)
  kubectl apply -k deploy/flux

  # From a workstation against a kind cluster, into a local directory, no metrics server
  clusterstack controller --kubeconfig ~/.kube/config --release-source examples/quickstart/releases \\
    --output out/controller --metrics-addr 0

  # Commit to Git with the Flux wiring, reading sync state back from Flux (CLUSTERSTACK_GIT_TOKEN)
  clusterstack controller --release-source github:SovereignCloudStack/cluster-stacks --leader-elect \\
    --git https://github.com/example/management-gitops.git --path rendered --gitops flux

  # Pull requests instead of commits, releases from an OCI registry, Argo CD health read back
  clusterstack controller --release-source oci://registry.scs.community/kaas/cluster-stacks \\
    --git https://github.com/example/management-gitops.git --pull-request --gitops argocd`;

/**
 * The Kubernetes configuration: the --kubeconfig / KUBECONFIG file, else the pod's service account.
 * Outside a pod without a kubeconfig there is nothing to connect to: say so and stop, rather than
 * retry an API server URL made of undefined parts forever.
 */
function loadKubeConfig(settings: Pick<ControllerSettings, 'kubeconfig' | 'inCluster'>, cwd: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (!settings.kubeconfig && !settings.inCluster) {
    throw new UsageError(
      'no Kubernetes configuration: this is not a pod (KUBERNETES_SERVICE_HOST is not set) and neither --kubeconfig nor KUBECONFIG names a kubeconfig file; run the controller in the management cluster (deploy/) or give --kubeconfig <file>',
    );
  }
  try {
    if (settings.kubeconfig) kubeConfig.loadFromFile(path.resolve(cwd, settings.kubeconfig));
    else kubeConfig.loadFromCluster();
  } catch (error) {
    throw new UsageError(
      `cannot load the Kubernetes configuration (${(error as Error).message}); run in a pod or give --kubeconfig`,
    );
  }
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server || !URL.canParse(server)) {
    const where = settings.kubeconfig ? `the kubeconfig ${settings.kubeconfig}` : 'the in-cluster configuration';
    throw new UsageError(
      `${where} names no usable API server (${server ? `"${server}" is not a URL` : 'no current cluster'}); check its current-context and clusters[].cluster.server`,
    );
  }
  return kubeConfig;
}

/** `[host]:port` -> host and port; `0` or empty disables the server. */
export function parseListenAddress(value: string): { host?: string; port: number } | undefined {
  if (value === '0' || value === '') return undefined;
  const match = /^(?:\[?([^\]]*?)\]?)?:(\d+)$/.exec(value) ?? /^()(\d+)$/.exec(value);
  if (!match || Number(match[2]) > 65535)
    throw new UsageError(`--metrics-addr must be [host]:port such as :8080, not "${value}"`);
  return match[1] ? { host: match[1], port: Number(match[2]) } : { port: Number(match[2]) };
}

function nonEmptyValue(flag: string | undefined, variable: string | undefined): string | undefined {
  return flag !== undefined && flag !== '' ? flag : variable !== undefined && variable !== '' ? variable : undefined;
}

/**
 * The settings of one shard: its subtree (`<path>/shards/<shard>` in Git, `<output>/shards/<shard>`
 * for a directory), its own Lease and wiring names. A target it cannot share (an OCI tag, a pull
 * request branch) and a scheduler configuration (requests span the fleet) are refused.
 */
function shardSettings(settings: Readonly<ControllerSettings>, shard: ShardScope): Readonly<ControllerSettings> {
  if (settings.oci)
    throw new UsageError(
      `--shard publishes to a subtree of one Git branch or directory; --oci ${settings.oci} holds one tree per tag. Use --git or --output, or run one unsharded controller per OCI target`,
    );
  if (settings.pullRequest)
    throw new UsageError(
      '--shard cannot propose pull requests (shards would race on one PR branch); publish with --git to a branch, or run unsharded',
    );
  if (settings.schedulerConfig)
    throw new UsageError(
      `--shard cannot schedule ClusterRequests (--scheduler-config ${settings.schedulerConfig}): requests are placed across the whole fleet; run the scheduler in an unsharded controller`,
    );
  return Object.freeze({
    ...settings,
    path: shardSubtree(settings.path, shard.name),
    ...(settings.output ? { output: path.join(settings.output, SHARDS_DIR, shard.name) } : {}),
    leaseName: shardObjectName(settings.leaseName, shard.name),
    gitopsName: shardObjectName(settings.gitopsName, shard.name),
  });
}

const CONTROLLER_OPTIONS = {
  ...SOURCE_OPTIONS,
  ...HELM_TIMEOUT_OPTIONS,
  git: { type: 'string' },
  output: { type: 'string' },
  oci: { type: 'string' },
  'oci-source': { type: 'string' },
  'pull-request': { type: 'boolean' },
  'pr-branch': { type: 'string' },
  'pr-when-unnecessary': { type: 'string' },
  'github-repo': { type: 'string' },
  branch: { type: 'string' },
  path: { type: 'string' },
  secrets: { type: 'string' },
  'age-recipient': { type: 'string', multiple: true },
  'sops-config': { type: 'string' },
  'sops-secret': { type: 'string' },
  helm: { type: 'string' },
  gitops: { type: 'string' },
  'gitops-url': { type: 'string' },
  'gitops-namespace': { type: 'string' },
  'gitops-name': { type: 'string' },
  'gitops-secret': { type: 'string' },
  'argocd-namespace': { type: 'string' },
  'layer-root': { type: 'string' },
  'scheduler-config': { type: 'string' },
  namespace: { type: 'string' },
  'metrics-addr': { type: 'string' },
  'leader-elect': { type: 'boolean' },
  'lease-namespace': { type: 'string' },
  'leader-elect-lease-duration': { type: 'string' },
  'leader-elect-renew-deadline': { type: 'string' },
  'leader-elect-retry-period': { type: 'string' },
  kubeconfig: { type: 'string' },
  'log-level': { type: 'string' },
  'batch-window': { type: 'string' },
  resync: { type: 'string' },
  'handover-recheck': { type: 'string' },
  shard: { type: 'string' },
  'shard-selector': { type: 'string' },
  'runtime-extension-addr': { type: 'string' },
  'runtime-extension-cert-dir': { type: 'string' },
  'hook-timeout': { type: 'string' },
  'hook-on-timeout': { type: 'string' },
  'hook-retry-after': { type: 'string' },
  'hook-failure-policy': { type: 'string' },
  'runtime-extension-service': { type: 'string' },
} as const;

type ControllerFlags = ReturnType<
  typeof parseCommandLine<{ args: string[]; options: typeof CONTROLLER_OPTIONS }>
>['values'];
type Logger = ReturnType<typeof createLogger>;

/** Everything the flags and the environment say, checked before the controller touches anything. */
interface ControllerStart {
  values: ControllerFlags;
  settings: Readonly<ControllerSettings>;
  shard: ShardScope | undefined;
  /** The fleet's path before sharding: where every shard's subtree lives. */
  fleetPath: string;
  defaultSource: string;
  engine: WiringOptions['engine'];
  secretSettings: SecretSettings;
  listen: ReturnType<typeof parseListenAddress>;
  extension: Readonly<RuntimeExtensionSettings> | undefined;
  config: Readonly<Config>;
}

/** What start-up prepared: the logger, the cluster to watch, the output and its wiring. */
interface Prepared {
  logger: Logger;
  scheduler: SchedulerConfigFile | undefined;
  kubeConfig: KubeConfig;
  output: OutputSettings;
  wiring: WiringOptions | undefined;
}

/** Runs the controller until it is stopped (exit 0) or loses its lease (exit 3). */
export async function controllerCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine('controller', { args, options: CONTROLLER_OPTIONS });
  const start = await checkedStart(values, io);
  const prepared = await prepare(start, io);
  // helm and git start from this process's spawner: its exits and fallback go to the log.
  const stopWarnings = processSpawner().onWarning((message) =>
    prepared.logger.warn({ warning: message }, 'Process spawner warning'),
  );
  try {
    const runtime = await startRuntime(start, prepared, io);
    return await serveUntilStopped(start, prepared.logger, runtime);
  } finally {
    stopWarnings();
  }
}

/** The settings from flags and environment, narrowed to one shard's part of the fleet when sharded. */
function readSettings(
  values: ControllerFlags,
  io: CliIo,
): { settings: Readonly<ControllerSettings>; shard: ShardScope | undefined; fleetPath: string } {
  let settings: Readonly<ControllerSettings>;
  let shard: ShardScope | undefined;
  try {
    shard = parseShardScope(
      nonEmptyValue(values.shard, io.env['CLUSTERSTACK_SHARD']),
      nonEmptyValue(values['shard-selector'], io.env['CLUSTERSTACK_SHARD_SELECTOR']),
    );
    settings = resolveControllerSettings(io.env, {
      releaseSource: values['release-source'],
      git: values.git,
      output: values.output,
      oci: values.oci,
      ociSource: values['oci-source'],
      ...(values['pull-request'] !== undefined ? { pullRequest: values['pull-request'] } : {}),
      prBranch: values['pr-branch'],
      prWhenUnnecessary: values['pr-when-unnecessary'],
      githubRepo: values['github-repo'],
      branch: values.branch,
      path: values.path,
      secrets: values.secrets,
      gitops: values.gitops,
      gitopsUrl: values['gitops-url'],
      gitopsNamespace: values['gitops-namespace'],
      gitopsName: values['gitops-name'],
      gitopsSecret: values['gitops-secret'],
      argocdNamespace: values['argocd-namespace'],
      layerRoot: values['layer-root'],
      schedulerConfig: values['scheduler-config'],
      namespace: values.namespace,
      metricsAddr: values['metrics-addr'],
      ...(values['leader-elect'] !== undefined ? { leaderElect: values['leader-elect'] } : {}),
      leaseNamespace: values['lease-namespace'],
      leaseDuration: values['leader-elect-lease-duration'],
      renewDeadline: values['leader-elect-renew-deadline'],
      retryPeriod: values['leader-elect-retry-period'],
      kubeconfig: values.kubeconfig,
      logLevel: values['log-level'],
      batchWindow: values['batch-window'],
      resync: values.resync,
      handoverRecheck: values['handover-recheck'],
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return { settings: shard ? shardSettings(settings, shard) : settings, shard, fleetPath: settings.path };
}

/** Every setting checked (source, secrets, engine, log level, addresses, hooks, cache); a usage error names the flag. */
async function checkedStart(values: ControllerFlags, io: CliIo): Promise<ControllerStart> {
  const { settings, shard, fleetPath } = readSettings(values, io);
  const defaultSource = resolveLocation(
    settings.releaseSource,
    io.cwd,
    '--release-source (CLUSTERSTACK_RELEASE_SOURCE)',
  );
  secretPolicyFrom(settings.secrets);
  let engine: WiringOptions['engine'];
  try {
    engine = parseGitOpsEngine(settings.gitops);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const secretSettings = await controllerSecretSettings(settings.secrets, engine, values, io);
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(settings.logLevel))
    throw new UsageError(`--log-level must be debug, info, warn or error, not "${settings.logLevel}"`);
  const listen = parseListenAddress(settings.metricsAddr);
  let extension: Readonly<RuntimeExtensionSettings> | undefined;
  try {
    extension = resolveRuntimeExtensionSettings(
      io.env,
      {
        addr: values['runtime-extension-addr'],
        certDir: values['runtime-extension-cert-dir'],
        timeout: values['hook-timeout'],
        onTimeout: values['hook-on-timeout'],
        retryAfter: values['hook-retry-after'],
        failurePolicy: values['hook-failure-policy'],
        service: values['runtime-extension-service'],
      },
      io.cwd,
    );
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const config = configFromFlags(values, io);
  await checkCacheDir(config, values, io);
  return { values, settings, shard, fleetPath, defaultSource, engine, secretSettings, listen, extension, config };
}

/** The logger, the scheduler file, the cluster, the output and its wiring; the cache directory claimed. */
async function prepare(start: ControllerStart, io: CliIo): Promise<Prepared> {
  const { settings, config, engine } = start;
  const logger = createLogger({ level: settings.logLevel as 'info' });
  // From here on every line the controller prints is JSON, Node's own warnings included.
  logProcessWarnings(logger);
  // Read at start and again whenever the file changes (a ConfigMap volume): a file that cannot be
  // read stops the start; one that is not valid keeps the published requests output until fixed.
  const scheduler = settings.schedulerConfig
    ? await SchedulerConfigFile.open({ file: settings.schedulerConfig, cwd: io.cwd, logger })
    : undefined;
  const kubeConfig = loadKubeConfig(settings, io.cwd);
  const output: OutputSettings = {
    ...settings,
    plainHttp: start.values['plain-http'],
    ...(start.shard ? { shardIndex: true } : {}),
  };
  checkOutputSettings(output);
  // Every reconcile would fail on it: refuse at start, saying so.
  if (output.git) await checkGitAvailable(config.childEnv, `--git ${output.git}`);
  const wiring = wiringOptionsFor(output, { ...settings, sopsSecret: start.secretSettings.sopsSecret }, false);
  if (engine !== 'none' && !wiring)
    logger.info({ engine }, 'No --gitops-url: wiring is not generated; sync state is read from existing objects');
  await claimCache(config, logger);
  return { logger, scheduler, kubeConfig, output, wiring };
}

/** Ours alone from here on; a controller killed before us may have left git locks in its clones. */
async function claimCache(config: Readonly<Config>, logger: Logger): Promise<void> {
  try {
    const repaired = await claimCacheDir(config.cacheDir);
    if (repaired.length > 0)
      logger.warn(
        { cacheDir: config.cacheDir, files: repaired },
        'Removed git lock files a killed controller left in its clones',
      );
  } catch (error) {
    if (error instanceof CacheDirBusyError) throw new UsageError(error.message);
    throw error;
  }
}

/** The published history's reader (Git only): in pull-request mode the base branch's, what the engine applies. */
function historyOf(
  { settings, config }: ControllerStart,
  repository: string | undefined,
): GitHistoryReader | undefined {
  // The pull request publisher fetches with the GitHub token when no Git token is set; so does its history.
  const historyToken = config.gitToken ?? (settings.pullRequest ? config.githubToken : undefined);
  return repository
    ? new GitHistoryReader({
        repository,
        branch: settings.branch,
        path: settings.path,
        workDir: historyMirrorDir(config.cacheDir, sha256Hex(`${repository}\n${settings.branch}`).slice(0, 16)),
        author: { name: config.gitAuthorName, email: config.gitAuthorEmail },
        env: config.childEnv,
        ...(historyToken ? { token: historyToken } : {}),
      })
    : undefined;
}

/** A shard's scope and how it reads what the other shards published (from Git or their directories). */
function shardOptionOf(
  { settings, config, shard, fleetPath }: ControllerStart,
  repository: string | undefined,
  io: CliIo,
) {
  return (
    shard && {
      scope: shard,
      publishedElsewhere: repository
        ? () =>
            gitShardsReader(
              {
                repository,
                branch: settings.branch,
                workDir: path.join(config.cacheDir, 'shards-read'),
                author: { name: config.gitAuthorName, email: config.gitAuthorEmail },
                env: config.childEnv,
                ...(config.gitToken ? { token: config.gitToken } : {}),
              },
              shardsRoot(fleetPath),
              shard.name,
            )
        : () => directoryShardsReader(path.resolve(io.cwd, settings.output!, '..'), shard.name),
    }
  );
}

/** The controller's runtime, started with its clients, sources, renderer and publisher. */
async function startRuntime(start: ControllerStart, prepared: Prepared, io: CliIo): Promise<ControllerRuntime> {
  const { values, settings, config, engine, secretSettings, listen, extension } = start;
  const { logger, scheduler, kubeConfig, output, wiring } = prepared;
  const repository =
    settings.git !== undefined ? (isUrl(settings.git) ? settings.git : path.resolve(io.cwd, settings.git)) : undefined;
  const history = historyOf(start, repository);
  // Created here so the release sources, opened before the runtime, count their requests into it.
  const metrics = new PrometheusMetrics();
  const openSource = sourceOpenerFrom(
    config,
    values,
    (message) => logger.warn({ warning: message }, 'Release source warning'),
    (kind, outcome) => metrics.remoteRequest(kind, outcome),
  );
  const shardOption = shardOptionOf(start, repository, io);
  return runController({
    ...(shardOption ? { shard: shardOption } : {}),
    metrics,
    kubeConfig,
    ...(history ? { history } : {}),
    kube: createKubeClient({ kubeConfig, identity: settings.identity }),
    publisher: createOutputPublisher(output, config, io.cwd, undefined, { logger }),
    revisionKind: revisionKindOf(output),
    defaultSource: start.defaultSource,
    openSource,
    providerFetcher: providerFetcherFrom(config, values, openSource),
    layerChartFetcher: layerChartFetcherFrom(config, values),
    workDir: config.cacheDir,
    helm: createHelmDependencies(helmOptionsFrom(config)),
    secrets: settings.secrets as SecretPolicy,
    ...(secretSettings.encryption ? { encryption: secretSettings.encryption } : {}),
    engine,
    ...(wiring ? { wiring } : {}),
    ...(settings.pullRequest ? { pullRequest: true } : {}),
    outputPath: settings.path,
    argocdNamespace: settings.argocdNamespace,
    ...(settings.layerRoot ? { layerRoot: path.resolve(io.cwd, settings.layerRoot) } : {}),
    ...(scheduler ? { scheduler } : {}),
    ...(settings.namespace
      ? {
          watchNamespace: settings.namespace,
          engineNamespaces: [settings.gitopsNamespace ?? (engine === 'flux' ? 'flux-system' : 'argocd')],
        }
      : {}),
    logger,
    resyncMs: settings.resyncMs,
    handoverRecheckMs: settings.handoverRecheckMs,
    batchWindowMs: settings.batchWindowMs,
    ...(settings.leaderElect
      ? {
          leaderElection: {
            namespace: settings.leaseNamespace,
            name: settings.leaseName,
            identity: settings.identity,
            leaseDurationMs: settings.leaseDurationMs,
            renewDeadlineMs: settings.renewDeadlineMs,
            retryPeriodMs: settings.retryPeriodMs,
          },
        }
      : {}),
    ...(listen ? { health: listen } : {}),
    ...(extension ? { runtimeExtension: extension } : {}),
  });
}

/** Says it started, stops on SIGTERM or SIGINT, and gives the exit code for how it stopped. */
async function serveUntilStopped(
  { settings, shard, engine }: ControllerStart,
  logger: Logger,
  runtime: ControllerRuntime,
): Promise<number> {
  logger.info(
    {
      target: settings.git ?? settings.output,
      ...(shard ? { shard: shard.name, shardSelector: shard.selectorText, path: settings.path } : {}),
      gitops: engine,
      namespace: settings.namespace ?? 'all',
      leaderElect: settings.leaderElect,
      identity: settings.identity,
      health: runtime.healthUrl ?? 'off',
      runtimeExtension: runtime.extensionUrl ?? 'off',
    },
    'Controller started',
  );
  const removeSignals = onShutdownSignals(() => runtime.stop(), { timeoutMs: 30_000, logger });
  const { reason } = await runtime.done;
  removeSignals();
  if (reason !== 'stopped') {
    // Lost its lease (or leader election failed): everything has stopped; exit 3 so that Kubernetes
    // restarts the container and it campaigns again. Said as a JSON log line like every other.
    logger.error({ reason, exitCode: EXIT_FAILURE }, 'Controller stopped');
    return EXIT_FAILURE;
  }
  logger.info({ reason }, 'Controller stopped');
  return EXIT_OK;
}
