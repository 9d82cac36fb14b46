// The controller's scheduler configuration as a mounted ConfigMap: the file changes through
// kubelet's symlink swap (`..data`), and the controller reads it again, schedules with the new
// mappings, keeps the previous configuration when the new file is not valid (a Warning event on
// the requests), and keeps the published clusters when it starts with a file that is not valid.
// Also: a request re-created with another purpose keeps its cluster while the rest publishes. Real
// helm and git, on a leased real API server with openMCP's own ClusterRequest CRD (from the
// openmcp-operator API module the engine cache holds), the controller as deploy/'s ServiceAccount.
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { SchedulerConfigFile } from '../../src/controller/reconcile/scheduler-config-file.js';
import type { ControllerRuntime } from '../../src/controller/run-controller.js';
import { aStack } from '../support/controller-fixture.js';
import { engineCrd } from '../support/engine-crd.js';
import {
  aCluster,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';

const NS = 'cluster-stacks';
const TEAM = 'team-a';
const OPENMCP = { group: 'clusters.openmcp.cloud', version: 'v1alpha1' } as const;
const CLUSTER_REQUEST = { apiVersion: 'clusters.openmcp.cloud/v1alpha1', kind: 'ClusterRequest' } as const;
/** The setup and each test wait for a publish or two of a real controller (helm, git), no more. */
const TEST_MS = 240_000;
const PROFILE = 'cluster-stacks.docker.ferrol-1-30';

const WORKLOAD = `scheduler:
  purposeMappings:
    workload:
      tenancyCount: 2
      template:
        spec: {profile: ${PROFILE}, tenancy: Shared}
`;
const gaming = (profile: string) => `${WORKLOAD}    gaming:
      template:
        spec: {profile: ${profile}, tenancy: Exclusive}
`;

/** A directory laid out as kubelet mounts a ConfigMap, changed the way kubelet changes it. */
class ConfigMapVolume {
  private generation = 0;
  private current: string | undefined;
  constructor(readonly dir: string) {}

  get file(): string {
    return path.join(this.dir, 'scheduler.yaml');
  }

  /** Writes a new timestamped directory, points `..data_tmp` at it, renames that over `..data`. */
  async write(text: string): Promise<void> {
    this.generation += 1;
    const next = `..2025_01_01_00_00_${String(this.generation).padStart(2, '0')}.${process.pid}`;
    await mkdir(path.join(this.dir, next));
    await writeFile(path.join(this.dir, next, 'scheduler.yaml'), text);
    await symlink(next, path.join(this.dir, '..data_tmp'));
    await rename(path.join(this.dir, '..data_tmp'), path.join(this.dir, '..data'));
    if (this.current) await rm(path.join(this.dir, this.current), { recursive: true, force: true });
    else await symlink(path.join('..data', 'scheduler.yaml'), this.file);
    this.current = next;
  }
}

function request(name: string, purpose: string): KubeObject {
  return {
    ...CLUSTER_REQUEST,
    metadata: { name, namespace: TEAM },
    spec: { purpose },
  };
}

describe('controller with a scheduler configuration file that changes', { timeout: TEST_MS }, () => {
  let fx: RealControllerFixture;
  let volume: ConfigMapVolume;
  let runtime: ControllerRuntime;
  const status = (name: string) =>
    (
      fx.object(CLUSTER_REQUEST.apiVersion, CLUSTER_REQUEST.kind, TEAM, name) as
        { status?: Record<string, any> } | undefined
    )?.status;
  const scheduled = (name: string) => status(name)?.conditions?.find((c: { type: string }) => c.type === 'Scheduled');
  const treeFiles = (dir: string): string[] => {
    try {
      return fx.git.git(fx.remote, 'ls-tree', '-r', '--name-only', 'refs/heads/main', dir).split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };
  const requestedClusters = () =>
    treeFiles('management/_cluster-requests/clusters').filter((file) => !file.endsWith('kustomization.yaml'));
  const events = (reason: string) =>
    fx.objects('v1', 'Event', TEAM).filter((event) => event['reason'] === reason) as (KubeObject & {
      message?: string;
      note?: string;
      regarding?: { name: string };
      involvedObject?: { name: string };
    })[];
  const createRequest = (name: string, purpose: string) => fx.create(request(name, purpose));
  const open = (file: string) =>
    SchedulerConfigFile.open({ file, cwd: '/', logger: pino({ level: 'silent' }), debounceMs: 50, pollMs: 600_000 });

  beforeAll(async () => {
    fx = await startRealControllerFixture({
      install: [engineCrd('openmcp', 'clusterrequests.clusters.openmcp.cloud') as unknown as KubeObject],
      mirror: [CLUSTER_REQUEST],
    });
    volume = new ConfigMapVolume(await mkdtemp(path.join(os.tmpdir(), 'csk-configmap-')));
    await volume.write(WORKLOAD);
    await fx.createNamespace(NS);
    await fx.createNamespace(TEAM);
    await fx.create(aStack('docker-ferrol-1-30', NS));
    await fx.create(aCluster('alpha', NS, 'docker-ferrol-1-30-v2'));
    for (const [name, purpose] of [
      ['web', 'workload'],
      ['batch', 'workload'],
      ['game', 'gaming'],
    ] as const)
      await createRequest(name, purpose);
    // The poll is ten minutes: only the watch of the directory can see the swaps below in time.
    runtime = await fx.start('watching', { scheduler: await open(volume.file) });
    await fx.waitFor(
      () => status('web')?.phase === 'Granted' && scheduled('game')?.reason === 'UnknownPurpose',
      'the first statuses',
    );
  }, TEST_MS);

  afterAll(async () => {
    await fx?.cleanup();
    if (volume) await rm(volume.dir, { recursive: true, force: true });
  });

  it('reads the file again after kubelet’s ..data swap: a purpose mapped to an unknown profile leaves only its request Pending', async () => {
    await volume.write(gaming('cluster-stacks.docker.ferrol-1-31'));
    await fx.waitFor(
      () => scheduled('game')?.reason === 'UnknownProfile',
      'game to be Pending for its unknown profile',
    );
    expect(scheduled('game')!.message).toContain('mapped to ClusterProfile "cluster-stacks.docker.ferrol-1-31"');
    expect(status('web')!.phase).toBe('Granted');
    expect(requestedClusters()).toHaveLength(1);
  });

  it('keeps the configuration in effect when the new file is not valid, and says so on the requests', async () => {
    await volume.write('scheduler: {purposeMappings: [\n');
    await fx.waitFor(() => events('SchedulerConfigInvalid').length > 0, 'a SchedulerConfigInvalid event');
    const event = events('SchedulerConfigInvalid')[0]!;
    expect(event.type).toBe('Warning');
    expect(event.note ?? event.message).toMatch(
      /scheduler\.yaml changed but is not valid \(.*not valid YAML.*\); the configuration read before \(sha256:[0-9a-f]{64}\) stays in effect/,
    );
    // Still scheduling with the previous mappings: a new workload request is granted.
    await createRequest('api', 'workload');
    await fx.waitFor(() => status('api')?.phase === 'Granted', 'api to be granted under the configuration in effect');
    expect(scheduled('game')!.reason).toBe('UnknownProfile');
  });

  it('takes a valid file again: the mapped purpose is granted', async () => {
    await volume.write(gaming(PROFILE));
    await fx.waitFor(() => status('game')?.phase === 'Granted', 'game to be granted');
    expect(status('game')!.cluster.name).toMatch(/^gaming-[0-9a-f]{5}$/);
    expect(requestedClusters()).toHaveLength(3);
  });

  it('keeps the cluster of a request whose purpose changed, reports it, and publishes the rest', async () => {
    const cluster = status('web')!.cluster;
    // openMCP's API refuses changing a request's spec in place ...
    const changed = await fx.admin.request(
      'PATCH',
      `/apis/${OPENMCP.group}/${OPENMCP.version}/namespaces/${TEAM}/clusterrequests/web`,
      { contentType: 'application/merge-patch+json', body: { spec: { purpose: 'gaming' } } },
    );
    expect(changed.status).toBe(422);
    expect(changed.body?.message).toContain('spec is immutable');
    // ... so the purpose changes the one way it can: the request is deleted and created again with
    // another purpose while the controller is down. The one started next knows from Git what web had.
    await runtime.stop();
    await fx.custom.deleteNamespacedCustomObject({
      ...OPENMCP,
      plural: 'clusterrequests',
      namespace: TEAM,
      name: 'web',
    });
    await fx.waitFor(() => status('web') === undefined, 'web deleted');
    await createRequest('web', 'gaming');
    await createRequest('late', 'gaming');
    runtime = await fx.start('re-created', { scheduler: await open(volume.file) });
    await fx.waitFor(
      () => scheduled('web')?.reason === 'PurposeChanged' && status('late')?.phase === 'Granted',
      'web refused and late granted',
    );
    expect(status('web')).toMatchObject({
      phase: 'Pending',
      cluster,
      conditions: [
        expect.objectContaining({
          type: 'Scheduled',
          status: 'False',
          reason: 'PurposeChanged',
          message: expect.stringContaining(`was "workload" and is now "gaming"`),
        }),
      ],
    });
    expect(requestedClusters()).toContain(
      `management/_cluster-requests/clusters/${cluster.namespace}/cluster-${cluster.name}.yaml`,
    );
    expect(requestedClusters()).toHaveLength(4);
  });

  it('started with a file that is not valid, keeps the published clusters and reports every request Pending', async () => {
    const published = requestedClusters();
    const cluster = status('batch')!.cluster;
    await runtime.stop();
    await volume.write('scheduler:\n  strategy: RoundRobin\n');
    await fx.start('refused', { scheduler: await open(volume.file) });
    await fx.waitFor(
      () => scheduled('batch')?.reason === 'SchedulerConfigInvalid',
      'batch to report the configuration',
    );
    expect(status('batch')).toMatchObject({ phase: 'Pending', cluster });
    expect(scheduled('batch')!.message).toMatch(/strategy: must be one of Balanced, Random, Simple, not "RoundRobin"/);
    expect(requestedClusters()).toEqual(published);
    // The profiles still follow the stacks.
    expect(treeFiles('management/_cluster-requests/profiles')).toContain(
      `management/_cluster-requests/profiles/clusterprofile-${PROFILE}.yaml`,
    );
  });
});
