// What makes an OCI artifact a cluster stack release (as csctl and the cluster-stack-operator publish
// them): artifactType `application/vnd.scs.cluster-stacks.v1`, one layer per file, the file name in the
// `org.opencontainers.image.title` annotation. Shared by the registry and the OCI layout sources.
import { METADATA_FILE } from '../release/release-metadata.js';
import { OciError } from './oci-error.js';
import { OCI_IMAGE_CONFIG, type OciManifest, TITLE_ANNOTATION } from './oci-manifest.js';
import { compareText } from '../core/compare-text.js';

export const CLUSTER_STACK_ARTIFACT_TYPE = 'application/vnd.scs.cluster-stacks.v1';

/** One file of a release and the blob that holds it. */
export interface ReleaseLayer {
  file: string;
  digest: string;
  size: number;
}

/** True when `name` is a single plain file name: nothing that could escape or nest inside a directory. */
export function isPlainFileName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !/[/\\\0]/.test(name);
}

/**
 * Checks that a manifest is a cluster stack release and returns its files, sorted by name. The
 * artifact type is read from `artifactType`, or from `config.mediaType` where older artifacts put it.
 */
export function releaseLayers(manifest: OciManifest, where: string): ReleaseLayer[] {
  const type = manifest.artifactType ?? manifest.config.mediaType;
  if (
    manifest.artifactType !== CLUSTER_STACK_ARTIFACT_TYPE &&
    manifest.config.mediaType !== CLUSTER_STACK_ARTIFACT_TYPE
  ) {
    const what =
      manifest.artifactType === undefined && type === OCI_IMAGE_CONFIG
        ? 'a container image'
        : `an artifact of type ${type}`;
    throw new OciError(
      'invalid-release',
      `${where} is ${what}, not a cluster stack release (artifactType ${CLUSTER_STACK_ARTIFACT_TYPE})`,
    );
  }
  const layers: ReleaseLayer[] = [];
  const names = new Set<string>();
  manifest.layers.forEach((layer, index) => {
    const title = layer.annotations?.[TITLE_ANNOTATION];
    if (title === undefined)
      throw new OciError(
        'invalid-release',
        `${where}: layer ${index} (${layer.digest}) has no ${TITLE_ANNOTATION} annotation naming its file`,
      );
    if (!isPlainFileName(title)) {
      throw new OciError(
        'invalid-release',
        `${where}: layer ${index} is titled ${JSON.stringify(title)}; a release file must be a plain file name (no "/", "..", or empty name)`,
      );
    }
    if (layer.annotations?.['io.deis.oras.content.unpack'] === 'true') {
      throw new OciError(
        'invalid-release',
        `${where}: layer ${title} is a packed directory; release files must be pushed as plain files`,
      );
    }
    if (names.has(title)) throw new OciError('invalid-release', `${where}: two layers are titled ${title}`);
    names.add(title);
    layers.push({ file: title, digest: layer.digest, size: layer.size });
  });
  if (!names.has(METADATA_FILE))
    throw new OciError(
      'invalid-release',
      `${where} has no ${METADATA_FILE} layer; every cluster stack release carries one`,
    );
  return layers.sort((a, b) => compareText(a.file, b.file));
}
