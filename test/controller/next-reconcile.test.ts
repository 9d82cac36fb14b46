// The controller's requeue comes from the failure table, not from the wording of an error:
// backoff for retry and internal failures, the resync (or an earlier look) for the rest.
import { describe, expect, it } from 'vitest';
import { eventOnFailure } from '../../src/controller/desired-state/event-intents.js';
import { nextReconcile, RetryLaterError } from '../../src/controller/reconcile/next-reconcile.js';
import { eventTypeOfReason, FAILURE_REACTIONS, reasonFor, type FailureKind } from '../../src/core/failure.js';

const delays = { resyncMs: 300_000 };

describe('nextReconcile', () => {
  it('backs off (throws RetryLaterError naming the first failure) when a failure of a backoff kind happened', () => {
    const failures = [
      { kind: 'fix-input' as const, message: 'mass deletion refused' },
      { kind: 'retry' as const, message: 'push failed: remote hung up' },
      { kind: 'internal' as const, message: 'bug' },
    ];
    expect(() => nextReconcile(failures, delays)).toThrow(RetryLaterError);
    expect(() => nextReconcile(failures, delays)).toThrow('push failed: remote hung up (and 1 more)');
  });

  it('does not back off for failures a retry cannot fix or that wait for a signal', () => {
    expect(nextReconcile([{ kind: 'fix-input', message: 'Secret refused' }], delays)).toEqual({
      requeueAfterMs: 300_000,
    });
    expect(nextReconcile([{ kind: 'wait', message: 'provider not ready' }], delays)).toEqual({
      requeueAfterMs: 300_000,
    });
    expect(nextReconcile([], { ...delays, soonMs: 1000 })).toEqual({ requeueAfterMs: 1000 });
  });

  it('marks a reconcile that met nothing as a success whose next look is only the resync', () => {
    expect(nextReconcile([], delays)).toEqual({ requeueAfterMs: 300_000, resync: true });
  });

  it('follows the table for every kind', () => {
    for (const kind of Object.keys(FAILURE_REACTIONS) as FailureKind[]) {
      const backs = FAILURE_REACTIONS[kind].requeue === 'backoff';
      const run = () => nextReconcile([{ kind, message: kind }], delays);
      if (backs) expect(run).toThrow(RetryLaterError);
      else expect(run()).toEqual({ requeueAfterMs: 300_000 });
    }
  });
});

describe('reasons and event types from the table', () => {
  it('builds a reason per kind that classifies back to that kind', () => {
    expect(reasonFor('Render', 'fix-input')).toBe('RenderFailed');
    expect(reasonFor('Render', 'retry')).toBe('RenderRetrying');
    expect(reasonFor('Render', 'wait')).toBe('RenderWaiting');
    expect(reasonFor('Render', 'internal')).toBe('RenderInternalError');
  });

  it('records Normal events for reasons that only wait, Warning for the others and for unknown reasons', () => {
    expect(eventTypeOfReason('ProviderReleaseNotReady')).toBe('Normal');
    expect(eventTypeOfReason('PublishRetrying')).toBe('Warning');
    expect(eventTypeOfReason('InvalidSpec')).toBe('Warning');
    expect(eventTypeOfReason('OutOfSync')).toBe('Warning');
    const object = {
      apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
      kind: 'ClusterStackRelease',
      metadata: { namespace: 'fleet', name: 'r' },
    };
    const waiting = eventOnFailure(object, [], {
      type: 'ProviderReleaseReady',
      status: 'False',
      reason: 'ProviderReleaseNotReady',
      message: 'uploading the image',
    });
    expect(waiting).toMatchObject({ type: 'Normal', reason: 'ProviderReleaseNotReady' });
    const failed = eventOnFailure(object, [], {
      type: 'ManifestsRendered',
      status: 'False',
      reason: 'RenderFailed',
      message: 'chart failed',
    });
    expect(failed).toMatchObject({ type: 'Warning' });
  });
});
