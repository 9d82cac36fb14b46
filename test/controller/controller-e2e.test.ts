// The controller end to end: the fake API server through the real client-node, real helm, a real
// Git remote (bare repository) and the quickstart's local release source. Reconciles are driven one
// at a time with reconcileOnce(), after the informer caches have seen each change.
import { mkdtemp, rm, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitPublisher } from '../../gitops/git-publisher.js';
import { createHelmDependencies } from '../../renderers/helm-dependencies.js';
import type { ClusterAddon, ClusterStack, ClusterStackRelease, Condition, KubeObject } from '../../src/api/types.js';
import { Controller, InformerCache } from '../../src/controller/controller.js';
import { createKubeClient } from '../../src/controller/runtime/kube-client.js';
import type { WatchedKind } from '../../src/controller/runtime/runtime-contract.js';
import {
  CLUSTER_STACK_RELEASES,
  CLUSTER_STACKS,
  CAPI_CLUSTERS,
  CLUSTER_ADDONS,
} from '../../src/controller/desired-state/watched-kinds.js';
import { ReleaseSourceError } from '../../src/release/release-source.js';
import { createSourceOpener } from '../../src/sources/open-release-source.js';
import { copyExampleReleases } from '../support/cli.js';
import { startFakeKubeApi, type FakeKubeApi } from '../support/fake-kube-api/index.js';
import { GitSandbox } from '../support/git-repos.js';
import { waitFor } from '../support/controller-fixture.js';

const NS = 'cluster-stacks';
const GROUP = { group: 'clusterstack.x-k8s.io', version: 'v1alpha1' };
const MERGE = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

function aStack(name: string, spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
    kind: 'ClusterStack',
    metadata: { name, namespace: NS },
    spec: {
      provider: 'docker',
      name: 'ferrol',
      kubernetesVersion: '1.30',
      channel: 'stable',
      autoSubscribe: true,
      noProvider: true,
      ...spec,
    },
  };
}

function aCluster(name: string, className: string, version: string): KubeObject {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name, namespace: NS },
    spec: {
      clusterNetwork: { pods: { cidrBlocks: ['192.168.0.0/16'] } },
      controlPlaneEndpoint: { host: `${name}.example.test`, port: 6443 },
      topology: { class: className, version },
    },
  };
}

function condition(object: { status?: { conditions?: Condition[] } } | undefined, type: string): Condition | undefined {
  return object?.status?.conditions?.find((c) => c.type === type);
}

