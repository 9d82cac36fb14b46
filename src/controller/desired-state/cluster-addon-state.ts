// One ClusterAddon per Cluster that uses a cluster stack class, owned by the Cluster: which class
// and addon version were last rendered for it, its stages and objects, whether they are in Git and
// applied, and the last outcome of each lifecycle hook. The hooks' outcomes are computed from the
// ClusterAddon's status as read back, updated by what this process answered since it started, so
// they and the LifecycleHook condition survive a controller restart.
import { loadedRelease } from '../../plan/build-plan.js';
import { clusterClassOf } from '../../api/capi-cluster.js';
import {
  API_VERSION,
  type CapiCluster,
  type ClusterAddon,
  type ClusterAddonHookStatus,
  type ClusterAddonStageStatus,
  type ClusterAddonStatus,
  type Condition,
} from '../../api/types.js';
import { clusterClassName, tryParseReleaseTag } from '../../core/release-tag.js';
import { type ClusterResolution, namespaceOf, releaseMatchesStack } from '../../release/resolve-releases.js';
import type { UnitRecord } from '../../output/provenance.js';
import {
  falseCondition,
  mergeConditions,
  readySummary,
  trueCondition,
  unknownCondition,
  type DesiredCondition,
} from './conditions.js';
import { eventOnFailure, regarding, type EventIntent } from './event-intents.js';
import {
  controllerReference,
  isManagedByUs,
  keyOf,
  LABEL_CLUSTER_NAME,
  managedLabels,
  nameLabels,
  ownerOfKind,
} from './owned-objects.js';
import { LIFECYCLE_HOOKS, type HookProgress } from './lifecycle-hook-decision.js';
import type { StatusInputs } from './status-inputs.js';
import {
  countsForReady,
  MANIFESTS_RENDERED,
  MANIFESTS_SYNCED,
  publishedCondition,
  renderFailedCondition,
  syncedCondition,
} from './unit-conditions.js';
import { resourceStatuses } from './unit-resources.js';

const CLUSTER_CLASS_AVAILABLE = 'ClusterClassAvailable';
const LIFECYCLE_HOOK = 'LifecycleHook';

export interface DesiredAddon {
  object: ClusterAddon;
  status: ClusterAddonStatus;
  live?: ClusterAddon;
}

export interface AddonChanges {
  addons: DesiredAddon[];
  /** ClusterAddons of ours whose Cluster is gone (normally garbage collected through the owner reference). */
  toDelete: ClusterAddon[];
  events: EventIntent[];
}

/** The field that names a Cluster's class, for messages. */
function classField(cluster: ClusterResolution): string {
  return cluster.classField ?? 'spec.topology.class';
}

function classCondition(input: StatusInputs, cluster: ClusterResolution): DesiredCondition {
  const versionProblem = cluster.problems.find((problem) => problem.path === 'spec.topology.version');
  if (versionProblem)
    return falseCondition(
      CLUSTER_CLASS_AVAILABLE,
      'KubernetesVersionMismatch',
      `spec.topology.version ${versionProblem.message}`,
      'Error',
    );
  const tag = cluster.release ? tryParseReleaseTag(cluster.release) : undefined;
  if (!cluster.stack) {
    // A stack may exist but be unusable right now (invalid spec, source down): say so instead of "unknown".
    const named = clusterClassOf(cluster.cluster);
    const classNamespace = named.kind === 'class' ? named.namespace : cluster.namespace;
    const troubled =
      tag &&
      input.live.stacks.find(
        (stack) =>
          namespaceOf(stack) === classNamespace &&
          releaseMatchesStack(tag, stack) &&
          input.stackIssues.has(keyOf(stack)),
      );
    if (troubled) {
      return falseCondition(
        CLUSTER_CLASS_AVAILABLE,
        'ClusterStackNotReady',
        `class ${cluster.className} belongs to ClusterStack ${keyOf(troubled)}, which cannot be resolved now (see its conditions); the previous addons stay in place`,
        'Warning',
      );
    }
    const message =
      cluster.problems.map((problem) => `${problem.path ? `${problem.path} ` : ''}${problem.message}`).join('; ') ||
      `${classField(cluster)} names ${cluster.className}, which belongs to no ClusterStack`;
    return falseCondition(CLUSTER_CLASS_AVAILABLE, 'ClusterClassUnknown', message, 'Error');
  }
  const resolution = input.plan?.resolution.clusterStacks.find(
    (stack) => stack.namespace === cluster.stack?.namespace && stack.name === cluster.stack?.name,
  );
  const decision = resolution?.releases.find((release) => release.name === cluster.release);
  if (!decision) {
    const message =
      cluster.problems.map((problem) => `${problem.path ? `${problem.path} ` : ''}${problem.message}`).join('; ') ||
      `${classField(cluster)} names ${cluster.className}, which is not a release of ClusterStack ${cluster.stack.namespace}/${cluster.stack.name}`;
    return falseCondition(CLUSTER_CLASS_AVAILABLE, 'ClusterClassUnknown', message, 'Error');
  }
  if (!decision.ready)
    return falseCondition(
      CLUSTER_CLASS_AVAILABLE,
      'ReleaseNotReady',
      `release ${decision.name} is not ready: ${decision.readyMessage ?? 'provider work pending'}`,
      'Info',
    );
  const loaded = input.plan ? loadedRelease(input.plan, cluster.stack.namespace, decision.name) : undefined;
  if (loaded && !loaded.content) {
    return falseCondition(
      CLUSTER_CLASS_AVAILABLE,
      'ReleaseAssetsUnavailable',
      `release ${decision.name} could not be loaded (see ClusterStackRelease ${cluster.stack.namespace}/${decision.name})`,
      'Warning',
    );
  }
  return trueCondition(
    CLUSTER_CLASS_AVAILABLE,
    'ClusterClassAvailable',
    `class ${cluster.className} is release ${decision.name} of ClusterStack ${cluster.stack.namespace}/${cluster.stack.name}`,
  );
}

