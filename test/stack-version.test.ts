import { describe, expect, it } from 'vitest';
import {
  channelOf,
  compareStackVersions,
  formatDashVersion,
  formatDotVersion,
  parseDashVersion,
  parseStackVersion,
  VersionSyntaxError,
} from '../src/core/stack-version.js';

describe('parseStackVersion', () => {
  it.each([
    ['v3', { major: 3 }],
    ['v1-alpha.5', { major: 1, label: 'alpha', patch: '5' }],
    ['v0-sha.hipstsw', { major: 0, label: 'sha', patch: 'hipstsw' }],
  ])('parses the dot form %s', (input, expected) => {
    expect(parseStackVersion(input)).toEqual(expected);
  });

  it.each(['3', 'v1.alpha-5', 'v1-alpha', 'V1', 'v01', 'v1-alpha.5.1', ''])(
    'rejects %j with the expected shape in the message',
    (input) => {
      expect(() => parseStackVersion(input)).toThrow(VersionSyntaxError);
      expect(() => parseStackVersion(input)).toThrow(/expected v<major>/);
    },
  );

  it('points out a dash form where the dot form is required', () => {
    expect(() => parseStackVersion('v1-alpha-5')).toThrow(/write v1-alpha.5 here/);
  });
});

describe('dash form', () => {
  it('round-trips between the dot and the dash form', () => {
    for (const dot of ['v3', 'v1-alpha.5', 'v0-sha.hipstsw']) {
      const dash = formatDashVersion(parseStackVersion(dot));
      expect(formatDotVersion(parseDashVersion(dash))).toBe(dot);
    }
    expect(formatDashVersion(parseStackVersion('v0-sha.hipstsw'))).toBe('v0-sha-hipstsw');
  });
});

describe('channelOf', () => {
  it('puts hash builds in the custom channel and pre-releases in their own', () => {
    expect(channelOf(parseStackVersion('v3'))).toBe('stable');
    expect(channelOf(parseStackVersion('v1-alpha.5'))).toBe('alpha');
    expect(channelOf(parseStackVersion('v0-sha.hipstsw'))).toBe('custom');
  });
});

describe('compareStackVersions', () => {
  const compare = (a: string, b: string): number | undefined =>
    compareStackVersions(parseStackVersion(a), parseStackVersion(b));

  it('orders majors and integer patches numerically', () => {
    expect(compare('v1-alpha.5', 'v1-alpha.6')).toBeLessThan(0);
    expect(compare('v1-alpha.6', 'v2-alpha.4')).toBeLessThan(0);
    expect(compare('v1-alpha.9', 'v1-alpha.10')).toBeLessThan(0);
    expect(compare('v10', 'v9')).toBeGreaterThan(0);
    expect(compare('v3', 'v3')).toBe(0);
  });

  it('never compares across channels', () => {
    expect(compare('v1', 'v1-alpha.1')).toBeUndefined();
    expect(compare('v1-alpha.1', 'v1-beta.1')).toBeUndefined();
  });

  it('leaves different hash builds unordered', () => {
    expect(compare('v0-sha.aaa', 'v0-sha.bbb')).toBeUndefined();
    expect(compare('v0-sha.aaa', 'v1-sha.aaa')).toBeLessThan(0);
  });
});
