import { describe, expect, it } from 'vitest';
import { sortKeysDeep } from '../src/core/sort-keys.js';

describe('sortKeysDeep', () => {
  it('sorts every object by key in code-unit order and keeps array order', () => {
    const sorted = sortKeysDeep({ b: 1, a: { z: [{ y: 1, x: 2 }, 3], B: true } });
    expect(JSON.stringify(sorted)).toBe('{"a":{"B":true,"z":[{"x":2,"y":1},3]},"b":1}');
  });

  it('drops keys whose value is undefined and keeps null, bigint and strings as they are', () => {
    expect(sortKeysDeep({ gone: undefined, kept: null, big: 9007199254740993n, text: 'b' })).toEqual({
      big: 9007199254740993n,
      kept: null,
      text: 'b',
    });
  });
});
