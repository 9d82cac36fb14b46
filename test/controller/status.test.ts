// The controller's pure status computation: from a plan, a render outcome, a publish and the GitOps
// engine's state to the ClusterStack status and the objects it owns. No I/O, no setup.
import { describe, expect, it } from 'vitest';
import type { CapiCluster, ClusterStack, ClusterStackRelease, Condition, KubeObject } from '../../src/api/types.js';
import { resolveReleases } from '../../src/release/resolve-releases.js';
import { classifyInputs } from '../../src/inputs/classify-inputs.js';
import { releaseKey, type Plan } from '../../src/plan/build-plan.js';
import type { RenderOutcome } from '../../src/render/render-output.js';
import type { UnitRecord, WithheldEntry } from '../../src/output/provenance.js';
import { statusMergePatch } from '../../src/controller/reconcile/write-status.js';
import {
  credentialsFromKubeconfig,
  desiredArgoClusterSecret,
  KubeconfigError,
  secretMatches,
} from '../../src/controller/desired-state/argocd-cluster-secret.js';
import { mergeConditions, rebaseConditions } from '../../src/controller/desired-state/conditions.js';
import { desiredState } from '../../src/controller/desired-state/desired-state.js';
import type { PublishState, StatusInputs } from '../../src/controller/desired-state/status-inputs.js';
import { syncStateOf } from '../../src/controller/desired-state/sync-state.js';
import { labelValue, nameLabels } from '../../src/controller/desired-state/owned-objects.js';
import { aCluster, aClusterStack, aProviderRelease, releases } from '../support/builders.js';
import { checkCrdRules } from '../support/crd-rule-check.js';

const NS = 'cluster-stacks';
const NOW = '2025-01-02T03:04:05.000Z';
const HEAD = 'a'.repeat(40);

function live<T extends { metadata: object }>(object: T, uid: string, extra: Record<string, unknown> = {}): T {
  return { ...object, metadata: { ...object.metadata, uid, generation: 1, resourceVersion: '1', ...extra } };
}

function planOf(
  stacks: ClusterStack[],
  clusters: CapiCluster[],
  tags: string[],
  providerReleases: KubeObject[] = [],
): Plan {
  const objects = [...stacks, ...clusters, ...providerReleases].map((object) => ({
    object: object as unknown as KubeObject,
    source: 'cluster',
  }));
  const inputs = classifyInputs(objects, checkCrdRules);
  const resolution = resolveReleases({
    stacks: stacks.map((stack) => ({ stack, releases: releases(...tags) })),
    clusters,
    providerReleases,
  });
  const namespaces = [...new Set(stacks.map((stack) => stack.metadata.namespace ?? 'default'))];
  const loaded = new Map(
    namespaces.flatMap((namespace) =>
      tags.map((tag) => [
        releaseKey(namespace, tag),
        {
          tag,
          source: {
            location: '/releases',
            list: async () => ({ releases: [], skipped: [] }),
            fetch: async () => ({ tag, dir: '', digest: '' }),
          },
          content: {
            tag,
            digest: `sha256:${tag}`,
            metadata: { kubernetesVersion: '1.30.4', clusterAddonVersion: 'v2' },
          },
          problems: [],
        },
      ]),
    ),
  ) as unknown as Plan['releases'];
  return { inputs, resolution, releases: loaded, problems: inputs.problems, warnings: [] };
}

function releaseUnit(tag: string): UnitRecord {
  return {
    dir: `management/${NS}/${tag}`,
    kind: 'release',
    namespace: NS,
    name: tag,
    release: tag,
    inputDigest: 'i',
    renderDigest: `r-${tag}`,
    files: ['clusterclass-x.yaml'],
  };
}

function stageUnit(cluster: string, tag: string, stage: string, order: number): UnitRecord {
  return {
    dir: `clusters/${NS}/${cluster}/${stage}`,
    kind: 'cluster-stage',
    namespace: NS,
    name: cluster,
    release: tag,
    stage,
    order,
    addonVersion: 'v2',
    inputDigest: 'i',
    renderDigest: `r-${cluster}-${stage}`,
    files: ['daemonset-cni.yaml'],
  };
}

function renderOf(units: UnitRecord[], withheld: WithheldEntry[] = []): RenderOutcome {
  return {
    tree: new Map(),
    provenance: { units, withheld } as unknown as RenderOutcome['provenance'],
    summary: {} as RenderOutcome['summary'],
    withheld,
    notes: [],
    stats: { unitsRendered: 0, unitsReused: 0 },
  };
}

function published(units: UnitRecord[], overrides: Partial<PublishState> = {}): PublishState {
  return {
    target: 'file:///gitops.git (branch main)',
    revisionKind: 'commit',
    revision: HEAD,
    outcome: 'published',
    dirtyDirs: new Set(units.map((unit) => unit.dir)),
    order: { history: [HEAD], unitRevisions: new Map(units.map((unit) => [unit.dir, HEAD])) },
    ...overrides,
  };
}

