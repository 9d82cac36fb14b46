// Reads the objects a clusteraddon.yaml condition names from a workload cluster, through the
// kubeconfig Cluster API writes for it (Secret `<cluster>-kubeconfig`, key `value`) — the same
// credentials the cluster-stack-operator uses. Nothing read here is logged; a missing object is
// `undefined` (the condition then waits for it), any other failure throws with the object named.
// Every request, discovery included, carries the caller's AbortSignal: when the hook's deadline
// passes, connections to a workload API server that never answers are closed, not left open.
import {
  createConfiguration,
  KubeConfig,
  KubernetesObjectApi,
  ServerConfiguration,
  type RequestContext,
} from '@kubernetes/client-node';
import type { WaitConditionObject } from '../../core/addon-wait-conditions.js';
import { describeConditionObject } from '../../core/addon-wait-conditions.js';
import type { SecretStore } from '../runtime/kube-client.js';
import type { WorkloadObjectReader } from './lifecycle-hooks.js';

/** An object client over the kubeconfig whose every request is aborted by `signal`. */
function objectApi(kubeConfig: KubeConfig, signal: AbortSignal, source: string): KubernetesObjectApi {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error(`the kubeconfig in ${source} names no current cluster with a server`);
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(server, {}),
    authMethods: { default: kubeConfig },
    promiseMiddleware: [
      {
        pre: async (context: RequestContext) => (context.setSignal(signal), context),
        post: async (response) => response,
      },
    ],
  });
  return new DefaultNamespaceObjectApi(configuration, kubeConfig);
}

/** As `KubernetesObjectApi.makeApiClient` would make it: unnamespaced objects go to the context's namespace. */
class DefaultNamespaceObjectApi extends KubernetesObjectApi {
  constructor(configuration: ConstructorParameters<typeof KubernetesObjectApi>[0], kubeConfig: KubeConfig) {
    super(configuration);
    this.setDefaultNamespace(kubeConfig);
  }
}

function statusCode(error: unknown): number | undefined {
  const code =
    (error as { code?: unknown; statusCode?: unknown }).code ?? (error as { statusCode?: unknown }).statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** A reader over the workload clusters' kubeconfig Secrets in the management cluster. */
export function workloadObjectReader(secrets: Pick<SecretStore, 'readSecret'>): WorkloadObjectReader {
  return async (cluster, objects: WaitConditionObject[], signal) => {
    const secretName = `${cluster.name}-kubeconfig`;
    const secret = await secrets.readSecret(cluster.namespace, secretName);
    const encoded = secret?.data?.['value'];
    if (!encoded)
      throw new Error(
        `Secret ${cluster.namespace}/${secretName} (key value) does not exist yet; Cluster API writes it once the control plane is up`,
      );
    const kubeConfig = new KubeConfig();
    try {
      kubeConfig.loadFromString(Buffer.from(encoded, 'base64').toString('utf8'));
    } catch {
      throw new Error(`Secret ${cluster.namespace}/${secretName} does not hold a readable kubeconfig in key value`);
    }
    const api = objectApi(kubeConfig, signal, `Secret ${cluster.namespace}/${secretName}`);
    const result = new Map<string, Record<string, unknown> | undefined>();
    for (const object of objects) {
      try {
        const read = await api.read({
          apiVersion: object.apiVersion,
          kind: object.kind,
          metadata: { name: object.name, ...(object.namespace ? { namespace: object.namespace } : {}) },
        });
        // A plain JSON shape, as the operator's unstructured content (dates as strings, no class instances).
        result.set(object.key, JSON.parse(JSON.stringify(read)) as Record<string, unknown>);
      } catch (error) {
        if (statusCode(error) === 404) {
          result.set(object.key, undefined);
          continue;
        }
        throw new Error(
          `reading ${describeConditionObject(object)} from the workload cluster of ${cluster.namespace}/${cluster.name} failed: ${(error as Error).message.split('\n')[0]}`,
          { cause: error },
        );
      }
    }
    return result;
  };
}
