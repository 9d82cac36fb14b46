// What `clusterstack plan` shows of profiles and requests: each profile's versions, each request's
// phase with the cluster it gets or why it is Pending, and (when plan read the target) whether the
// request keeps the cluster the published tree gave it or gets a new one. Pure.
import type { PlannedClusterRequests } from './plan-cluster-requests.js';

/**
 * How a request's cluster compares with the published tree: `kept` (the cluster it had), `new`
 * (first given one now), `none` (Pending without a cluster), `unknown` (the target was not read).
 */
type AssignmentChange = 'kept' | 'new' | 'none' | 'unknown';

export interface ClusterRequestsReport {
  clusterProfiles: {
    name: string;
    stack: string;
    versions: { version: string; release: string; deprecated: boolean }[];
    newClusters: string | null;
  }[];
  clusterRequests: {
    namespace: string;
    name: string;
    purpose: string;
    phase: string;
    reason: string;
    cluster: string | null;
    assignment: AssignmentChange;
    message: string;
  }[];
  /** Requests outside `selectors.requests`: another scheduler's, left alone. */
  clusterRequestsNotOurs: { namespace: string; name: string; message: string }[];
}

/** The report of a scheduling; `targetRead` says whether `planned` continued from a published tree. */
export function clusterRequestsReport(planned: PlannedClusterRequests, targetRead = false): ClusterRequestsReport {
  const before = new Map(
    (planned.previousRecord?.assignments ?? []).map((a) => [
      `${a.namespace}/${a.name}`,
      `${a.cluster.namespace}/${a.cluster.name}`,
    ]),
  );
  return {
    clusterProfiles: planned.profiles.map((profile) => ({
      name: profile.name,
      stack: `${profile.stack.namespace}/${profile.stack.name}`,
      versions: profile.releases.map((release) => ({
        version: release.kubernetesVersion,
        release: release.release,
        deprecated: release.deprecated,
      })),
      newClusters: profile.newClusterRelease?.className ?? null,
    })),
    clusterRequests: planned.requests.map((request) => {
      const cluster = request.cluster ? `${request.cluster.namespace}/${request.cluster.name}` : null;
      const assignment: AssignmentChange = !targetRead
        ? 'unknown'
        : cluster === null
          ? 'none'
          : before.get(`${request.namespace}/${request.name}`) === cluster
            ? 'kept'
            : 'new';
      return {
        namespace: request.namespace,
        name: request.name,
        purpose: request.purpose,
        phase: request.phase,
        reason: request.reason,
        cluster,
        assignment,
        message: request.message,
      };
    }),
    clusterRequestsNotOurs: planned.notOurs,
  };
}

/** The table lines `plan` prints after the clusters. */
export function formatClusterRequestsReport(report: ClusterRequestsReport): string {
  const out: string[] = [];
  for (const profile of report.clusterProfiles) {
    const versions =
      profile.versions.map((v) => `${v.version} (${v.release}${v.deprecated ? ', deprecated' : ''})`).join(', ') ||
      'none';
    out.push(
      `ClusterProfile ${profile.name}  (ClusterStack ${profile.stack})  versions: ${versions}  new clusters: ${profile.newClusters ?? '-'}`,
    );
  }
  for (const request of report.clusterRequests) {
    const assignment = request.assignment === 'kept' || request.assignment === 'new' ? ` (${request.assignment})` : '';
    const cluster = request.cluster ? `  cluster: ${request.cluster}${assignment}` : '';
    const why = request.phase === 'Granted' ? '' : `  (${request.reason}: ${request.message})`;
    out.push(
      `ClusterRequest ${request.namespace}/${request.name}  purpose: ${request.purpose || '-'}  ${request.phase}${cluster}${why}`,
    );
  }
  for (const request of report.clusterRequestsNotOurs)
    out.push(`ClusterRequest ${request.namespace}/${request.name}  not ours: ${request.message}`);
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}
