import { describe, expect, it } from 'vitest';
import {
  clusterClassName,
  formatReleaseTag,
  parseClusterClassName,
  parseReleaseTag,
  stackPrefix,
  TagSyntaxError,
  tryParseReleaseTag,
} from '../src/core/release-tag.js';

describe('parseReleaseTag', () => {
  it('parses a stable tag', () => {
    expect(parseReleaseTag('docker-ferrol-1-27-v3')).toEqual({
      provider: 'docker',
      name: 'ferrol',
      kubernetesMajor: 1,
      kubernetesMinor: 27,
      version: { major: 3 },
    });
  });

  it('parses pre-release and hash tags', () => {
    expect(parseReleaseTag('docker-ferrol-1-30-v1-alpha-5').version).toEqual({ major: 1, label: 'alpha', patch: '5' });
    expect(parseReleaseTag('openstack-scs-1-32-v0-sha-abc1234').version).toEqual({
      major: 0,
      label: 'sha',
      patch: 'abc1234',
    });
  });

  it.each([
    'docker-ferrol-1-27',
    'docker-ferrol-1-x-v3',
    'Docker-ferrol-1-27-v3',
    'docker-ferrol-1-27-v3-alpha',
    'docker-ferrol-1-27-3',
    'v1.0.0',
    'docker_ferrol-1-27-v3',
  ])('rejects %s naming the tag', (tag) => {
    expect(() => parseReleaseTag(tag)).toThrow(TagSyntaxError);
    expect(() => parseReleaseTag(tag)).toThrow(tag);
    expect(tryParseReleaseTag(tag)).toBeUndefined();
  });

  it('round-trips', () => {
    for (const tag of [
      'docker-ferrol-1-27-v3',
      'docker-ferrol-1-30-v1-alpha-10',
      'openstack-scs-1-32-v0-sha-abc1234',
    ]) {
      expect(formatReleaseTag(parseReleaseTag(tag))).toBe(tag);
    }
  });
});

describe('ClusterClass names', () => {
  it('uses the dot form of the version', () => {
    expect(clusterClassName(parseReleaseTag('docker-ferrol-1-30-v1-alpha-5'))).toBe('docker-ferrol-1-30-v1-alpha.5');
    expect(clusterClassName(parseReleaseTag('docker-ferrol-1-27-v3'))).toBe('docker-ferrol-1-27-v3');
  });

  it('maps a class name back to its release by replacing the one dot', () => {
    expect(formatReleaseTag(parseClusterClassName('openstack-scs-1-32-v0-sha.abc1234'))).toBe(
      'openstack-scs-1-32-v0-sha-abc1234',
    );
    expect(formatReleaseTag(parseClusterClassName('docker-ferrol-1-27-v3'))).toBe('docker-ferrol-1-27-v3');
    expect(() => parseClusterClassName('a-b-1-2-v1-alpha.1.2')).toThrow(/at most one/);
  });

  it('refuses a name no release gives its ClusterClass, though it reads as a tag', () => {
    expect(() => parseClusterClassName('docker-ferrol-1.30-v2')).toThrow(
      /the ClusterClass of release docker-ferrol-1-30-v2 is docker-ferrol-1-30-v2/,
    );
    expect(() => parseClusterClassName('docker-ferrol-1-30-v1-alpha-5')).toThrow(/is docker-ferrol-1-30-v1-alpha\.5/);
  });

  it('names the Helm release after the first four tag parts', () => {
    expect(stackPrefix(parseReleaseTag('docker-ferrol-1-27-v3'))).toBe('docker-ferrol-1-27');
  });
});
