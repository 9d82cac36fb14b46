import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { desiredRequestStatuses } from '../../src/controller/desired-state/cluster-request-state.js';
import type { ClusterRequestsSummary } from '../../src/output/cluster-requests-record.js';

const NOW = '2026-11-23T12:00:00.000Z';
const request = (name: string, status?: Record<string, unknown>): KubeObject => ({
  apiVersion: 'clusters.openmcp.cloud/v1alpha1',
  kind: 'ClusterRequest',
  metadata: { name, namespace: 'team-a', generation: 2 },
  spec: { purpose: 'workload' },
  ...(status ? { status } : {}),
});
const summary = (phase: string, reason: string, cluster: string): ClusterRequestsSummary => ({
  profiles: [],
  requests: [{ namespace: 'team-a', name: 'web', purpose: 'workload', phase, reason, cluster, message: 'why' }],
});

describe('desiredRequestStatuses', () => {
  it('says Granted with the cluster, and keeps the condition’s transition time while it holds', () => {
    const [first] = desiredRequestStatuses(
      [request('web')],
      summary('Granted', 'Scheduled', 'team-a/workload-1a2b3'),
      NOW,
    );
    expect(first!.status).toEqual({
      observedGeneration: 2,
      phase: 'Granted',
      cluster: { name: 'workload-1a2b3', namespace: 'team-a' },
      conditions: [
        {
          type: 'Scheduled',
          status: 'True',
          reason: 'Scheduled',
          message: 'why',
          lastTransitionTime: NOW,
          observedGeneration: 2,
        },
      ],
    });
    const [again] = desiredRequestStatuses(
      [request('web', first!.status)],
      summary('Granted', 'Scheduled', 'team-a/workload-1a2b3'),
      '2026-11-23T13:00:00.000Z',
    );
    expect((again!.status['conditions'] as { lastTransitionTime: string }[])[0]!.lastTransitionTime).toBe(NOW);
  });

  it('keeps naming the cluster a request had when it falls back to Pending (openMCP refuses removing it)', () => {
    const [pending] = desiredRequestStatuses(
      [request('web', { phase: 'Granted', cluster: { name: 'workload-1a2b3', namespace: 'team-a' } })],
      summary('Pending', 'UnknownPurpose', '-'),
      NOW,
    );
    expect(pending!.status).toMatchObject({
      phase: 'Pending',
      cluster: { name: 'workload-1a2b3', namespace: 'team-a' },
    });
  });

  it('names the cluster a refused request keeps (its status was lost or never written)', () => {
    const [refused] = desiredRequestStatuses(
      [request('web')],
      summary('Pending', 'PurposeChanged', 'team-a/workload-1a2b3'),
      NOW,
    );
    expect(refused!.status).toMatchObject({
      phase: 'Pending',
      cluster: { name: 'workload-1a2b3', namespace: 'team-a' },
      conditions: [expect.objectContaining({ status: 'False', reason: 'PurposeChanged' })],
    });
  });

  it('leaves statuses alone when nothing was scheduled (the render failed)', () => {
    expect(desiredRequestStatuses([request('web')], undefined, NOW)).toEqual([]);
  });
});
