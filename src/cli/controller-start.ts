// The controller's start once its settings are checked (controller-command.ts): the logger, the
// Kubernetes configuration, the cache directory, the runtime with its clients, sources, renderer and
// publisher, and the wait until it stops. Loaded only then: it brings the Kubernetes client.
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
import type { WiringOptions } from '../../gitops/wiring/render-wiring.js';
import { createHelmDependencies } from '../../renderers/helm-dependencies.js';
import { processSpawner } from '../core/process-spawner.js';
import type { Config, ControllerSettings } from '../config.js';
import { type ControllerRuntime, runController } from '../controller/run-controller.js';
import { CacheDirBusyError, claimCacheDir } from '../controller/runtime/cache-dir-lock.js';
import { createKubeClient } from '../controller/runtime/kube-client.js';
import { createLogger, logProcessWarnings } from '../controller/runtime/logger.js';
import { PrometheusMetrics } from '../controller/runtime/metrics.js';
import { onShutdownSignals } from '../controller/runtime/shutdown.js';
import type { SecretPolicy } from '../render/secret-policy.js';
import { type CliIo, EXIT_FAILURE, EXIT_OK, UsageError } from './cli-io.js';
import { SchedulerConfigFile } from '../controller/reconcile/scheduler-config-file.js';
import { shardsRoot } from '../shards/shard-scope.js';
import { directoryShardsReader, gitShardsReader } from '../../gitops/shard-fleet.js';
import { helmOptionsFrom, layerChartFetcherFrom, providerFetcherFrom, sourceOpenerFrom } from './common-options.js';
import type { ControllerStart } from './controller-options.js';

/** Starts the controller from checked settings and runs it until it is stopped (exit 0) or loses its lease (exit 3). */
export async function runControllerUntilStopped(start: ControllerStart, io: CliIo): Promise<number> {
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

type Logger = ReturnType<typeof createLogger>;

/** What start-up prepared: the logger, the cluster to watch, the output and its wiring. */
interface Prepared {
  logger: Logger;
  scheduler: SchedulerConfigFile | undefined;
  kubeConfig: KubeConfig;
  output: OutputSettings;
  wiring: WiringOptions | undefined;
}

/**
 * The Kubernetes configuration: the --kubeconfig / KUBECONFIG file, else the pod's service account;
 * one that cannot be read or names no API server stops the start with a message.
 */
function loadKubeConfig(settings: Pick<ControllerSettings, 'kubeconfig' | 'inCluster'>, cwd: string): KubeConfig {
  // That there is one at all was checked before this module loaded (controller-command.ts).
  const kubeConfig = new KubeConfig();
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
