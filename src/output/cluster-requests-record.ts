// What a tree records about ClusterRequests (in provenance.json, key `clusterRequests`): which
// request was given which generated Cluster, and which Clusters exist because of requests. The next
// render reads it back, so an assignment never moves once made (openMCP keeps it in a finalizer on
// the Cluster; a Git tree keeps it here).

export interface RequestAssignmentRecord {
  namespace: string;
  name: string;
  /** The purpose the request had when it was scheduled: spec.purpose is immutable. */
  purpose: string;
  cluster: { namespace: string; name: string };
}

export interface RequestedClusterRecord {
  namespace: string;
  name: string;
  purpose: string;
  profile: string;
  tenancy: 'Exclusive' | 'Shared';
  /** openMCP's `clusters.openmcp.cloud/delete-without-requests: "true"`: removed with its last request. */
  deleteWithoutRequests: boolean;
  /** The ClusterClass and Kubernetes version it was written with (informational). */
  class: string;
  version: string;
}

export interface ClusterRequestsRecord {
  /** Digest of the scheduler configuration as read (its meaning, not its bytes). */
  schedulerConfig?: string;
  assignments: RequestAssignmentRecord[];
  clusters: RequestedClusterRecord[];
}

/** What the ClusterRequests part of a render adds to the tree, its provenance and its README. */
export interface ClusterRequestsOutput {
  /** Tree files (ClusterProfiles, generated Clusters) by path. */
  files: Map<string, string>;
  record: ClusterRequestsRecord;
  summary: ClusterRequestsSummary;
}

export interface ClusterRequestsSummary {
  profiles: { name: string; stack: string; versions: string }[];
  /** `cluster`: `namespace/name`, or null while the request has none (Pending). */
  requests: {
    namespace: string;
    name: string;
    purpose: string;
    phase: string;
    reason: string;
    cluster: string | null;
    message: string;
  }[];
  /** Requests outside the scheduler configuration's `selectors.requests` (left alone); absent when none. */
  notOurs?: { namespace: string; name: string; message: string }[];
}