function stagePhase(dir: string, input: StatusInputs): { phase: string; synced: boolean } {
  const verdict = input.sync.get(dir);
  if (input.publish.dirtyDirs.has(dir) && input.publish.outcome !== 'published')
    return { phase: 'publishing manifests', synced: false };
  if (input.engine === 'none') return { phase: 'published', synced: false };
  if (!verdict) return { phase: 'waiting for GitOps', synced: false };
  return { phase: verdict.state, synced: verdict.state === 'synced' };
}

function addonStatus(
  input: StatusInputs,
  cluster: ClusterResolution,
  units: UnitRecord[],
  live: ClusterAddon | undefined,
  hooks: ClusterAddonHookStatus[],
): ClusterAddonStatus {
  const dirs = units.map((unit) => unit.dir);
  const subject = `Cluster ${cluster.namespace}/${cluster.name}`;
  const withheld = input.render?.withheld.find(
    (entry) => entry.kind === 'cluster' && entry.namespace === cluster.namespace && entry.name === cluster.name,
  );
  const clusterClass = classCondition(input, cluster);
  let rendered: DesiredCondition;
  if (input.renderFailure) rendered = renderFailedCondition(input.renderFailure);
  else if (withheld) {
    rendered = falseCondition(
      MANIFESTS_RENDERED,
      'AddonsWithheld',
      `the addons of ${subject} are withheld: ${withheld.reason}${withheld.previousKept ? '; the previously published addons stay in place' : ''}`,
      'Warning',
    );
  } else if (units.length > 0) {
    const first = units[0]!;
    rendered = trueCondition(
      MANIFESTS_RENDERED,
      'ManifestsRendered',
      `stages ${units.map((unit) => unit.stage).join(', ')} rendered from release ${first.release} (cluster addon ${first.addonVersion ?? '-'})`,
    );
  } else rendered = unknownCondition(MANIFESTS_RENDERED, 'RenderPending', 'the addons have not been rendered yet');
  const published = publishedCondition(dirs, input.publish, subject);
  const synced = syncedCondition(dirs, input.engine, input.sync);
  const parts = [clusterClass, rendered, published, ...(countsForReady(input.engine) ? [synced] : [])];
  const hook = hookCondition(hooks, live);
  const conditions = [
    clusterClass,
    rendered,
    published,
    synced,
    ...(hook ? [hook] : []),
    readySummary(
      parts,
      `the addons of ${subject} are ${countsForReady(input.engine) ? 'published and applied' : 'published'}`,
    ),
  ];
  const generation = live?.metadata.generation ?? 1;
  const stages: ClusterAddonStageStatus[] = [...units]
    .sort((a, b) => (a.order ?? 0) - (b.order ?? 0))
    .map((unit) => {
      const revision = input.publish.order.unitRevisions.get(unit.dir);
      return {
        name: unit.stage ?? unit.dir,
        action: 'apply',
        ...stagePhase(unit.dir, input),
        release: unit.release,
        ...(revision ? { revision } : {}),
      };
    });
  return {
    ready: conditions.at(-1)?.status === 'True',
    stages,
    ...(hooks.length > 0 ? { hooks } : {}),
    resources:
      units.length > 0
        ? units.flatMap((unit) => resourceStatuses(input.unitObjects(unit), input.sync.get(unit.dir)))
        : (live?.status?.resources ?? []),
    conditions: mergeConditions(live?.status?.conditions, conditions, input.now, generation),
    observedGeneration: generation,
  };
}