function inputsFor(options: {
  stacks: ClusterStack[];
  clusters?: CapiCluster[];
  tags: string[];
  units: UnitRecord[];
  withheld?: WithheldEntry[];
  releases?: ClusterStackRelease[];
  providerReleases?: KubeObject[];
  providerTemplates?: KubeObject[];
  publish?: Partial<PublishState>;
  engine?: StatusInputs['engine'];
  sync?: StatusInputs['sync'];
}): StatusInputs {
  const clusters = options.clusters ?? [];
  return {
    now: NOW,
    engine: options.engine ?? 'none',
    live: {
      stacks: options.stacks,
      clusters,
      releases: options.releases ?? [],
      addons: [],
      providerReleases: options.providerReleases ?? [],
      providerTemplates: options.providerTemplates ?? [],
    },
    plan: planOf(options.stacks, clusters, options.tags, options.providerReleases),
    stackIssues: new Map(),
    render: renderOf(options.units, options.withheld),
    publish: published(options.units, options.publish),
    sync: options.sync ?? new Map(),
    unitObjects: (unit) => [
      {
        group: unit.kind === 'release' ? 'cluster.x-k8s.io' : 'apps',
        version: 'v1',
        kind: unit.kind === 'release' ? 'ClusterClass' : 'DaemonSet',
        name: unit.name,
        ...(unit.kind === 'release' ? {} : { namespace: 'kube-system' }),
      },
    ],
  };
}

const condition = (conditions: Condition[] | undefined, type: string) => conditions?.find((c) => c.type === type);
const V2 = 'docker-ferrol-1-30-v2';
const V3 = 'docker-ferrol-1-30-v3';

describe('mergeConditions', () => {
  it('keeps lastTransitionTime while the status stays, and moves it when the status changes', () => {
    const before: Condition[] = [
      { type: 'Ready', status: 'True', reason: 'Ready', message: 'old', lastTransitionTime: '2020-01-01T00:00:00Z' },
    ];
    expect(
      mergeConditions(before, [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'new' }], NOW, 3),
    ).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'Ready',
        message: 'new',
        lastTransitionTime: '2020-01-01T00:00:00Z',
        observedGeneration: 3,
      },
    ]);
    expect(
      mergeConditions(
        before,
        [{ type: 'Ready', status: 'False', reason: 'PublishRetrying', message: 'm', severity: 'Warning' }],
        NOW,
      )[0],
    ).toMatchObject({ status: 'False', severity: 'Warning', lastTransitionTime: NOW });
    expect(
      rebaseConditions([{ type: 'Ready', status: 'True', lastTransitionTime: NOW }], before, NOW)[0]
        ?.lastTransitionTime,
    ).toBe('2020-01-01T00:00:00Z');
  });
});

