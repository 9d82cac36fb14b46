// Argo CD sync waves for the objects of a management release directory. One Application applies a
// whole release directory, so ordering inside it has to be written on the objects themselves: the
// node images first (ORC Image: its health check holds the next wave until it is Available), then
// the CAPI templates a ClusterClass references, then the ClusterClass. (Flux needs nothing: it
// applies kinds ending in "Class" first on its own.) Imports only types, so render code can use it
// without an import cycle.
import type { KubeObject } from '../../src/api/types.js';
import { ORC_IMAGE_API_VERSION, ORC_IMAGE_KIND } from './node-image-health.js';

export const ARGOCD_SYNC_WAVE_ANNOTATION = 'argocd.argoproj.io/sync-wave';

/** The sync wave for an object of `kind` in a release directory: "-2" for node images, "-1" for `*Template` kinds, "0" for ClusterClass, otherwise none. */
export function syncWaveFor(kind: string, apiVersion?: string): string | undefined {
  if (kind === ORC_IMAGE_KIND && apiVersion?.split('/')[0] === ORC_IMAGE_API_VERSION.split('/')[0]) return '-2';
  if (kind === 'ClusterClass') return '0';
  if (kind.endsWith('Template')) return '-1';
  return undefined;
}

/** A copy of `object` with its sync-wave annotation set by syncWaveFor; a wave the chart already set is kept. */
export function withSyncWave<T extends Pick<KubeObject, 'kind' | 'metadata'> & { apiVersion?: string }>(object: T): T {
  const wave = syncWaveFor(object.kind, object.apiVersion);
  if (wave === undefined || object.metadata.annotations?.[ARGOCD_SYNC_WAVE_ANNOTATION] !== undefined) return object;
  return {
    ...object,
    metadata: {
      ...object.metadata,
      annotations: { ...object.metadata.annotations, [ARGOCD_SYNC_WAVE_ANNOTATION]: wave },
    },
  };
}
