// Writes ClusterRequest statuses (openMCP's shape, see desired-state/cluster-request-state.ts)
// through the status subresource, only where they changed; a failure is reported, never thrown,
// so one request the API server refuses does not hold back the others.
import type { Logger } from '../../core/logger.js';
import type { DesiredRequestStatus } from '../desired-state/cluster-request-state.js';
import { CLUSTER_REQUESTS } from '../desired-state/watched-kinds.js';
import type { StatusWriter } from '../runtime/kube-client.js';
import { writeStatus } from './write-status.js';

/** Writes every desired status; returns how many were written and how many failed. */
export async function writeRequestStatuses(
  client: StatusWriter,
  desired: DesiredRequestStatus[],
  options: { now: string; logger: Logger },
): Promise<{ written: number; failed: number }> {
  let written = 0;
  let failed = 0;
  for (const { live, status } of desired) {
    try {
      const result = await writeStatus(client, CLUSTER_REQUESTS, live, status, { now: options.now });
      if (result.outcome === 'written') written += 1;
    } catch (error) {
      failed += 1;
      options.logger.warn(
        {
          object: `ClusterRequest ${live.metadata.namespace ?? 'default'}/${live.metadata.name}`,
          error: error instanceof Error ? error.message : String(error),
        },
        'could not write a ClusterRequest status; the reconcile will be retried',
      );
    }
  }
  return { written, failed };
}