describe('desiredState', () => {
  const stack = live(aClusterStack().named('ferrol', NS).withVersions('v2').build(), 'stack-uid');

  it('reports usable and latest versions and a Ready stack whose releases are published', () => {
    const units = [releaseUnit(V2), releaseUnit(V3)];
    const state = desiredState(inputsFor({ stacks: [stack], tags: [V2, V3], units }));
    const status = state.stacks[0]!.status;
    expect(status).toMatchObject({ latestRelease: V3, usableVersions: 'v2, v3', observedGeneration: 1 });
    expect(status.summary).toEqual([
      { name: V2, ready: true, phase: 'done' },
      { name: V3, ready: true, phase: 'done' },
    ]);
    expect(condition(status.conditions, 'ReleasesResolved')).toMatchObject({
      status: 'True',
      reason: 'ReleasesResolved',
      lastTransitionTime: NOW,
    });
    expect(condition(status.conditions, 'Ready')?.status).toBe('True');
    expect(state.stacks[0]!.finalizer).toBe('ensure');
  });

  it('makes one ClusterStackRelease per kept release, owned by the stack, with the commit in ManifestsPublished', () => {
    const units = [releaseUnit(V2), releaseUnit(V3)];
    const state = desiredState(inputsFor({ stacks: [stack], tags: ['docker-ferrol-1-30-v1', V2, V3], units }));
    expect(state.releases.map((release) => release.object.metadata.name)).toEqual([V2, V3]);
    const release = state.releases[0]!;
    expect(release.object.metadata.ownerReferences).toEqual([
      {
        apiVersion: stack.apiVersion,
        kind: 'ClusterStack',
        name: 'ferrol',
        uid: 'stack-uid',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(release.object.metadata.finalizers).toEqual(['clusterstack.x-k8s.io/finalizer']);
    expect(release.status).toMatchObject({
      kubernetesVersion: '1.30.4',
      ready: true,
      resources: [{ group: 'cluster.x-k8s.io', version: 'v1', kind: 'ClusterClass', name: V2, status: '' }],
    });
    expect(condition(release.status.conditions, 'ManifestsPublished')?.message).toContain(`commit ${HEAD}`);
    expect(condition(release.status.conditions, 'ManifestsSynced')).toMatchObject({
      status: 'Unknown',
      reason: 'SyncNotTracked',
    });
    expect(
      state.events.filter((event) => event.reason === 'ReleaseAppeared').map((event) => event.regarding.name),
    ).toEqual(['ferrol', 'ferrol']);
  });

  it('deletes an owned release no longer kept, but never one a Cluster uses', () => {
    const owned = (tag: string) =>
      live<ClusterStackRelease>(
        {
          apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
          kind: 'ClusterStackRelease',
          metadata: {
            name: tag,
            namespace: NS,
            ownerReferences: [
              {
                apiVersion: stack.apiVersion,
                kind: 'ClusterStack',
                name: 'ferrol',
                uid: 'stack-uid',
                controller: true,
              },
            ],
          },
        },
        `uid-${tag}`,
      );
    const gone = 'docker-ferrol-1-30-v0';
    const inUse = 'docker-ferrol-1-30-v1';
    // The resolution keeps v1 for the Cluster; the second check holds even when the resolution does not.
    const clusters = [live(aCluster('alpha', inUse), 'c1')];
    const inputs = inputsFor({
      stacks: [stack],
      clusters,
      tags: [V2, V3],
      units: [],
      releases: [owned(gone), owned(inUse)],
    });
    const state = desiredState(inputs);
    expect(state.releasesToDelete.map((release) => release.metadata.name)).toEqual([gone]);
  });

  it('holds the deletion of a ClusterStackRelease a Cluster uses, and lets go of one nobody uses', () => {
    const terminating = (tag: string) =>
      live<ClusterStackRelease>(
        {
          apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
          kind: 'ClusterStackRelease',
          metadata: {
            name: tag,
            namespace: NS,
            deletionTimestamp: NOW,
            finalizers: ['clusterstack.x-k8s.io/finalizer'],
            ownerReferences: [
              {
                apiVersion: stack.apiVersion,
                kind: 'ClusterStack',
                name: 'ferrol',
                uid: 'stack-uid',
                controller: true,
              },
            ],
          },
        },
        `uid-${tag}`,
      );
    const clusters = [live(aCluster('alpha', V2), 'c1')];
    const state = desiredState(
      inputsFor({
        stacks: [stack],
        clusters,
        tags: [V2, V3],
        units: [releaseUnit(V2), releaseUnit(V3)],
        releases: [terminating(V2), terminating(V3)],
      }),
    );
    const byName = new Map(state.releases.map((release) => [release.object.metadata.name, release]));
    expect(byName.get(V2)).toMatchObject({ removeFinalizer: false });
    expect(condition(byName.get(V2)!.status.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'DeletionBlocked',
      message: expect.stringContaining(`${NS}/alpha`),
    });
    expect(byName.get(V3)).toMatchObject({ removeFinalizer: true });
  });

  it('holds the deletion of a stack whose releases Clusters use, naming them, and lets go when none do', () => {
    const deleting = {
      ...stack,
      metadata: { ...stack.metadata, deletionTimestamp: NOW, finalizers: ['clusterstack.x-k8s.io/finalizer'] },
    };
    const clusters = [
      live(aCluster('alpha', 'docker-ferrol-1-30-v2'), 'c1'),
      live(aCluster('bravo', 'docker-ferrol-1-30-v3'), 'c2'),
    ];
    const held = desiredState(inputsFor({ stacks: [deleting], clusters, tags: [V2, V3], units: [] })).stacks[0]!;
    expect(held.finalizer).toBe('keep');
    expect(condition(held.status.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'DeletionBlocked' });
    expect(condition(held.status.conditions, 'Ready')?.message).toMatch(
      /cluster-stacks\/alpha \(docker-ferrol-1-30-v2\), cluster-stacks\/bravo/,
    );
    expect(desiredState(inputsFor({ stacks: [deleting], tags: [V2, V3], units: [] })).stacks[0]!.finalizer).toBe(
      'remove',
    );
  });

  it('lists every problem of an invalid spec', () => {
    const inputs = inputsFor({ stacks: [stack], tags: [V2], units: [] });
    inputs.stackIssues.set(`${NS}/ferrol`, {
      reason: 'InvalidSpec',
      problems: ['spec.provider must not contain "-"', 'spec.kubernetesVersion must be major.minor'],
      fallback: false,
    });
    const status = desiredState(inputs).stacks[0]!.status;
    expect(condition(status.conditions, 'ReleasesResolved')).toMatchObject({
      status: 'False',
      reason: 'InvalidSpec',
      severity: 'Error',
    });
    expect(condition(status.conditions, 'ReleasesResolved')?.message).toMatch(
      /2 problems: spec.provider .*; spec.kubernetesVersion/,
    );
    expect(condition(status.conditions, 'Ready')?.reason).toBe('InvalidSpec');
  });

  it('gives each Cluster a ClusterAddon with its stages, and a condition when its class is unknown or withheld', () => {
    const clusters = [
      live(aCluster('alpha', V3), 'c1'),
      live(aCluster('bravo', 'docker-ferrol-1-30-v9'), 'c2'),
      live(aCluster('charlie', 'docker-other-1-30-v1'), 'c3'),
    ];
    const units = [releaseUnit(V3), stageUnit('alpha', V3, 'metrics-server', 1), stageUnit('alpha', V3, 'cni', 0)];
    const withheld: WithheldEntry[] = [
      {
        kind: 'cluster',
        namespace: NS,
        name: 'bravo',
        reason: 'names docker-ferrol-1-30-v9, but the release source has no release',
        previousKept: false,
      },
    ];
    const state = desiredState(inputsFor({ stacks: [stack], clusters, tags: [V2, V3], units, withheld }));
    const byName = new Map(state.addons.map((addon) => [addon.object.metadata.name, addon]));
    const alpha = byName.get('alpha')!;
    expect(alpha.object.spec).toMatchObject({
      clusterStack: V3,
      version: 'v2',
      clusterRef: { kind: 'Cluster', name: 'alpha', namespace: NS, uid: 'c1' },
    });
    expect(alpha.object.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'Cluster',
      name: 'alpha',
      uid: 'c1',
      controller: true,
    });
    expect(alpha.status.stages?.map((stage) => stage.name)).toEqual(['cni', 'metrics-server']);
    expect(alpha.status.ready).toBe(true);
    expect(condition(byName.get('bravo')!.status.conditions, 'ClusterClassAvailable')).toMatchObject({
      status: 'False',
      reason: 'ClusterClassUnknown',
    });
    expect(condition(byName.get('bravo')!.status.conditions, 'ManifestsRendered')).toMatchObject({
      status: 'False',
      reason: 'AddonsWithheld',
    });
    expect(condition(byName.get('charlie')!.status.conditions, 'ClusterClassAvailable')?.message).toContain(
      'no ClusterStack',
    );
    expect(
      state.events.some((event) => event.reason === 'ClusterClassUnknown' && event.regarding.name === 'bravo'),
    ).toBe(true);
  });

  it('records an Event when a ClusterAddon fails to sync, none while the engine is applying it', () => {
    const clusters = [live(aCluster('alpha', V3), 'c1')];
    const units = [releaseUnit(V3), stageUnit('alpha', V3, 'cni', 0)];
    const verdict = (state: 'progressing' | 'failed') =>
      new Map([
        [
          `clusters/${NS}/alpha/cni`,
          {
            engine: 'flux' as const,
            source: `Flux Kustomization ${NS}/alpha-cni`,
            state,
            message: `Flux Kustomization ${NS}/alpha-cni ${state}`,
          },
        ],
      ]);
    const syncEvents = (state: 'progressing' | 'failed') =>
      desiredState(
        inputsFor({
          stacks: [stack],
          clusters,
          tags: [V3],
          units,
          engine: 'flux',
          sync: verdict(state),
          publish: { outcome: 'unchanged' },
        }),
      )
        .events.filter((event) => event.regarding.kind === 'ClusterAddon')
        .map((event) => `${event.type} ${event.reason}`);
    expect(syncEvents('progressing')).toEqual([]);
    expect(syncEvents('failed')).toEqual(['Warning SyncFailed']);
  });

  it("keeps each lifecycle hook's last outcome and the LifecycleHook condition across a controller restart, computed from the ClusterAddon as read back", () => {
    const clusters = [live(aCluster('alpha', V3), 'c1')];
    const units = [releaseUnit(V3), stageUnit('alpha', V3, 'cni', 0)];
    const since = '2025-01-01T00:00:00.000Z';
    // Before the restart: this process answered BeforeClusterUpgrade and it succeeded.
    const before = inputsFor({ stacks: [stack], clusters, tags: [V3], units });
    before.hookProgress = () => [
      {
        hook: 'BeforeClusterUpgrade',
        targetRelease: V3,
        outcome: 'ready',
        message: `addons of release ${V3} are published`,
        since,
      },
    ];
    const written = desiredState(before).addons[0]!;
    expect(written.status.hooks).toEqual([
      {
        name: 'BeforeClusterUpgrade',
        release: V3,
        outcome: 'Succeeded',
        message: `addons of release ${V3} are published`,
        since,
      },
    ]);
    expect(condition(written.status.conditions, 'LifecycleHook')).toMatchObject({
      status: 'True',
      reason: 'HookSucceeded',
      lastTransitionTime: NOW,
    });
    const persisted = live({ ...written.object, status: written.status }, 'addon-uid');

    // After the restart: nothing answered yet in this process; the ClusterAddon as read back is all there is.
    const restarted = inputsFor({ stacks: [stack], clusters, tags: [V3], units });
    restarted.now = '2025-01-03T00:00:00.000Z';
    restarted.live.addons = [persisted];
    restarted.hookProgress = () => undefined;
    const after = desiredState(restarted).addons[0]!;
    expect(after.status.hooks).toEqual(written.status.hooks);
    expect(condition(after.status.conditions, 'LifecycleHook')).toEqual(
      condition(written.status.conditions, 'LifecycleHook'),
    );
    expect(after.object.spec.hook).toBe('BeforeClusterUpgrade');

    // A later hook adds its own entry; the condition follows the newest wait, the earlier outcome stays.
    restarted.hookProgress = () => [
      {
        hook: 'AfterClusterUpgrade',
        targetRelease: V3,
        outcome: 'timed-out',
        message:
          'not holding the Cluster any longer after 30m (the hook timeout is 30m) without confirming: stage cni: x',
        since: '2025-01-02T00:00:00.000Z',
      },
    ];
    const later = desiredState(restarted).addons[0]!;
    expect(later.status.hooks?.map((hook) => [hook.name, hook.outcome])).toEqual([
      ['BeforeClusterUpgrade', 'Succeeded'],
      ['AfterClusterUpgrade', 'TimedOut'],
    ]);
    expect(condition(later.status.conditions, 'LifecycleHook')).toMatchObject({
      status: 'False',
      reason: 'HookTimedOut',
      severity: 'Warning',
      message: expect.stringContaining('without confirming: stage cni: x'),
    });
    expect(later.object.spec.hook).toBe('AfterClusterUpgrade');
  });

  it('reports a failed publish on the objects whose output did not land', () => {
    const units = [releaseUnit(V2), stageUnit('alpha', V2, 'cni', 0)];
    const clusters = [live(aCluster('alpha', 'docker-ferrol-1-30-v2'), 'c1')];
    const state = desiredState(
      inputsFor({
        stacks: [stack],
        clusters,
        tags: [V2],
        units,
        publish: { outcome: 'failed', message: 'git push declined', dirtyDirs: new Set([`clusters/${NS}/alpha/cni`]) },
      }),
    );
    expect(condition(state.addons[0]!.status.conditions, 'ManifestsPublished')).toMatchObject({
      status: 'False',
      reason: 'PublishRetrying',
    });
    expect(condition(state.releases[0]!.status.conditions, 'ManifestsPublished')?.status).toBe('True');
  });

  it('shows on a release the shared objects it uses, in its resources and SharedObjectsReady, and holds Ready until the engine applied them', () => {
    const sharedDir = `management/${NS}/shared`;
    const image = {
      path: `${sharedDir}/image-ubuntu-capi-image-v1.30.4.yaml`,
      group: 'openstack.k-orc.cloud',
      version: 'v1alpha1',
      kind: 'Image',
      namespace: NS,
      name: 'ubuntu-capi-image-v1.30.4',
      renderedBy: [V2, V3],
    };
    const units = [V2, V3].map((tag) => ({
      ...releaseUnit(tag),
      shared: { 'image-ubuntu-capi-image-v1.30.4.yaml': image.path },
    }));
    const verdict = (dir: string, state: 'synced' | 'progressing') => ({
      engine: 'flux' as const,
      source: `Flux Kustomization flux-system/${dir}`,
      state,
      message: `Flux Kustomization flux-system/${dir.split('/').at(-1)} ${state}`,
    });
    const stateWith = (sharedState: 'synced' | 'progressing') => {
      const inputs = inputsFor({
        stacks: [stack],
        tags: [V2, V3],
        units,
        engine: 'flux',
        sync: new Map([
          ...units.map((unit) => [unit.dir, verdict(unit.dir, 'synced')] as const),
          [sharedDir, verdict(sharedDir, sharedState)],
        ]),
      });
      inputs.render!.provenance.sharedObjects = [image];
      return desiredState(inputs).releases[0]!;
    };
    const waiting = stateWith('progressing');
    expect(waiting.status.resources).toEqual([
      { group: 'cluster.x-k8s.io', version: 'v1', kind: 'ClusterClass', name: V2, status: 'synced' },
      {
        group: 'openstack.k-orc.cloud',
        version: 'v1alpha1',
        kind: 'Image',
        namespace: NS,
        name: 'ubuntu-capi-image-v1.30.4',
        status: 'not-synced',
        error: 'Flux Kustomization flux-system/shared progressing',
      },
    ]);
    expect(condition(waiting.status.conditions, 'SharedObjectsReady')).toMatchObject({
      status: 'False',
      reason: 'SharedObjectsProgressing',
      message: expect.stringContaining(
        `Image.openstack.k-orc.cloud ${NS}/ubuntu-capi-image-v1.30.4 (${image.path}, rendered by ${V2}, ${V3})`,
      ),
    });
    expect(waiting.status.ready).toBe(false);
    const ready = stateWith('synced');
    expect(condition(ready.status.conditions, 'SharedObjectsReady')).toMatchObject({
      status: 'True',
      reason: 'SharedObjectsReady',
    });
    expect(ready.status.ready).toBe(true);
    // A release that shares nothing says so, and without an engine the shared objects are listed but not tracked.
    expect(
      condition(
        desiredState(inputsFor({ stacks: [stack], tags: [V2], units: [releaseUnit(V2)] })).releases[0]!.status
          .conditions,
        'SharedObjectsReady',
      ),
    ).toMatchObject({ status: 'True', reason: 'NoSharedObjects' });
  });

  it('copies the provider template into one provider release per kept release', () => {
    const providerStack = live(
      aClusterStack().named('ferrol', NS).withVersions('v2').withProvider('DockerClusterStackReleaseTemplate').build(),
      'stack-uid',
    );
    const template: KubeObject = {
      apiVersion: 'infrastructure.clusterstack.x-k8s.io/v1alpha1',
      kind: 'DockerClusterStackReleaseTemplate',
      metadata: { name: 'docker-template', namespace: NS },
      spec: { template: { spec: { nodeImages: ['ubuntu'] } } },
    };
    const state = desiredState(
      inputsFor({
        stacks: [providerStack],
        tags: [V2],
        units: [],
        providerTemplates: [template],
        providerReleases: [aProviderRelease(V2, false)],
      }),
    );
    expect(state.providerReleases.map((entry) => entry.object)).toEqual([
      expect.objectContaining({
        apiVersion: template.apiVersion,
        kind: 'DockerClusterStackRelease',
        metadata: expect.objectContaining({
          name: V2,
          namespace: NS,
          ownerReferences: [expect.objectContaining({ kind: 'ClusterStack', uid: 'stack-uid' })],
        }),
        spec: { nodeImages: ['ubuntu'] },
      }),
    ]);
    const release = state.releases[0]!;
    expect(release.object.spec?.providerRef).toEqual({
      apiVersion: template.apiVersion,
      kind: 'DockerClusterStackRelease',
      name: V2,
      namespace: NS,
    });
    expect(condition(release.status.conditions, 'ProviderClusterStackReleaseReady')).toMatchObject({
      status: 'False',
      reason: 'ProviderReleaseNotReady',
    });
    const missing = desiredState(inputsFor({ stacks: [providerStack], tags: [V2], units: [] }));
    expect(missing.providerReleases).toEqual([]);
    expect(condition(missing.stacks[0]!.status.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ProviderTemplateNotFound',
    });
  });
});

describe('syncStateOf', () => {
  const order = { history: ['1'.repeat(40), HEAD], unitRevisions: new Map([[`management/${NS}/${V2}`, HEAD]]) };
  const flux = (name: string, path: string, ready: string, revision: string): KubeObject => ({
    apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
    kind: 'Kustomization',
    metadata: { name, namespace: 'flux-system' },
    spec: { path },
    status: {
      lastAppliedRevision: `main@sha1:${revision}`,
      conditions: [
        {
          type: 'Ready',
          status: ready,
          reason: ready === 'True' ? 'ReconciliationSucceeded' : 'HealthCheckFailed',
          message: 'm',
        },
      ],
    },
  });

  it('matches paths ending in a unit directory, the most specific first, under the output path', () => {
    const release = `management/${NS}/${V2}`;
    const stage = `clusters/${NS}/alpha/cni`;
    const objects = [
      flux('management', './gitops/management', 'False', HEAD),
      flux('release', `./gitops/management/${NS}/${V2}`, 'True', HEAD),
      flux('bravo', `./gitops/clusters/${NS}/bravo`, 'True', HEAD),
      flux('wiring', './gitops/flux', 'True', HEAD),
    ];
    const states = syncStateOf('flux', objects, [release, stage], order, 'gitops');
    expect(states.get(release)?.source).toBe('Flux Kustomization flux-system/release');
    expect(states.has(stage)).toBe(false);
    const alpha = syncStateOf(
      'flux',
      [...objects, flux('alpha', `./gitops/clusters/${NS}/alpha`, 'True', HEAD)],
      [stage],
      order,
      'gitops',
    );
    expect(alpha.get(stage)?.source).toBe('Flux Kustomization flux-system/alpha');
  });

  it('reads Flux Ready and the applied revision, waiting for the unit revision', () => {
    const dir = `management/${NS}/${V2}`;
    expect(syncStateOf('flux', [flux('a', `./${dir}`, 'True', HEAD)], [dir], order).get(dir)).toMatchObject({
      state: 'synced',
      revision: `main@sha1:${HEAD}`,
    });
    expect(syncStateOf('flux', [flux('a', `./${dir}`, 'True', '1'.repeat(40))], [dir], order).get(dir)?.state).toBe(
      'progressing',
    );
    expect(syncStateOf('flux', [flux('a', `./${dir}`, 'False', HEAD)], [dir], order).get(dir)).toMatchObject({
      state: 'failed',
      message: expect.stringContaining('HealthCheckFailed'),
    });
  });

  it('reads a Kustomization Flux reconciles again by its last finished attempt (status.history), waits Flux requeues by itself as progress, and a spec changed since it applied as not applied yet', () => {
    const dir = `management/${NS}/${V2}`;
    const OLD = '1'.repeat(40);
    // What kustomize-controller writes at the start of every reconcile, periodic and retried ones too.
    const reconciling = (applied: string, last?: { outcome: string; revision: string }): KubeObject => {
      const object = flux('a', `./${dir}`, 'Unknown', applied);
      const status = object['status'] as Record<string, unknown>;
      status['conditions'] = [
        { type: 'Ready', status: 'Unknown', reason: 'Progressing', message: 'Reconciliation in progress' },
      ];
      if (last)
        status['history'] = [
          {
            digest: 'sha256:1',
            lastReconciledStatus: last.outcome,
            metadata: { revision: `main@sha1:${last.revision}` },
            totalReconciliations: 3,
          },
        ];
      return object;
    };
    const verdict = (object: KubeObject) => syncStateOf('flux', [object], [dir], order).get(dir);
    const steady = verdict(flux('a', `./${dir}`, 'True', HEAD))!;
    // Retrying a failed revision: still failed, not progress (no SyncFailed/Progressing flapping on every retry).
    expect(verdict(reconciling(OLD, { outcome: 'ReconciliationFailed', revision: HEAD }))).toMatchObject({
      state: 'failed',
      message: `Flux Kustomization flux-system/a is trying again; its last attempt (main@sha1:${HEAD}) failed (ReconciliationFailed)`,
    });
    // Checking again what it applied and found healthy: still synced, with the same message (no status write).
    expect(verdict(reconciling(HEAD, { outcome: 'ReconciliationSucceeded', revision: HEAD }))).toEqual(steady);
    // A new revision on its way, or a first reconcile: progress.
    expect(verdict(reconciling(OLD, { outcome: 'ReconciliationSucceeded', revision: OLD }))).toMatchObject({
      state: 'progressing',
      message: expect.stringContaining(`waiting for it to apply commit ${HEAD}`),
    });
    expect(verdict(reconciling(OLD))).toMatchObject({
      state: 'progressing',
      message: 'Flux Kustomization flux-system/a is reconciling: Reconciliation in progress',
    });
    // Waits Flux requeues by itself: no source artifact yet (right after the bootstrap), health checks cancelled for a newer revision.
    for (const reason of ['ArtifactFailed', 'HealthCheckCanceled']) {
      const waiting = flux('a', `./${dir}`, 'False', OLD);
      (waiting['status'] as { conditions: Record<string, unknown>[] }).conditions[0]!['reason'] = reason;
      expect(verdict(waiting)?.state).toBe('progressing');
    }
    // Ready from before the spec changed (Flux sets observedGeneration only when a reconcile succeeds).
    const changed = flux('a', `./${dir}`, 'True', HEAD);
    changed.metadata.generation = 3;
    (changed['status'] as Record<string, unknown>)['observedGeneration'] = 2;
    expect(verdict(changed)).toMatchObject({
      state: 'progressing',
      message: 'Flux Kustomization flux-system/a has not applied its changed spec yet (generation 3, last applied 2)',
    });
    // Between Flux's two status patches: a new Kustomization already Ready=True, its applied revision not written yet.
    const fresh = flux('a', `./${dir}`, 'True', HEAD);
    fresh.metadata.generation = 1;
    fresh['status'] = { observedGeneration: -1, conditions: (fresh['status'] as { conditions: unknown[] }).conditions };
    expect(verdict(fresh)).toMatchObject({
      state: 'progressing',
      message: 'Flux Kustomization flux-system/a has not finished its first reconcile',
    });
  });

  it('reads Argo CD sync and health, including drift per object', () => {
    const dir = `clusters/${NS}/alpha/cni`;
    const app = (sync: string, health: string): KubeObject => ({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'alpha-cni', namespace: 'argocd' },
      spec: { source: { path: dir } },
      status: {
        sync: { status: sync, revision: HEAD },
        health: { status: health },
        resources: [
          { group: 'apps', version: 'v1', kind: 'DaemonSet', namespace: 'kube-system', name: 'cni', status: sync },
        ],
      },
    });
    expect(syncStateOf('argocd', [app('Synced', 'Healthy')], [dir], order).get(dir)?.state).toBe('synced');
    const drifted = syncStateOf('argocd', [app('OutOfSync', 'Healthy')], [dir], order).get(dir)!;
    expect(drifted).toMatchObject({
      state: 'out-of-sync',
      message: expect.stringContaining('DaemonSet/kube-system/cni'),
    });
    expect(drifted.resources?.get('apps/DaemonSet/kube-system/cni')).toMatchObject({ synced: false });
  });

  it("reports an Application's first sync (OutOfSync at the published revision, Progressing, operation Running) as progress, not drift", () => {
    const stack = live(aClusterStack().named('ferrol', NS).withVersions('v2').build(), 'uid-stack');
    const unit = releaseUnit(V2);
    const firstSync: KubeObject = {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'release-v2', namespace: 'argocd' },
      spec: { source: { path: unit.dir } },
      status: {
        sync: { status: 'OutOfSync', revision: HEAD },
        health: { status: 'Progressing' },
        operationState: {
          phase: 'Running',
          message: 'waiting for healthy state of cluster.x-k8s.io/ClusterClass/ferrol',
          operation: { sync: { revision: HEAD } },
        },
        resources: [
          {
            group: 'cluster.x-k8s.io',
            version: 'v1beta1',
            kind: 'ClusterClass',
            namespace: NS,
            name: V2,
            status: 'OutOfSync',
          },
        ],
      },
    };
    const sync = syncStateOf('argocd', [firstSync], [unit.dir], {
      history: [HEAD],
      unitRevisions: new Map([[unit.dir, HEAD]]),
    });
    expect(sync.get(unit.dir)).toMatchObject({
      state: 'progressing',
      message: expect.stringContaining(`is syncing ${HEAD}`),
    });
    const release = live<ClusterStackRelease>(
      {
        apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
        kind: 'ClusterStackRelease',
        metadata: {
          name: V2,
          namespace: NS,
          ownerReferences: [
            { apiVersion: stack.apiVersion, kind: 'ClusterStack', name: 'ferrol', uid: 'uid-stack', controller: true },
          ],
        },
      },
      'uid-release',
    );
    const state = desiredState(
      inputsFor({
        stacks: [stack],
        tags: [V2],
        units: [unit],
        releases: [release],
        engine: 'argocd',
        sync,
        publish: { outcome: 'unchanged', dirtyDirs: new Set() },
      }),
    );
    const conditions = state.releases[0]!.status.conditions;
    expect(condition(conditions, 'ManifestsSynced')).toMatchObject({
      status: 'False',
      reason: 'Progressing',
      severity: 'Info',
    });
    expect(state.events.filter((event) => event.type === 'Warning')).toEqual([]);
  });
});

