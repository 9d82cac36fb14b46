// The fake API server on a thread with the CLI's deep stack (test/controller-deep-nesting.test.ts):
// it copies and serializes objects recursively, which Node's default stack does not hold at the
// 10,000 levels Kubernetes serves. Objects come in as JSON text and are parsed here; only shallow
// answers (the kubeconfig, an object's status) go back to the test's thread.
import { parentPort } from 'node:worker_threads';
import { startFakeKubeApi } from './fake-kube-api/index.js';

type Request =
  | { id: number; seed: string }
  | { id: number; status: { apiVersion: string; kind: string; namespace: string; name: string } }
  | { id: number; close: true };

const api = await startFakeKubeApi();
parentPort!.on('message', async (request: Request) => {
  try {
    if ('seed' in request) {
      api.seed(JSON.parse(request.seed) as Parameters<typeof api.seed>[0]);
      parentPort!.postMessage({ id: request.id });
    } else if ('status' in request) {
      const { apiVersion, kind, namespace, name } = request.status;
      const object = api.get(apiVersion, kind, namespace, name) as { status?: unknown } | undefined;
      parentPort!.postMessage({ id: request.id, result: JSON.stringify(object?.status ?? null) });
    } else {
      await api.close();
      parentPort!.postMessage({ id: request.id });
      parentPort!.close();
    }
  } catch (error) {
    parentPort!.postMessage({ id: request.id, error: (error as Error).message });
  }
});
parentPort!.postMessage({ ready: api.kubeConfigYaml() });