const HOOK_OUTCOMES: Record<Exclude<HookProgress['outcome'], 'not-ours'>, ClusterAddonHookStatus['outcome']> = {
  ready: 'Succeeded',
  waiting: 'Waiting',
  'timed-out': 'TimedOut',
};

/**
 * Each hook's last outcome: what the ClusterAddon says (as read back), with what this process
 * answered since it started on top; in LIFECYCLE_HOOKS order.
 */
function hookStatuses(progress: HookProgress[], live: ClusterAddon | undefined): ClusterAddonHookStatus[] {
  const byName = new Map((live?.status?.hooks ?? []).map((hook) => [hook.name, hook]));
  for (const entry of progress) {
    if (entry.outcome === 'not-ours') continue;
    byName.set(entry.hook, {
      name: entry.hook,
      release: entry.targetRelease,
      outcome: HOOK_OUTCOMES[entry.outcome],
      message: entry.message,
      since: entry.since,
    });
  }
  return LIFECYCLE_HOOKS.flatMap((hook) => byName.get(hook) ?? []);
}

/** The newest of the hooks' outcomes (the hook whose wait started last). */
function newestHook(hooks: ClusterAddonHookStatus[]): ClusterAddonHookStatus | undefined {
  return hooks.reduce<ClusterAddonHookStatus | undefined>(
    (newest, hook) => (!newest || hook.since >= newest.since ? hook : newest),
    undefined,
  );
}

/**
 * The runtime extension's hook for this Cluster: in progress (since when, waiting for what), done,
 * or timed out (naming what was not confirmed). A ClusterAddon written before hooks were recorded
 * keeps the condition it has.
 */
function hookCondition(hooks: ClusterAddonHookStatus[], live: ClusterAddon | undefined): DesiredCondition | undefined {
  const hook = newestHook(hooks);
  if (!hook) {
    const kept = live?.status?.conditions?.find((condition) => condition.type === LIFECYCLE_HOOK);
    return kept
      ? {
          type: kept.type,
          status: kept.status,
          reason: kept.reason ?? 'LifecycleHook',
          message: kept.message ?? '',
          ...(kept.severity ? { severity: kept.severity as DesiredCondition['severity'] } : {}),
        }
      : undefined;
  }
  const text = `${hook.name} for release ${hook.release} (since ${hook.since}): ${hook.message}`;
  if (hook.outcome === 'Succeeded') return trueCondition(LIFECYCLE_HOOK, 'HookSucceeded', text);
  // The hook let the upgrade go (or keeps holding, as configured) without confirming the addons.
  if (hook.outcome === 'TimedOut') return falseCondition(LIFECYCLE_HOOK, 'HookTimedOut', text, 'Warning');
  return falseCondition(LIFECYCLE_HOOK, 'WaitingForAddons', text, 'Info');
}

function desiredAddonObject(
  cluster: CapiCluster,
  units: UnitRecord[],
  live: ClusterAddon | undefined,
  hook?: string,
): ClusterAddon {
  const spec: ClusterAddon['spec'] = {
    clusterRef: {
      apiVersion: cluster.apiVersion,
      kind: 'Cluster',
      name: cluster.metadata.name,
      namespace: namespaceOf(cluster),
      ...(cluster.metadata.uid ? { uid: cluster.metadata.uid } : {}),
    },
  };
  // What was last rendered: the units in the output (including kept previous ones), else what the object says.
  const tag = units[0] ? tryParseReleaseTag(units[0].release) : undefined;
  const clusterStack = tag ? clusterClassName(tag) : live?.spec.clusterStack;
  const version = units[0]?.addonVersion ?? live?.spec.version;
  if (clusterStack) spec.clusterStack = clusterStack;
  if (version) spec.version = version;
  if (hook ?? live?.spec.hook) spec.hook = hook ?? live?.spec.hook;
  const named = nameLabels({ [LABEL_CLUSTER_NAME]: cluster.metadata.name });
  return {
    apiVersion: API_VERSION,
    kind: 'ClusterAddon',
    metadata: {
      name: cluster.metadata.name,
      namespace: namespaceOf(cluster),
      labels: managedLabels(named.labels),
      ...(Object.keys(named.annotations).length > 0 ? { annotations: named.annotations } : {}),
      ownerReferences: [controllerReference(cluster)],
    },
    spec,
  };
}