describe('Argo CD cluster secret', () => {
  const kubeconfig = `apiVersion: v1
kind: Config
current-context: admin@alpha
clusters:
  - name: alpha
    cluster: { server: "https://alpha.example.test:6443", certificate-authority-data: Q0E= }
users:
  - name: admin
    user: { client-certificate-data: Q0VSVA==, client-key-data: S0VZ }
contexts:
  - name: admin@alpha
    context: { cluster: alpha, user: admin }
`;

  it('is made from the kubeconfig, named after the Cluster, and compared by content', () => {
    const secret = desiredArgoClusterSecret(
      { namespace: NS, name: 'alpha' },
      credentialsFromKubeconfig(kubeconfig, 'Secret x'),
      'argocd',
    );
    expect(secret.metadata).toMatchObject({
      name: `cluster-${NS}-alpha`,
      namespace: 'argocd',
      labels: { 'argocd.argoproj.io/secret-type': 'cluster' },
    });
    expect(secret.stringData).toMatchObject({ name: `${NS}-alpha`, server: 'https://alpha.example.test:6443' });
    expect(JSON.parse(secret.stringData['config']!)).toEqual({
      tlsClientConfig: { insecure: false, caData: 'Q0E=', certData: 'Q0VSVA==', keyData: 'S0VZ' },
    });
    const data = Object.fromEntries(
      Object.entries(secret.stringData).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
    );
    expect(secretMatches({ data, metadata: { labels: secret.metadata.labels } }, secret)).toBe(true);
    expect(
      secretMatches({ data: { ...data, server: 'eA==' }, metadata: { labels: secret.metadata.labels } }, secret),
    ).toBe(false);
  });

  it('refuses a kubeconfig without credentials, without quoting it', () => {
    const bad = kubeconfig.replace(/users:[\s\S]*?contexts:/, 'users: []\ncontexts:');
    expect(() => credentialsFromKubeconfig(bad, 'Secret ns/alpha-kubeconfig')).toThrow(KubeconfigError);
    expect(() => credentialsFromKubeconfig(bad, 'Secret ns/alpha-kubeconfig')).toThrow(
      /^Secret ns\/alpha-kubeconfig: the kubeconfig has neither/,
    );
  });
});

