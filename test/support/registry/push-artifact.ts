// Pushes files as one OCI artifact, as oras and csctl publish cluster stack releases: the tests'
// way to put releases into a real registry (the product only reads them, and pushes its own output
// through gitops/oci-artifact-publisher.ts).
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { buildArtifactManifest } from '../../../src/oci/artifact-manifest.js';
import { OciError } from '../../../src/oci/oci-error.js';
import {
  EMPTY_CONFIG,
  type Descriptor,
  OCI_FILE_LAYER,
  OCI_MANIFEST,
  TITLE_ANNOTATION,
} from '../../../src/oci/oci-manifest.js';
import type { BlobContent, RegistryClient } from '../../../src/oci/registry-client.js';
import { CLUSTER_STACK_ARTIFACT_TYPE, isPlainFileName } from '../../../src/oci/release-artifact.js';

interface ArtifactFile {
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

/** Pushes the files (blobs the registry has already are skipped) and then the manifest under `tag`; returns the manifest digest. */
export async function pushArtifact(client: RegistryClient, options: PushArtifactOptions): Promise<PushedArtifact> {
  const files = [...options.files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const seen = new Set<string>();
  for (const file of files) {
    if (!isPlainFileName(file.name))
      throw new OciError(
        'invalid-release',
        `cannot push ${JSON.stringify(file.name)}: artifact files must have plain file names`,
      );
    if (seen.has(file.name))
      throw new OciError('invalid-release', `cannot push two files named ${file.name} in one artifact`);
    seen.add(file.name);
  }
  await client.pushBlob(options.repository, Buffer.from(EMPTY_CONFIG.data, 'base64'));
  const layers: Descriptor[] = [];
  for (const file of files) {
    const blob = await client.pushBlob(options.repository, file.content);
    layers.push({
      mediaType: file.mediaType ?? OCI_FILE_LAYER,
      digest: blob.digest,
      size: blob.size,
      annotations: { [TITLE_ANNOTATION]: file.name },
    });
  }
  const manifest = buildArtifactManifest(options.artifactType, layers, options.annotations);
  const digest = await client.pushManifest(options.repository, options.tag, manifest, OCI_MANIFEST);
  return { digest, manifest };
}

/** Pushes a release directory (plain files only, as published stacks hold) as a cluster stack release artifact tagged `tag`. */
export async function pushReleaseDirectory(
  client: RegistryClient,
  repository: string,
  tag: string,
  dir: string,
): Promise<PushedArtifact> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: ArtifactFile[] = [];
  for (const entry of entries) {
    if (!entry.isFile())
      throw new OciError(
        'invalid-release',
        `${path.join(dir, entry.name)} is not a regular file; a release artifact holds plain files (pack chart directories with helm package)`,
      );
    files.push({ name: entry.name, content: { file: path.join(dir, entry.name) } });
  }
  return pushArtifact(client, { repository, tag, artifactType: CLUSTER_STACK_ARTIFACT_TYPE, files });
}
