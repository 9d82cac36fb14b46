// The real kube-controller-manager against a RealKubeApi: garbage collection (ownerReferences),
// namespace deletion, ServiceAccount tokens and the rest of the built-in controllers, as a cluster
// runs them. It authenticates as system:kube-controller-manager, whom the API server's bootstrap
// RBAC grants what it needs, and uses per-controller ServiceAccount credentials as clusters do.
import { request } from 'node:https';
import path from 'node:path';
import { engineBinary } from './engine-cache.js';
import { startLocalProcess, waitUntil, type LocalProcess } from './local-process.js';
import { distinctFreePorts, type RealKubeApi } from './real-kube-api.js';

export interface KubeControllerManager {
  process: LocalProcess;
  /** Its own serving endpoint (`https://127.0.0.1:<port>`, self-signed): /healthz answers there. */
  healthz: string;
  /** Kills it (SIGKILL) and resolves once it is gone. */
  stop(): Promise<void>;
}

export interface ControllerManagerOptions {
  /** kube-controller-manager's --controllers (default: `*`, every controller on by default). */
  controllers?: string[];
  /** Leader election (default off: one replica). */
  leaderElect?: boolean;
}

/** Starts kube-controller-manager for `api` and waits until its /healthz answers ok; stop it before the API server. */
export async function startKubeControllerManager(
  api: RealKubeApi,
  options: ControllerManagerOptions = {},
): Promise<KubeControllerManager> {
  const binary = engineBinary('kubernetes', 'kube-controller-manager');
  const credential = api.credential('system:kube-controller-manager');
  const [port] = await distinctFreePorts(1);
  const process = startLocalProcess(
    `kube-controller-manager (${api.name})`,
    binary,
    [
      `--kubeconfig=${credential.kubeconfigFile}`,
      `--authentication-kubeconfig=${credential.kubeconfigFile}`,
      `--authorization-kubeconfig=${credential.kubeconfigFile}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--cert-dir=${path.join(api.dir, 'controller-manager-certs')}`,
      `--leader-elect=${options.leaderElect === true}`,
      `--controllers=${(options.controllers ?? ['*']).join(',')}`,
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${api.pki.serviceAccountKeyFile}`,
      `--root-ca-file=${api.pki.caFile}`,
      '--profiling=false',
    ],
    path.join(api.dir, 'kube-controller-manager.log'),
  );
  const healthz = `https://127.0.0.1:${port}/healthz`;
  try {
    await waitUntil(
      `kube-controller-manager (${api.name}) /healthz`,
      async () => (await selfSignedGet(healthz)) === 'ok',
      [process, ...api.processes],
      120_000,
    );
  } catch (error) {
    await process.stop();
    throw error;
  }
  // Killed: nothing it holds needs to outlive it, and its graceful stop took a second.
  return { process, healthz, stop: () => process.kill() };
}

/** GET over HTTPS to a loopback server with its own self-signed certificate; the body, or '' on any error status. */
function selfSignedGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { rejectUnauthorized: false }, (incoming) => {
      let body = '';
      incoming.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      incoming.on('end', () => resolve(incoming.statusCode === 200 ? body : ''));
      incoming.on('error', reject);
    });
    outgoing.setTimeout(5_000, () => outgoing.destroy(new Error(`${url}: no answer in 5s`)));
    outgoing.on('error', reject);
    outgoing.end();
  });
}
