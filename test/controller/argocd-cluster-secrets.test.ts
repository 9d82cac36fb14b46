// Argo CD cluster Secrets kept from CAPI's kubeconfig Secrets, through the fake API server.
import { CoreV1Api } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createKubeClient } from '../../src/controller/runtime/kube-client.js';
import { ArgoClusterSecrets } from '../../src/controller/reconcile/argocd-cluster-secrets.js';
import { startFakeKubeApi, type FakeKubeApi } from '../support/fake-kube-api/index.js';
import { recordingLogger } from '../support/test-logger.js';

const KUBECONFIG = `apiVersion: v1
kind: Config
current-context: alpha
clusters: [{ name: alpha, cluster: { server: "https://alpha.example.test:6443", certificate-authority-data: Q0E= } }]
users: [{ name: alpha, user: { token: s3cret-token-value } }]
contexts: [{ name: alpha, context: { cluster: alpha, user: alpha } }]
`;

describe('ArgoClusterSecrets', () => {
  let api: FakeKubeApi;
  beforeEach(async () => {
    api = await startFakeKubeApi();
  });
  afterEach(async () => {
    await api.close();
  });

  it('writes one Secret per cluster from its kubeconfig, leaves it alone when unchanged, removes it with the cluster, and never logs it', async () => {
    const kubeConfig = api.kubeConfig();
    const core = kubeConfig.makeApiClient(CoreV1Api);
    for (const name of ['argocd', 'workloads']) await core.createNamespace({ body: { metadata: { name } } });
    await core.createNamespacedSecret({
      namespace: 'workloads',
      body: { metadata: { name: 'alpha-kubeconfig' }, stringData: { value: KUBECONFIG } },
    });
    const { logger, entries } = recordingLogger();
    let now = 0;
    const secrets = new ArgoClusterSecrets({
      store: createKubeClient({ kubeConfig, identity: 'test' }),
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
    const stored = api.get('v1', 'Secret', 'argocd', 'cluster-workloads-alpha')!;
    expect(stored.metadata.labels).toMatchObject({ 'argocd.argoproj.io/secret-type': 'cluster' });
    const data = stored['data'] as Record<string, string>;
    expect(Buffer.from(data['server']!, 'base64').toString()).toBe('https://alpha.example.test:6443');
    expect(JSON.parse(Buffer.from(data['config']!, 'base64').toString())).toEqual({
      bearerToken: 's3cret-token-value',
      tlsClientConfig: { insecure: false, caData: 'Q0E=' },
    });

    now = 10 * 60_000;
    api.clearRequests();
    expect((await secrets.reconcile([{ namespace: 'workloads', name: 'alpha' }])).written).toEqual([]);
    expect(api.requests.filter((request) => request.method !== 'GET')).toEqual([]);

    expect((await secrets.reconcile([])).deleted).toEqual(['argocd/cluster-workloads-alpha']);
    expect(api.get('v1', 'Secret', 'argocd', 'cluster-workloads-alpha')).toBeUndefined();
    expect(entries.map((entry) => `${entry.message} ${JSON.stringify(entry.fields)}`).join('\n')).not.toContain(
      's3cret',
    );
  });
});
