// The status each ClusterRequest should show after a render, in openMCP's shape: `phase`
// (Granted or Pending), `cluster` (the Cluster made for it) and one `Scheduled` condition whose
// reason says why it is Pending (UnknownPurpose, UnknownProfile, NoReadyRelease, NameConflict,
// PurposeChanged, MissingPurpose, SchedulerConfigInvalid). Pure.
import type { Condition, KubeObject } from '../../api/types.js';
import type { ClusterRequestsSummary } from '../../output/cluster-requests-record.js';
import { type DesiredCondition, mergeConditions } from './conditions.js';

export interface DesiredRequestStatus {
  live: KubeObject;
  status: Record<string, unknown>;
}

interface LiveRequestStatus {
  cluster?: { name: string; namespace: string };
  conditions?: Condition[];
}

/**
 * One status per live request the render scheduled (none when nothing was scheduled: then the
 * statuses stay as they are). openMCP refuses removing `status.cluster` once set, so a request that
 * falls back to Pending keeps naming the cluster it had.
 */
export function desiredRequestStatuses(
  live: KubeObject[],
  summary: ClusterRequestsSummary | undefined,
  now: string,
): DesiredRequestStatus[] {
  if (!summary) return [];
  const outcomes = new Map(summary.requests.map((request) => [`${request.namespace}/${request.name}`, request]));
  const out: DesiredRequestStatus[] = [];
  for (const request of live) {
    const outcome = outcomes.get(`${request.metadata.namespace ?? 'default'}/${request.metadata.name}`);
    if (!outcome) continue;
    const current = (request as { status?: LiveRequestStatus }).status ?? {};
    const granted = outcome.phase === 'Granted';
    const condition: DesiredCondition = {
      type: 'Scheduled',
      status: granted ? 'True' : 'False',
      reason: outcome.reason,
      message: outcome.message,
    };
    const generation = request.metadata.generation;
    const status: Record<string, unknown> = {
      observedGeneration: generation ?? 0,
      phase: outcome.phase,
      conditions: mergeConditions(current.conditions, [condition], now, generation),
    };
    // A Pending request that keeps the cluster it had (refused, or its mapping withheld) names it too.
    const [namespace, name] = outcome.cluster?.split('/') ?? [];
    if (current.cluster && !granted) status['cluster'] = current.cluster;
    else if (namespace && name) status['cluster'] = { name, namespace };
    else if (current.cluster) status['cluster'] = current.cluster;
    out.push({ live: request, status });
  }
  return out;
}
