// The controller with a scheduler configuration: ClusterRequests watched on a leased real API server
// (openMCP's own CRD, from the openmcp-operator API module the engine cache holds), scheduled in the
// publish (real helm and git), their status written through the status subresource in openMCP's
// shape (the CRD's schema and CEL rules check it), and profiles and generated Clusters kept current
// as requests and releases come and go. The controller runs as deploy/'s ServiceAccount.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { parseSchedulerConfig } from '../../src/cluster-requests/scheduler-config.js';
import { aStack, MERGE } from '../support/controller-fixture.js';
import { engineCrd } from '../support/engine-crd.js';
import {
  aCluster,
  CAPI_V1BETA2,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';

const NS = 'cluster-stacks';
const TEAM = 'team-a';
const OPENMCP = { group: 'clusters.openmcp.cloud', version: 'v1alpha1' } as const;
const CLUSTER_REQUEST = { apiVersion: 'clusters.openmcp.cloud/v1alpha1', kind: 'ClusterRequest' } as const;
/** The setup and each test wait for a publish or two of a real controller (helm, git), no more. */
const TEST_MS = 240_000;

const SCHEDULER = parseSchedulerConfig(
  `purposeMappings:
  workload:
    tenancyCount: 2
    template:
      spec: {profile: cluster-stacks.docker.ferrol-1-30, tenancy: Shared}
`,
  'scheduler.yaml',
);

function request(name: string, purpose: string): KubeObject {
  return {
    ...CLUSTER_REQUEST,
    metadata: { name, namespace: TEAM },
    spec: { purpose },
  };
}

describe('controller with --scheduler-config', { timeout: TEST_MS }, () => {
  let fx: RealControllerFixture;
  const status = (name: string) =>
    (
      fx.object(CLUSTER_REQUEST.apiVersion, CLUSTER_REQUEST.kind, TEAM, name) as
        { status?: Record<string, any> } | undefined
    )?.status;
  // One git command per look (the branch moves while the controller publishes).
  const treeFiles = (dir: string): string[] => {
    try {
      return fx.git.git(fx.remote, 'ls-tree', '-r', '--name-only', 'refs/heads/main', dir).split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };
  const fileAt = (file: string): string => {
    try {
      return fx.git.git(fx.remote, 'show', `refs/heads/main:${file}`);
    } catch {
      return '';
    }
  };
  const requestedClusters = () =>
    treeFiles('management/_cluster-requests/clusters').filter((file) => !file.endsWith('kustomization.yaml'));

  beforeAll(async () => {
    fx = await startRealControllerFixture({
      install: [engineCrd('openmcp', 'clusterrequests.clusters.openmcp.cloud') as unknown as KubeObject],
      mirror: [CLUSTER_REQUEST],
    });
    await fx.createNamespace(NS);
    await fx.createNamespace(TEAM);
    await fx.create(aStack('docker-ferrol-1-30', NS));
    await fx.create(aCluster('alpha', NS, 'docker-ferrol-1-30-v2'));
    for (const [name, purpose] of [
      ['web', 'workload'],
      ['batch', 'workload'],
      ['game', 'gaming'],
    ] as const)
      await fx.create(request(name, purpose));
    await fx.start('requests', { scheduler: SCHEDULER });
    await fx.waitFor(
      () => status('web')?.phase === 'Granted' && status('game')?.phase === 'Pending',
      'the requests’ statuses',
    );
  }, TEST_MS);

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('writes Granted with the cluster for scheduled requests, in openMCP’s status shape', () => {
    const web = status('web')!;
    const batch = status('batch')!;
    expect(web.cluster).toEqual({ name: expect.stringMatching(/^workload-[0-9a-f]{5}$/), namespace: TEAM });
    expect(batch.cluster).toEqual(web.cluster);
    expect(web.observedGeneration).toBe(1);
    expect(web.conditions).toEqual([
      expect.objectContaining({
        type: 'Scheduled',
        status: 'True',
        reason: 'Scheduled',
        lastTransitionTime: expect.any(String),
      }),
    ]);
    expect(requestedClusters()).toEqual([
      `management/_cluster-requests/clusters/${TEAM}/cluster-${web.cluster.name}.yaml`,
    ]);
    // Only the status subresource was written, as openMCP's own scheduler writes it.
    const writes = fx
      .controllerRequests()
      .filter((event) => event.objectRef?.resource === 'clusterrequests' && ['update', 'patch'].includes(event.verb));
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.filter((event) => event.objectRef?.subresource !== 'status')).toEqual([]);
  });

  it('writes Pending with the reason for a purpose nobody mapped', () => {
    const game = status('game')!;
    expect(game.cluster).toBeUndefined();
    expect(game.conditions).toEqual([
      expect.objectContaining({
        type: 'Scheduled',
        status: 'False',
        reason: 'UnknownPurpose',
        message: expect.stringContaining('purpose "gaming"'),
      }),
    ]);
  });

  // The two changes below are independent (a Cluster's class; requests deleted): they run at the
  // same time, and may go out in one publish or two.
  it.concurrent('publishes the stack’s ClusterProfile and keeps it current as releases come and go', async () => {
    const profile = 'management/_cluster-requests/profiles/clusterprofile-cluster-stacks.docker.ferrol-1-30.yaml';
    expect(fileAt(profile)).toContain('version: 1.30.4');
    // alpha moves to v1: v1 (Kubernetes 1.30.2) is now kept only because alpha uses it.
    await fx.custom.patchNamespacedCustomObject(
      {
        ...CAPI_V1BETA2,
        plural: 'clusters',
        namespace: NS,
        name: 'alpha',
        body: { spec: { topology: { classRef: { name: 'docker-ferrol-1-30-v1' }, version: 'v1.30.2' } } },
      },
      MERGE(),
    );
    await fx.waitFor(() => fileAt(profile).includes('1.30.2'), 'the profile to list 1.30.2');
    expect(fileAt(profile)).toMatch(/deprecated: true\n\s+version: 1\.30\.2/);
  });

  it.concurrent('removes the generated Cluster in the publish where its last request is deleted', async () => {
    const before = requestedClusters();
    expect(before).toHaveLength(1);
    for (const name of ['web', 'batch'])
      await fx.custom.deleteNamespacedCustomObject({ ...OPENMCP, plural: 'clusterrequests', namespace: TEAM, name });
    await fx.waitFor(() => requestedClusters().length === 0, 'the generated Cluster to leave the tree');
    expect(status('game')?.phase).toBe('Pending');
  });
});
