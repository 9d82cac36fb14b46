// `clusterstack controller --release-source <src> (--git <repo> | --output <dir> | --oci <ref>) [options]`
import path from 'node:path';
import { type ControllerSettings, resolveControllerSettings } from '../config.js';
import { resolveRuntimeExtensionSettings, type RuntimeExtensionSettings } from '../runtime-extension-settings.js';
import { parseGitOpsEngine, type WiringOptions } from '../../gitops/wiring/render-wiring.js';
import { type CliIo, UsageError } from './cli-io.js';
import { controllerSecretSettings, secretPolicyFrom } from './secret-options.js';
import { parseCommandLine } from './parse-command-line.js';
import { parseShardScope, SHARDS_DIR, shardObjectName, shardSubtree, type ShardScope } from '../shards/shard-scope.js';
import { checkCacheDir, configFromFlags, HELM_TIMEOUT_HELP, resolveLocation, SOURCE_HELP } from './common-options.js';
import {
  CONTROLLER_OPTIONS,
  type ControllerFlags,
  type ControllerStart,
  type ListenAddress,
} from './controller-options.js';

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

/** `[host]:port` -> host and port; `0` or empty disables the server. */
export function parseListenAddress(value: string): ListenAddress {
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

/** Runs the controller until it is stopped (exit 0) or loses its lease (exit 3). */
export async function controllerCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine('controller', { args, options: CONTROLLER_OPTIONS });
  const start = await checkedStart(values, io);
  // The runtime (the Kubernetes client alone is 800 modules) loads only once every setting passed:
  // --help and a mistyped flag answer without it.
  return (await import('./controller-start.js')).runControllerUntilStopped(start, io);
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
  // Outside a pod without a kubeconfig there is nothing to connect to: say so and stop, before the
  // runtime loads, rather than retry an API server URL made of undefined parts forever.
  if (!settings.kubeconfig && !settings.inCluster)
    throw new UsageError(
      'no Kubernetes configuration: this is not a pod (KUBERNETES_SERVICE_HOST is not set) and neither --kubeconfig nor KUBECONFIG names a kubeconfig file; run the controller in the management cluster (deploy/) or give --kubeconfig <file>',
    );
  return { values, settings, shard, fleetPath, defaultSource, engine, secretSettings, listen, extension, config };
}
