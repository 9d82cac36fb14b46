// An air-gapped mirror of an OCI release repository: a directory in OCI image layout (`oci-layout`,
// `index.json` naming each tag in `org.opencontainers.image.ref.name`, `blobs/sha256/...`), as
// `skopeo copy docker://... oci:<dir>:<tag>` and `oras copy --to-oci-layout` write it. Same rules as the
// registry source; blobs are read from disk and verified. The cache key includes the manifest digest,
// so re-mirroring a tag with new content never serves the old files.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { OciError } from '../oci/oci-error.js';
import { assertSha256Digest, type Descriptor, parseOciManifest, REF_NAME_ANNOTATION } from '../oci/oci-manifest.js';
import { releaseLayers } from '../oci/release-artifact.js';
import { sha256Digest } from '../release/content-digest.js';
import {
  type FetchedRelease,
  listingFromTags,
  OCI_LAYOUT_FILE,
  type ReleaseListing,
  type ReleaseSource,
} from '../release/release-source.js';
import type { ReleaseCache } from './release-cache.js';
import { PRIVATE_FILE_MODE } from '../cache/private-cache-file.js';

const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

export interface OciLayoutSourceOptions {
  cache: ReleaseCache;
}

export class OciLayoutSource implements ReleaseSource {
  readonly location: string;
  private readonly root: string;
  private readonly cache: ReleaseCache;

  constructor(root: string, options: OciLayoutSourceOptions) {
    this.location = root;
    this.root = path.resolve(root);
    this.cache = options.cache;
  }

  /** The tags in `index.json` that parse as release tags; other names are skipped with the reason. */
  async list(): Promise<ReleaseListing> {
    return listingFromTags([...(await this.readIndex()).keys()].sort().map((tag) => ({ tag })));
  }

  /** The release's files, copied out of the layout with every blob verified, via the cache. */
  async fetch(tag: string): Promise<FetchedRelease> {
    const descriptor = (await this.readIndex()).get(tag);
    if (!descriptor) throw new OciError('not-found', `release ${tag} is not in the OCI layout ${this.location}`);
    const where = `${this.location}:${tag}`;
    const bytes = await this.readBlob(descriptor, `manifest of ${where}`);
    const layers = releaseLayers(parseOciManifest(bytes, descriptor.mediaType, `manifest of ${where}`), where);
    const sourceKey = `oci-layout:${this.root}@${descriptor.digest}`;
    const cached = await this.cache.get(sourceKey, tag);
    if (cached) return cached;
    return this.cache.put(sourceKey, tag, async (dir) => {
      for (const layer of layers) await this.copyBlob(layer, path.join(dir, layer.file), `${where} file ${layer.file}`);
    });
  }

  /** Tag -> manifest descriptor, from `index.json`. */
  private async readIndex(): Promise<Map<string, Descriptor>> {
    let layout: unknown;
    try {
      layout = JSON.parse(await readFile(path.join(this.root, OCI_LAYOUT_FILE), 'utf8'));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR')
        throw new OciError(
          'not-found',
          `${this.location} is not an OCI layout (no ${OCI_LAYOUT_FILE} file); copy releases into it with skopeo copy or oras copy --to-oci-layout`,
        );
      throw new OciError('invalid-release', `${this.location}/${OCI_LAYOUT_FILE} is not readable JSON`);
    }
    const version = (layout as { imageLayoutVersion?: unknown } | null)?.imageLayoutVersion;
    if (typeof version !== 'string' || !version.startsWith('1.')) {
      throw new OciError(
        'invalid-release',
        `${this.location}/${OCI_LAYOUT_FILE} declares image layout version ${JSON.stringify(version)}; only 1.x is supported`,
      );
    }
    let index: unknown;
    try {
      index = JSON.parse(await readFile(path.join(this.root, 'index.json'), 'utf8'));
    } catch {
      throw new OciError('invalid-release', `${this.location}/index.json is missing or not JSON`);
    }
    const manifests = (index as { manifests?: unknown } | null)?.manifests;
    if (!Array.isArray(manifests))
      throw new OciError('invalid-release', `${this.location}/index.json has no manifests list`);
    const tags = new Map<string, Descriptor>();
    manifests.forEach((entry: unknown, i) => {
      const d = entry as Partial<Descriptor> | null;
      const name = d?.annotations?.[REF_NAME_ANNOTATION];
      if (typeof name !== 'string' || name === '') return; // untagged content: not a release
      assertSha256Digest(d?.digest, `${this.location}/index.json manifests[${i}]`);
      if (typeof d?.size !== 'number' || typeof d.mediaType !== 'string')
        throw new OciError('invalid-release', `${this.location}/index.json manifests[${i}] is not a descriptor`);
      tags.set(name, { mediaType: d.mediaType, digest: d.digest as string, size: d.size });
    });
    return tags;
  }

  private blobPath(digest: string): string {
    return path.join(this.root, 'blobs', 'sha256', digest.slice('sha256:'.length));
  }

  /** A small blob (a manifest), read whole and verified. */
  private async readBlob(descriptor: Descriptor, what: string): Promise<Uint8Array> {
    if (descriptor.size > MAX_MANIFEST_BYTES)
      throw new OciError(
        'invalid-release',
        `${what} declares ${descriptor.size} bytes, larger than any manifest should be`,
      );
    let bytes: Buffer;
    try {
      bytes = await readFile(this.blobPath(descriptor.digest));
    } catch {
      throw new OciError(
        'invalid-release',
        `${what}: blob ${descriptor.digest} is missing from ${this.location}; the layout is incomplete`,
      );
    }
    const actual = sha256Digest(bytes);
    if (actual !== descriptor.digest || bytes.length !== descriptor.size) {
      throw new OciError(
        'invalid-release',
        `${what}: blob ${descriptor.digest} in ${this.location} holds ${actual} (${bytes.length} bytes); the layout is corrupt`,
      );
    }
    return bytes;
  }

  /** Copies a layer blob to `dest`, hashing while copying; a mismatch removes nothing but the temp dir the cache owns. */
  private async copyBlob(layer: { digest: string; size: number }, dest: string, what: string): Promise<void> {
    const source = this.blobPath(layer.digest);
    try {
      await stat(source);
    } catch {
      throw new OciError(
        'invalid-release',
        `${what}: blob ${layer.digest} is missing from ${this.location}; the layout is incomplete`,
      );
    }
    const hash = createHash('sha256');
    let size = 0;
    await pipeline(
      createReadStream(source),
      new Transform({
        transform(chunk: Buffer, _encoding, done) {
          size += chunk.length;
          hash.update(chunk);
          done(null, chunk);
        },
      }),
      createWriteStream(dest, { mode: PRIVATE_FILE_MODE }),
    );
    const actual = `sha256:${hash.digest('hex')}`;
    if (actual !== layer.digest || size !== layer.size) {
      throw new OciError(
        'invalid-release',
        `${what}: blob ${layer.digest} in ${this.location} holds ${actual} (${size} bytes, expected ${layer.size}); the layout is corrupt, nothing was stored`,
      );
    }
  }
}
