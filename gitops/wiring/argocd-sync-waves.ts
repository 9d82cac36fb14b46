// Argo CD sync waves for the objects of a management release directory. One Application applies a
// whole release directory, so ordering inside it has to be written on the objects themselves: the
// CAPI templates a ClusterClass references first, then the ClusterClass. (Flux needs nothing: it
// applies kinds ending in "Class" first on its own.) Imports only types, so render code can use it
// without an import cycle.
import type { KubeObject } from '../../src/api/types.js';

export const ARGOCD_SYNC_WAVE_ANNOTATION = 'argocd.argoproj.io/sync-wave';

/** The sync wave for an object of `kind` in a release directory: "-1" for `*Template` kinds, "0" for ClusterClass, otherwise none. */
export function syncWaveFor(kind: string): string | undefined {
  if (kind === 'ClusterClass') return '0';
  if (kind.endsWith('Template')) return '-1';
  return undefined;
}

/** A copy of `object` with its sync-wave annotation set by syncWaveFor; a wave the chart already set is kept. */
export function withSyncWave<T extends Pick<KubeObject, 'kind' | 'metadata'>>(object: T): T {
  const wave = syncWaveFor(object.kind);
  if (wave === undefined || object.metadata.annotations?.[ARGOCD_SYNC_WAVE_ANNOTATION] !== undefined) return object;
  return { ...object, metadata: { ...object.metadata, annotations: { ...object.metadata.annotations, [ARGOCD_SYNC_WAVE_ANNOTATION]: wave } } };
}
