// The controller end to end on a real kube-apiserver (leased from the run's broker: our CRDs,
// Cluster API's and Flux's installed, kube-controller-manager collecting garbage), as the
// ServiceAccount of deploy/flux with exactly that overlay's RBAC (a 403 fails the file), through the
// real client-node, real helm, a real Git remote (bare repository) and the quickstart's local
// release source. Reconciles are driven one at a time (test/support/stepped-controller.ts), each
// after the informer caches hold what the server holds, so each round's commit and writes can be
// asserted. The one case that needs a fault only the fake API server makes (a 409 on a chosen
// status patch) is controller-e2e-conflict.test.ts.
import { statSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterAddon, ClusterStack, ClusterStackRelease, Condition, KubeObject } from '../../src/api/types.js';
import { aStack, readyKustomization } from '../support/controller-fixture.js';
import { auditEvents, describeAuditEvent } from '../support/real-kube-api/service-account.js';
import { waitUntil } from '../support/real-kube-api/local-process.js';
import {
  aCluster,
  CAPI_V1BETA2,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';
import type { ShippedIdentity } from '../support/shipped-identity.js';
import { SteppedController } from '../support/stepped-controller.js';

const NS = 'cluster-stacks';
/** deploy/flux's copy of the controller's namespace (its own ServiceAccount and ClusterRoles). */
const CONTROLLER_NS = 'csk-e2e-controller';
const OURS = '/apis/clusterstack.x-k8s.io/v1alpha1';
const CLUSTERS = `/apis/${CAPI_V1BETA2.group}/${CAPI_V1BETA2.version}/namespaces/${NS}/clusters`;
/** Each round renders with helm and pushes to Git; a case runs a few, slower under load. */
const TEST_MS = 300_000;

/** The admission policy that refuses the controller's create of one ClusterStackRelease, and what it says. */
const REFUSED_RELEASE = 'docker-ferrol-1-30-v3';
const REFUSAL = 'refused by the admission policy of this test';
const POLICY = 'csk-e2e-refuse-release';

/** A condition of one of our objects as the API server returned it (typed, unlike the fixture's). */
function condition(object: { status?: { conditions?: Condition[] } } | undefined, type: string): Condition | undefined {
  return object?.status?.conditions?.find((c) => c.type === type);
}

describe('controller, end to end', { timeout: TEST_MS }, () => {
  let fx: RealControllerFixture;
  let identity: ShippedIdentity;
  let stepped: SteppedController;
  /** When this file leased its server: the audit log holds earlier files' requests too. */
  let leasedAt: Date;
  /** The audit log's size then: reading starts there, not at the shared log's first file. */
  let auditFrom: number;
  const round = () => stepped.round();
  const requestsSinceLease = () =>
    auditEvents({ name: fx.lease.name, auditLogFile: fx.lease.auditLogFile }, auditFrom).filter(
      (event) => new Date(event.requestReceivedTimestamp) >= leasedAt,
    );

  /** The object as the API server holds it now (read as the admin), or undefined when there is none. */
  async function live<T>(collection: string, name: string): Promise<T | undefined> {
    const answer = await fx.admin.request('GET', `${collection}/${name}`);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw new Error(`GET ${collection}/${name}: ${answer.status} ${answer.text}`);
    return answer.body as T;
  }
  const stack = (name: string) => live<ClusterStack>(`${OURS}/namespaces/${NS}/clusterstacks`, name);
  const release = (name: string) => live<ClusterStackRelease>(`${OURS}/namespaces/${NS}/clusterstackreleases`, name);
  const addon = (name: string) => live<ClusterAddon>(`${OURS}/namespaces/${NS}/clusteraddons`, name);
  const listed = async (collection: string): Promise<KubeObject[]> => (await fx.admin.get(collection)).items;
  const eventReasons = async () =>
    (await listed(`/api/v1/namespaces/${NS}/events`)).map((event) => (event as { reason?: string }).reason);

  /** Sends `method` to `resource` as the admin and expects `status`. */
  async function send(method: string, resource: string, status: number, body?: unknown): Promise<void> {
    const answer = await fx.admin.request(method, resource, {
      ...(body === undefined ? {} : { body }),
      ...(method === 'PATCH' ? { contentType: 'application/merge-patch+json' } : {}),
    });
    if (answer.status !== status)
      throw new Error(`${method} ${resource}: ${answer.status} (expected ${status}) ${answer.text}`);
  }

  const commits = () => fx.git.commitCount(fx.remote, 'main');
  const changedFiles = () => fx.git.git(fx.remote, 'diff', '--name-only', 'HEAD~1', 'HEAD').split('\n').filter(Boolean);

  beforeAll(async () => {
    fx = await startRealControllerFixture();
    // Once leased, not before: the lease may wait for another file, whose controller creates
    // ClusterStackReleases as the shared identity (caught when three files shared two servers).
    leasedAt = new Date();
    auditFrom = statSync(fx.lease.auditLogFile).size;
    identity = await fx.shippedIdentity({ overlay: 'flux', namespace: CONTROLLER_NS });
    await fx.createNamespace(NS);
    await fx.createNamespace('flux-system');
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(identity.kubeconfigFile);
    stepped = await SteppedController.start({
      kubeConfig,
      listServer: async (kind) => {
        // Clusters as Cluster API 1.14 serves them (the cache watches the preferred version).
        const version = kind.kind === 'Cluster' ? CAPI_V1BETA2.version : kind.version;
        return listed(`/apis/${kind.group}/${version}/${kind.plural}`);
      },
      remote: fx.remote,
      work: path.join(fx.work, 'e2e'),
      releases: fx.releases,
    });
  }, TEST_MS);

  afterAll(async () => {
    try {
      await stepped?.stop();
      // deploy/flux's RBAC must grant every call the controller made.
      const refused = identity
        ? requestsSinceLease().filter(
            (event) => event.user.username === identity.user && event.responseStatus?.code === 403,
          )
        : [];
      if (refused.length > 0)
        throw new Error(
          `deploy/flux's ServiceAccount was refused (403):\n${refused.map(describeAuditEvent).join('\n')}`,
        );
    } finally {
      await fx?.cleanup();
    }
  }, TEST_MS);

  it('creates ClusterStackReleases and ClusterAddons with their status, in one commit', async () => {
    await fx.create(aStack('ferrol', NS, { versions: ['v1', 'v2'], channel: 'stable', autoSubscribe: true }));
    await fx.create(aCluster('alpha', NS, 'docker-ferrol-1-30-v1'));
    await fx.create(aCluster('bravo', NS, 'docker-ferrol-1-30-v3'));

    const first = await round();
    expect(first).not.toHaveProperty('error');
    expect(commits()).toBe(1);
    const head = fx.git.head(fx.remote, 'main');

    const ferrol = (await stack('ferrol'))!;
    expect(ferrol.metadata.finalizers).toContain('clusterstack.x-k8s.io/finalizer');
    expect(ferrol.status).toMatchObject({
      latestRelease: 'docker-ferrol-1-30-v3',
      usableVersions: 'v1, v2, v3',
      observedGeneration: 1,
    });
    expect(condition(ferrol, 'ReleasesResolved')).toMatchObject({ status: 'True', reason: 'ReleasesResolved' });
    expect(ferrol.status?.summary?.map((entry) => `${entry.name}:${entry.phase}`)).toEqual([
      'docker-ferrol-1-30-v1:done',
      'docker-ferrol-1-30-v2:done',
      'docker-ferrol-1-30-v3:done',
    ]);

    for (const [tag, kubernetes] of [
      ['docker-ferrol-1-30-v1', '1.30.2'],
      ['docker-ferrol-1-30-v2', '1.30.4'],
      ['docker-ferrol-1-30-v3', '1.30.4'],
    ] as const) {
      const written = (await release(tag))!;
      expect(written.metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'ClusterStack', name: 'ferrol', uid: ferrol.metadata.uid, controller: true }),
      ]);
      expect(written.metadata.finalizers).toEqual(['clusterstack.x-k8s.io/finalizer']);
      expect(written.status?.kubernetesVersion).toBe(kubernetes);
      expect(written.status?.resources?.some((r) => r.kind === 'ClusterClass' && r.group === 'cluster.x-k8s.io')).toBe(
        true,
      );
      expect(condition(written, 'ReleaseAssetsDownloaded')?.status).toBe('True');
      expect(condition(written, 'ManifestsRendered')?.status).toBe('True');
      expect(condition(written, 'ManifestsPublished')).toMatchObject({
        status: 'True',
        reason: 'ManifestsPublished',
        message: expect.stringContaining(head),
      });
      // Flux is the engine, but no Kustomization points at the release yet.
      expect(condition(written, 'ManifestsSynced')).toMatchObject({ status: 'Unknown', reason: 'WaitingForGitOps' });
      expect(written.status?.ready).toBe(false);
    }

    const alpha = (await addon('alpha'))!;
    expect(alpha.spec).toMatchObject({
      clusterStack: 'docker-ferrol-1-30-v1',
      version: 'v1',
      clusterRef: { kind: 'Cluster', name: 'alpha', namespace: NS },
    });
    expect(alpha.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Cluster', name: 'alpha', controller: true }),
    ]);
    expect(alpha.status?.stages?.map((stage) => stage.name)).toEqual(['cluster-addon']);
    const bravo = (await addon('bravo'))!;
    expect(bravo.spec).toMatchObject({ clusterStack: 'docker-ferrol-1-30-v3', version: 'v2' });
    expect(bravo.status?.stages?.map((stage) => stage.name)).toEqual(['cni', 'metrics-server']);
    expect(condition(bravo, 'ClusterClassAvailable')?.status).toBe('True');
    expect(condition(bravo, 'ManifestsPublished')?.status).toBe('True');

    expect(await eventReasons()).toContain('ReleaseAppeared');
    // Written as deploy/flux's ServiceAccount, not as the admin that set the test up.
    const creates = requestsSinceLease().filter(
      (event) => event.verb === 'create' && event.objectRef?.resource === 'clusterstackreleases',
    );
    expect(new Set(creates.map((event) => event.user.username))).toEqual(new Set([identity.user]));

    // A round with nothing new writes nothing: no commit, no status, though the server has now
    // defaulted and stored every status this controller wrote.
    const second = await round();
    expect(second).not.toHaveProperty('error');
    expect(second.summary?.apply).toMatchObject({ statusesWritten: 0, created: [] });
    expect(commits()).toBe(1);
  });

  it("publishes one commit with only that cluster's changes when a Cluster changes class", async () => {
    await send('PATCH', `${CLUSTERS}/alpha`, 200, {
      spec: { topology: { classRef: { name: 'docker-ferrol-1-30-v3' }, version: 'v1.30.4' } },
    });
    expect(await round()).not.toHaveProperty('error');
    expect(commits()).toBe(2);
    const files = changedFiles();
    expect(
      files.filter(
        (file) => !file.startsWith(`clusters/${NS}/alpha/`) && file !== 'provenance.json' && file !== 'README.md',
      ),
    ).toEqual([]);
    expect(files.some((file) => file.startsWith(`clusters/${NS}/alpha/cni/`))).toBe(true);
    expect((await addon('alpha'))?.spec).toMatchObject({ clusterStack: 'docker-ferrol-1-30-v3', version: 'v2' });
  });

  it('turns ManifestsSynced True once a Flux Kustomization for the release directory is Ready', async () => {
    const head = fx.git.head(fx.remote, 'main');
    const ready = readyKustomization('release-v2', `management/${NS}/docker-ferrol-1-30-v2`, head);
    // Flux writes Ready first and observedGeneration in a second patch: until then the CRD's
    // default (-1, not yet reconciled) stands, and the release is not synced yet.
    const { observedGeneration, ...firstPatch } = ready['status'] as Record<string, unknown>;
    await fx.create({ ...ready, status: firstPatch } as KubeObject);
    const kustomizations = `/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations`;
    expect((await live<KubeObject>(kustomizations, 'release-v2'))?.['status']).toMatchObject({
      observedGeneration: -1,
    });
    await round();
    expect(condition(await release('docker-ferrol-1-30-v2'), 'ManifestsSynced')).toMatchObject({
      status: 'False',
      message: 'Flux Kustomization flux-system/release-v2 has not finished its first reconcile',
    });
    expect((await release('docker-ferrol-1-30-v2'))?.status?.ready).toBe(false);

    await send('PATCH', `${kustomizations}/release-v2/status`, 200, { status: { observedGeneration } });
    await round();
    const synced = (await release('docker-ferrol-1-30-v2'))!;
    expect(condition(synced, 'ManifestsSynced')).toMatchObject({
      status: 'True',
      reason: 'Synced',
      message: expect.stringContaining(`main@sha1:${head}`),
    });
    expect(synced.status?.ready).toBe(true);
    expect(synced.status?.resources?.every((resource) => resource.status === 'synced')).toBe(true);
    expect(condition(await release('docker-ferrol-1-30-v3'), 'ManifestsSynced')?.status).toBe('Unknown');
    expect(commits()).toBe(2);
  });

  it('says on the stack when an object it owns is refused, and clears it once written', async () => {
    // The body of the create the policy refuses, for dry-run probes of whether it is in force.
    const { spec } = (await release(REFUSED_RELEASE))!;
    const probe = async () =>
      fx.admin.request('POST', `${OURS}/namespaces/${NS}/clusterstackreleases`, {
        query: { dryRun: 'All' },
        body: {
          apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
          kind: 'ClusterStackRelease',
          metadata: { name: REFUSED_RELEASE, namespace: NS },
          spec,
        },
      });
    // Drop v3's ClusterStackRelease (and our finalizer) so that it must be created again.
    await send('DELETE', `${OURS}/namespaces/${NS}/clusterstackreleases/${REFUSED_RELEASE}`, 200);
    await send('PATCH', `${OURS}/namespaces/${NS}/clusterstackreleases/${REFUSED_RELEASE}`, 200, {
      metadata: { finalizers: null },
    });
    // The real server refuses that create: an admission policy (deleted by the broker at release).
    await fx.install([
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: POLICY },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              {
                apiGroups: ['clusterstack.x-k8s.io'],
                apiVersions: ['*'],
                operations: ['CREATE'],
                resources: ['clusterstackreleases'],
              },
            ],
          },
          validations: [
            { expression: `object.metadata.name != '${REFUSED_RELEASE}'`, message: REFUSAL, reason: 'Invalid' },
          ],
        },
      } as KubeObject,
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name: POLICY },
        spec: { policyName: POLICY, validationActions: ['Deny'] },
      } as KubeObject,
    ]);
    // Admission reads policies from its own informer and says nowhere when it has one: ask it.
    await waitUntil('the admission policy to refuse', async () => (await probe()).status === 422, [], 60_000);

    expect((await round()).error).toBeInstanceOf(Error);
    // The next round reports it on the stack (and is refused again).
    await round();
    expect(condition(await stack('ferrol'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'OwnedObjectsNotWritten',
      message: expect.stringContaining(REFUSAL),
    });
    expect(await release(REFUSED_RELEASE)).toBeUndefined();

    await send('DELETE', `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/${POLICY}`, 200);
    await waitUntil('the admission policy to be lifted', async () => (await probe()).status === 201, [], 60_000);
    await round();
    expect(await release(REFUSED_RELEASE)).toBeDefined();
    await round();
    expect(condition(await stack('ferrol'), 'Ready')?.status).toBe('True');
  });

  it('keeps the last good output and says why when the Git remote or the release source fails', async () => {
    const before = commits();
    fx.git.declinePushes(fx.remote, 'pushes are frozen');
    await send('PATCH', `${CLUSTERS}/bravo`, 200, {
      spec: { controlPlaneEndpoint: { host: 'bravo-new.example.test' } },
    });
    await round();
    expect(commits()).toBe(before);
    expect(condition(await addon('bravo'), 'ManifestsPublished')).toMatchObject({
      status: 'False',
      reason: 'PublishRetrying',
      message: expect.stringContaining('previous output stays'),
    });
    expect(condition(await addon('alpha'), 'ManifestsPublished')?.status).toBe('True');

    await unlink(path.join(fx.remote, 'hooks', 'pre-receive'));
    await round();
    expect(commits()).toBe(before + 1);
    expect(
      changedFiles().every(
        (file) => file.startsWith(`clusters/${NS}/bravo/`) || file === 'provenance.json' || file === 'README.md',
      ),
    ).toBe(true);
    expect(condition(await addon('bravo'), 'ManifestsPublished')?.status).toBe('True');

    stepped.sourceDown = true;
    try {
      const result = await round();
      // The stack's own key fails and backs off; the publish reconcile itself does not.
      expect((result.stackErrors[0] as Error | undefined)?.name).toBe('RetryLaterError');
      expect(result).not.toHaveProperty('error');
    } finally {
      stepped.sourceDown = false;
    }
    expect(condition(await stack('ferrol'), 'ReleasesResolved')).toMatchObject({
      status: 'False',
      reason: 'ReleaseSourceUnavailable',
      message: expect.stringContaining('the last listing is used'),
    });
    expect(await release('docker-ferrol-1-30-v1')).toBeDefined();
    expect(commits()).toBe(before + 1);
    await round();
    expect(condition(await stack('ferrol'), 'ReleasesResolved')?.status).toBe('True');

    // A restarted controller whose source is down from the start has no listing to fall back on:
    // the stack is withheld with the releases the target holds, their files stay, and it says so.
    const published = fx.published();
    const running = stepped.controller;
    stepped.controller = stepped.newController('clone-after-restart');
    stepped.sourceDown = true;
    try {
      const result = await round();
      expect((result.stackErrors[0] as Error | undefined)?.name).toBe('RetryLaterError');
      expect(result).not.toHaveProperty('error');
    } finally {
      stepped.sourceDown = false;
    }
    expect(fx.published()).toEqual(published);
    expect(condition(await stack('ferrol'), 'ReleasesResolved')?.message).toContain(
      'the releases published before stay in place, withheld, until it answers',
    );
    expect(condition(await release('docker-ferrol-1-30-v3'), 'ManifestsRendered')).toMatchObject({
      status: 'False',
      reason: 'ManifestsWithheld',
      message: expect.stringContaining('previously published manifests stay in place'),
    });
    expect(condition(await addon('alpha'), 'ManifestsRendered')).toMatchObject({
      status: 'False',
      reason: 'AddonsWithheld',
    });
    await round();
    expect(condition(await stack('ferrol'), 'ReleasesResolved')?.status).toBe('True');
    expect(condition(await release('docker-ferrol-1-30-v3'), 'ManifestsRendered')?.status).toBe('True');
    expect(fx.published()).toEqual(published);
    stepped.controller = running;
  });

  it('lists every problem of a ClusterStack it cannot resolve in its condition while the other stack works', async () => {
    const before = commits();
    const published = fx.published();
    // A spec against the CRD's schema never reaches the controller: the real server refuses it and
    // lists every problem itself (the controller's own check of these is for stacks stored under an
    // older CRD, pinned in test/controller/status.test.ts).
    const refused = await fx.admin.request('POST', `${OURS}/namespaces/${NS}/clusterstacks`, {
      body: aStack('refused', NS, { provider: 'my-provider', kubernetesVersion: 'latest' }),
    });
    expect(refused.status).toBe(422);
    expect(refused.body.message).toContain('spec.provider');
    expect(refused.body.message).toContain('spec.kubernetesVersion');
    // One the server admits, pinning two versions its release source does not have.
    await fx.create(aStack('broken', NS, { kubernetesVersion: '1.31', versions: ['v1', 'v4'] }));
    const result = await round();
    expect(result).not.toHaveProperty('error');
    const broken = (await stack('broken'))!;
    const resolved = condition(broken, 'ReleasesResolved')!;
    expect(resolved).toMatchObject({ status: 'False', reason: 'ReleasesNotFound' });
    expect(resolved.message).toContain(
      'spec.versions[0] v1 is not in the release source (no release docker-ferrol-1-31-v1)',
    );
    expect(resolved.message).toContain(
      'spec.versions[1] v4 is not in the release source (no release docker-ferrol-1-31-v4)',
    );
    expect(condition(broken, 'Ready')).toMatchObject({ status: 'False', reason: 'ReleasesNotFound' });
    expect(condition(await stack('ferrol'), 'Ready')?.status).toBe('True');
    // Nothing is published for it and nothing else changes: only the tree's index and provenance
    // name it (an admitted stack is an input); its output and ferrol's stay as they were.
    expect(commits()).toBe(before + 1);
    expect(changedFiles().sort()).toEqual(['README.md', 'provenance.json']);
    expect(fx.published()).toEqual(published);
    expect(await eventReasons()).toContain('ReleasesNotFound');
  });

  it('holds the deletion of a ClusterStack whose releases Clusters use, until they are gone', async () => {
    const before = commits();
    await send('DELETE', `${OURS}/namespaces/${NS}/clusterstacks/ferrol`, 200);
    await round();
    const held = (await stack('ferrol'))!;
    expect(held.metadata.deletionTimestamp).toBeTruthy();
    expect(condition(held, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'DeletionBlocked',
      message: expect.stringContaining(`${NS}/alpha`),
    });
    expect(condition(held, 'Ready')?.message).toContain(`${NS}/bravo`);
    expect(commits()).toBe(before);

    for (const name of ['alpha', 'bravo']) await send('DELETE', `${CLUSTERS}/${name}`, 200);
    // kube-controller-manager's garbage collector deletes the Clusters' ClusterAddons after them.
    const gone = (object: KubeObject | undefined) => !object || Boolean(object.metadata.deletionTimestamp);
    await fx.waitFor(
      () => ['alpha', 'bravo'].every((name) => gone(fx.get('ClusterAddon', NS, name))),
      'the garbage collector to delete the ClusterAddons of the deleted Clusters',
    );
    await round();
    expect(await stack('ferrol')).toBeUndefined();
    // Its releases are collected with it; their finalizers go once no Cluster uses them.
    await fx.waitFor(
      () => fx.objects('clusterstack.x-k8s.io/v1alpha1', 'ClusterStackRelease', NS).every((object) => gone(object)),
      'the garbage collector to delete the releases of the deleted ClusterStack',
    );
    await round();
    expect(await listed(`${OURS}/namespaces/${NS}/clusterstackreleases`)).toEqual([]);
    const tree = Object.keys(fx.git.files(fx.remote, 'main'));
    expect(tree.some((file) => file.startsWith('management/') || file.startsWith('clusters/'))).toBe(false);
  });
});
