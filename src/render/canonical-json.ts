// JSON with sorted keys: the basis of every digest, so equal inputs always hash equal.

/** JSON of `value` with sorted keys; integers beyond 2^53 (bigint, from YAML) keep every digit. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeysDeep(value), (_key, inner: unknown) => (typeof inner === 'bigint' ? { $int: inner.toString() } : inner));
}

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
