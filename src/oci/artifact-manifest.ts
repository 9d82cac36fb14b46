// The manifest of a files artifact (empty config, one layer per file named by its title
// annotation), the shape oras and csctl produce: cluster stack releases and the OCI output.
import { sortKeysDeep } from '../core/sort-keys.js';
import { EMPTY_CONFIG, type Descriptor, OCI_MANIFEST } from './oci-manifest.js';

/** The manifest bytes for an artifact: same inputs, same bytes (hence the same digest). */
export function buildArtifactManifest(
  artifactType: string,
  layers: Descriptor[],
  annotations: Record<string, string> = {},
): Uint8Array {
  const manifest: Record<string, unknown> = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType,
    config: {
      mediaType: EMPTY_CONFIG.mediaType,
      digest: EMPTY_CONFIG.digest,
      size: EMPTY_CONFIG.size,
      data: EMPTY_CONFIG.data,
    },
    layers: layers.map((layer) => ({
      mediaType: layer.mediaType,
      digest: layer.digest,
      size: layer.size,
      ...(layer.annotations ? { annotations: sortKeysDeep(layer.annotations) } : {}),
    })),
  };
  if (Object.keys(annotations).length > 0) manifest.annotations = sortKeysDeep(annotations);
  return Buffer.from(JSON.stringify(manifest));
}
