// Writes a status through the status subresource, only when it changed, as a merge patch that is
// conditional on the resourceVersion it was computed from; a 409 is retried on a fresh read.
import type { Condition, KubeObject } from '../../api/types.js';
import type { ResourceKind, StatusWriter } from '../runtime/kube-client.js';
import { KubeRequestError } from '../runtime/kube-client.js';
import { rebaseConditions } from '../desired-state/conditions.js';
import { sameStatus } from '../desired-state/desired-state.js';

type StatusWriteOutcome = 'unchanged' | 'written' | 'gone';

export interface StatusWriteResult {
  outcome: StatusWriteOutcome;
  /** The object as the server holds it after the write (absent when gone, or unchanged). */
  object?: KubeObject;
}

/** An RFC 7386 merge patch turning `current` into `desired` at the top level (removed keys become null). */
export function statusMergePatch(
  current: Record<string, unknown> | undefined,
  desired: Record<string, unknown>,
): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(current ?? {})) if (!(key in desired) || desired[key] === undefined) patch[key] = null;
  for (const [key, value] of Object.entries(desired)) if (value !== undefined) patch[key] = value;
  return patch;
}

/** The desired status moved onto a fresher copy of the object: conditions keep its transition times. */
function rebase(desired: Record<string, unknown>, fresh: KubeObject, now: string): Record<string, unknown> {
  const conditions = desired['conditions'] as Condition[] | undefined;
  if (!conditions) return desired;
  const freshStatus = fresh['status'] as { conditions?: Condition[] } | undefined;
  return { ...desired, conditions: rebaseConditions(conditions, freshStatus?.conditions, now) };
}

/**
 * Makes `live`'s status equal `desired`. Writes nothing when it already is. On a conflict reads the
 * object again and retries (up to `maxAttempts`); a vanished object is not an error.
 */
export async function writeStatus(
  client: StatusWriter,
  kind: ResourceKind,
  live: KubeObject,
  desired: Record<string, unknown>,
  options: { now: string; maxAttempts?: number },
): Promise<StatusWriteResult> {
  const namespace = live.metadata.namespace ?? 'default';
  const name = live.metadata.name;
  let current: KubeObject = live;
  let wanted = desired;
  const maxAttempts = options.maxAttempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    const status = current['status'] as Record<string, unknown> | undefined;
    // After a conflict the fresh copy may already say it (another replica, or our own earlier write).
    if (sameStatus(status, wanted))
      return attempt === 1 ? { outcome: 'unchanged' } : { outcome: 'unchanged', object: current };
    const patch: Record<string, unknown> = { status: statusMergePatch(status, wanted) };
    if (current.metadata.resourceVersion) patch['metadata'] = { resourceVersion: current.metadata.resourceVersion };
    try {
      return { outcome: 'written', object: await client.patchStatus(kind, namespace, name, patch) };
    } catch (error) {
      if (error instanceof KubeRequestError && error.notFound) return { outcome: 'gone' };
      if (!(error instanceof KubeRequestError && error.conflict) || attempt >= maxAttempts) throw error;
    }
    const fresh = await client.get(kind, namespace, name);
    if (!fresh) return { outcome: 'gone' };
    current = fresh;
    wanted = rebase(desired, fresh, options.now);
  }
}
