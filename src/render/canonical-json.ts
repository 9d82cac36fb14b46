// JSON with sorted keys: the basis of every digest, so equal inputs always hash equal.
import { createHash } from 'node:crypto';
import { sortKeysDeep } from '../core/sort-keys.js';

/**
 * Sorted-key JSON of `value`, byte for byte what JSON.stringify gives for plain JSON data; a bigint
 * (an integer beyond 2^53 from the input reader) is written as its exact digits, where
 * JSON.stringify would throw.
 */
export function canonicalJson(value: unknown): string {
  return writeSorted(value) ?? 'null';
}

/**
 * writeJson(sortKeysDeep(value)) in one pass, without the sorted copy (digests of thousands of
 * Clusters are written on every reconcile). Member order is the sorted copy's: array-index keys
 * ascending (an object lists those first whatever their insertion order), then the others sorted.
 * An object with its own toJSON function (the copy keeps it) is written the two-step way.
 */
function writeSorted(value: unknown): string | undefined {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return `[${value.map((element) => writeSorted(element) ?? 'null').join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    if (Object.hasOwn(object, 'toJSON') && typeof object.toJSON === 'function') return writeJson(sortKeysDeep(value));
    const keys = Object.keys(object);
    let indices = 0;
    while (indices < keys.length && isArrayIndex(keys[indices]!)) indices += 1;
    const ordered = indices === 0 ? keys.sort() : [...keys.slice(0, indices), ...keys.slice(indices).sort()];
    const members: string[] = [];
    for (const key of ordered) {
      const child = object[key];
      if (child === undefined) continue;
      const written = writeSorted(child);
      if (written !== undefined) members.push(`${JSON.stringify(key)}:${written}`);
    }
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value) as string | undefined;
}

/** Whether an object lists `key` among its integer keys, ahead of the others (an array index). */
function isArrayIndex(key: string): boolean {
  return /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 4294967295;
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

/**
 * Whether canonicalJson(a) === canonicalJson(b), compared in place, without writing either: the
 * controller compares thousands of statuses on every reconcile. Plain JSON data (arrays, objects
 * without a toJSON, strings, booleans, null, finite numbers, bigints) is walked; anything else met
 * on the way (a number and a bigint, NaN, a Date, a function) is decided by writing both.
 */
export function sameCanonicalJson(a: unknown, b: unknown): boolean {
  return compareInPlace(a, b) ?? canonicalJson(a) === canonicalJson(b);
}

type PlainKind = 'string' | 'boolean' | 'null' | 'number' | 'bigint' | 'array' | 'object';

function plainKind(value: unknown): PlainKind | undefined {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'bigint':
      return typeof value as PlainKind;
    case 'number':
      return Number.isFinite(value) ? 'number' : undefined;
    case 'object': {
      if (Array.isArray(value)) return 'array';
      const prototype = Object.getPrototypeOf(value) as unknown;
      return (prototype === Object.prototype || prototype === null) &&
        typeof (value as { toJSON?: unknown }).toJSON !== 'function'
        ? 'object'
        : undefined;
    }
    default:
      return undefined;
  }
}

/** True or false when plain data decides it; undefined when something else was met. */
function compareInPlace(a: unknown, b: unknown): boolean | undefined {
  const kind = plainKind(a);
  if (kind === undefined || kind !== plainKind(b)) return undefined;
  if (kind === 'array') {
    const left = a as unknown[];
    const right = b as unknown[];
    if (left.length !== right.length) return false;
    for (let index = 0; index < left.length; index += 1) {
      const same = compareInPlace(left[index], right[index]);
      if (same !== true) return same;
    }
    return true;
  }
  if (kind !== 'object') return a === b; // 0 and -0 both write "0"
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  // A key one side holds with a value (undefined ones are dropped) and the other does not: different,
  // unless that value is one JSON leaves out (a function), which writing both decides.
  for (const key of Object.keys(right)) {
    if (right[key] !== undefined && (left[key] === undefined || !Object.hasOwn(left, key)))
      return plainKind(right[key]) === undefined ? undefined : false;
  }
  for (const key of Object.keys(left)) {
    const value = left[key];
    if (value === undefined) continue;
    if (right[key] === undefined || !Object.hasOwn(right, key))
      return plainKind(value) === undefined ? undefined : false;
    const same = compareInPlace(value, right[key]);
    if (same !== true) return same;
  }
  return true;
}

/**
 * The digest `sha256Digest(canonicalJson({ ...fixed, [hole]: value }))`, for many values of one key
 * beside fixed others: the fixed members are written and hashed once, each call hashes only its
 * value and what sorts after it. Thousands of addon units share their stage's chart, template and
 * API versions and differ only in their Cluster's context.
 */
export function canonicalDigestWithHole(fixed: Record<string, unknown>, hole: string): (value: unknown) => string {
  const keys = Object.keys(fixed)
    .filter((key) => key !== hole && fixed[key] !== undefined)
    .sort();
  // Array-index keys sort apart (canonicalJson): not worth splitting around, digested the plain way.
  if (isArrayIndex(hole) || keys.some(isArrayIndex))
    return (value) =>
      `sha256:${createHash('sha256')
        .update(canonicalJson({ ...fixed, [hole]: value }))
        .digest('hex')}`;
  const member = (key: string): string => `${JSON.stringify(key)}:${canonicalJson(fixed[key])}`;
  const before = keys.filter((key) => key < hole).map(member);
  const after = keys.filter((key) => key > hole).map(member);
  const head = createHash('sha256').update(`{${before.map((text) => `${text},`).join('')}${JSON.stringify(hole)}:`);
  const tail = `${after.map((text) => `,${text}`).join('')}}`;
  return (value) => {
    // A value JSON leaves out (undefined) drops its member: the plain way says what that gives.
    const written = value === undefined ? undefined : writeSorted(value);
    if (written === undefined)
      return `sha256:${createHash('sha256')
        .update(canonicalJson({ ...fixed, [hole]: value }))
        .digest('hex')}`;
    return `sha256:${head.copy().update(written).update(tail).digest('hex')}`;
  };
}
