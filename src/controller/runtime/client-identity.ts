// Who we are on the wire: every request the controller sends carries a `clusterstack-gitops/<version>`
// User-Agent and every write names `clusterstack-gitops` as its field manager, so audit logs and
// managedFields tell our writes apart from any other client's (client-node's default is `node-fetch`).
import type { KubeConfig } from '@kubernetes/client-node';
import { toolVersion } from '../../pipeline/tool-identity.js';

/** The field manager of every create, update and patch the controller sends. */
export const FIELD_MANAGER = 'clusterstack-gitops';

/** `clusterstack-gitops/<version>`: the User-Agent of every request. */
export const USER_AGENT = `${FIELD_MANAGER}/${toolVersion()}`;

const IDENTIFIED = Symbol('clusterstack-gitops identified');

/** The (private) hook of KubeConfig that every client-node request path goes through for its headers. */
interface HeaderHook {
  applyOptions(opts: { headers?: Record<string, unknown> }): Promise<void>;
  [IDENTIFIED]?: true;
}

/**
 * Makes every request sent with `kubeConfig` (API clients, informers and watches alike) carry our
 * User-Agent. Both of client-node's request paths (applySecurityAuthentication for the generated
 * APIs, applyToFetchOptions for watches) copy the headers `applyOptions` leaves, so that one hook
 * covers them. Idempotent; returns the same KubeConfig.
 */
export function identifyClient(kubeConfig: KubeConfig): KubeConfig {
  const hook = kubeConfig as unknown as HeaderHook;
  if (hook[IDENTIFIED]) return kubeConfig;
  if (typeof hook.applyOptions !== 'function')
    throw new Error('@kubernetes/client-node changed: KubeConfig.applyOptions is gone; update client-identity.ts');
  const original = hook.applyOptions.bind(kubeConfig);
  hook.applyOptions = async (opts) => {
    await original(opts);
    opts.headers = { ...opts.headers, 'User-Agent': USER_AGENT };
  };
  hook[IDENTIFIED] = true;
  return kubeConfig;
}
