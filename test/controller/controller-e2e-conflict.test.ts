// The controller's status write meeting a 409 Conflict: on the fake API server, because a real one
// conflicts only when another writer races it, never on the one request a test chooses
// (test/support/fake-kube-api/index.ts). Everything else of the controller's end-to-end story runs
// on a real API server: controller-e2e.test.ts.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterStack } from '../../src/api/types.js';
import { copyExampleReleases } from '../support/cli.js';
import { aStack, GROUP, MERGE } from '../support/controller-fixture.js';
import { startFakeKubeApi, type FakeKubeApi } from '../support/fake-kube-api/index.js';
import { GitSandbox } from '../support/git-repos.js';
import { SteppedController } from '../support/stepped-controller.js';

const NS = 'cluster-stacks';

describe('controller, a status write that conflicts', () => {
  let api: FakeKubeApi;
  let git: GitSandbox;
  let work: string;
  let releases: string;
  let stepped: SteppedController;

  beforeAll(async () => {
    api = await startFakeKubeApi();
    git = new GitSandbox();
    work = await mkdtemp(path.join(os.tmpdir(), 'csk-conflict-'));
    releases = await copyExampleReleases();
    const kubeConfig = api.kubeConfig();
    await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    stepped = await SteppedController.start({
      kubeConfig,
      listServer: (kind) =>
        api.list(`${kind.group}/${kind.version}`, kind.kind) as { metadata?: { resourceVersion?: string } }[],
      remote: git.bareRepo('gitops'),
      work,
      releases,
    });
  });

  afterAll(async () => {
    await stepped?.stop();
    await api?.close();
    git?.cleanup();
    if (work) await rm(work, { recursive: true, force: true });
    if (releases) await rm(releases, { recursive: true, force: true });
  });

  it('retries a status write that meets a 409 conflict, on a fresh read', async () => {
    const custom = api.kubeConfig().makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      ...GROUP,
      plural: 'clusterstacks',
      namespace: NS,
      body: aStack('ferrol', NS, { versions: ['v1'] }),
    });
    expect(await stepped.round()).not.toHaveProperty('error');
    await custom.patchNamespacedCustomObject(
      { ...GROUP, plural: 'clusterstacks', namespace: NS, name: 'ferrol', body: { spec: { versions: ['v1', 'v2'] } } },
      MERGE(),
    );
    api.clearRequests();
    api.failNext({ method: 'PATCH', pathIncludes: `/clusterstacks/ferrol/status`, status: 409, reason: 'Conflict' });
    expect(await stepped.round()).not.toHaveProperty('error');
    const stack = api.get('clusterstack.x-k8s.io/v1alpha1', 'ClusterStack', NS, 'ferrol') as unknown as ClusterStack;
    expect(stack.metadata.generation).toBe(2);
    expect(stack.status?.observedGeneration).toBe(2);
    const log = api.requests
      .filter((request) => request.path.includes('/clusterstacks/ferrol'))
      .map(
        (request) => `${request.method} ${request.path.endsWith('/status') ? 'status' : 'object'} ${request.status}`,
      );
    expect(log).toEqual(['PATCH status 409', 'GET object 200', 'PATCH status 200']);
  });
});
