// Pushes files as one OCI artifact (empty config, one layer per file named by its title annotation),
// the shape oras and csctl produce: used for cluster stack releases and for the OCI output.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { sortKeysDeep } from '../core/sort-keys.js';
import { OciError } from './oci-error.js';
import { EMPTY_CONFIG, type Descriptor, OCI_FILE_LAYER, OCI_MANIFEST, TITLE_ANNOTATION } from './oci-manifest.js';
import type { BlobContent, RegistryClient } from './registry-client.js';
import { CLUSTER_STACK_ARTIFACT_TYPE, isPlainFileName } from './release-artifact.js';

export interface ArtifactFile {
  /** The layer's title annotation: a plain file name. */
  name: string;
  content: BlobContent;
  /** Default: `application/vnd.oci.image.layer.v1.tar`, as oras pushes files. */
  mediaType?: string;
}

export interface PushArtifactOptions {
  repository: string;
  tag: string;
  artifactType: string;
  files: ArtifactFile[];
  /** Manifest annotations (e.g. `org.opencontainers.image.source`); written in sorted key order. */
  annotations?: Record<string, string>;
}

export interface PushedArtifact {
  digest: string;
  manifest: Uint8Array;
}

/** The manifest bytes for an artifact: same inputs, same bytes (hence the same digest). */
export function buildArtifactManifest(artifactType: string, layers: Descriptor[], annotations: Record<string, string> = {}): Uint8Array {
  const manifest: Record<string, unknown> = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType,
    config: { mediaType: EMPTY_CONFIG.mediaType, digest: EMPTY_CONFIG.digest, size: EMPTY_CONFIG.size, data: EMPTY_CONFIG.data },
    layers: layers.map((layer) => ({ mediaType: layer.mediaType, digest: layer.digest, size: layer.size, ...(layer.annotations ? { annotations: sortKeysDeep(layer.annotations) } : {}) })),
  };
  if (Object.keys(annotations).length > 0) manifest.annotations = sortKeysDeep(annotations);
  return Buffer.from(JSON.stringify(manifest));
}

/** Pushes the files (blobs the registry has already are skipped) and then the manifest under `tag`; returns the manifest digest. */
export async function pushArtifact(client: RegistryClient, options: PushArtifactOptions): Promise<PushedArtifact> {
  const files = [...options.files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const seen = new Set<string>();
  for (const file of files) {
    if (!isPlainFileName(file.name)) throw new OciError('invalid-release', `cannot push ${JSON.stringify(file.name)}: artifact files must have plain file names`);
    if (seen.has(file.name)) throw new OciError('invalid-release', `cannot push two files named ${file.name} in one artifact`);
    seen.add(file.name);
  }
  await client.pushBlob(options.repository, Buffer.from(EMPTY_CONFIG.data, 'base64'));
  const layers: Descriptor[] = [];
  for (const file of files) {
    const blob = await client.pushBlob(options.repository, file.content);
    layers.push({ mediaType: file.mediaType ?? OCI_FILE_LAYER, digest: blob.digest, size: blob.size, annotations: { [TITLE_ANNOTATION]: file.name } });
  }
  const manifest = buildArtifactManifest(options.artifactType, layers, options.annotations);
  const digest = await client.pushManifest(options.repository, options.tag, manifest, OCI_MANIFEST);
  return { digest, manifest };
}

/** Pushes a release directory (plain files only, as published stacks hold) as a cluster stack release artifact tagged `tag`. */
export async function pushReleaseDirectory(client: RegistryClient, repository: string, tag: string, dir: string): Promise<PushedArtifact> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: ArtifactFile[] = [];
  for (const entry of entries) {
    if (!entry.isFile()) throw new OciError('invalid-release', `${path.join(dir, entry.name)} is not a regular file; a release artifact holds plain files (pack chart directories with helm package)`);
    files.push({ name: entry.name, content: { file: path.join(dir, entry.name) } });
  }
  return pushArtifact(client, { repository, tag, artifactType: CLUSTER_STACK_ARTIFACT_TYPE, files });
}
