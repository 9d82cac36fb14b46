// Cluster API's Runtime SDK client, faked: posts real-shaped `hooks.runtime.cluster.x-k8s.io/v1alpha1`
// requests to a runtime extension over HTTPS (trusting the given CA, as CAPI trusts the
// ExtensionConfig's caBundle) and returns the status code and JSON response.
import { request } from 'node:https';

export const HOOKS_V1ALPHA1 = 'hooks.runtime.cluster.x-k8s.io/v1alpha1';

export interface HookCall {
  status: number;
  body: Record<string, unknown>;
}

/** POSTs `body` to `url + path` and parses the answer. */
export function callExtension(
  url: string,
  path: string,
  body: unknown,
  ca: string,
  method = 'POST',
): Promise<HookCall> {
  return new Promise((resolve, reject) => {
    const target = new URL(path, url);
    const text = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
    const req = request(
      target,
      { method, ca, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({
              status: res.statusCode ?? 0,
              body: raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>),
            });
          } catch (error) {
            reject(new Error(`not JSON (${res.statusCode}): ${raw.slice(0, 200)} ${(error as Error).message}`));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/**
 * The handler path Cluster API calls (GVHToPath): `/<group>/<version>/<hook lowercased>/<handler>`;
 * it registers the handler as `<handler>.<ExtensionConfig name>` and trims that suffix for the call.
 */
export function hookPath(hook: string, handler: string): string {
  return `/${HOOKS_V1ALPHA1}/${hook.toLowerCase()}/${handler}`;
}

/** A BeforeClusterUpgradeRequest as the topology controller sends it. */
export function beforeClusterUpgradeRequest(
  cluster: Record<string, unknown>,
  from: string,
  to: string,
): Record<string, unknown> {
  return {
    apiVersion: HOOKS_V1ALPHA1,
    kind: 'BeforeClusterUpgradeRequest',
    settings: {},
    cluster,
    fromKubernetesVersion: from,
    toKubernetesVersion: to,
  };
}

/** An AfterControlPlaneInitializedRequest. */
export function afterControlPlaneInitializedRequest(cluster: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: HOOKS_V1ALPHA1, kind: 'AfterControlPlaneInitializedRequest', cluster };
}