describe('controller, end to end', () => {
  let api: FakeKubeApi;
  let git: GitSandbox;
  let remote: string;
  let work: string;
  let cache: InformerCache;
  let controller: Controller;
  let custom: CustomObjectsApi;
  /** Set to make the release source's listing fail, as GitHub does when it is down. */
  let sourceDown = false;
  let makeController: (clone: string) => Controller;

  const stored = <T>(kind: string, name: string): T | undefined =>
    api.get('clusterstack.x-k8s.io/v1alpha1', kind, NS, name) as T | undefined;
  /**
   * Waits until the caches hold what the API server holds now, then does what the runtime does
   * after a change: each stack's key lists its source, then one publish reconcile.
   */
  async function reconcile(): Promise<{
    requeueAfterMs: number;
    error?: unknown;
    stackErrors: unknown[];
    summary?: unknown;
  }> {
    const kinds: [WatchedKind, string, string][] = [
      [CLUSTER_STACKS, 'clusterstack.x-k8s.io/v1alpha1', 'ClusterStack'],
      [CLUSTER_STACK_RELEASES, 'clusterstack.x-k8s.io/v1alpha1', 'ClusterStackRelease'],
      [CLUSTER_ADDONS, 'clusterstack.x-k8s.io/v1alpha1', 'ClusterAddon'],
      [CAPI_CLUSTERS, 'cluster.x-k8s.io/v1beta1', 'Cluster'],
    ];
    // The cache's objects and the fake API's own object type share only their metadata.
    const fingerprint = (objects: { metadata?: { namespace?: string; name?: string; resourceVersion?: string } }[]) =>
      objects
        .map((o) => `${o.metadata?.namespace}/${o.metadata?.name}@${o.metadata?.resourceVersion}`)
        .sort()
        .join(',');
    await waitFor(
      () =>
        kinds.every(
          ([kind, apiVersion, name]) => fingerprint(cache.list(kind)) === fingerprint(api.list(apiVersion, name)),
        ),
      'the caches to catch up',
    );
    const stackErrors: unknown[] = [];
    for (const key of controller.stackKeys())
      await controller.handle(key).catch((error: unknown) => stackErrors.push(error));
    try {
      return { ...(await controller.reconcileOnce()), stackErrors };
    } catch (error) {
      return { requeueAfterMs: -1, error, stackErrors };
    }
  }
  const changedFiles = () => git.git(remote, 'diff', '--name-only', 'HEAD~1', 'HEAD').split('\n').filter(Boolean);

  beforeAll(async () => {
    api = await startFakeKubeApi();
    git = new GitSandbox();
    remote = git.bareRepo('gitops');
    work = await mkdtemp(path.join(os.tmpdir(), 'csk-controller-'));
    const releases = await copyExampleReleases();
    const kubeConfig = api.kubeConfig();
    custom = kubeConfig.makeApiClient(CustomObjectsApi);
    await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    const logger = pino({ level: 'silent' });
    cache = new InformerCache({ kubeConfig, kinds: Controller.watchedKinds('flux'), onEvent: () => undefined, logger });
    await cache.start();
    await cache.whenSynced();
    makeController = (clone: string) =>
      new Controller({
        cache,
        kube: createKubeClient({ kubeConfig, identity: 'test-controller' }),
        publisher: new GitPublisher({
          repository: remote,
          branch: 'main',
          path: '',
          workDir: path.join(work, clone),
          author: { name: 'clusterstack', email: 'clusterstack@example.test' },
          env: { PATH: process.env.PATH ?? '', HOME: work },
        }),
        revisionKind: 'commit',
        defaultSource: releases,
        openSource: (location) => {
          const source = createSourceOpener({ cacheDir: path.join(work, 'cache') })(location);
          return {
            location: source.location,
            fetch: (tag) => source.fetch(tag),
            list: () =>
              sourceDown
                ? Promise.reject(new ReleaseSourceError('unavailable', 'the source answered 503'))
                : source.list(),
          };
        },
        workDir: path.join(work, 'cache'),
        helm: createHelmDependencies({ pathEnv: process.env.PATH ?? '', workDir: path.join(work, 'helm') }),
        secrets: 'refuse',
        engine: 'flux',
        outputPath: '',
        argocdNamespace: 'argocd',
        logger,
      });
    controller = makeController('clone');
  });

  afterAll(async () => {
    await cache?.stop();
    await api?.close();
    git?.cleanup();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('creates ClusterStackReleases and ClusterAddons with their status, in one commit', async () => {
    const create = (plural: string, body: KubeObject, group = GROUP) =>
      custom.createNamespacedCustomObject({ ...group, plural, namespace: NS, body });
    await create('clusterstacks', aStack('ferrol', { versions: ['v1', 'v2'] }));
    const capi = { group: 'cluster.x-k8s.io', version: 'v1beta1' };
    await create('clusters', aCluster('alpha', 'docker-ferrol-1-30-v1', 'v1.30.2'), capi);
    await create('clusters', aCluster('bravo', 'docker-ferrol-1-30-v3', 'v1.30.4'), capi);

    const first = await reconcile();
    expect(first).not.toHaveProperty('error');
    expect(git.commitCount(remote, 'main')).toBe(1);
    const head = git.head(remote, 'main');

    const stack = stored<ClusterStack>('ClusterStack', 'ferrol')!;
    expect(stack.metadata.finalizers).toContain('clusterstack.x-k8s.io/finalizer');
    expect(stack.status).toMatchObject({
      latestRelease: 'docker-ferrol-1-30-v3',
      usableVersions: 'v1, v2, v3',
      observedGeneration: 1,
    });
    expect(condition(stack, 'ReleasesResolved')).toMatchObject({ status: 'True', reason: 'ReleasesResolved' });
    expect(stack.status?.summary?.map((entry) => `${entry.name}:${entry.phase}`)).toEqual([
      'docker-ferrol-1-30-v1:done',
      'docker-ferrol-1-30-v2:done',
      'docker-ferrol-1-30-v3:done',
    ]);

    for (const [tag, kubernetes] of [
      ['docker-ferrol-1-30-v1', '1.30.2'],
      ['docker-ferrol-1-30-v2', '1.30.4'],
      ['docker-ferrol-1-30-v3', '1.30.4'],
    ] as const) {
      const release = stored<ClusterStackRelease>('ClusterStackRelease', tag)!;
      expect(release.metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'ClusterStack', name: 'ferrol', uid: stack.metadata.uid, controller: true }),
      ]);
      expect(release.metadata.finalizers).toEqual(['clusterstack.x-k8s.io/finalizer']);
      expect(release.status?.kubernetesVersion).toBe(kubernetes);
      expect(release.status?.resources?.some((r) => r.kind === 'ClusterClass' && r.group === 'cluster.x-k8s.io')).toBe(
        true,
      );
      expect(condition(release, 'ReleaseAssetsDownloaded')?.status).toBe('True');
      expect(condition(release, 'ManifestsRendered')?.status).toBe('True');
      expect(condition(release, 'ManifestsPublished')).toMatchObject({
        status: 'True',
        reason: 'ManifestsPublished',
        message: expect.stringContaining(head),
      });
      // Flux is the engine, but no Kustomization points at the release yet.
      expect(condition(release, 'ManifestsSynced')).toMatchObject({ status: 'Unknown', reason: 'WaitingForGitOps' });
      expect(release.status?.ready).toBe(false);
    }

    const alpha = stored<ClusterAddon>('ClusterAddon', 'alpha')!;
    expect(alpha.spec).toMatchObject({
      clusterStack: 'docker-ferrol-1-30-v1',
      version: 'v1',
      clusterRef: { kind: 'Cluster', name: 'alpha', namespace: NS },
    });
    expect(alpha.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Cluster', name: 'alpha', controller: true }),
    ]);
    expect(alpha.status?.stages?.map((stage) => stage.name)).toEqual(['cluster-addon']);
    const bravo = stored<ClusterAddon>('ClusterAddon', 'bravo')!;
    expect(bravo.spec).toMatchObject({ clusterStack: 'docker-ferrol-1-30-v3', version: 'v2' });
    expect(bravo.status?.stages?.map((stage) => stage.name)).toEqual(['cni', 'metrics-server']);
    expect(condition(bravo, 'ClusterClassAvailable')?.status).toBe('True');
    expect(condition(bravo, 'ManifestsPublished')?.status).toBe('True');

    const events = api.list('v1', 'Event', NS).map((event) => event['reason']);
    expect(events).toContain('ReleaseAppeared');

    // A reconcile with nothing new writes nothing: no commit, no status.
    const second = await reconcile();
    expect(second).not.toHaveProperty('error');
    expect(
      (second as { summary?: { apply: { statusesWritten: number; created: string[] } } }).summary?.apply,
    ).toMatchObject({ statusesWritten: 0, created: [] });
    expect(git.commitCount(remote, 'main')).toBe(1);
  });

  it("publishes one commit with only that cluster's changes when a Cluster changes class", async () => {
    await custom.patchNamespacedCustomObject(
      {
        group: 'cluster.x-k8s.io',
        version: 'v1beta1',
        plural: 'clusters',
        namespace: NS,
        name: 'alpha',
        body: { spec: { topology: { class: 'docker-ferrol-1-30-v3', version: 'v1.30.4' } } },
      },
      MERGE(),
    );
    await reconcile();
    expect(git.commitCount(remote, 'main')).toBe(2);
    const files = changedFiles();
    expect(
      files.filter(
        (file) => !file.startsWith(`clusters/${NS}/alpha/`) && file !== 'provenance.json' && file !== 'README.md',
      ),
    ).toEqual([]);
    expect(files.some((file) => file.startsWith(`clusters/${NS}/alpha/cni/`))).toBe(true);
    expect(stored<ClusterAddon>('ClusterAddon', 'alpha')?.spec).toMatchObject({
      clusterStack: 'docker-ferrol-1-30-v3',
      version: 'v2',
    });
  });

  it('turns ManifestsSynced True once a Flux Kustomization for the release directory is Ready', async () => {
    const head = git.head(remote, 'main');
    api.seed({
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name: 'release-v2', namespace: 'flux-system' },
      spec: {
        path: `./management/${NS}/docker-ferrol-1-30-v2`,
        prune: true,
        sourceRef: { kind: 'GitRepository', name: 'clusterstacks' },
      },
      status: {
        lastAppliedRevision: `main@sha1:${head}`,
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'ReconciliationSucceeded',
            message: `Applied revision: main@sha1:${head}`,
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      },
    });
    await waitFor(
      () =>
        cache.list({
          group: 'kustomize.toolkit.fluxcd.io',
          version: 'v1',
          kind: 'Kustomization',
          plural: 'kustomizations',
          namespaced: true,
        }).length === 1,
      'the Kustomization in the cache',
    );
    await reconcile();
    const release = stored<ClusterStackRelease>('ClusterStackRelease', 'docker-ferrol-1-30-v2')!;
    expect(condition(release, 'ManifestsSynced')).toMatchObject({
      status: 'True',
      reason: 'Synced',
      message: expect.stringContaining(`main@sha1:${head}`),
    });
    expect(release.status?.ready).toBe(true);
    expect(release.status?.resources?.every((resource) => resource.status === 'synced')).toBe(true);
    expect(
      condition(stored<ClusterStackRelease>('ClusterStackRelease', 'docker-ferrol-1-30-v3'), 'ManifestsSynced')?.status,
    ).toBe('Unknown');
    expect(git.commitCount(remote, 'main')).toBe(2);
  });

  it('retries a status write that meets a 409 conflict, on a fresh read', async () => {
    await custom.patchNamespacedCustomObject(
      {
        ...GROUP,
        plural: 'clusterstacks',
        namespace: NS,
        name: 'ferrol',
        body: { spec: { versions: ['v1', 'v2', 'v3'] } },
      },
      MERGE(),
    );
    api.clearRequests();
    api.failNext({ method: 'PATCH', pathIncludes: `/clusterstacks/ferrol/status`, status: 409, reason: 'Conflict' });
    await reconcile();
    const stack = stored<ClusterStack>('ClusterStack', 'ferrol')!;
    expect(stack.status?.observedGeneration).toBe(stack.metadata.generation);
    const log = api.requests
      .filter((request) => request.path.includes('/clusterstacks/ferrol'))
      .map(
        (request) => `${request.method} ${request.path.endsWith('/status') ? 'status' : 'object'} ${request.status}`,
      );
    expect(log).toEqual(['PATCH status 409', 'GET object 200', 'PATCH status 200']);
  });

  it('says on the stack when an object it owns is refused, and clears it once written', async () => {
    // Drop v3's ClusterStackRelease (and our finalizer) so that it must be created again, and refuse that create.
    await custom.deleteNamespacedCustomObject({
      ...GROUP,
      plural: 'clusterstackreleases',
      namespace: NS,
      name: 'docker-ferrol-1-30-v3',
    });
    await custom.patchNamespacedCustomObject(
      {
        ...GROUP,
        plural: 'clusterstackreleases',
        namespace: NS,
        name: 'docker-ferrol-1-30-v3',
        body: { metadata: { finalizers: null } },
      },
      MERGE(),
    );
    api.failNext({
      method: 'POST',
      pathIncludes: '/clusterstackreleases',
      status: 422,
      message: 'ClusterStackRelease.clusterstack.x-k8s.io "docker-ferrol-1-30-v3" is invalid: refused by a webhook',
      times: 1,
    });
    expect((await reconcile()).error).toBeInstanceOf(Error);
    // The next round reports it on the stack (and creates the object this time).
    await reconcile();
    expect(condition(stored<ClusterStack>('ClusterStack', 'ferrol'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'OwnedObjectsNotWritten',
      message: expect.stringContaining('refused by a webhook'),
    });
    expect(stored<ClusterStackRelease>('ClusterStackRelease', 'docker-ferrol-1-30-v3')).toBeDefined();
    await reconcile();
    expect(condition(stored<ClusterStack>('ClusterStack', 'ferrol'), 'Ready')?.status).toBe('True');
  });

  it('keeps the last good output and says why when the Git remote or the release source fails', async () => {
    const commits = git.commitCount(remote, 'main');
    git.declinePushes(remote, 'pushes are frozen');
    await custom.patchNamespacedCustomObject(
      {
        group: 'cluster.x-k8s.io',
        version: 'v1beta1',
        plural: 'clusters',
        namespace: NS,
        name: 'bravo',
        body: { spec: { controlPlaneEndpoint: { host: 'bravo-new.example.test' } } },
      },
      MERGE(),
    );
    await reconcile();
    expect(git.commitCount(remote, 'main')).toBe(commits);
    expect(condition(stored<ClusterAddon>('ClusterAddon', 'bravo'), 'ManifestsPublished')).toMatchObject({
      status: 'False',
      reason: 'PublishRetrying',
      message: expect.stringContaining('previous output stays'),
    });
    expect(condition(stored<ClusterAddon>('ClusterAddon', 'alpha'), 'ManifestsPublished')?.status).toBe('True');

    await unlink(path.join(remote, 'hooks', 'pre-receive'));
    await reconcile();
    expect(git.commitCount(remote, 'main')).toBe(commits + 1);
    expect(
      changedFiles().every(
        (file) => file.startsWith(`clusters/${NS}/bravo/`) || file === 'provenance.json' || file === 'README.md',
      ),
    ).toBe(true);
    expect(condition(stored<ClusterAddon>('ClusterAddon', 'bravo'), 'ManifestsPublished')?.status).toBe('True');

    sourceDown = true;
    try {
      const result = await reconcile();
      // The stack's own key fails and backs off; the publish reconcile itself does not.
      expect((result.stackErrors[0] as Error | undefined)?.name).toBe('RetryLaterError');
      expect(result).not.toHaveProperty('error');
    } finally {
      sourceDown = false;
    }
    expect(condition(stored<ClusterStack>('ClusterStack', 'ferrol'), 'ReleasesResolved')).toMatchObject({
      status: 'False',
      reason: 'ReleaseSourceUnavailable',
      message: expect.stringContaining('the last listing is used'),
    });
    expect(stored<ClusterStackRelease>('ClusterStackRelease', 'docker-ferrol-1-30-v1')).toBeDefined();
    expect(git.commitCount(remote, 'main')).toBe(commits + 1);
    await reconcile();
    expect(condition(stored<ClusterStack>('ClusterStack', 'ferrol'), 'ReleasesResolved')?.status).toBe('True');

    // A restarted controller whose source is down from the start has no listing to fall back on:
    // the stack is withheld with the releases the target holds, their files stay, and it says so.
    const published = () =>
      Object.fromEntries(
        Object.entries(git.files(remote, 'main')).filter(
          ([file]) => file.startsWith('management/') || file.startsWith('clusters/'),
        ),
      );
    const before = published();
    const running = controller;
    controller = makeController('clone-after-restart');
    sourceDown = true;
    try {
      const result = await reconcile();
      expect((result.stackErrors[0] as Error | undefined)?.name).toBe('RetryLaterError');
      expect(result).not.toHaveProperty('error');
    } finally {
      sourceDown = false;
    }
    expect(published()).toEqual(before);
    expect(condition(stored<ClusterStack>('ClusterStack', 'ferrol'), 'ReleasesResolved')?.message).toContain(
      'the releases published before stay in place, withheld, until it answers',
    );
    expect(
      condition(stored<ClusterStackRelease>('ClusterStackRelease', 'docker-ferrol-1-30-v3'), 'ManifestsRendered'),
    ).toMatchObject({
      status: 'False',
      reason: 'ManifestsWithheld',
      message: expect.stringContaining('previously published manifests stay in place'),
    });
    expect(condition(stored<ClusterAddon>('ClusterAddon', 'alpha'), 'ManifestsRendered')).toMatchObject({
      status: 'False',
      reason: 'AddonsWithheld',
    });
    await reconcile();
    expect(condition(stored<ClusterStack>('ClusterStack', 'ferrol'), 'ReleasesResolved')?.status).toBe('True');
    expect(
      condition(stored<ClusterStackRelease>('ClusterStackRelease', 'docker-ferrol-1-30-v3'), 'ManifestsRendered')
        ?.status,
    ).toBe('True');
    expect(published()).toEqual(before);
    controller = running;
  });

  it('lists every problem of an invalid ClusterStack in its condition while the other stack works', async () => {
    const commits = git.commitCount(remote, 'main');
    await custom.createNamespacedCustomObject({
      ...GROUP,
      plural: 'clusterstacks',
      namespace: NS,
      body: aStack('broken', { provider: 'my-provider', kubernetesVersion: 'latest' }),
    });
    const result = await reconcile();
    expect(result).not.toHaveProperty('error');
    const broken = stored<ClusterStack>('ClusterStack', 'broken')!;
    const resolved = condition(broken, 'ReleasesResolved')!;
    expect(resolved).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(resolved.message).toContain('spec.provider');
    expect(resolved.message).toContain('spec.kubernetesVersion');
    expect(condition(broken, 'Ready')?.reason).toBe('InvalidSpec');
    expect(condition(stored<ClusterStack>('ClusterStack', 'ferrol'), 'Ready')?.status).toBe('True');
    expect(git.commitCount(remote, 'main')).toBe(commits);
    expect(api.list('v1', 'Event', NS).some((event) => event['reason'] === 'InvalidSpec')).toBe(true);
  });

  it('holds the deletion of a ClusterStack whose releases Clusters use, until they are gone', async () => {
    const commits = git.commitCount(remote, 'main');
    await custom.deleteNamespacedCustomObject({ ...GROUP, plural: 'clusterstacks', namespace: NS, name: 'ferrol' });
    await reconcile();
    const held = stored<ClusterStack>('ClusterStack', 'ferrol')!;
    expect(held.metadata.deletionTimestamp).toBeTruthy();
    expect(condition(held, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'DeletionBlocked',
      message: expect.stringContaining(`${NS}/alpha`),
    });
    expect(condition(held, 'Ready')?.message).toContain(`${NS}/bravo`);
    expect(git.commitCount(remote, 'main')).toBe(commits);

    for (const name of ['alpha', 'bravo'])
      await custom.deleteNamespacedCustomObject({
        group: 'cluster.x-k8s.io',
        version: 'v1beta1',
        plural: 'clusters',
        namespace: NS,
        name,
      });
    await reconcile();
    expect(stored('ClusterStack', 'ferrol')).toBeUndefined();
    // Its releases were collected with it; their finalizers go once no Cluster uses them.
    await reconcile();
    expect(api.list('clusterstack.x-k8s.io/v1alpha1', 'ClusterStackRelease', NS)).toEqual([]);
    const tree = Object.keys(git.files(remote, 'main'));
    expect(tree.some((file) => file.startsWith('management/') || file.startsWith('clusters/'))).toBe(false);
  });
});
