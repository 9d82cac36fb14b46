import { describe, expect, it } from 'vitest';
import type { UnitRecord, WithheldEntry } from '../src/output/provenance.js';
import { clusterDir, layerDir } from '../src/output/tree-layout.js';
import type { PublishedState } from '../src/output/published-state.js';
import { keepPreviousOutput } from '../src/render/withhold-units.js';
import { EVERY_ENGINE_KEEP_MARKS } from '../gitops/wiring/keep-marks.js';

/** A published state holding only what keepPreviousOutput reads: the unit records and the tree. */
function published(units: Map<string, UnitRecord>, tree: Map<string, string>): PublishedState {
  return { units, tree } as unknown as PublishedState;
}

function stage(namespace: string, name: string, dir: string): UnitRecord {
  return {
    dir,
    kind: 'cluster-stage',
    namespace,
    name,
    release: 'docker-ferrol-1-30-v1',
    inputDigest: 'sha256:i',
    renderDigest: 'sha256:r',
    files: ['a.yaml'],
  };
}

describe('keepPreviousOutput', () => {
  it("puts back exactly a withheld Cluster's stages: not its layers, not a Cluster whose name it begins", () => {
    const units = [
      stage('ns', 'web', `${clusterDir('ns', 'web')}/cni`),
      stage('ns', 'web', `${clusterDir('ns', 'web')}/metrics`),
      stage('ns', 'web-2', `${clusterDir('ns', 'web-2')}/cni`),
      stage('ns2', 'web', `${clusterDir('ns2', 'web')}/cni`),
      { ...stage('ns', 'web', layerDir('ns', 'web', 'monitoring')), kind: 'cluster-layer' as const },
    ];
    const before = new Map(units.map((unit) => [unit.dir, unit]));
    const previous = new Map(units.map((unit) => [`${unit.dir}/a.yaml`, `kind: ConfigMap # ${unit.dir}\n`]));
    const withheld: WithheldEntry[] = [
      { kind: 'cluster', namespace: 'ns', name: 'web', reason: 'values failed', previousKept: false },
    ];
    const rendered = new Map<string, Map<string, string>>();
    const records: UnitRecord[] = [];

    keepPreviousOutput(withheld, published(before, previous), rendered, records, EVERY_ENGINE_KEEP_MARKS);

    expect([...rendered.keys()].sort()).toEqual([
      `${clusterDir('ns', 'web')}/cni`,
      `${clusterDir('ns', 'web')}/metrics`,
    ]);
    expect(rendered.get(`${clusterDir('ns', 'web')}/cni`)).toEqual(
      new Map([['a.yaml', `kind: ConfigMap # ${clusterDir('ns', 'web')}/cni\n`]]),
    );
    expect(records.map((record) => record.dir).sort()).toEqual([
      `${clusterDir('ns', 'web')}/cni`,
      `${clusterDir('ns', 'web')}/metrics`,
    ]);
    expect(withheld[0]!.previousKept).toBe(true);
  });

  it('keeps nothing for a withheld Cluster the previous tree never had', () => {
    const before = new Map([
      [`${clusterDir('ns', 'other')}/cni`, stage('ns', 'other', `${clusterDir('ns', 'other')}/cni`)],
    ]);
    const withheld: WithheldEntry[] = [
      { kind: 'cluster', namespace: 'ns', name: 'new', reason: 'values failed', previousKept: false },
    ];
    const rendered = new Map<string, Map<string, string>>();
    keepPreviousOutput(withheld, published(before, new Map()), rendered, [], EVERY_ENGINE_KEEP_MARKS);
    expect(rendered.size).toBe(0);
    expect(withheld[0]!.previousKept).toBe(false);
  });
});
