// Sorted keys are what makes our output and digests deterministic: the same data, built in any
// order, serializes to the same bytes. The one key sorter, for canonical JSON, helm values files
// and OCI annotations alike.

/** A copy of `value` with every object's keys in code-unit order and undefined-valued keys dropped; arrays keep their order. */
export function sortKeysDeep<T>(value: T): T {
  if (Array.isArray(value)) return value.map(sortKeysDeep) as T;
  if (value !== null && typeof value === 'object') {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value as Record<string, unknown>).sort()) {
      const child = (value as Record<string, unknown>)[key];
      if (child !== undefined) sorted[key] = sortKeysDeep(child);
    }
    return sorted as T;
  }
  return value;
}
