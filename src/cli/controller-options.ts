// The controller command's flags, and the start settings checked from them (controller-command.ts)
// that the runtime starts with (controller-start.ts).
import type { Config, ControllerSettings } from '../config.js';
import type { RuntimeExtensionSettings } from '../runtime-extension-settings.js';
import type { WiringOptions } from '../../gitops/wiring/render-wiring.js';
import type { ShardScope } from '../shards/shard-scope.js';
import { HELM_TIMEOUT_OPTIONS, SOURCE_OPTIONS } from './common-options.js';
import type { parseCommandLine } from './parse-command-line.js';
import type { SecretSettings } from './secret-options.js';

/** Every flag of `clusterstack controller`. */
export const CONTROLLER_OPTIONS = {
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

/** The flags as parsed. */
export type ControllerFlags = ReturnType<
  typeof parseCommandLine<{ args: string[]; options: typeof CONTROLLER_OPTIONS }>
>['values'];
/** Where the health and metrics server listens; undefined: off. */
export type ListenAddress = { host?: string; port: number } | undefined;

/** Everything the flags and the environment say, checked before the controller touches anything. */
export interface ControllerStart {
  values: ControllerFlags;
  settings: Readonly<ControllerSettings>;
  shard: ShardScope | undefined;
  /** The fleet's path before sharding: where every shard's subtree lives. */
  fleetPath: string;
  defaultSource: string;
  engine: WiringOptions['engine'];
  secretSettings: SecretSettings;
  listen: ListenAddress;
  extension: Readonly<RuntimeExtensionSettings> | undefined;
  config: Readonly<Config>;
}
