// Validators of remote listings kept across runs under the cache directory: per page (its URL), the
// ETag the server sent and the page as we read it. A later run, another process, a CronJob or a CI
// job every few minutes, sends `If-None-Match`; an unchanged page is answered 304, which GitHub does
// not count against the rate limit, and the stored page stands in for the body.
//
// Verified like the release cache: each entry records a digest over what it holds and is checked on
// every read; a damaged or foreign entry is removed and the page read in full. Entries appear by an
// atomic rename, so a crash leaves either the old entry or the new one.
//
// Layout: <root>/listings/<sha256 hex of "<kind>\n<sourceKey>\n<url>">.json
import { rm } from 'node:fs/promises';
import { readCacheEntryJson, writeCacheEntryJson } from '../cache/cache-entry-file.js';
import path from 'node:path';
import { sha256Digest, sha256Hex } from '../release/content-digest.js';

/** What a listing page stored: its validator and the page as the source parsed it. */
export interface StoredPage<T> {
  etag: string;
  page: T;
}

interface Entry {
  schema: 1;
  kind: string;
  sourceKey: string;
  url: string;
  etag: string;
  page: unknown;
  /** sha256 over the JSON of the fields above, in this order. */
  digest: string;
}

const LISTINGS = 'listings';

function digestOf(entry: Omit<Entry, 'digest'>): string {
  return sha256Digest(JSON.stringify([entry.schema, entry.kind, entry.sourceKey, entry.url, entry.etag, entry.page]));
}

/** Persisted listing validators of one kind of source (`github-releases`, `oci-tags`) and one source. */
export class ListingValidators<T> {
  private readonly dir: string;
  private readonly tempDir: string;

  /** `sourceKey` names the source without any credential (it is written to disk). */
  constructor(
    cacheRoot: string,
    private readonly kind: string,
    private readonly sourceKey: string,
  ) {
    this.dir = path.join(cacheRoot, LISTINGS);
    this.tempDir = path.join(cacheRoot, 'tmp');
  }

  private file(url: string): string {
    return path.join(this.dir, `${sha256Hex(`${this.kind}\n${this.sourceKey}\n${url}`)}.json`);
  }

  /** The stored page of `url`, verified; undefined when there is none or it does not verify (then it is removed). */
  async get(url: string): Promise<StoredPage<T> | undefined> {
    const file = this.file(url);
    const entry = (await readCacheEntryJson(file)) as Partial<Entry> | null | undefined;
    if (entry === undefined) return undefined;
    const sound =
      entry?.schema === 1 &&
      entry.kind === this.kind &&
      entry.sourceKey === this.sourceKey &&
      entry.url === url &&
      typeof entry.etag === 'string' &&
      entry.etag !== '' &&
      entry.digest ===
        digestOf({
          schema: 1,
          kind: entry.kind,
          sourceKey: entry.sourceKey,
          url: entry.url,
          etag: entry.etag,
          page: entry.page,
        });
    if (!sound) {
      await rm(file, { force: true });
      return undefined;
    }
    return { etag: entry!.etag!, page: entry!.page as T };
  }

  /** Stores `page` with its validator, replacing what was there in one rename. */
  async put(url: string, stored: StoredPage<T>): Promise<void> {
    const body: Omit<Entry, 'digest'> = {
      schema: 1,
      kind: this.kind,
      sourceKey: this.sourceKey,
      url,
      etag: stored.etag,
      page: stored.page,
    };
    const entry: Entry = { ...body, digest: digestOf(body) };
    await writeCacheEntryJson(this.dir, this.file(url), this.tempDir, 'listing', entry);
  }

  /** Forgets `url` (its page was answered without a validator). */
  async remove(url: string): Promise<void> {
    await rm(this.file(url), { force: true });
  }
}
