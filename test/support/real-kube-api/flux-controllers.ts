// Flux's source-controller and kustomize-controller, built from their Go modules, run as local
// processes against a RealKubeApi as Flux runs in its own namespace: their CRDs (from the same
// module versions) installed, RUNTIME_NAMESPACE set, one replica each (no leader election), and
// source-controller's artifact server on loopback, where kustomize-controller downloads from.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { engineBinary, engineCrdFiles } from './engine-cache.js';
import { installCrds } from './install-crds.js';
import { startLocalProcess, waitUntil, type LocalProcess } from './local-process.js';
import { distinctFreePorts, type KubeCredential, type RealKubeApi } from './real-kube-api.js';

export interface FluxControllers {
  namespace: string;
  sourceController: LocalProcess;
  kustomizeController: LocalProcess;
  /** `http://127.0.0.1:<port>`: source-controller's artifact server. */
  storageUrl: string;
  /** Ends both controllers (SIGKILL) and resolves once they are gone. */
  stop(): Promise<void>;
}

export interface FluxControllerOptions {
  /** Flux's own namespace (RUNTIME_NAMESPACE; created when missing). Default `flux-system`. */
  namespace?: string;
  /** Who the controllers act as. Default: the admin (Flux's installation binds cluster-admin). */
  credential?: KubeCredential;
  /** Extra flags for each controller (e.g. kustomize-controller's `--sops-age-secret=...`). */
  sourceControllerArgs?: string[];
  kustomizeControllerArgs?: string[];
}

/** Installs Flux's CRDs, starts both controllers and waits until both report ready (/readyz). */
export async function startFluxControllers(
  api: RealKubeApi,
  options: FluxControllerOptions = {},
): Promise<FluxControllers> {
  const namespace = options.namespace ?? 'flux-system';
  const credential = options.credential ?? api.admin;
  const sourceBinary = engineBinary('source-controller', 'source-controller');
  const kustomizeBinary = engineBinary('kustomize-controller', 'kustomize-controller');
  await installCrds(api, [...engineCrdFiles('source-controller'), ...engineCrdFiles('kustomize-controller')]);
  const created = await api.admin.client.request('POST', '/api/v1/namespaces', {
    body: { metadata: { name: namespace } },
  });
  if (created.status !== 201 && created.status !== 409)
    throw new Error(`creating namespace ${namespace}: ${created.status} ${created.text}`);

  const [storagePort, sourceMetrics, sourceHealth, kustomizeMetrics, kustomizeHealth] = await distinctFreePorts(5);
  const storage = path.join(api.dir, 'flux-storage');
  mkdirSync(storage, { recursive: true });
  const env = { ...process.env, KUBECONFIG: credential.kubeconfigFile, RUNTIME_NAMESPACE: namespace };
  const common = (metrics: number, health: number): string[] => [
    `--metrics-addr=127.0.0.1:${metrics}`,
    `--health-addr=127.0.0.1:${health}`,
    '--enable-leader-election=false',
    '--watch-all-namespaces=true',
    '--log-encoding=console',
  ];
  const sourceController = startLocalProcess(
    `source-controller (${api.name})`,
    sourceBinary,
    [
      ...common(sourceMetrics!, sourceHealth!),
      `--storage-path=${storage}`,
      `--storage-addr=127.0.0.1:${storagePort}`,
      `--storage-adv-addr=127.0.0.1:${storagePort}`,
      ...(options.sourceControllerArgs ?? []),
    ],
    path.join(api.dir, 'source-controller.log'),
    env,
  );
  const kustomizeController = startLocalProcess(
    `kustomize-controller (${api.name})`,
    kustomizeBinary,
    [...common(kustomizeMetrics!, kustomizeHealth!), ...(options.kustomizeControllerArgs ?? [])],
    path.join(api.dir, 'kustomize-controller.log'),
    env,
  );
  // Killed, not asked to stop: on SIGTERM kustomize-controller first finishes a running `*Class`
  // stage wait, up to 60 s (fluxcd/pkg/ssa waits without a context it could cancel), so a file
  // that left a fresh class unreported (real-flux-controller's SOPS release) spent the 10 s before
  // SIGKILL in its teardown. A test's controllers have nothing to hand over.
  const stop = async (): Promise<void> => {
    await Promise.all([kustomizeController.kill(), sourceController.kill()]);
  };
  try {
    for (const [process, port] of [
      [sourceController, sourceHealth],
      [kustomizeController, kustomizeHealth],
    ] as const) {
      await waitUntil(
        `${process.name} /readyz`,
        async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok,
        [process, ...api.processes],
        120_000,
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { namespace, sourceController, kustomizeController, storageUrl: `http://127.0.0.1:${storagePort}`, stop };
}
