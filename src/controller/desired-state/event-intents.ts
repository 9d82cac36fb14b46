// Kubernetes Events the controller records: decided from what changed between the status an object
// has and the one it gets, so a steady state records nothing.
import type { Condition, KubeObject } from '../../api/types.js';
import { eventTypeOfReason } from '../../core/failure.js';
import type { EventIntent, EventRegarding } from '../runtime/runtime-contract.js';
import { findCondition, type DesiredCondition } from './conditions.js';

export type { EventIntent, EventRegarding } from '../runtime/runtime-contract.js';

export function regarding(
  object:
    KubeObject | { apiVersion: string; kind: string; metadata: { namespace?: string; name: string; uid?: string } },
): EventRegarding {
  const ref: EventRegarding = {
    apiVersion: object.apiVersion,
    kind: object.kind,
    namespace: object.metadata.namespace ?? 'default',
    name: object.metadata.name,
  };
  if (object.metadata.uid) ref.uid = object.metadata.uid;
  return ref;
}

/**
 * An event when a condition turns False (or changes reason while False), naming `reason`
 * (defaults to the condition's reason). Its type comes from the failure table: Normal for a
 * reason that only waits (…NotReady, …Waiting, …Pending), Warning otherwise.
 */
export function eventOnFailure(
  object: Parameters<typeof regarding>[0],
  before: Condition[] | undefined,
  after: DesiredCondition | Condition,
  reason?: string,
): EventIntent | undefined {
  if (after.status !== 'False') return undefined;
  const previous = findCondition(before, after.type);
  if (previous && previous.status === 'False' && previous.reason === after.reason) return undefined;
  const eventReason = reason ?? after.reason ?? 'Failed';
  return {
    regarding: regarding(object),
    type: eventTypeOfReason(after.reason ?? eventReason),
    reason: eventReason,
    message: after.message ?? '',
  };
}
