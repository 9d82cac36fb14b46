// JSON with sorted keys: the basis of every digest, so equal inputs always hash equal.
import { sortKeysDeep } from '../core/sort-keys.js';

/**
 * Sorted-key JSON of `value`, byte for byte what JSON.stringify gives for plain JSON data; a bigint
 * (an integer beyond 2^53 from the input reader) is written as its exact digits, where
 * JSON.stringify would throw.
 */
export function canonicalJson(value: unknown): string {
  return writeJson(sortKeysDeep(value)) ?? 'null';
}

// JSON.stringify's rules (undefined, functions and symbols: left out of objects, null in arrays),
// plus bigint. Only containers recurse here; every other value is JSON.stringify's own output.
function writeJson(value: unknown): string | undefined {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return `[${value.map((element) => writeJson(element) ?? 'null').join(',')}]`;
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON !== 'function') {
    const members: string[] = [];
    for (const [key, element] of Object.entries(value)) {
      const written = writeJson(element);
      if (written !== undefined) members.push(`${JSON.stringify(key)}:${written}`);
    }
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value) as string | undefined;
}
