// The CLI's one read of its target, in two stages (src/pipeline/published-target.ts): a settled run
// ends on the record alone, its tree never read; any other run reads the tree once, into the
// published state it decides and renders with.
import { describe, expect, it } from 'vitest';
import type { Publisher } from '../gitops/publisher.js';
import type { SettledRun, SettledRunStore } from '../gitops/settled-run-record.js';
import { readPublishedTarget } from '../src/pipeline/published-target.js';

const PROVENANCE = JSON.stringify({ units: [{ kind: 'release', dir: 'management/ns/r', release: 'r' }] });

/** A target whose settled run has fingerprint `settledAs`; it logs every read. */
function target(settledAs: string): { publisher: Publisher & SettledRunStore; reads: string[] } {
  const reads: string[] = [];
  const settled: SettledRun = { fingerprint: settledAs, report: { units: 1 } };
  const publisher: Publisher & SettledRunStore = {
    target: 'test target',
    readPrevious: async () => {
      reads.push('tree');
      return new Map([['provenance.json', PROVENANCE]]);
    },
    publish: async () => ({ changed: false, written: [], removed: [], revision: null }),
    readSettledRun: async (fingerprint) => {
      reads.push(`record ${fingerprint}`);
      return fingerprint === settledAs ? settled : undefined;
    },
    recordSettledRun: async () => undefined,
    forgetSettledRun: async () => undefined,
  };
  return { publisher, reads };
}

describe('the published target, read once in two stages', () => {
  it('is settled on the record alone: the tree is never read, nor is rendering prepared', async () => {
    const { publisher, reads } = target('sha256:same');
    const prepared: string[] = [];
    const read = await readPublishedTarget(publisher, 'sha256:same', async () => void prepared.push('render'));
    expect(read.settled?.fingerprint).toBe('sha256:same');
    expect(read.state).toBeUndefined();
    expect(reads).toEqual(['record sha256:same']);
    expect(prepared).toEqual([]);
  });

  it('reads the tree once into the published state when the run is not settled, after preparing to render', async () => {
    const { publisher, reads } = target('sha256:old');
    const read = await readPublishedTarget(publisher, 'sha256:new', async () => void reads.push('prepare'));
    expect(read.settled).toBeUndefined();
    expect(reads).toEqual(['record sha256:new', 'prepare', 'tree']);
    expect([...read.state!.units.keys()]).toEqual(['management/ns/r']);
    expect(Object.isFrozen(read.state)).toBe(true);
    expect(Object.isFrozen(read.state!.provenance!.units[0])).toBe(true);
  });

  it('skips the record without a fingerprint (a full render, or a run that has none)', async () => {
    const { publisher, reads } = target('sha256:same');
    const read = await readPublishedTarget(publisher, undefined);
    expect(read.settled).toBeUndefined();
    expect(reads).toEqual(['tree']);
  });
});
