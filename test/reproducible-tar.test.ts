import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { reproducibleTar, reproducibleTarGzip } from '../gitops/reproducible-tar.js';

const FILES: [string, string][] = [
  ['management/default/docker-ferrol-1-30-v3/clusterclass.yaml', 'kind: ClusterClass\n'],
  ['README.md', '# Rendered\n'],
  ['clusters/default/alpha/cni/kustomization.yaml', 'resources: []\n'],
  // Over 100 bytes: named through the ustar prefix field.
  [`clusters/${'d'.repeat(90)}/${'e'.repeat(60)}/addons.yaml`, 'x: 1\n'],
];

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

describe('reproducibleTar digests', () => {
  it('gives the same sha256 for the same tree, twice and whatever the entry order', () => {
    const forward = new Map(FILES);
    const backward = new Map([...FILES].reverse());
    const shuffled = new Map([FILES[2]!, FILES[0]!, FILES[3]!, FILES[1]!]);
    const tars = [forward, forward, backward, shuffled].map((tree) => sha256(reproducibleTar(tree)));
    const gzips = [forward, forward, backward, shuffled].map((tree) => sha256(reproducibleTarGzip(tree).gzip));
    expect(new Set(tars).size).toBe(1);
    expect(new Set(gzips).size).toBe(1);
  });

  it('keeps the bytes every published OCI layer was made of', () => {
    // The layer digest and the revision annotation of every artifact already pushed derive from
    // these bytes: a changed writer (or a tar library in its place) would re-push every unchanged
    // tree once and give it a new revision. Only the uncompressed tar is pinned: another zlib may
    // compress differently.
    expect(sha256(reproducibleTar(new Map(FILES)))).toBe(
      '6ef22cc772eb86bafee6facb5324f7aff9f81e3d97e3bfc4a05d6b7f87f1e4a1',
    );
  });
});
