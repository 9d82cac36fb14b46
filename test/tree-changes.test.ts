import { describe, expect, it } from 'vitest';
import { compareTrees, ownerOfFile, ownerOfFileByDirectory } from '../src/output/tree-changes.js';
import { readPublishedState } from '../src/output/published-state.js';

/** Paths of every kind the layout has, and the odd names that could trip a per-directory answer. */
const PATHS = [
  'README.md',
  'provenance.json',
  'kustomization.yaml',
  'management/kustomization.yaml',
  'management/providers',
  'management/_cluster-requests',
  'management/_cluster-requests/clusters/fleet/cluster-a.yaml',
  'management/providers/core-cluster-api/components.yaml',
  'management/providers/cert-manager/kustomization.yaml',
  'management/ns/kustomization.yaml',
  'management/ns/shared',
  'management/ns/shared/clusterrole-x.yaml',
  'management/ns/docker-ferrol-1-30-v1/clusterclass-a.yaml',
  'management/ns/docker-ferrol-1-30-v1/kustomization.yaml',
  'clusters/ns/kustomization.yaml',
  'clusters/ns/c1/kustomization.yaml',
  'clusters/ns/c1/layers',
  'clusters/ns/c1/layers/kustomization.yaml',
  'clusters/ns/c1/layers/monitoring/configmap-a.yaml',
  'clusters/ns/c1/layers/monitoring/kustomization.yaml',
  'clusters/ns/c1/cni/configmap-a.yaml',
  'clusters/ns/c1/cni/kustomization.yaml',
  'clusters/ns/c1/cni/nested/configmap-b.yaml',
  'clusters/ns/c2/metrics-server/deployment-metrics-server.yaml',
];

describe('tree changes', () => {
  it('gives per directory the owner it gives per file, for every kind of path', () => {
    // In both orders, each from a fresh lookup: whichever file of a directory comes first must not
    // decide a later file's owner wrongly.
    for (const order of [PATHS, [...PATHS].reverse()]) {
      const byDirectory = ownerOfFileByDirectory();
      for (const file of order) expect(byDirectory(file), file).toEqual(ownerOfFile(file));
    }
  });

  it('reports clusters and releases added, with the stages whose files changed', () => {
    // A real tree: no path is both a file and a directory.
    const files = PATHS.filter((file) => !PATHS.some((other) => other.startsWith(`${file}/`)));
    const next = new Map(files.map((file) => [file, `content of ${file}`]));
    const changes = compareTrees(readPublishedState(new Map()), readPublishedState(next));
    expect(changes.releases).toEqual([{ namespace: 'ns', release: 'docker-ferrol-1-30-v1', change: 'added' }]);
    expect(changes.clusters.map((cluster) => [cluster.cluster, cluster.change, cluster.stages])).toEqual([
      ['c1', 'added', ['cni', 'layers/monitoring']],
      ['c2', 'added', ['metrics-server']],
    ]);
    expect(changes.requestedClusters).toEqual([{ namespace: 'fleet', name: 'a', change: 'added' }]);
    expect(changes.shared).toEqual([{ path: 'management/ns/shared/clusterrole-x.yaml', change: 'added' }]);
  });
});
