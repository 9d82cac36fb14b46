// What `clusterstack plan` shows of profiles and requests: each profile's versions, each request's
// phase with the cluster it gets or why it is Pending. Pure.
import type { PlannedClusterRequests } from './plan-cluster-requests.js';

export interface ClusterRequestsReport {
  clusterProfiles: { name: string; stack: string; versions: { version: string; release: string; deprecated: boolean }[]; newClusters: string | null }[];
  clusterRequests: { namespace: string; name: string; purpose: string; phase: string; reason: string; cluster: string | null; message: string }[];
}

/** The report of a scheduling. */
export function clusterRequestsReport(planned: PlannedClusterRequests): ClusterRequestsReport {
  return {
    clusterProfiles: planned.profiles.map((profile) => ({
      name: profile.name,
      stack: `${profile.stack.namespace}/${profile.stack.name}`,
      versions: profile.releases.map((release) => ({ version: release.kubernetesVersion, release: release.release, deprecated: release.deprecated })),
      newClusters: profile.newClusterRelease?.className ?? null,
    })),
    clusterRequests: planned.requests.map((request) => ({
      namespace: request.namespace,
      name: request.name,
      purpose: request.purpose,
      phase: request.phase,
      reason: request.reason,
      cluster: request.cluster ? `${request.cluster.namespace}/${request.cluster.name}` : null,
      message: request.message,
    })),
  };
}

/** The table lines `plan` prints after the clusters. */
export function formatClusterRequestsReport(report: ClusterRequestsReport): string {
  const out: string[] = [];
  for (const profile of report.clusterProfiles) {
    const versions = profile.versions.map((v) => `${v.version} (${v.release}${v.deprecated ? ', deprecated' : ''})`).join(', ') || 'none';
    out.push(`ClusterProfile ${profile.name}  (ClusterStack ${profile.stack})  versions: ${versions}  new clusters: ${profile.newClusters ?? '-'}`);
  }
  for (const request of report.clusterRequests) {
    out.push(`ClusterRequest ${request.namespace}/${request.name}  purpose: ${request.purpose}  ${request.phase}${request.cluster ? `  cluster: ${request.cluster}` : `  (${request.reason}: ${request.message})`}`);
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}
