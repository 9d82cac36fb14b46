import { describe, expect, it } from 'vitest';
import {
  DEFAULT_STACK_NESTING_DEPTH,
  DeepNestingError,
  decodeYamlDocument,
  decodeYamlDocuments,
  encodeYaml,
  sameYamlValue,
  splitYamlDocuments,
  usesDeepStack,
  YamlDecodeError,
} from '../src/yaml/kube-yaml.js';
import { decodeYamlBytes, decodeUtf8Strict, TextEncodingError } from '../src/yaml/text-encoding.js';
import { resolvePlainScalar } from '../src/yaml/go-yaml-scalars.js';
import { goJson, kubernetesDecode } from './support/kube-yaml-oracle.js';

const isOrdinaryKey = (value: unknown): boolean =>
  typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isSafeInteger(value));

// Every scalar whose meaning differs between YAML 1.2 (js-yaml's default) and go-yaml v2, plus the
// ordinary ones, as values and as keys.
const SCALARS = [
  '0400',
  '0644',
  '00',
  '0',
  '-0',
  '09',
  '0o17',
  '0O17',
  '0x1F',
  '0X1F',
  '0x_1F',
  '0b101',
  '-0b101',
  '+0x10',
  '0x',
  '1_000',
  '1__0',
  '_1',
  '+.5',
  '.5',
  '.5e3',
  '.5_5',
  '1e3',
  '1E3',
  '1.',
  '-1.5e-7',
  '1e400',
  '1e-400',
  '+12',
  '-12',
  '9007199254740993',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775808',
  '-9223372036854775809',
  '18446744073709551615',
  '18446744073709551616',
  '+18446744073709551615',
  'y',
  'Y',
  'yes',
  'Yes',
  'YES',
  'n',
  'N',
  'no',
  'on',
  'On',
  'ON',
  'off',
  'OFF',
  'true',
  'True',
  'tRUE',
  'false',
  '~',
  'null',
  'Null',
  'NULL',
  'nULL',
  '.nan',
  '.NaN',
  '.inf',
  '-.Inf',
  '+.INF',
  '.Nan',
  '2001-12-14',
  '2001-12-14T21:59:43.10-05:00',
  '2001-12-14 21:59:43.10',
  '1:30',
  '12:30:45',
  '1.2.3',
  'v1',
  '0.0.0.0/0',
  '"0400"',
  "'on'",
  '"1_000"',
  '"+.5"',
  '"0X1F"',
  '"12"',
  '"y"',
  '!foo 12',
  '!!str 0400',
  '!!int "0400"',
  '!!float 1',
  '!!binary aGVsbG8gd29ybGQ=',
  '!local-tag on',
  '!!timestamp 2001-12-14',
];

async function oracleJson(text: string): Promise<string> {
  const [document] = await kubernetesDecode(text);
  if (!document) return 'null';
  return 'json' in document ? document.json : `!error`;
}

function ours(text: string): string {
  try {
    return goJson(decodeYamlDocument(text).value);
  } catch {
    return '!error';
  }
}