function addonEvents(input: StatusInputs, desired: DesiredAddon, dirs: string[]): EventIntent[] {
  const events: EventIntent[] = [];
  const subject = desired.live ?? desired.object;
  const before: Condition[] | undefined = desired.live?.status?.conditions;
  const after = desired.status.conditions ?? [];
  for (const type of [CLUSTER_CLASS_AVAILABLE, MANIFESTS_RENDERED, MANIFESTS_SYNCED]) {
    const condition = after.find((candidate) => candidate.type === type);
    // A render that failed as a whole is reported once, on the ClusterStacks, not per Cluster.
    if (!condition || (type === MANIFESTS_RENDERED && input.renderFailure)) continue;
    // The engine applying a new revision is progress, not news: real Flux marks every Kustomization
    // Ready=Unknown while it applies, so an Event here would come with every publish (as for releases).
    if (type === MANIFESTS_SYNCED && condition.reason !== 'SyncFailed' && condition.reason !== 'OutOfSync') continue;
    const event = eventOnFailure(subject, before, condition);
    if (event) events.push(event);
  }
  const changed = dirs.filter((dir) => input.publish.dirtyDirs.has(dir));
  if (input.publish.outcome === 'published' && changed.length > 0) {
    events.push({
      regarding: regarding(subject),
      type: 'Normal',
      reason: 'ManifestsPublished',
      message: `${changed.join(', ')} published to ${input.publish.target}${input.publish.revision ? ` (${input.publish.revisionKind} ${input.publish.revision})` : ''}`,
    });
  }
  return events;
}

/** Desired ClusterAddons of every Cluster that uses a cluster stack class. */
export function desiredAddons(input: StatusInputs): AddonChanges {
  const changes: AddonChanges = { addons: [], toDelete: [], events: [] };
  if (!input.plan) return changes;
  const liveByKey = new Map(input.live.addons.map((addon) => [keyOf(addon), addon]));
  const liveClusters = new Map(input.live.clusters.map((cluster) => [keyOf(cluster), cluster]));
  const units = new Map<string, UnitRecord[]>();
  for (const unit of input.render?.provenance.units ?? []) {
    if (unit.kind !== 'cluster-stage') continue;
    const key = `${unit.namespace}/${unit.name}`;
    units.set(key, [...(units.get(key) ?? []), unit]);
  }
  for (const cluster of input.plan.resolution.clusters) {
    if (!cluster.managed) continue;
    const key = `${cluster.namespace}/${cluster.name}`;
    const liveCluster = liveClusters.get(key) ?? cluster.cluster;
    const live = liveByKey.get(key);
    if (!live && liveCluster.metadata.deletionTimestamp) continue;
    if (live && ownerOfKind(live, 'Cluster') === undefined && !isManagedByUs(live)) continue; // someone else's
    const clusterUnits = units.get(key) ?? [];
    const hooks = hookStatuses(input.hookProgress?.(cluster.namespace, cluster.name) ?? [], live);
    const desired: DesiredAddon = {
      object: desiredAddonObject(liveCluster, clusterUnits, live, newestHook(hooks)?.name),
      status: addonStatus(input, cluster, clusterUnits, live, hooks),
    };
    if (live) desired.live = live;
    changes.addons.push(desired);
    changes.events.push(
      ...addonEvents(
        input,
        desired,
        clusterUnits.map((unit) => unit.dir),
      ),
    );
  }
  // Ours, and its Cluster is gone or no longer uses a cluster stack class.
  const managed = new Set(
    input.plan.resolution.clusters
      .filter((cluster) => cluster.managed)
      .map((cluster) => `${cluster.namespace}/${cluster.name}`),
  );
  for (const addon of input.live.addons) {
    if (!isManagedByUs(addon) || addon.metadata.deletionTimestamp || managed.has(keyOf(addon))) continue;
    changes.toDelete.push(addon);
  }
  return changes;
}
