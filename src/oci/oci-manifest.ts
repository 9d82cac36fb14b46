// OCI manifest shapes and media types, and the checks that turn untrusted manifest bytes into them.
import { OciError } from './oci-error.js';

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const DOCKER_MANIFEST_V2 = 'application/vnd.docker.distribution.manifest.v2+json';
const DOCKER_MANIFEST_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json';
export const OCI_IMAGE_CONFIG = 'application/vnd.oci.image.config.v1+json';
const OCI_EMPTY = 'application/vnd.oci.empty.v1+json';
/** What oras uses for a plain file layer; any layer media type is accepted on read. */
export const OCI_FILE_LAYER = 'application/vnd.oci.image.layer.v1.tar';
export const TITLE_ANNOTATION = 'org.opencontainers.image.title';
export const REF_NAME_ANNOTATION = 'org.opencontainers.image.ref.name';

/** The empty JSON config (`{}`) artifacts without a config of their own point at. */
export const EMPTY_CONFIG = Object.freeze({
  mediaType: OCI_EMPTY,
  digest: 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a',
  size: 2,
  data: 'e30=',
});

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  artifactType?: string;
  data?: string;
}

export interface OciManifest {
  schemaVersion: 2;
  mediaType?: string;
  artifactType?: string;
  config: Descriptor;
  layers: Descriptor[];
  annotations?: Record<string, string>;
}

const SHA256 = /^sha256:[a-f0-9]{64}$/;

export function isDigest(reference: string): boolean {
  return /^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/.test(reference);
}

/** Throws unless `digest` is a sha256 digest (the only algorithm this tool verifies). */
export function assertSha256Digest(digest: unknown, where: string): asserts digest is string {
  if (typeof digest !== 'string' || !SHA256.test(digest)) {
    throw new OciError(
      'invalid-release',
      `${where}: ${JSON.stringify(digest)} is not a sha256 digest; only sha256 content is supported`,
    );
  }
}

function parseDescriptor(value: unknown, where: string): Descriptor {
  if (typeof value !== 'object' || value === null)
    throw new OciError('invalid-release', `${where} is not a descriptor object`);
  const d = value as Record<string, unknown>;
  if (typeof d.mediaType !== 'string' || d.mediaType === '')
    throw new OciError('invalid-release', `${where} has no mediaType`);
  assertSha256Digest(d.digest, where);
  if (typeof d.size !== 'number' || !Number.isSafeInteger(d.size) || d.size < 0)
    throw new OciError('invalid-release', `${where} has no valid size`);
  const descriptor: Descriptor = { mediaType: d.mediaType, digest: d.digest, size: d.size };
  if (d.annotations !== undefined) descriptor.annotations = parseAnnotations(d.annotations, where);
  if (typeof d.artifactType === 'string') descriptor.artifactType = d.artifactType;
  return descriptor;
}

function parseAnnotations(value: unknown, where: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new OciError('invalid-release', `${where}: annotations must be a map of strings`);
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') throw new OciError('invalid-release', `${where}: annotation ${key} is not a string`);
    out[key] = item;
  }
  return out;
}

/** A description of a non-OCI-manifest media type that says what it is, for error messages. */
function describeMediaType(mediaType: string): string {
  switch (mediaType) {
    case DOCKER_MANIFEST_V2:
      return `a Docker v2 image manifest (${mediaType})`;
    case DOCKER_MANIFEST_LIST:
      return `a Docker manifest list (${mediaType})`;
    case OCI_INDEX:
      return `an OCI image index (${mediaType})`;
    default:
      return `a ${mediaType} document`;
  }
}

/**
 * Parses manifest bytes that must be an OCI image manifest (the shape OCI artifacts use); anything
 * else (a Docker image, an index, a broken document) is an invalid-release error naming what it is.
 * `contentType` is the media type the registry or index reported (used when the document has none).
 */
export function parseOciManifest(bytes: Uint8Array, contentType: string | undefined, where: string): OciManifest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw new OciError('invalid-release', `${where} is not a JSON manifest`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new OciError('invalid-release', `${where} is not a JSON manifest`);
  const m = parsed as Record<string, unknown>;
  const declared = typeof m.mediaType === 'string' ? m.mediaType : undefined;
  const reported = contentType?.split(';')[0]?.trim();
  const foreign = [DOCKER_MANIFEST_V2, DOCKER_MANIFEST_LIST, OCI_INDEX];
  const actual =
    declared ??
    (reported && foreign.includes(reported) ? reported : Array.isArray(m.manifests) ? OCI_INDEX : OCI_MANIFEST);
  if (actual !== OCI_MANIFEST) {
    throw new OciError(
      'invalid-release',
      `${where} is ${describeMediaType(actual)}, not an OCI artifact manifest (${OCI_MANIFEST}); publish the release as an OCI artifact (oras push, csctl)`,
    );
  }
  if (m.schemaVersion !== 2)
    throw new OciError(
      'invalid-release',
      `${where}: schemaVersion is ${JSON.stringify(m.schemaVersion)}, an OCI manifest has 2`,
    );
  if (!Array.isArray(m.layers)) throw new OciError('invalid-release', `${where} has no layers list`);
  const manifest: OciManifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    config: parseDescriptor(m.config, `${where} config`),
    layers: m.layers.map((layer, i) => parseDescriptor(layer, `${where} layer ${i}`)),
  };
  if (typeof m.artifactType === 'string') manifest.artifactType = m.artifactType;
  if (m.annotations !== undefined) manifest.annotations = parseAnnotations(m.annotations, where);
  return manifest;
}
