// `--namespace` with the RBAC of deploy/namespaced: the controller lists and watches only that
// namespace, through a service account that has nothing but Roles (on a real API server, so RBAC
// answers 403), and still publishes, writes status and records events. The copy of deploy/namespaced
// puts its ServiceAccount in a namespace of this file's, apart from the shared server's deploy/argocd
// identity in clusterstack-system.
import { statSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aStack, condition } from '../support/controller-fixture.js';
import {
  aCluster,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';
import { auditEvents } from '../support/real-kube-api/service-account.js';
import { kustomizeDeploy, type ShippedIdentity } from '../support/shipped-identity.js';

const WATCHED = 'cluster-stacks';
/** Where this copy of deploy/namespaced keeps its ServiceAccount, ConfigMap and leader Lease. */
const CONTROLLER_NS = 'clusterstack-namespaced';
/** Each test and the setup wait for a publish of a real controller (helm, git), no more. */
const TEST_MS = 240_000;

describe('controller in one namespace', { timeout: TEST_MS }, () => {
  let fx: RealControllerFixture;
  let deploy: Record<string, any>[];
  let identity: ShippedIdentity;
  /** The audit log's size at the lease: reading starts there, not at the shared log's first file. */
  let auditFrom: number;

  beforeAll(async () => {
    fx = await startRealControllerFixture();
    auditFrom = statSync(fx.lease.auditLogFile).size;
    deploy = kustomizeDeploy('namespaced') as unknown as Record<string, any>[];
    await fx.createNamespace(WATCHED);
    await fx.createNamespace('elsewhere');
    identity = await fx.shippedIdentity({ overlay: 'namespaced', namespace: CONTROLLER_NS });
  }, TEST_MS);

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
    const started = new Date();
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(identity.kubeconfigFile);
    const runtime = await fx.start('namespaced', {
      kubeConfig,
      watchNamespace: WATCHED,
      leaderElection: {
        namespace: CONTROLLER_NS,
        name: 'clusterstack-gitops-controller',
        identity: 'namespaced',
        // Renewed every 200 ms; long enough that a loaded machine's stalls never cost the leadership.
        leaseDurationMs: 60_000,
        renewDeadlineMs: 45_000,
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
      () => fx.objects('v1', 'Event', WATCHED).some((event) => event['reason'] === 'ReleaseAppeared'),
      'the events',
    );
    expect(fx.get('ClusterStack', 'elsewhere', 'ferrol')?.['status']).toBeUndefined();
    expect(
      Object.keys(fx.published()).some((file) => file.startsWith(`management/${WATCHED}/docker-ferrol-1-30-v2/`)),
    ).toBe(true);
    expect(Object.keys(fx.published()).some((file) => file.includes('elsewhere'))).toBe(false);

    // Its requests, from the audit log (this copy's ServiceAccount, not the fixture's).
    const requests = auditEvents({ name: fx.lease.name, auditLogFile: fx.lease.auditLogFile }, auditFrom)
      .filter((event) => event.user.username === identity.user && new Date(event.requestReceivedTimestamp) >= started)
      .map((event) => ({
        method: event.verb,
        path: event.requestURI.split('?')[0]!,
        status: event.responseStatus?.code,
      }));
    expect(requests.length).toBeGreaterThan(0);
    const forbidden = requests
      .filter((request) => request.status === 403)
      .map((request) => `${request.method} ${request.path}`);
    expect(forbidden).toEqual([]);
    const resourceRequests = requests.filter(
      (request) => /^\/apis?\/[^/]+\/[^/]+\/.+/.test(request.path) && !/^\/apis\/[^/]+\/[^/]+$/.test(request.path),
    );
    const outside = resourceRequests.filter(
      (request) =>
        !request.path.includes(`/namespaces/${WATCHED}/`) &&
        !request.path.includes(`/namespaces/${CONTROLLER_NS}/leases`),
    );
    expect(outside.map((request) => `${request.method} ${request.path}`)).toEqual([]);
  });
});
