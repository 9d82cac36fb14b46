import { describe, expect, it } from 'vitest';
import { canonicalDigestWithHole, canonicalJson, sameCanonicalJson } from '../src/render/canonical-json.js';
import { sha256Digest } from '../src/release/content-digest.js';
import { sortKeysDeep } from '../src/core/sort-keys.js';

describe('canonicalJson', () => {
  it('gives exactly what JSON.stringify gives for plain data, keys sorted', () => {
    const value = {
      b: [1, 'two', null, undefined, { d: true, c: 1.5e300 }],
      a: 'x"\u2028\n',
      e: undefined,
      '10': 0,
      '2': -0,
      f: {},
      g: [],
    };
    const sorted = {
      '2': -0,
      '10': 0,
      a: 'x"\u2028\n',
      b: [1, 'two', null, undefined, { c: 1.5e300, d: true }],
      f: {},
      g: [],
    };

    expect(canonicalJson(value)).toBe(JSON.stringify(sorted));
  });

  it('writes what the sorted copy writes, for random data with array-index keys, toJSON and odd prototypes', () => {
    let seed = 11;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
    const leaves: unknown[] = ['a', '', 0, -0, 7n, 1.5, Number.NaN, true, null, undefined, () => 1, new Date(0)];
    const value = (depth: number): unknown => {
      const roll = next();
      if (depth === 0 || roll < 0.3) return pick(leaves);
      if (roll < 0.55) return Array.from({ length: Math.floor(next() * 3) }, () => value(depth - 1));
      if (roll < 0.6) return { toJSON: () => 'j', z: 1 };
      const object = Object.create(next() < 0.1 ? null : Object.prototype) as Record<string, unknown>;
      for (const key of ['x', '10', 'b', '2', 'constructor', '01', 'a'].filter(() => next() < 0.5))
        object[key] = value(depth - 1);
      return object;
    };
    for (let round = 0; round < 2_000; round += 1) {
      const sample = value(4);
      expect(canonicalJson(sample)).toBe(sortedCopyJson(sample));
    }
  });

  it('writes a bigint as its exact digits instead of throwing', () => {
    expect(canonicalJson({ metadata: { generation: 9007199254740993n }, list: [-9223372036854775808n] })).toBe(
      '{"list":[-9223372036854775808],"metadata":{"generation":9007199254740993}}',
    );
  });

  it('hashes an integer the same whether it arrives as number or bigint', () => {
    expect(canonicalJson({ port: 6443n })).toBe(canonicalJson({ port: 6443 }));
    expect(canonicalJson({ port: '6443' })).not.toBe(canonicalJson({ port: 6443 }));
  });

  it('compares two values in place exactly as comparing their canonical JSON does', () => {
    // A small deterministic generator (no Math.random: a failure must be reproducible).
    let seed = 7;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
    const leaves: unknown[] = [
      'a',
      'b',
      '',
      0,
      -0,
      1,
      1n,
      6443,
      6443n,
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      true,
      false,
      null,
      undefined,
      () => 1,
      new Date(0),
      { toJSON: () => 'a' },
    ];
    const value = (depth: number): unknown => {
      const roll = next();
      if (depth === 0 || roll < 0.4) return pick(leaves);
      if (roll < 0.7) return Array.from({ length: Math.floor(next() * 3) }, () => value(depth - 1));
      const object: Record<string, unknown> = Object.create(next() < 0.1 ? null : Object.prototype) as Record<
        string,
        unknown
      >;
      for (const key of ['x', 'y', 'constructor'].slice(0, Math.floor(next() * 4))) object[key] = value(depth - 1);
      return object;
    };
    let equalPairs = 0;
    for (let round = 0; round < 20_000; round += 1) {
      const a = value(3);
      // Half the pairs are built alike (same seed), so equal values are compared as often as not.
      const b = next() < 0.5 ? value(3) : structuredCloneOrSame(a);
      const expected = canonicalJson(a) === canonicalJson(b);
      if (expected) equalPairs += 1;
      expect(sameCanonicalJson(a, b), `${canonicalJson(a)} vs ${canonicalJson(b)}`).toBe(expected);
    }
    expect(equalPairs).toBeGreaterThan(2_000);
  });
});

describe('canonicalDigestWithHole', () => {
  it('gives the digest of the canonical JSON with the hole filled, wherever the hole sorts', () => {
    const fixed = { zeta: [3, { b: 1, a: 'x' }], alpha: 'a"b', middle: null, skipped: undefined, n: 10n };
    const values: unknown[] = [
      null,
      'text',
      { z: { y: 1, x: [true, null] }, a: 0 },
      [1, 'two', { d: undefined, c: 3 }],
      undefined,
      () => 1,
    ];
    for (const hole of ['aaa', 'context', 'n', 'zzz', 'alpha', '10']) {
      const digest = canonicalDigestWithHole(fixed, hole);
      for (const value of values)
        expect(digest(value), `${hole} = ${String(value)}`).toBe(
          sha256Digest(canonicalJson({ ...fixed, [hole]: value })),
        );
    }
  });

  it('gives the same digest beside array-index keys, which sort apart', () => {
    const digest = canonicalDigestWithHole({ '2': 'two', b: 'b' }, 'context');
    expect(digest({ '10': 1, a: 2 })).toBe(
      sha256Digest(canonicalJson({ '2': 'two', b: 'b', context: { '10': 1, a: 2 } })),
    );
  });

  it('gives the same digest for a fixed part with no other member', () => {
    expect(canonicalDigestWithHole({}, 'context')({ b: 2, a: 1 })).toBe(
      sha256Digest(canonicalJson({ context: { a: 1, b: 2 } })),
    );
  });
});

/** canonicalJson as first written: a sorted copy (sortKeysDeep), then JSON.stringify's rules plus bigint. */
function sortedCopyJson(value: unknown): string {
  const write = (item: unknown): string | undefined => {
    if (typeof item === 'bigint') return item.toString();
    if (Array.isArray(item)) return `[${item.map((element) => write(element) ?? 'null').join(',')}]`;
    if (item !== null && typeof item === 'object' && typeof (item as { toJSON?: unknown }).toJSON !== 'function') {
      const members: string[] = [];
      for (const [key, element] of Object.entries(item)) {
        const written = write(element);
        if (written !== undefined) members.push(`${JSON.stringify(key)}:${written}`);
      }
      return `{${members.join(',')}}`;
    }
    return JSON.stringify(item) as string | undefined;
  };
  return write(sortKeysDeep(value)) ?? 'null';
}

/** A deep copy where one can be made (functions and null prototypes are kept as they are). */
function structuredCloneOrSame(value: unknown): unknown {
  try {
    return structuredClone(value);
  } catch {
    return value;
  }
}
