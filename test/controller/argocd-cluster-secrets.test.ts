// Argo CD cluster Secrets kept from CAPI's kubeconfig Secrets, on a real API server as deploy/argocd's
// ServiceAccount (its Role in `argocd` is what lets it write there).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createKubeClient } from '../../src/controller/runtime/kube-client.js';
import { ArgoClusterSecrets } from '../../src/controller/reconcile/argocd-cluster-secrets.js';
import { startRealControllerFixture, type RealControllerFixture } from '../support/real-controller-fixture.js';
import { recordingLogger } from '../support/test-logger.js';

const KUBECONFIG = `apiVersion: v1
kind: Config
current-context: alpha
clusters: [{ name: alpha, cluster: { server: "https://alpha.example.test:6443", certificate-authority-data: Q0E= } }]
users: [{ name: alpha, user: { token: s3cret-token-value } }]
contexts: [{ name: alpha, context: { cluster: alpha, user: alpha } }]
`;

describe('ArgoClusterSecrets', () => {
  let fx: RealControllerFixture;
  beforeEach(async () => {
    fx = await startRealControllerFixture();
  });
  afterEach(async () => {
    await fx?.cleanup();
  });
  const stored = async (name: string) => {
    const response = await fx.admin.request('GET', `/api/v1/namespaces/argocd/secrets/${name}`);
    return response.status === 404 ? undefined : (response.body as { metadata: { labels?: object }; data: object });
  };

  it('writes one Secret per cluster from its kubeconfig, leaves it alone when unchanged, removes it with the cluster, and never logs it', async () => {
    for (const name of ['argocd', 'workloads']) await fx.createNamespace(name);
    await fx.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'alpha-kubeconfig', namespace: 'workloads' },
      stringData: { value: KUBECONFIG },
    });
    const { logger, entries } = recordingLogger();
    let now = 0;
    const secrets = new ArgoClusterSecrets({
      store: createKubeClient({ kubeConfig: fx.controllerKubeConfig, identity: 'test' }),
      namespace: 'argocd',
      logger,
      now: () => now,
    });

    const first = await secrets.reconcile([
      { namespace: 'workloads', name: 'alpha' },
      { namespace: 'workloads', name: 'bravo' },
    ]);
    expect(first).toMatchObject({
      written: ['argocd/cluster-workloads-alpha'],
      waiting: ['workloads/bravo'],
      errors: [],
    });
    const secret = (await stored('cluster-workloads-alpha'))!;
    expect(secret.metadata.labels).toMatchObject({ 'argocd.argoproj.io/secret-type': 'cluster' });
    const data = secret.data as Record<string, string>;
    expect(Buffer.from(data['server']!, 'base64').toString()).toBe('https://alpha.example.test:6443');
    expect(JSON.parse(Buffer.from(data['config']!, 'base64').toString())).toEqual({
      bearerToken: 's3cret-token-value',
      tlsClientConfig: { insecure: false, caData: 'Q0E=' },
    });

    now = 10 * 60_000;
    const since = new Date();
    expect((await secrets.reconcile([{ namespace: 'workloads', name: 'alpha' }])).written).toEqual([]);
    const writes = fx.controllerRequests(since).filter((event) => !['get', 'list', 'watch'].includes(event.verb));
    expect(writes).toEqual([]);

    expect((await secrets.reconcile([])).deleted).toEqual(['argocd/cluster-workloads-alpha']);
    expect(await stored('cluster-workloads-alpha')).toBeUndefined();
    expect(entries.map((entry) => `${entry.message} ${JSON.stringify(entry.fields)}`).join('\n')).not.toContain(
      's3cret',
    );
  });
});
