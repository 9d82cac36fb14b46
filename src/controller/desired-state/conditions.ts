// Conditions in the Cluster API shape: what the controller wants them to say, merged into what the
// object says now so that lastTransitionTime moves only when a condition's status moves.
import type { Condition } from '../../api/types.js';

type ConditionStatus = Condition['status'];

/** A condition as the status computation decides it, before timestamps. */
export interface DesiredCondition {
  type: string;
  status: ConditionStatus;
  /** PascalCase. */
  reason: string;
  /** What happened and what to do about it. */
  message: string;
  severity?: 'Error' | 'Warning' | 'Info';
}

export function trueCondition(type: string, reason: string, message: string): DesiredCondition {
  return { type, status: 'True', reason, message };
}

export function falseCondition(
  type: string,
  reason: string,
  message: string,
  severity: DesiredCondition['severity'] = 'Warning',
): DesiredCondition {
  return { type, status: 'False', reason, message, severity };
}

export function unknownCondition(type: string, reason: string, message: string): DesiredCondition {
  return { type, status: 'Unknown', reason, message };
}

/**
 * The conditions to write: the desired ones in the given order, each keeping the current
 * lastTransitionTime when its status did not change. Conditions the controller no longer sets are dropped.
 */
export function mergeConditions(
  current: Condition[] | undefined,
  desired: DesiredCondition[],
  now: string,
  observedGeneration?: number,
): Condition[] {
  return desired.map((condition) => {
    const before = current?.find((existing) => existing.type === condition.type);
    const merged: Condition = {
      type: condition.type,
      status: condition.status,
      reason: condition.reason,
      message: condition.message,
      lastTransitionTime:
        before && before.status === condition.status && before.lastTransitionTime ? before.lastTransitionTime : now,
    };
    // CAPI sets severity only on False conditions.
    if (condition.status === 'False' && condition.severity) merged.severity = condition.severity;
    if (observedGeneration !== undefined) merged.observedGeneration = observedGeneration;
    return merged;
  });
}

/**
 * A `Ready` condition summarising others: True when all are True; otherwise the first False one
 * (then the first Unknown one) lends its reason and message.
 */
export function readySummary(parts: DesiredCondition[], readyMessage: string): DesiredCondition {
  const failing = parts.find((part) => part.status === 'False') ?? parts.find((part) => part.status === 'Unknown');
  if (!failing) return trueCondition('Ready', 'Ready', readyMessage);
  return {
    type: 'Ready',
    status: 'False',
    reason: failing.reason,
    message: failing.message,
    severity: failing.severity ?? 'Info',
  };
}

/** The condition of a type, if present. */
export function findCondition<T extends { type: string }>(conditions: T[] | undefined, type: string): T | undefined {
  return conditions?.find((condition) => condition.type === type);
}

/**
 * Conditions computed against an older copy of an object, moved onto a fresher one (after a 409):
 * a condition whose status the fresh copy already has keeps the fresh lastTransitionTime.
 */
export function rebaseConditions(conditions: Condition[], fresh: Condition[] | undefined, now: string): Condition[] {
  return conditions.map((condition) => {
    const current = fresh?.find((existing) => existing.type === condition.type);
    if (current && current.status === condition.status && current.lastTransitionTime)
      return { ...condition, lastTransitionTime: current.lastTransitionTime };
    return current ? { ...condition, lastTransitionTime: now } : condition;
  });
}