describe('statusMergePatch', () => {
  it('sets the desired fields and nulls the ones that went away', () => {
    expect(
      statusMergePatch({ ready: true, latestRelease: 'x', conditions: [] }, { ready: false, conditions: [] }),
    ).toEqual({ latestRelease: null, ready: false, conditions: [] });
  });
});

describe('labelValue', () => {
  it('keeps names that fit and shortens longer ones with a hash, distinct and valid', () => {
    expect(labelValue('ferrol')).toBe('ferrol');
    const long = `${'a'.repeat(60)}-stack-one`;
    const other = `${'a'.repeat(60)}-stack-two`;
    expect(labelValue(long)).toHaveLength(63);
    expect(labelValue(long)).toMatch(/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/);
    expect(labelValue(long)).not.toBe(labelValue(other));
    // A cut that would end in a dash loses the dash, so the value still ends alphanumeric before the hash.
    expect(labelValue(`${'b'.repeat(51)}-${'c'.repeat(20)}`)).toMatch(/^b{51}-[0-9a-f]{10}$/);
    expect(nameLabels({ 'clusterstack.x-k8s.io/cluster-stack': long })).toEqual({
      labels: { 'clusterstack.x-k8s.io/cluster-stack': labelValue(long) },
      annotations: { 'clusterstack.x-k8s.io/full-cluster-stack': long },
    });
  });
});
