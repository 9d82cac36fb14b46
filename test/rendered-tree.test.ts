import { describe, expect, it } from 'vitest';
import { sameTree } from '../src/output/rendered-tree.js';

describe('sameTree', () => {
  it('is true for the same paths and contents in any insertion order', () => {
    expect(
      sameTree(
        new Map([
          ['a', '1'],
          ['b', '2'],
        ]),
        new Map([
          ['b', '2'],
          ['a', '1'],
        ]),
      ),
    ).toBe(true);
  });

  it('is false when a content differs, a path is missing or one is added', () => {
    const base = new Map([
      ['a', '1'],
      ['b', '2'],
    ]);
    expect(
      sameTree(
        base,
        new Map([
          ['a', '1'],
          ['b', '3'],
        ]),
      ),
    ).toBe(false);
    expect(sameTree(base, new Map([['a', '1']]))).toBe(false);
    expect(
      sameTree(
        base,
        new Map([
          ['a', '1'],
          ['b', '2'],
          ['c', ''],
        ]),
      ),
    ).toBe(false);
  });
});
