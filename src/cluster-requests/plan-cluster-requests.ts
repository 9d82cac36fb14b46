// Turns a plan and the target's previous tree into the plan the renderer sees: ClusterProfiles from
// the stacks, ClusterRequests scheduled to Clusters, and those Clusters fed into the resolution
// beside the people's, so their addons are planned, rendered and withheld like any other Cluster's.
// The inputs are never changed: the generated Clusters live in a new resolution. Pure.
import type { CapiCluster, KubeObject } from '../api/types.js';
import { InputError, type Problem } from '../core/problem.js';
import type { ClusterResolution, Resolution } from '../core/resolve-releases.js';
import type { ClusterRequestsOutput, ClusterRequestsRecord } from '../output/cluster-requests-record.js';
import { readProvenance } from '../output/provenance.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { clusterProfileFile, requestedClusterFile } from '../output/tree-layout.js';
import { loadedRelease, type Plan } from '../plan/build-plan.js';
import { serializeObject } from '../render/manifest-objects.js';
import { type ClusterProfileInfo, clusterProfileObject, clusterProfiles, OPENMCP_CLUSTERS_API } from './cluster-profiles.js';
import { REQUESTED_PURPOSE_LABEL, requestedClusterObject } from './requested-clusters.js';
import { checkScheduleInput, type ClusterRequestInput, type RequestOutcome, type ScheduledCluster, scheduleRequests } from './schedule-requests.js';
import type { SchedulerConfig } from './scheduler-config.js';

export interface PlannedClusterRequests {
  /** The plan with the generated Clusters in its resolution. */
  plan: Plan;
  output: ClusterRequestsOutput;
  profiles: ClusterProfileInfo[];
  requests: RequestOutcome[];
  clusters: ScheduledCluster[];
}

const key = (namespace: string, name: string): string => `${namespace}/${name}`;

function isClusterRequest(object: KubeObject): boolean {
  return object.apiVersion === OPENMCP_CLUSTERS_API && object.kind === 'ClusterRequest';
}

/** How many ClusterRequests the inputs hold (to warn when no scheduler configuration is given). */
export function countClusterRequests(plan: Plan): number {
  return plan.inputs.others.filter(({ object }) => isClusterRequest(object)).length;
}

/** ClusterRequests in the inputs (clusters.openmcp.cloud), validated; throws InputError for one without a purpose. */
export function clusterRequestsOf(plan: Plan): ClusterRequestInput[] {
  const problems: Problem[] = [];
  const requests: ClusterRequestInput[] = [];
  for (const { object, source } of plan.inputs.others) {
    if (!isClusterRequest(object)) continue;
    const purpose = (object as KubeObject & { spec?: { purpose?: unknown } }).spec?.purpose;
    const namespace = object.metadata.namespace ?? 'default';
    if (typeof purpose !== 'string' || purpose === '') {
      problems.push({ source, object: `ClusterRequest ${key(namespace, object.metadata.name)}`, path: 'spec.purpose', message: 'is required: the purpose the cluster is for (a key of the scheduler configuration\'s purposeMappings)' });
      continue;
    }
    requests.push({ namespace, name: object.metadata.name, purpose, source });
  }
  if (problems.length > 0) throw new InputError(problems);
  return requests;
}

/** The record of the previous render, if it had one. */
export function previousRequestsRecord(previous: RenderedTree): ClusterRequestsRecord | undefined {
  return (readProvenance(previous) as { clusterRequests?: ClusterRequestsRecord } | undefined)?.clusterRequests;
}

/**
 * Profiles, scheduling and the generated Clusters for `plan`, continuing from the previous tree.
 * Throws InputError for a request whose purpose changed or a purpose mapped to an unknown profile.
 */
