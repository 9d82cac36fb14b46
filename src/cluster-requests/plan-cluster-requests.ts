// Turns a plan and the target's published state into the plan the renderer sees: ClusterProfiles from
// the stacks, ClusterRequests scheduled to Clusters, and those Clusters fed into the resolution
// beside the people's, so their addons are planned, rendered and withheld like any other Cluster's.
// The inputs are never changed: the generated Clusters live in a new resolution. Pure.
import { clusterClassOf, usesClassRef } from '../api/capi-cluster.js';
import type { CapiCluster, KubeObject } from '../api/types.js';
import type { ClusterResolution, Resolution } from '../release/resolve-releases.js';
import type { ClusterRequestsOutput, ClusterRequestsRecord } from '../output/cluster-requests-record.js';
import type { PublishedState } from '../output/published-state.js';
import { clusterProfileFile, requestedClusterFile } from '../output/tree-layout.js';
import { loadedRelease, type Plan } from '../plan/build-plan.js';
import { serializeObject } from '../render/manifest-objects.js';
import { decodeYamlDocument } from '../yaml/kube-yaml.js';
import {
  type ClusterProfileInfo,
  clusterProfileObject,
  clusterProfiles,
  OPENMCP_CLUSTERS_API,
} from './cluster-profiles.js';
import { REQUESTED_PURPOSE_LABEL, requestedClusterObject } from './requested-clusters.js';
import {
  type ClusterRequestInput,
  type NotOurRequest,
  type RequestOutcome,
  type ScheduledCluster,
  scheduleRequests,
  type WithheldCluster,
} from './schedule-requests.js';
import type { SchedulerConfig } from './scheduler-config.js';
import { compareText } from '../core/compare-text.js';

export interface PlannedClusterRequests {
  /** The plan with the generated Clusters in its resolution. */
  plan: Plan;
  output: ClusterRequestsOutput;
  profiles: ClusterProfileInfo[];
  requests: RequestOutcome[];
  clusters: ScheduledCluster[];
  /** Clusters kept from the previous tree as they were (their purpose cannot be written now). */
  withheld: WithheldCluster[];
  /** Requests outside the configuration's `selectors.requests`: reported, never scheduled or warned about. */
  notOurs: NotOurRequest[];
  /** One line per request refused or withheld and per cluster kept as it was: for logs and warnings. */
  notes: string[];
  /** What the previous tree recorded (assignments kept from it are shown as kept). */
  previousRecord?: ClusterRequestsRecord;
}

/**
 * The scheduler configuration in effect, or (controller) why there is none that can be used: the
 * file changed into one that is not valid before any valid one was read. Then the previous
 * render's requests output is kept, the profiles still follow the stacks.
 */
export type SchedulerSetting = { config: SchedulerConfig } | { refused: string };

/** Reasons that mean a request was refused or its output withheld, not merely waiting. */
const REFUSALS = new Set(['PurposeChanged', 'MissingPurpose', 'UnknownProfile', 'SchedulerConfigInvalid']);

const key = (namespace: string, name: string): string => `${namespace}/${name}`;

function isClusterRequest(object: KubeObject): boolean {
  return object.apiVersion === OPENMCP_CLUSTERS_API && object.kind === 'ClusterRequest';
}

/** How many ClusterRequests the inputs hold (to warn when no scheduler configuration is given). */
export function countClusterRequests(plan: Plan): number {
  return plan.inputs.others.filter(({ object }) => isClusterRequest(object)).length;
}

/**
 * ClusterRequests in the inputs (clusters.openmcp.cloud). One without `spec.purpose` is kept with
 * an empty purpose: the scheduler reports and skips it (and a request that had a cluster keeps it).
 */
function clusterRequestsOf(plan: Plan): ClusterRequestInput[] {
  const requests: ClusterRequestInput[] = [];
  for (const { object, source } of plan.inputs.others) {
    if (!isClusterRequest(object)) continue;
    const purpose = (object as KubeObject & { spec?: { purpose?: unknown } }).spec?.purpose;
    const namespace = object.metadata.namespace ?? 'default';
    const labels = object.metadata.labels;
    requests.push({
      namespace,
      name: object.metadata.name,
      purpose: typeof purpose === 'string' ? purpose : '',
      ...(labels ? { labels } : {}),
      source,
    });
  }
  return requests;
}

/**
 * Profiles, scheduling and the generated Clusters for `plan`, continuing from the previous tree.
 * Never throws for a request or a mapping: what cannot be scheduled is Pending with its reason, and
 * a cluster a request already had stays (see schedule-requests.ts). `setting` may say the
 * configuration is refused (controller): then every cluster of the previous tree is kept as it was.
 */
