// `clusterstack controller` settings of the Cluster API runtime extension (lifecycle hooks): flags
// win over the environment, which wins over defaults; resolved once, beside config.ts.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseDuration } from './config.js';

export interface RuntimeExtensionSettings {
  host?: string;
  port: number;
  certFile: string;
  keyFile: string;
  timeoutMs: number;
  /** What BeforeClusterUpgrade does once timeoutMs passed: let the upgrade go, or keep holding. */
  onTimeout: 'proceed' | 'hold';
  retryAfterSeconds: number;
  failurePolicy: 'Fail' | 'Ignore';
  /**
   * Route this Service to the leader: its EndpointSlice is written by the replica that leads, with
   * that pod's IP (POD_IP), namespace (POD_NAMESPACE) and name (POD_NAME).
   */
  leaderService?: { service: string; namespace: string; podIP: string; podName?: string };
}

export interface RuntimeExtensionFlags {
  addr?: string | undefined;
  certDir?: string | undefined;
  timeout?: string | undefined;
  onTimeout?: string | undefined;
  retryAfter?: string | undefined;
  failurePolicy?: string | undefined;
  service?: string | undefined;
}

const ENVIRONMENT = {
  addr: 'CLUSTERSTACK_RUNTIME_EXTENSION_ADDR',
  certDir: 'CLUSTERSTACK_RUNTIME_EXTENSION_CERT_DIR',
  timeout: 'CLUSTERSTACK_HOOK_TIMEOUT',
  onTimeout: 'CLUSTERSTACK_HOOK_ON_TIMEOUT',
  retryAfter: 'CLUSTERSTACK_HOOK_RETRY_AFTER',
  failurePolicy: 'CLUSTERSTACK_HOOK_FAILURE_POLICY',
  service: 'CLUSTERSTACK_RUNTIME_EXTENSION_SERVICE',
} as const;

/** Where deploy/ mounts the cert-manager Secret (tls.crt, tls.key). */
const DEFAULT_EXTENSION_CERT_DIR = '/etc/clusterstack/runtime-extension-tls';

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value.trim() : undefined;
}

/**
 * The runtime extension's settings, or undefined when it is off (no --runtime-extension-addr).
 * Throws an Error naming the flag or variable that is wrong, or the certificate file that is missing.
 */
export function resolveRuntimeExtensionSettings(
  env: NodeJS.ProcessEnv,
  flags: RuntimeExtensionFlags,
  cwd: string,
): Readonly<RuntimeExtensionSettings> | undefined {
  const pick = (flag: string | undefined, variable: string) => nonEmpty(flag) ?? nonEmpty(env[variable]);
  const addr = pick(flags.addr, ENVIRONMENT.addr);
  if (addr === undefined || addr === '0') return undefined;
  const match = /^(?:\[?([^\]]*?)\]?)?:(\d+)$/.exec(addr) ?? /^()(\d+)$/.exec(addr);
  if (!match || Number(match[2]) > 65535 || Number(match[2]) === 0)
    throw new Error(`--runtime-extension-addr (${ENVIRONMENT.addr}) must be [host]:port such as :9443, not "${addr}"`);
  const certDir = path.resolve(cwd, pick(flags.certDir, ENVIRONMENT.certDir) ?? DEFAULT_EXTENSION_CERT_DIR);
  const certFile = path.join(certDir, 'tls.crt');
  const keyFile = path.join(certDir, 'tls.key');
  for (const file of [certFile, keyFile]) {
    if (!existsSync(file))
      throw new Error(
        `the runtime extension needs ${file}: mount the serving certificate's Secret (tls.crt, tls.key) there, or point --runtime-extension-cert-dir (${ENVIRONMENT.certDir}) at it`,
      );
  }
  const timeoutMs = parseDuration(
    pick(flags.timeout, ENVIRONMENT.timeout) ?? '30m',
    `--hook-timeout / ${ENVIRONMENT.timeout}`,
  );
  const retryAfterMs = parseDuration(
    pick(flags.retryAfter, ENVIRONMENT.retryAfter) ?? '10s',
    `--hook-retry-after / ${ENVIRONMENT.retryAfter}`,
  );
  if (retryAfterMs < 1000)
    throw new Error(
      `--hook-retry-after (${ENVIRONMENT.retryAfter}) must be at least 1s: Cluster API counts in whole seconds`,
    );
  if (timeoutMs < retryAfterMs)
    throw new Error(`--hook-timeout (${ENVIRONMENT.timeout}) must be longer than --hook-retry-after`);
  const onTimeout = pick(flags.onTimeout, ENVIRONMENT.onTimeout) ?? 'proceed';
  if (onTimeout !== 'proceed' && onTimeout !== 'hold')
    throw new Error(
      `--hook-on-timeout (${ENVIRONMENT.onTimeout}) must be proceed (let the upgrade go) or hold (keep holding it), not "${onTimeout}"`,
    );
  const failurePolicy = pick(flags.failurePolicy, ENVIRONMENT.failurePolicy) ?? 'Fail';
  if (failurePolicy !== 'Fail' && failurePolicy !== 'Ignore')
    throw new Error(
      `--hook-failure-policy (${ENVIRONMENT.failurePolicy}) must be Fail or Ignore, not "${failurePolicy}"`,
    );
  const service = pick(flags.service, ENVIRONMENT.service);
  let leaderService: RuntimeExtensionSettings['leaderService'];
  if (service !== undefined) {
    const podIP = nonEmpty(env['POD_IP']);
    const namespace = nonEmpty(env['POD_NAMESPACE']);
    if (!podIP || !namespace)
      throw new Error(
        `--runtime-extension-service (${ENVIRONMENT.service}) routes Service ${service} to the leader by its pod IP: set POD_IP and POD_NAMESPACE from the downward API (status.podIP, metadata.namespace), as deploy/runtime-extension does`,
      );
    const podName = nonEmpty(env['POD_NAME']);
    leaderService = { service, namespace, podIP, ...(podName ? { podName } : {}) };
  }
  return Object.freeze({
    ...(match[1] ? { host: match[1] } : {}),
    ...(leaderService ? { leaderService } : {}),
    port: Number(match[2]),
    certFile,
    keyFile,
    timeoutMs,
    onTimeout,
    retryAfterSeconds: Math.round(retryAfterMs / 1000),
    failurePolicy,
  });
}
