// Releases as OCI artifacts in a registry: one repository, one tag per release (csctl's and the
// cluster-stack-operator's layout). Downloads are verified blob by blob and stored in the release
// cache atomically; tags are treated as immutable, so a cached release is served without a request.
import path from 'node:path';
import { OciError } from '../oci/oci-error.js';
import { formatOciRepository, type OciRepositoryRef, parseOciRepository } from '../oci/oci-reference.js';
import { RegistryClient, type RegistryCredentials, type StoredTagPage } from '../oci/registry-client.js';
import { ListingValidators } from './listing-validators.js';
import { releaseLayers } from '../oci/release-artifact.js';
import {
  type FetchedRelease,
  listingFromTags,
  type ReleaseListing,
  type ReleaseSource,
} from '../release/release-source.js';
import type { RetryPolicy, Sleep } from '../http/http-retry.js';
import type { ReleaseCache } from './release-cache.js';
import { withDeadline } from '../http/remote-deadline.js';
import type { Logger } from '../core/logger.js';

export interface OciReleaseSourceOptions {
  /** `oci://registry[:port]/repository` */
  reference: string;
  /** Talk plain HTTP to the registry (`--plain-http`). */
  plainHttp?: boolean;
  credentials?: RegistryCredentials;
  cache: ReleaseCache;
  fetch?: typeof fetch;
  sleep?: Sleep;
  logger?: Logger;
  timeoutMs?: number;
  /** Listing the tags, or fetching one release (manifest and every blob), in total. Default 5 minutes. */
  totalTimeoutMs?: number;
  retry?: RetryPolicy;
}

export class OciReleaseSource implements ReleaseSource {
  /** `oci://registry/repository`, never with credentials. */
  readonly location: string;
  private readonly ref: OciRepositoryRef;
  private readonly client: RegistryClient;
  private readonly cache: ReleaseCache;
  private readonly totalTimeoutMs: number;
  /** ETags of the tag-list pages across runs, where the registry sends them. */
  private readonly tagPages: ListingValidators<StoredTagPage>;

  constructor(options: OciReleaseSourceOptions) {
    this.totalTimeoutMs = options.totalTimeoutMs ?? 5 * 60 * 1000;
    this.ref = parseOciRepository(options.reference);
    this.location = formatOciRepository(this.ref);
    this.cache = options.cache;
    this.tagPages = new ListingValidators(options.cache.root, 'oci-tags', this.location);
    this.client = new RegistryClient({
      registry: this.ref.apiHost,
      plainHttp: options.plainHttp ?? false,
      ...(options.credentials ? { credentials: options.credentials } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.sleep ? { sleep: options.sleep } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      totalTimeoutMs: this.totalTimeoutMs,
      ...(options.retry ? { retry: options.retry } : {}),
    });
  }

  /** The repository's tags that parse as release tags; other tags are skipped with the reason. */
  async list(): Promise<ReleaseListing> {
    const tags = await withDeadline(`listing the tags of ${this.location}`, this.totalTimeoutMs, () =>
      this.client.listTags(this.ref.repository, this.tagPages),
    );
    return listingFromTags(tags.sort().map((tag) => ({ tag })));
  }

  /** The release's files from the cache, or downloaded, verified and cached. */
  async fetch(tag: string): Promise<FetchedRelease> {
    const cached = await this.cache.get(this.location, tag);
    if (cached) return cached;
    return withDeadline(`downloading release ${tag} from ${this.location}`, this.totalTimeoutMs, () =>
      this.download(tag),
    );
  }

  private async download(tag: string): Promise<FetchedRelease> {
    const { manifest } = await this.client.getManifest(this.ref.repository, tag);
    const where = `${this.location}:${tag}`;
    const layers = releaseLayers(manifest, where);
    return this.cache.put(this.location, tag, async (dir) => {
      for (const layer of layers) {
        try {
          await this.client.fetchBlob(this.ref.repository, layer.digest, path.join(dir, layer.file), layer.size);
        } catch (error) {
          if (error instanceof OciError)
            throw new OciError(error.kind, `${where} file ${layer.file}: ${error.message}`, { cause: error });
          throw error;
        }
      }
    });
  }
}
