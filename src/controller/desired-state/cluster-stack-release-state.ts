// The ClusterStackReleases the controller wants: one per kept release, owned by its ClusterStack,
// with a status that follows the release from download through render and publish to sync.
import { loadedRelease } from '../../plan/build-plan.js';
import {
  API_VERSION,
  LABEL_PART_OF,
  type ClusterStack,
  type ClusterStackRelease,
  type ClusterStackReleaseStatus,
  type Condition,
  type ObjectReference,
  withSpecDefaults,
} from '../../api/types.js';
import { formatProblem } from '../../core/problem.js';
import { stackPrefix, tryParseReleaseTag } from '../../core/release-tag.js';
import { namespaceOf, type ReleaseDecision, type StackResolution } from '../../release/resolve-releases.js';
import {
  falseCondition,
  mergeConditions,
  readySummary,
  trueCondition,
  unknownCondition,
  type DesiredCondition,
} from './conditions.js';
import { clustersUsingRelease, deletionBlockedMessage } from './deletion.js';
import { eventOnFailure, regarding, type EventIntent } from './event-intents.js';
import {
  controllerReference,
  FINALIZER,
  isManagedByUs,
  keyOf,
  LABEL_CLUSTER_STACK,
  managedLabels,
  nameLabels,
  ownerOfKind,
} from './owned-objects.js';
import { providerReleaseKind, providerTemplateOf, unservedProviderKind } from './provider-release-state.js';
import { releaseDir, type StatusInputs } from './status-inputs.js';
import {
  countsForReady,
  MANIFESTS_RENDERED,
  publishedCondition,
  renderFailedCondition,
  syncedCondition,
} from './unit-conditions.js';
import { sharedObjectsCondition, sharedObjectsOf, sharedResourceStatuses } from './shared-object-state.js';
import { resourceStatuses } from './unit-resources.js';
import type { UnitRecord, WithheldEntry } from '../../output/provenance.js';

const RELEASE_ASSETS_DOWNLOADED = 'ReleaseAssetsDownloaded';
const PROVIDER_RELEASE_READY = 'ProviderClusterStackReleaseReady';

export interface DesiredRelease {
  /** Metadata and spec as they should be. */
  object: ClusterStackRelease;
  status: ClusterStackReleaseStatus;
  /** The object in the cluster now, if any. */
  live?: ClusterStackRelease;
  /** Remove our finalizer: the release is being deleted and no Cluster uses it. */
  removeFinalizer: boolean;
}

export interface ReleaseChanges {
  releases: DesiredRelease[];
  /** Owned releases the stack no longer keeps and no Cluster uses. */
  toDelete: ClusterStackRelease[];
  events: EventIntent[];
}

/** The spec.providerRef of a release: the provider release object made for it. */
function providerRefFor(stack: ClusterStack, release: string): ObjectReference | undefined {
  const spec = withSpecDefaults(stack.spec);
  if (spec.noProvider || !spec.providerRef?.kind) return undefined;
  const ref: ObjectReference = {
    kind: providerReleaseKind(spec.providerRef.kind),
    name: release,
    namespace: namespaceOf(stack),
  };
  if (spec.providerRef.apiVersion) ref.apiVersion = spec.providerRef.apiVersion;
  return ref;
}

function desiredObject(stack: ClusterStack, release: string): ClusterStackRelease {
  const tag = tryParseReleaseTag(release);
  const named = nameLabels({
    [LABEL_CLUSTER_STACK]: stack.metadata.name,
    ...(tag ? { [LABEL_PART_OF]: stackPrefix(tag) } : {}),
  });
  const object: ClusterStackRelease = {
    apiVersion: API_VERSION,
    kind: 'ClusterStackRelease',
    metadata: {
      name: release,
      namespace: namespaceOf(stack),
      labels: managedLabels(named.labels),
      ...(Object.keys(named.annotations).length > 0 ? { annotations: named.annotations } : {}),
      ownerReferences: [controllerReference(stack as never)],
      finalizers: [FINALIZER],
    },
    spec: {},
  };
  const providerRef = providerRefFor(stack, release);
  if (providerRef) object.spec = { providerRef };
  return object;
}

