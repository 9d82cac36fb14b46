import { describe, expect, it } from 'vitest';
import { checkMassDeletion, type PublishedUnit, unitsOfProvenance } from '../src/core/mass-deletion-guard.js';

const DEFAULT = { allow: false, maxShare: 0.5 };

function release(tag: string, namespace = 'stacks'): PublishedUnit {
  return { kind: 'release', namespace, name: tag, release: tag };
}

/** A cluster's units: one per addon stage, and still one cluster. */
function cluster(name: string, tag = 'docker-ferrol-1-30-v1'): PublishedUnit[] {
  return ['cni', 'csi'].map(() => ({ kind: 'cluster-stage', namespace: 'fleet', name, release: tag }));
}

describe('checkMassDeletion', () => {
  it('lets everything through when nothing goes', () => {
    const units = [release('docker-ferrol-1-30-v1'), ...cluster('a')];
    expect(checkMassDeletion(units, units, DEFAULT)).toEqual({
      refused: false,
      releases: { published: 1, removed: [] },
      clusters: { published: 1, removed: [] },
    });
  });

  it('refuses removing every cluster, naming them', () => {
    const verdict = checkMassDeletion([...cluster('a'), ...cluster('b')], [], DEFAULT);
    expect(verdict.refused).toBe(true);
    expect(verdict.clusters.removed).toEqual(['fleet/a', 'fleet/b']);
    expect(verdict.message).toMatch(
      /^this render would remove 2 of 2 published clusters \(fleet\/a, fleet\/b\), more than the 50% one render may remove \(--max-delete-share\)/,
    );
    expect(verdict.message).toMatch(/run again with --allow-mass-delete$/);
  });

  it('refuses removing the only cluster, and allows it when told to', () => {
    expect(checkMassDeletion(cluster('a'), [], DEFAULT).refused).toBe(true);
    expect(checkMassDeletion(cluster('a'), [], { allow: true, maxShare: 0.5 }).refused).toBe(false);
    expect(checkMassDeletion(cluster('a'), [], { allow: false, maxShare: 1 }).refused).toBe(false);
  });

  it('allows exactly the share, refuses more', () => {
    const four = ['a', 'b', 'c', 'd'].flatMap((name) => cluster(name));
    expect(checkMassDeletion(four, [...cluster('a'), ...cluster('b')], DEFAULT).refused).toBe(false);
    expect(checkMassDeletion(four, cluster('a'), DEFAULT).refused).toBe(true);
    expect(checkMassDeletion(four, cluster('a'), { allow: false, maxShare: 0.75 }).refused).toBe(false);
  });

  it('counts a release replaced by a newer one of its stack and channel as routine', () => {
    const verdict = checkMassDeletion([release('docker-ferrol-1-30-v1')], [release('docker-ferrol-1-30-v2')], DEFAULT);
    expect(verdict).toMatchObject({ refused: false, releases: { published: 1, removed: [] } });
  });

  it('refuses when a stack loses all its releases, also when another channel or namespace keeps one', () => {
    const before = [release('docker-ferrol-1-30-v1'), release('docker-ferrol-1-30-v1-alpha-5')];
    expect(checkMassDeletion(before, [release('docker-ferrol-1-30-v1-alpha-6')], DEFAULT)).toMatchObject({
      refused: false,
    });
    const moved = checkMassDeletion(
      before,
      [release('docker-ferrol-1-30-v1', 'other'), release('docker-ferrol-1-30-v1-alpha-5', 'other')],
      DEFAULT,
    );
    expect(moved.refused).toBe(true);
    expect(moved.releases.removed).toEqual(['stacks/docker-ferrol-1-30-v1', 'stacks/docker-ferrol-1-30-v1-alpha-5']);
    expect(moved.message).toMatch(/2 of 2 published releases .*leaving their stacks without any release/);
  });

  it('never refuses the first render', () => {
    expect(checkMassDeletion([], [release('docker-ferrol-1-30-v1')], DEFAULT).refused).toBe(false);
  });

  it('shortens long lists', () => {
    const many = Array.from({ length: 12 }, (_, index) => cluster(`c${String(index).padStart(2, '0')}`)).flat();
    expect(checkMassDeletion(many, [], DEFAULT).message).toMatch(/fleet\/c09 and 2 more\)/);
  });
});

describe('unitsOfProvenance', () => {
  it('reads the units of a provenance record and nothing from a damaged one', () => {
    const units = [release('docker-ferrol-1-30-v1')];
    expect(unitsOfProvenance(JSON.stringify({ generator: 'clusterstack-gitops', units }))).toEqual(units);
    expect(unitsOfProvenance(undefined)).toEqual([]);
    expect(unitsOfProvenance('{not json')).toEqual([]);
    expect(unitsOfProvenance(JSON.stringify({ units: [{ kind: 'release' }] }))).toEqual([]);
  });
});
