// `--namespace` with the RBAC of deploy/namespaced: the controller lists and watches only that
// namespace, through a service account that has nothing but Roles (the fake API server enforces
// RBAC and answers 403 like a real one), and still publishes, writes status and records events.
import { spawnSync } from 'node:child_process';
import * as yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceAccountUser } from '../support/fake-kube-api/index.js';
import {
  aCluster,
  aStack,
  condition,
  startControllerFixture,
  type ControllerFixture,
} from '../support/controller-fixture.js';

const WATCHED = 'cluster-stacks';
const SA_TOKEN = 'controller-sa-token';

/** The objects `kubectl kustomize deploy/namespaced` builds: what `kubectl apply -k` would apply. */
function namespacedDeploy(): Record<string, any>[] {
  const run = spawnSync(process.env.KUBECTL ?? 'kubectl', ['kustomize', 'deploy/namespaced'], { encoding: 'utf8' });
  if (run.status !== 0)
    throw new Error(
      `kubectl kustomize deploy/namespaced failed (kubectl is needed for this test): ${run.stderr || run.error?.message}`,
    );
  return (yaml.loadAll(run.stdout) as Record<string, any>[]).filter(Boolean);
}

describe('controller in one namespace', () => {
  let fx: ControllerFixture;
  let deploy: Record<string, any>[];

  beforeAll(async () => {
    fx = await startControllerFixture({
      api: { users: { [SA_TOKEN]: serviceAccountUser('clusterstack-system', 'clusterstack-gitops-controller') } },
    });
    deploy = namespacedDeploy();
    await fx.createNamespace(WATCHED);
    await fx.createNamespace('clusterstack-system');
    await fx.createNamespace('elsewhere');
    for (const object of deploy.filter(
      (candidate) => candidate['kind'] === 'Role' || candidate['kind'] === 'RoleBinding',
    ))
      fx.api.seed(object as never);
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('ships a variant without cluster-wide rights that watches one namespace', () => {
    expect(
      deploy.filter((object) => object['kind'] === 'ClusterRole' || object['kind'] === 'ClusterRoleBinding'),
    ).toEqual([]);
    const config = deploy.find(
      (object) => object['kind'] === 'ConfigMap' && object['metadata'].name === 'clusterstack-gitops-config',
    );
    expect(config?.['data']).toMatchObject({ CLUSTERSTACK_WATCH_NAMESPACE: WATCHED });
    expect(
      deploy.find((object) => object['kind'] === 'Role' && object['metadata'].namespace === WATCHED),
    ).toBeDefined();
  });

  it('publishes, writes status and records events with only Roles, never asking outside its namespace', async () => {
    await fx.create(aStack('ferrol', WATCHED));
    await fx.create(aCluster('alpha', WATCHED, 'docker-ferrol-1-30-v2'));
    // Not its namespace: ignored, and never listed.
    await fx.create(aStack('ferrol', 'elsewhere'));
    fx.api.clearRequests();
    const runtime = await fx.start('namespaced', {
      kubeConfig: fx.api.kubeConfig(SA_TOKEN),
      watchNamespace: WATCHED,
      leaderElection: {
        namespace: 'clusterstack-system',
        name: 'clusterstack-gitops-controller',
        identity: 'namespaced',
        leaseDurationMs: 3000,
        renewDeadlineMs: 2000,
        retryPeriodMs: 200,
      },
    });
    await fx.waitFor(
      () => condition(fx.get('ClusterAddon', WATCHED, 'alpha'), 'ManifestsPublished')?.status === 'True',
      'the addons published',
    );
    expect(runtime.isLeader()).toBe(true);
    // Stack statuses come after those of the objects it owns, events after all statuses.
    await fx.waitFor(
      () => condition(fx.get('ClusterStack', WATCHED, 'ferrol'), 'Ready')?.status === 'True',
      'the stack Ready',
    );
    await fx.waitFor(
      () => fx.api.list('v1', 'Event', WATCHED).some((event) => event['reason'] === 'ReleaseAppeared'),
      'the events',
    );
    expect(fx.get('ClusterStack', 'elsewhere', 'ferrol')?.['status']).toBeUndefined();
    expect(
      Object.keys(fx.published()).some((file) => file.startsWith(`management/${WATCHED}/docker-ferrol-1-30-v2/`)),
    ).toBe(true);
    expect(Object.keys(fx.published()).some((file) => file.includes('elsewhere'))).toBe(false);

    const forbidden = fx.api.requests
      .filter((request) => request.status === 403)
      .map((request) => `${request.method} ${request.path}`);
    expect(forbidden).toEqual([]);
    const resourceRequests = fx.api.requests.filter(
      (request) => /^\/apis?\/[^/]+\/[^/]+\/.+/.test(request.path) && !/^\/apis\/[^/]+\/[^/]+$/.test(request.path),
    );
    const outside = resourceRequests.filter(
      (request) =>
        !request.path.includes(`/namespaces/${WATCHED}/`) &&
        !request.path.includes('/namespaces/clusterstack-system/leases'),
    );
    expect(outside.map((request) => `${request.method} ${request.path}`)).toEqual([]);
  });
});