export function planClusterRequests(plan: Plan, config: SchedulerConfig | undefined, previous: RenderedTree): PlannedClusterRequests {
  const requests = clusterRequestsOf(plan);
  const profiles = clusterProfiles(plan.resolution, (namespace, release) => loadedRelease(plan, namespace, release)?.content?.metadata.kubernetesVersion);
  // A Cluster in the inputs carrying our purpose label is the live copy of one we generated (the
  // controller sees it once Argo CD or Flux applied it); any other is a person's, never touched.
  const observed = new Map(plan.inputs.clusters.filter((c) => c.object.metadata.labels?.[REQUESTED_PURPOSE_LABEL] !== undefined).map((c) => [key(c.object.metadata.namespace ?? 'default', c.object.metadata.name), c.object]));
  const people = new Set(plan.inputs.clusters.map((c) => key(c.object.metadata.namespace ?? 'default', c.object.metadata.name)).filter((k) => !observed.has(k)));
  const input = { requests, profiles, peopleClusters: people, ...(config ? { config } : {}) };
  const previousRecord = previousRequestsRecord(previous);
  checkScheduleInput({ ...input, ...(previousRecord ? { previous: previousRecord } : {}) });
  const scheduled = scheduleRequests({ ...input, ...(previousRecord ? { previous: previousRecord } : {}) });

  const files = new Map<string, string>();
  for (const profile of profiles) files.set(clusterProfileFile(profile.name), serializeObject(clusterProfileObject(profile)));
  const objects = scheduled.clusters.map((cluster) => ({ cluster, object: requestedClusterObject(cluster) }));
  for (const { cluster, object } of objects) files.set(requestedClusterFile(cluster.namespace, cluster.name), serializeObject(object));

  return {
    plan: { ...plan, resolution: withGeneratedClusters(plan.resolution, objects, observed) },
    output: {
      files,
      record: { ...(config ? { schedulerConfig: config.digest } : {}), ...scheduled.record },
      summary: {
        profiles: profiles.map((profile) => ({
          name: profile.name,
          stack: key(profile.stack.namespace, profile.stack.name),
          versions: profile.releases.map((release) => `${release.kubernetesVersion} (${release.release}${release.deprecated ? ', deprecated' : ''})`).join(', ') || 'none',
        })),
        requests: scheduled.requests.map((request) => ({
          namespace: request.namespace,
          name: request.name,
          purpose: request.purpose,
          phase: request.phase,
          reason: request.reason,
          cluster: request.cluster ? key(request.cluster.namespace, request.cluster.name) : '-',
          message: request.message,
        })),
      },
    },
    profiles,
    requests: scheduled.requests,
    clusters: scheduled.clusters,
  };
}

/**
 * The resolution with each generated Cluster as a Cluster using its release (and that release's
 * usedBy and reasons saying so). A generated Cluster whose live copy is among the inputs is left to
 * that copy: it carries what CAPI filled in (the control-plane endpoint) for the addon values.
 */
function withGeneratedClusters(resolution: Resolution, generated: { cluster: ScheduledCluster; object: CapiCluster }[], observed: Map<string, CapiCluster>): Resolution {
  // A copy: the plan the caller holds keeps describing the inputs alone.
  const next = structuredClone(resolution);
  for (const { cluster, object } of generated) {
    const id = key(cluster.namespace, cluster.name);
    if (observed.has(id)) continue;
    const stack = next.clusterStacks.find((s) => s.namespace === cluster.stackNamespace && s.releases.some((r) => r.name === cluster.release.release))!;
    const decision = stack.releases.find((r) => r.name === cluster.release.release)!;
    decision.usedBy.push(id);
    decision.reasons.push(`used by Cluster ${id}`);
    const entry: ClusterResolution = {
      namespace: cluster.namespace,
      name: cluster.name,
      cluster: object,
      managed: true,
      className: cluster.release.className,
      release: cluster.release.release,
      stack: { namespace: stack.namespace, name: stack.name },
      problems: [],
    };
    next.clusters.push(entry);
  }
  next.clusters.sort((a, b) => key(a.namespace, a.name).localeCompare(key(b.namespace, b.name)));
  return next;
}