/** ProviderReleaseReady: not needed, its kind not served, its template missing, or the provider's readiness. */
function providerCondition(
  input: StatusInputs,
  stack: ClusterStack,
  resolution: StackResolution,
  decision: ReleaseDecision,
): DesiredCondition {
  const spec = withSpecDefaults(stack.spec);
  const unserved = unservedProviderKind(stack, input.unservedKinds);
  if (spec.noProvider)
    return trueCondition(
      PROVIDER_RELEASE_READY,
      'ProviderNotRequired',
      'the ClusterStack has noProvider: true, so no provider release is needed',
    );
  if (unserved) return falseCondition(PROVIDER_RELEASE_READY, 'ProviderKindNotServed', unserved, 'Error');
  if (!providerTemplateOf(stack, input.live.providerTemplates)) {
    const ref = spec.providerRef;
    return falseCondition(
      PROVIDER_RELEASE_READY,
      'ProviderTemplateNotFound',
      `the ClusterStack's providerRef ${ref?.kind ?? '<kind>'} ${ref?.namespace ?? resolution.namespace}/${ref?.name ?? '<name>'} does not exist; create it or fix spec.providerRef`,
      'Error',
    );
  }
  if (decision.ready)
    return trueCondition(
      PROVIDER_RELEASE_READY,
      'ProviderReleaseReady',
      `${providerReleaseKind(spec.providerRef?.kind ?? '')} ${resolution.namespace}/${decision.name} reports status.ready: true`,
    );
  return falseCondition(
    PROVIDER_RELEASE_READY,
    'ProviderReleaseNotReady',
    decision.readyMessage ?? 'the provider has not finished its work for this release',
    'Info',
  );
}

/** ManifestsRendered: the render failed, withheld the release, rendered it, or has not run yet. */
function renderedCondition(
  input: StatusInputs,
  dir: string,
  withheld: WithheldEntry | undefined,
  unit: UnitRecord | undefined,
): DesiredCondition {
  if (input.renderFailure) return renderFailedCondition(input.renderFailure);
  if (withheld) {
    return falseCondition(
      MANIFESTS_RENDERED,
      'ManifestsWithheld',
      `the ClusterClass manifests are withheld: ${withheld.reason}${withheld.previousKept ? '; the previously published manifests stay in place' : ''}`,
      'Warning',
    );
  }
  if (unit)
    return trueCondition(MANIFESTS_RENDERED, 'ManifestsRendered', `${unit.files.length} objects rendered into ${dir}`);
  return unknownCondition(MANIFESTS_RENDERED, 'RenderPending', 'the manifests have not been rendered yet');
}

function releaseConditions(
  input: StatusInputs,
  resolution: StackResolution,
  decision: ReleaseDecision,
): DesiredCondition[] {
  const { plan, render, publish } = input;
  const stack = resolution.stack;
  const loaded = plan ? loadedRelease(plan, resolution.namespace, decision.name) : undefined;
  const dir = releaseDir(resolution.namespace, decision.name);
  const subject = `release ${decision.name}`;

  const assets = loaded?.content
    ? trueCondition(
        RELEASE_ASSETS_DOWNLOADED,
        'ReleaseAssetsDownloaded',
        `release ${decision.name} loaded from ${loaded.source.location} (${loaded.content.digest})`,
      )
    : falseCondition(
        RELEASE_ASSETS_DOWNLOADED,
        'ReleaseAssetsUnavailable',
        `release ${decision.name} could not be loaded: ${(loaded?.problems ?? []).map(formatProblem).join('; ') || 'it was not fetched'}; check the release source, the controller retries`,
      );

  const provider = providerCondition(input, stack, resolution, decision);

  const unit = render?.provenance.units.find((candidate) => candidate.dir === dir);
  const withheld = render?.withheld.find(
    (entry) => entry.kind === 'release' && entry.namespace === resolution.namespace && entry.name === decision.name,
  );
  const rendered = renderedCondition(input, dir, withheld, unit);

  const published = publishedCondition(unit ? [dir] : [], publish, subject);
  const synced = syncedCondition(unit ? [dir] : [], input.engine, input.sync);
  // Objects it shares with other kept releases (node images) are applied from management/<ns>/shared/.
  const shared = sharedObjectsCondition(
    sharedObjectsOf(unit, render?.provenance),
    input.engine,
    input.sync,
    decision.name,
  );
  const parts = [assets, provider, rendered, published, ...(countsForReady(input.engine) ? [synced, shared] : [])];
  return [
    assets,
    provider,
    rendered,
    published,
    synced,
    shared,
    readySummary(
      parts,
      `release ${decision.name} is ${countsForReady(input.engine) ? 'published and applied' : 'published'}`,
    ),
  ];
}

