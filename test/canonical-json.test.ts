import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../src/render/canonical-json.js';

describe('canonicalJson', () => {
  it('gives exactly what JSON.stringify gives for plain data, keys sorted', () => {
    const value = { b: [1, 'two', null, undefined, { d: true, c: 1.5e300 }], a: 'x"\u2028\n', e: undefined, '10': 0, '2': -0, f: {}, g: [] };
    const sorted = { '2': -0, '10': 0, a: 'x"\u2028\n', b: [1, 'two', null, undefined, { c: 1.5e300, d: true }], f: {}, g: [] };

    expect(canonicalJson(value)).toBe(JSON.stringify(sorted));
  });

  it('writes a bigint as its exact digits instead of throwing', () => {
    expect(canonicalJson({ metadata: { generation: 9007199254740993n }, list: [-9223372036854775808n] })).toBe('{"list":[-9223372036854775808],"metadata":{"generation":9007199254740993}}');
  });

  it('hashes an integer the same whether it arrives as number or bigint', () => {
    expect(canonicalJson({ port: 6443n })).toBe(canonicalJson({ port: 6443 }));
    expect(canonicalJson({ port: '6443' })).not.toBe(canonicalJson({ port: 6443 }));
  });
});