describe('decodeYamlDocument', () => {
  it('reads every scalar as Kubernetes does (checked against sigs.k8s.io/yaml over go-yaml v2)', async () => {
    // Values that JSON cannot carry (NaN, Inf) make Kubernetes refuse the document; both sides say error.
    const documents = SCALARS.map(
      (scalar) =>
        `value: ${scalar}\nlist: [${scalar.startsWith('!') || scalar.startsWith('"') || scalar.startsWith("'") ? '1' : scalar}]\n`,
    );
    // Keys that go-yaml reads as null, float or beyond int64 are left out: see the note atop kube-yaml.ts.
    const keys = SCALARS.filter(
      (s) => !s.startsWith('!') && isOrdinaryKey(resolvePlainScalar(s.replace(/^["']|["']$/g, ''))),
    ).map((scalar) => `${scalar}: x\n`);
    const all = [...documents, ...keys];
    const expected = await kubernetesDecode(all.join('---\n'));
    expect(expected).toHaveLength(all.length);
    const mismatches = all
      .map((text, index) => ({
        text,
        theirs: 'json' in expected[index]! ? (expected[index] as { json: string }).json : '!error',
        ours: ours(text),
      }))
      .filter((row) => row.theirs !== row.ours && !(row.theirs === '!error' && row.ours.includes('!unsupported')));
    expect(mismatches).toEqual([]);
  });

  it('keeps the last of duplicate keys and names each one with its line', async () => {
    const text =
      'kind: ClusterRole\nmetadata:\n  name: kindnet\n  name: kindnet\n  labels: {a: b}\n  name: kindnet-final\nrules: []\nrules: [{verbs: [get]}]\n';
    const decoded = decodeYamlDocument(text);
    expect(goJson(decoded.value)).toBe(await oracleJson(text));
    expect(decoded.duplicateKeys).toEqual([
      { key: 'name', line: 4 },
      { key: 'name', line: 6 },
      { key: 'rules', line: 8 },
    ]);
  });

  it('merges anchors like go-yaml when the merge key comes first', async () => {
    const text = 'base: &base {a: 1, b: 2}\nderived:\n  <<: *base\n  b: 3\nmulti:\n  <<: [{a: 1}, {a: 2, c: 3}]\n';
    expect(ours(text)).toBe(await oracleJson(text));
  });

  it('refuses an alias bomb quickly with a clear reason instead of expanding it', () => {
    const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let level = 1; level < 9; level += 1) {
      const previous = String.fromCharCode(96 + level);
      const name = String.fromCharCode(97 + level);
      lines.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(',')}]`);
    }
    // The work done, not the wall clock, which a loaded machine stretches: CPU time of this process.
    const started = process.cpuUsage();
    expect(() => decodeYamlDocument(lines.join('\n'))).toThrow(/excessive aliasing/);
    const used = process.cpuUsage(started);
    expect((used.user + used.system) / 1000).toBeLessThan(5_000);
  });

  it('accepts moderate anchor use, as go-yaml does', () => {
    const text = `defaults: &d {cpu: 1, memory: 2Gi}\n${Array.from({ length: 50 }, (_, i) => `c${i}: *d`).join('\n')}\n`;
    expect(() => decodeYamlDocument(text)).not.toThrow();
  });

  it('names the line and column of a syntax error', () => {
    try {
      decodeYamlDocument('a: 1\nb: [1, 2\nc: 3\n');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(YamlDecodeError);
      expect((error as YamlDecodeError).line).toBeGreaterThanOrEqual(2);
      expect((error as Error).message).toMatch(/line \d+/);
    }
  });
});

describe('splitYamlDocuments', () => {
  it('splits where apimachinery does: "---" followed by nothing or a comment', async () => {
    const stream = 'a: 1\n---\nb: 2\n--- # Source: x.yaml\nc: |\n  ---\n  not a separator\n---   \n\n---\nd: "---"\n';
    const parts = splitYamlDocuments(stream);
    const expected = await kubernetesDecode(stream);
    expect(parts.map((p) => p.startLine)).toEqual(expected.map((e) => e.line));
    expect(parts.map((p) => ours(p.text))).toEqual(expected.map((e) => ('json' in e ? e.json : '!error')));
  });

  it('keeps each document as the stream holds it, newline included, and drops documents of whitespace alone', () => {
    const stream = '---\r\na: 1\r\n--- \t\r\n  \n\n---#x\nb: 2\n---x: 3\n---';
    expect(splitYamlDocuments(stream)).toEqual([
      { text: 'a: 1\r\n', startLine: 2 },
      { text: 'b: 2\n---x: 3\n', startLine: 7 },
    ]);
    expect(splitYamlDocuments('c: 4')).toEqual([{ text: 'c: 4', startLine: 1 }]);
    expect(splitYamlDocuments('c: 4\n')).toEqual([{ text: 'c: 4\n', startLine: 1 }]);
    expect(splitYamlDocuments('\n---\n \n')).toEqual([]);
  });

  it('reports errors with the line in the whole stream', () => {
    expect(() => decodeYamlDocuments('a: 1\n---\nb: 2\nc: [\n')).toThrow(/line [45]/);
  });
});

describe('encodeYaml', () => {
  it('writes values that Kubernetes reads back unchanged, quoting strings go-yaml would not keep as strings', async () => {
    const value = {
      strings: [
        '0400',
        'on',
        'y',
        'N',
        '1_000',
        '+.5',
        '0X1F',
        '1e3',
        '~',
        '',
        '<<',
        '2001-12-14',
        'plain',
        'multi\nline',
        ' padded ',
      ],
      numbers: [256, 0.5, -1.5e-7, 1e21, 9223372036854775807n, 18446744073709551615n],
      flags: [true, false, null],
      on: 'key that looks like a boolean',
      '0400': 'key that looks like a number',
    };
    const text = encodeYaml(value, { sortKeys: true });
    expect(await oracleJson(text)).toBe(goJson(value));
    expect(sameYamlValue(decodeYamlDocument(text).value, value)).toBe(true);
  });
});

const bytes = (...parts: (string | number[])[]): Buffer =>
  Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))));
const utf16 = (text: string, bigEndian: boolean): Buffer => {
  const units = Buffer.from(text, 'utf16le');
  return Buffer.concat([Buffer.from(bigEndian ? [0xfe, 0xff] : [0xff, 0xfe]), bigEndian ? units.swap16() : units]);
};

describe('decodeYamlBytes', () => {
  it('reads UTF-8, and UTF-8 or UTF-16 (either byte order) with a byte order mark, as Kubernetes does', async () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: café\ndata:\n  emoji: "😀"\n  list: "[1, 2]"\n';
    const encodings = [Buffer.from(text), bytes([0xef, 0xbb, 0xbf], text), utf16(text, false), utf16(text, true)];
    for (const encoded of encodings) {
      const decoded = decodeYamlBytes(encoded);
      expect(decoded).toBe(text);
      expect(await oracleJson(encoded as unknown as string)).toBe(goJson(decodeYamlDocument(decoded).value));
    }
  });

  it("refuses what go-yaml refuses, with go-yaml's reason, the byte offset and the line", async () => {
    const cases: [Buffer, string, RegExp][] = [
      [
        bytes('a: x\nb: "caf', [0xc3, 0x28], '"\n'),
        'invalid trailing UTF-8 octet',
        /^invalid trailing UTF-8 octet at byte offset 13 \(line 2\)$/,
      ],
      [
        bytes('a: x\n\nb: ', [0xff], '\n'),
        'invalid leading UTF-8 octet',
        /^invalid leading UTF-8 octet at byte offset 9 \(line 3\)$/,
      ],
      [
        bytes('a: ', [0xe2, 0x82]),
        'incomplete UTF-8 octet sequence',
        /^incomplete UTF-8 octet sequence at byte offset 3 \(line 1\)$/,
      ],
      [
        bytes('a: ', [0xc0, 0xaf], '\n'),
        'invalid length of a UTF-8 sequence',
        /^invalid length of a UTF-8 sequence at byte offset 3/,
      ],
      [
        bytes('a: ', [0xed, 0xa0, 0x80], '\n'),
        'invalid Unicode character',
        /^invalid Unicode character at byte offset 3/,
      ],
      [
        Buffer.concat([utf16('a: x\n', false), Buffer.from([0x00, 0xdc])]),
        'unexpected low surrogate area',
        /^unexpected low surrogate area \(UTF-16LE\) at byte offset 12 \(line 2\)$/,
      ],
      [
        Buffer.concat([utf16('a: x\n', true), Buffer.from([0x61])]),
        'incomplete UTF-16 character',
        /^incomplete UTF-16 character \(UTF-16BE\) at byte offset 12 \(line 2\)$/,
      ],
    ];
    for (const [encoded, reason, message] of cases) {
      expect(await kubernetesDecode(encoded)).toEqual([{ line: 1, error: `yaml: ${reason}` }]);
      expect(() => decodeYamlBytes(encoded)).toThrow(TextEncodingError);
      expect(() => decodeYamlBytes(encoded)).toThrow(message);
    }
  });

  it('gives helm output its text and, when it is not UTF-8, the first bad byte', () => {
    expect(decodeUtf8Strict(Buffer.from('kind: ConfigMap\n'))).toEqual({ text: 'kind: ConfigMap\n' });
    const bad = decodeUtf8Strict(bytes('# Source: c/templates/cm.yaml\ndata:\n  x: ', [0x89, 0x50], '\n'));
    expect(bad.error?.line).toBe(3);
    expect(bad.text).toContain('\ufffd');
  });
});

describe('nesting', () => {
  const flow = (levels: number): string => `${'['.repeat(levels)}${']'.repeat(levels)}\n`;
  const block = (levels: number): string =>
    `${Array.from({ length: levels - 1 }, (_, index) => `${' '.repeat(index)}k:`).join('\n')} v\n`;

  it(`reads ${DEFAULT_STACK_NESTING_DEPTH} levels (past js-yaml's default 100) on the default stack as Kubernetes does`, async () => {
    expect(usesDeepStack()).toBe(false);
    for (const text of [flow(DEFAULT_STACK_NESTING_DEPTH), block(DEFAULT_STACK_NESTING_DEPTH), `a: ${flow(150)}`]) {
      expect(await oracleJson(text)).toBe(goJson(decodeYamlDocument(text).value));
    }
  });

  it('asks for a deep stack for deeper documents, without overflowing this one, and names their line in a stream', () => {
    for (const text of [flow(DEFAULT_STACK_NESTING_DEPTH + 1), block(DEFAULT_STACK_NESTING_DEPTH + 2), flow(20_000)]) {
      expect(() => decodeYamlDocument(text)).toThrow(DeepNestingError);
    }
    expect(() => decodeYamlDocuments(`a: 1\n---\nb: ${flow(2000)}`)).toThrow(
      /nests collections more than 1000 levels deep \(line 3\)/,
    );
  });

  it('writes collections deeper than the default stack reads in flow style, and the shallower ones as before', () => {
    const shallow = { a: { b: [1, 2] } };
    expect(encodeYaml(shallow)).toBe('a:\n  b:\n    - 1\n    - 2\n');
    let deep: unknown = 'x';
    for (let level = 0; level < DEFAULT_STACK_NESTING_DEPTH + 5; level += 1) deep = { k: deep };
    const text = encodeYaml(deep);
    expect(text.length).toBeLessThan(2 * 1024 * 1024);
    expect(text).toContain('{k: {k: {k: {k: x}}}}');
  });
});