function releaseStatus(
  input: StatusInputs,
  resolution: StackResolution,
  decision: ReleaseDecision,
  live: ClusterStackRelease | undefined,
  blocked?: string,
): ClusterStackReleaseStatus {
  const conditions = releaseConditions(input, resolution, decision);
  if (blocked) conditions[conditions.length - 1] = falseCondition('Ready', 'DeletionBlocked', blocked, 'Warning');
  const generation = live?.metadata.generation ?? 1;
  const dir = releaseDir(resolution.namespace, decision.name);
  const unit = input.render?.provenance.units.find((candidate) => candidate.dir === dir);
  const status: ClusterStackReleaseStatus = {
    ready: conditions.at(-1)?.status === 'True',
    resources: unit
      ? [
          ...resourceStatuses(input.unitObjects(unit), input.sync.get(dir)),
          ...sharedResourceStatuses(sharedObjectsOf(unit, input.render?.provenance), input.sync),
        ]
      : (live?.status?.resources ?? []),
    conditions: mergeConditions(live?.status?.conditions, conditions, input.now, generation),
    observedGeneration: generation,
  };
  const kubernetesVersion =
    (input.plan ? loadedRelease(input.plan, resolution.namespace, decision.name) : undefined)?.content?.metadata
      .kubernetesVersion ?? live?.status?.kubernetesVersion;
  if (kubernetesVersion) status.kubernetesVersion = kubernetesVersion.replace(/^v/, '');
  return status;
}

function releaseEvents(
  input: StatusInputs,
  stack: ClusterStack,
  desired: DesiredRelease,
  resolution: StackResolution,
): EventIntent[] {
  const events: EventIntent[] = [];
  const subject = desired.live ?? desired.object;
  const before: Condition[] | undefined = desired.live?.status?.conditions;
  const after = desired.status.conditions ?? [];
  if (!desired.live) {
    const decision = resolution.releases.find((release) => release.name === desired.object.metadata.name);
    events.push({
      regarding: regarding(stack),
      type: 'Normal',
      reason: 'ReleaseAppeared',
      message: `release ${desired.object.metadata.name} is kept (${decision?.reasons.join('; ') ?? 'kept'}); created its ClusterStackRelease`,
    });
  }
  const byType = (type: string) => after.find((condition) => condition.type === type);
  const rendered = byType(MANIFESTS_RENDERED);
  if (rendered?.reason === 'ManifestsWithheld') {
    const event = eventOnFailure(subject, before, rendered, 'ManifestsWithheld');
    if (event) events.push(event);
  }
  const dir = releaseDir(resolution.namespace, desired.object.metadata.name);
  if (input.publish.outcome === 'published' && input.publish.dirtyDirs.has(dir)) {
    events.push({
      regarding: regarding(subject),
      type: 'Normal',
      reason: 'ManifestsPublished',
      message: `${dir} published to ${input.publish.target}${input.publish.revision ? ` (${input.publish.revisionKind} ${input.publish.revision})` : ''}`,
    });
  }
  const synced = byType('ManifestsSynced');
  if (synced && (synced.reason === 'SyncFailed' || synced.reason === 'OutOfSync')) {
    const event = eventOnFailure(subject, before, synced);
    if (event) events.push(event);
  }
  const ready = byType('Ready');
  if (ready?.reason === 'DeletionBlocked') {
    const event = eventOnFailure(subject, before, ready);
    if (event) events.push(event);
  }
  return events;
}