export function planClusterRequests(
  plan: Plan,
  setting: SchedulerSetting | SchedulerConfig | undefined,
  published: PublishedState,
): PlannedClusterRequests {
  const config =
    setting === undefined
      ? undefined
      : 'config' in setting
        ? setting.config
        : 'refused' in setting
          ? undefined
          : setting;
  const refused = setting !== undefined && 'refused' in setting ? setting.refused : undefined;
  const requests = clusterRequestsOf(plan);
  const profiles = clusterProfiles(plan.resolution, (namespace, release) => {
    const content = loadedRelease(plan, namespace, release)?.content;
    return (
      content && {
        kubernetesVersion: content.metadata.kubernetesVersion,
        clusterApiVersion: content.clusterClassApiVersion,
      }
    );
  });
  // A Cluster in the inputs carrying our purpose label is the live copy of one we generated (the
  // controller sees it once Argo CD or Flux applied it); any other is a person's, never touched.
  const observed = new Map(
    plan.inputs.clusters
      .filter((c) => c.object.metadata.labels?.[REQUESTED_PURPOSE_LABEL] !== undefined)
      .map((c) => [key(c.object.metadata.namespace ?? 'default', c.object.metadata.name), c.object]),
  );
  const people = new Set(
    plan.inputs.clusters
      .map((c) => key(c.object.metadata.namespace ?? 'default', c.object.metadata.name))
      .filter((k) => !observed.has(k)),
  );
  const previousRecord = published.clusterRequests;
  const scheduled = scheduleRequests({
    requests,
    profiles,
    peopleClusters: people,
    liveLabels: new Map([...observed].map(([id, live]) => [id, live.metadata.labels ?? {}])),
    ...(config ? { config } : {}),
    ...(refused !== undefined ? { configRefused: refused } : {}),
    ...(previousRecord ? { previous: previousRecord } : {}),
  });

  const notes: string[] = [];
  const { files, objects } = requestFiles(profiles, scheduled, published, notes);
  for (const request of scheduled.requests) {
    if (REFUSALS.has(request.reason))
      notes.push(
        `ClusterRequest ${key(request.namespace, request.name)} is Pending (${request.reason}): ${request.message}`,
      );
  }

  return {
    plan: { ...plan, resolution: withGeneratedClusters(plan.resolution, objects, observed) },
    output: {
      files,
      record: {
        ...(config
          ? { schedulerConfig: config.digest }
          : previousRecord?.schedulerConfig
            ? { schedulerConfig: previousRecord.schedulerConfig }
            : {}),
        ...scheduled.record,
      },
      summary: requestsSummary(profiles, scheduled),
    },
    profiles,
    requests: scheduled.requests,
    clusters: scheduled.clusters,
    withheld: scheduled.withheld,
    notOurs: scheduled.notOurs,
    notes,
    ...(previousRecord ? { previousRecord } : {}),
  };
}

/** A Cluster written for requests, with the class and stack namespace its addons render for. */
type GeneratedCluster = { id: string; object: CapiCluster; className: string; stackNamespace: string };

/** The files requests write (profiles, generated Clusters, withheld ones as they were) and the Clusters among them. */
function requestFiles(
  profiles: ClusterProfileInfo[],
  scheduled: ReturnType<typeof scheduleRequests>,
  published: PublishedState,
  notes: string[],
): { files: Map<string, string>; objects: GeneratedCluster[] } {
  const files = new Map<string, string>();
  for (const profile of profiles)
    files.set(clusterProfileFile(profile.name), serializeObject(clusterProfileObject(profile)));
  const objects: GeneratedCluster[] = [];
  for (const cluster of scheduled.clusters) {
    const object = requestedClusterObject(cluster);
    files.set(requestedClusterFile(cluster.namespace, cluster.name), serializeObject(object));
    objects.push({
      id: key(cluster.namespace, cluster.name),
      object,
      className: cluster.release.className,
      stackNamespace: cluster.stackNamespace,
    });
  }
  // Withheld clusters: the previous manifest, byte for byte (it never leaves the tree for a refusal).
  keepWithheldClusters(scheduled.withheld, published, files, objects, notes);
  return { files, objects };
}

/** Each withheld Cluster's previous manifest, kept as written (a note says why), or a note that there is none to keep. */
function keepWithheldClusters(
  withheld: WithheldCluster[],
  published: PublishedState,
  files: Map<string, string>,
  objects: GeneratedCluster[],
  notes: string[],
): void {
  for (const cluster of withheld) {
    const file = requestedClusterFile(cluster.namespace, cluster.name);
    const text = published.tree.get(file);
    if (text === undefined) {
      notes.push(
        `Cluster ${key(cluster.namespace, cluster.name)} (made for requests) is not written: ${cluster.reason}, and the previous tree has no ${file} to keep`,
      );
      continue;
    }
    files.set(file, text);
    notes.push(
      `Cluster ${key(cluster.namespace, cluster.name)} (made for requests) is kept as the previous render wrote it: ${cluster.reason}`,
    );
    const object = decodeYamlDocument(text).value as CapiCluster;
    const named = clusterClassOf(object);
    if (named.kind === 'class')
      objects.push({
        id: key(cluster.namespace, cluster.name),
        object,
        className: named.name,
        stackNamespace: named.namespace,
      });
  }
}

/** The summary plan prints: each profile's versions and each request's phase and cluster. */
function requestsSummary(
  profiles: ClusterProfileInfo[],
  scheduled: ReturnType<typeof scheduleRequests>,
): ClusterRequestsOutput['summary'] {
  return {
    profiles: profiles.map((profile) => ({
      name: profile.name,
      stack: key(profile.stack.namespace, profile.stack.name),
      versions:
        profile.releases
          .map(
            (release) => `${release.kubernetesVersion} (${release.release}${release.deprecated ? ', deprecated' : ''})`,
          )
          .join(', ') || 'none',
    })),
    requests: scheduled.requests.map((request) => ({
      namespace: request.namespace,
      name: request.name,
      purpose: request.purpose,
      phase: request.phase,
      reason: request.reason,
      cluster: request.cluster ? key(request.cluster.namespace, request.cluster.name) : null,
      message: request.message,
    })),
    ...(scheduled.notOurs.length > 0 ? { notOurs: scheduled.notOurs } : {}),
  };
}

/**
 * The resolution with each generated Cluster as a Cluster using its release (and that release's
 * usedBy and reasons saying so). A generated Cluster whose live copy is among the inputs is left to
 * that copy: it carries what CAPI filled in (the control-plane endpoint) for the addon values.
 * Unless the generated Cluster moves to another class: then the addons are rendered for the class
 * it moves to, from the live copy with the new class and version, so the commit that moves the
 * Cluster already holds its new addons ("published first": the BeforeClusterUpgrade hook waits for
 * them). The release it moves from keeps the Cluster in its usedBy until the live copy moved.
 */
function withGeneratedClusters(
  resolution: Resolution,
  generated: GeneratedCluster[],
  observed: Map<string, CapiCluster>,
): Resolution {
  // A copy: the plan the caller holds keeps describing the inputs alone.
  const next = structuredClone(resolution);
  for (const { id, object, className, stackNamespace } of generated) {
    const live = observed.get(id);
    // The class as the resolution reads it (capi-cluster.ts): v1beta1 `class`, v1beta2 `classRef.name`.
    const liveClass = live ? clusterClassOf(live) : undefined;
    if (liveClass?.kind === 'class' && liveClass.name === className) continue;
    // A kept manifest may name a release no stack keeps any more: it is written, but renders nothing.
    const stack = next.clusterStacks.find(
      (s) => s.namespace === stackNamespace && s.releases.some((r) => r.className === className),
    );
    const decision = stack?.releases.find((r) => r.className === className);
    if (!stack || !decision) continue;
    decision.usedBy.push(id);
    decision.reasons.push(live ? `used by Cluster ${id} (moving to it)` : `used by Cluster ${id}`);
    const entry: ClusterResolution = {
      namespace: object.metadata.namespace ?? 'default',
      name: object.metadata.name,
      cluster: live ? movingTo(live, object) : object,
      managed: true,
      className: decision.className,
      release: decision.name,
      stack: { namespace: stack.namespace, name: stack.name },
      problems: [],
    };
    const index = next.clusters.findIndex((c) => key(c.namespace, c.name) === id);
    if (index >= 0) next.clusters[index] = entry;
    else next.clusters.push(entry);
  }
  next.clusters.sort((a, b) => compareText(key(a.namespace, a.name), key(b.namespace, b.name)));
  return next;
}

/**
 * The live Cluster as it will be once the generated manifest's class and version are applied, in
 * the live copy's own version: the class goes to `classRef` for a v1beta2 copy and to
 * `class`/`classNamespace` for a v1beta1 one, whichever version the manifest is written in.
 */
function movingTo(live: CapiCluster, generated: CapiCluster): CapiCluster {
  const moved = structuredClone(live);
  const topology = generated.spec?.topology;
  if (!moved.spec || !topology) return moved;
  const { class: className, classNamespace, classRef, ...rest } = topology;
  const name = classRef?.name ?? className;
  const namespace = classRef?.namespace ?? classNamespace;
  const {
    class: _class,
    classNamespace: _classNamespace,
    classRef: _classRef,
    ...liveTopology
  } = moved.spec.topology ?? {};
  moved.spec.topology = usesClassRef(live.apiVersion)
    ? { ...liveTopology, ...rest, classRef: { name, ...(namespace !== undefined ? { namespace } : {}) } }
    : { ...liveTopology, ...rest, class: name, ...(namespace !== undefined ? { classNamespace: namespace } : {}) };
  return moved;
}