/** Desired ClusterStackReleases of every resolved stack, deletions of dropped ones, and finalizer releases. */
export function desiredReleases(input: StatusInputs): ReleaseChanges {
  const changes: ReleaseChanges = { releases: [], toDelete: [], events: [] };
  const liveByKey = new Map(input.live.releases.map((release) => [keyOf(release), release]));
  const handled = new Set<string>();

  for (const resolution of input.plan?.resolution.clusterStacks ?? []) {
    // The resolution may hold a stack's last valid spec: owner references need the live object.
    const stack =
      input.live.stacks.find((candidate) => keyOf(candidate) === `${resolution.namespace}/${resolution.name}`) ??
      resolution.stack;
    const stackDeleting = Boolean(stack.metadata.deletionTimestamp);
    const kept = resolution.releases.filter((release) => release.kept);
    for (const decision of kept) {
      const key = `${resolution.namespace}/${decision.name}`;
      handled.add(key);
      const live = liveByKey.get(key);
      if (!live && stackDeleting) continue; // never create objects for a stack on its way out
      let blocked: string | undefined;
      let removeFinalizer = false;
      if (live?.metadata.deletionTimestamp) {
        const users = clustersUsingRelease(resolution.namespace, decision.name, input.live.clusters);
        if (users.length > 0)
          blocked = deletionBlockedMessage(
            `ClusterStackRelease ${key}`,
            users.map((cluster) => ({ cluster, release: decision.name })),
          );
        else removeFinalizer = (live.metadata.finalizers ?? []).includes(FINALIZER);
      }
      const desired: DesiredRelease = {
        object: desiredObject(stack, decision.name),
        status: releaseStatus(input, resolution, decision, live, blocked),
        removeFinalizer,
      };
      if (live) desired.live = live;
      changes.releases.push(desired);
      changes.events.push(...releaseEvents(input, stack, desired, resolution));
    }

    // Owned releases this stack no longer keeps: delete, unless a Cluster still uses one.
    for (const live of input.live.releases) {
      if (handled.has(keyOf(live)) || live.metadata.namespace !== resolution.namespace) continue;
      const owner = ownerOfKind(live, 'ClusterStack');
      if (!owner || owner.uid !== stack.metadata.uid) continue;
      handled.add(keyOf(live));
      const users = clustersUsingRelease(resolution.namespace, live.metadata.name, input.live.clusters);
      if (users.length === 0) {
        if (live.metadata.deletionTimestamp) {
          if ((live.metadata.finalizers ?? []).includes(FINALIZER))
            changes.releases.push({ object: live, status: live.status ?? {}, live, removeFinalizer: true });
        } else changes.toDelete.push(live);
      }
    }
  }

  // Releases being deleted whose stack is not resolved (gone, invalid, source down): only finalizers.
  unresolvedDeletions(input, handled, changes);
  return changes;
}

/** Releases being deleted that no resolved stack handled: the finalizer goes once no Cluster uses them, else Ready says what blocks. */
function unresolvedDeletions(input: StatusInputs, handled: Set<string>, changes: ReleaseChanges): void {
  for (const live of input.live.releases) {
    if (
      handled.has(keyOf(live)) ||
      !live.metadata.deletionTimestamp ||
      !(live.metadata.finalizers ?? []).includes(FINALIZER)
    )
      continue;
    const namespace = namespaceOf(live);
    const users = clustersUsingRelease(namespace, live.metadata.name, input.live.clusters);
    if (users.length === 0) {
      changes.releases.push({ object: live, status: live.status ?? {}, live, removeFinalizer: true });
      continue;
    }
    const owner = ownerOfKind(live, 'ClusterStack');
    if (!isManagedByUs(live) && !owner) continue;
    const message = deletionBlockedMessage(
      `ClusterStackRelease ${keyOf(live)}`,
      users.map((cluster) => ({ cluster, release: live.metadata.name })),
    );
    const generation = live.metadata.generation ?? 1;
    const others = (live.status?.conditions ?? [])
      .filter((condition) => condition.type !== 'Ready')
      .map((condition) => ({
        type: condition.type,
        status: condition.status,
        reason: condition.reason ?? '',
        message: condition.message ?? '',
      }));
    const status: ClusterStackReleaseStatus = {
      ...live.status,
      ready: false,
      conditions: mergeConditions(
        live.status?.conditions,
        [...others, falseCondition('Ready', 'DeletionBlocked', message, 'Warning')],
        input.now,
        generation,
      ),
      observedGeneration: generation,
    };
    const desired: DesiredRelease = { object: live, status, live, removeFinalizer: false };
    changes.releases.push(desired);
    const event = eventOnFailure(live, live.status?.conditions, falseCondition('Ready', 'DeletionBlocked', message));
    if (event) changes.events.push(event);
  }
}
