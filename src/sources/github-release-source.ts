// Releases published as GitHub releases (github.com or GitHub Enterprise), through octokit.
// Listings use conditional requests (ETag / If-None-Match; a 304 costs no rate limit), downloads go
// into the verified ReleaseCache, and this module owns retrying (withRetry, with one rate-limit wait
// that is bounded and reported): the GitHub client has octokit's own plugins off (github-client.ts).
import { open } from 'node:fs/promises';
import path from 'node:path';
import { createGitHubClient, type GitHubClient, isRequestError } from '../github/github-client.js';
import { githubLocation } from '../github/github-location.js';
import {
  type FetchedRelease,
  listingFromTags,
  type ReleaseListing,
  type ReleaseSource,
  ReleaseSourceError,
} from '../release/release-source.js';
import {
  DEFAULT_RETRY_POLICY,
  printableUrl,
  rateLimitWaitMs,
  realSleep,
  RequestTimeoutError,
  type RetryPolicy,
  type Sleep,
  withRetry,
} from '../http/http-retry.js';
import type { ReleaseCache } from './release-cache.js';
import { PRIVATE_FILE_MODE } from '../cache/private-cache-file.js';
import { ListingValidators } from './listing-validators.js';
import { currentDeadline, deadlineErrorOf, withDeadline } from '../http/remote-deadline.js';
import { nextLink } from '../http/link-header.js';
import type { Logger } from '../core/logger.js';
import { compareText } from '../core/compare-text.js';
import { Failure } from '../core/failure.js';

const METADATA_ASSET = 'metadata.yaml';
const MAX_REDIRECTS = 5;

export interface GitHubReleaseSourceOptions {
  owner: string;
  repo: string;
  /** API base URL; GitHub Enterprise: `https://host/api/v3`. Default https://api.github.com. */
  baseUrl?: string;
  /** Sent to the API origin only, never to the host downloads are redirected to; never logged. */
  token?: string;
  cache: ReleaseCache;
  fetch?: typeof fetch;
  clock?: () => Date;
  sleep?: Sleep;
  /** Source of jitter, in [0, 1). */
  random?: () => number;
  /** Longest wait for a rate limit to reset before giving up with `rate-limited`. Default 15 minutes. */
  maxRateLimitWaitMs?: number;
  /** Per request: no headers, or no body bytes, for this long is a timeout. Default 30 s. */
  requestTimeoutMs?: number;
  /** One listing, or one release's download, in total (requests, retries and waits). Default 5 minutes. */
  totalTimeoutMs?: number;
  /** Retries of server errors, network errors and timeouts. Default 4 attempts. */
  retry?: Partial<RetryPolicy>;
  /** Reuse a listing younger than this without asking GitHub at all. Default 0 (always ask, conditionally). */
  minListIntervalMs?: number;
  logger?: Logger;
  /** Messages for the person running the tool (rate-limit waits). */
  onWarning?: (message: string) => void;
  /**
   * Download only these assets, each required, instead of every asset with metadata.yaml required
   * (a release that is no cluster stack or provider release, e.g. cert-manager's cert-manager.yaml).
   * They are cached apart from whole releases of the same repository.
   */
  assets?: readonly string[];
}

interface GitHubAsset {
  id: number;
  name: string;
  size: number;
}

interface GitHubRelease {
  tag: string;
  draft: boolean;
  publishedAt?: string;
  assets: GitHubAsset[];
}

interface RememberedPage {
  etag: string;
  releases: GitHubRelease[];
  next?: string;
}

/** A page as stored across runs: releases in the API's own shape, read back through toRelease like a response. */
interface StoredListingPage {
  releases: unknown[];
  next?: string;
}

function toStoredPage(page: RememberedPage): StoredListingPage {
  return {
    releases: page.releases.map((release) => ({
      tag_name: release.tag,
      draft: release.draft,
      ...(release.publishedAt ? { published_at: release.publishedAt } : {}),
      assets: release.assets,
    })),
    ...(page.next ? { next: page.next } : {}),
  };
}

function fromStoredPage(etag: string, stored: StoredListingPage): RememberedPage | undefined {
  if (!Array.isArray(stored?.releases) || (stored.next !== undefined && typeof stored.next !== 'string'))
    return undefined;
  const page: RememberedPage = { etag, releases: stored.releases.flatMap((raw) => toRelease(raw) ?? []) };
  if (stored.next) page.next = stored.next;
  return page;
}

/** A download that failed in a way the asset API does not describe by a RequestError. */
class TransferError extends Failure {
  constructor(
    message: string,
    readonly transient: boolean,
    readonly kind: 'unavailable' | 'invalid-release' | 'not-found' = 'unavailable',
    options?: { cause?: unknown },
  ) {
    super(transient ? 'retry' : 'fix-input', message, options);
    this.name = 'TransferError';
  }
}

/** octokit reports network failures as status 500 without a response. */
function isNetworkFailure(error: { response?: unknown }): boolean {
  return error.response === undefined;
}

function timeoutOf(error: unknown): RequestTimeoutError | undefined {
  for (
    let current = error, depth = 0;
    current instanceof Error && depth < 5;
    current = (current as { cause?: unknown }).cause, depth++
  ) {
    if (current instanceof RequestTimeoutError) return current;
  }
  return undefined;
}

function isTransient(error: unknown): boolean {
  if (deadlineErrorOf(error) || currentDeadline()?.expired) return false;
  if (error instanceof TransferError) return error.transient;
  if (timeoutOf(error)) return true;
  if (isRequestError(error)) return isNetworkFailure(error) || error.status >= 500 || error.status === 408;
  return false;
}

/** Why the last attempt failed, printable (no URL queries, no credentials). */
function describeFailure(error: unknown): string {
  const deadline = deadlineErrorOf(error);
  if (deadline) return deadline.message;
  const timeout = timeoutOf(error);
  if (timeout) return `timed out after ${timeout.timeoutMs} ms`;
  if (error instanceof TransferError) return error.message;
  if (isRequestError(error)) {
    if (isNetworkFailure(error)) return `network error: ${error.message}`;
    return `HTTP ${error.status}`;
  }
  return (error as Error).message;
}

function toRelease(raw: unknown): GitHubRelease | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const item = raw as { tag_name?: unknown; draft?: unknown; published_at?: unknown; assets?: unknown };
  if (typeof item.tag_name !== 'string') return undefined;
  const release: GitHubRelease = {
    tag: item.tag_name,
    draft: item.draft === true,
    assets: (Array.isArray(item.assets) ? item.assets : []).flatMap(
      (asset: { id?: unknown; name?: unknown; size?: unknown }) =>
        typeof asset?.id === 'number' && typeof asset.name === 'string' && typeof asset.size === 'number'
          ? [{ id: asset.id, name: asset.name, size: asset.size }]
          : [],
    ),
  };
  if (typeof item.published_at === 'string') release.publishedAt = item.published_at;
  return release;
}

function isPlainFileName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !/[/\\\0]/.test(name);
}

export class GitHubReleaseSource implements ReleaseSource {
  readonly location: string;
  /** The cache key of this repository: location and API, never a credential. */
  readonly sourceKey: string;
  private readonly owner: string;
  private readonly repo: string;
  private readonly baseUrl: string;
  /** The base URL as printed in messages: no credentials, no query. */
  private readonly printableBase: string;
  private readonly octokit: GitHubClient;
  private readonly fetchImpl: typeof fetch;
  private readonly clock: () => Date;
  private readonly sleep: Sleep;
  private readonly random: () => number;
  private readonly maxRateLimitWaitMs: number;
  private readonly totalTimeoutMs: number;
  private readonly retryPolicy: RetryPolicy;
  private readonly minListIntervalMs: number;
  private readonly pages = new Map<string, RememberedPage>();
  /** The pages' validators across runs, under the cache directory. */
  private readonly storedPages: ListingValidators<StoredListingPage>;
  private releasesByTag = new Map<string, GitHubRelease>();
  private lastListing?: { at: number; listing: ReleaseListing };
  private listing?: Promise<ReleaseListing>;
  private readonly fetching = new Map<string, Promise<FetchedRelease>>();

  constructor(private readonly options: GitHubReleaseSourceOptions) {
    this.owner = options.owner;
    this.repo = options.repo;
    const github = createGitHubClient({
      ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
      ...(options.token !== undefined ? { token: options.token } : {}),
      ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    });
    this.octokit = github.octokit;
    this.fetchImpl = github.fetch;
    this.baseUrl = github.baseUrl;
    const named = githubLocation(this.owner, this.repo, this.baseUrl);
    this.printableBase = named.printableBase;
    this.location = named.location;
    this.sourceKey = named.sourceKey;
    this.storedPages = new ListingValidators(options.cache.root, 'github-releases', this.sourceKey);
    this.clock = options.clock ?? (() => new Date());
    this.sleep = options.sleep ?? realSleep;
    this.totalTimeoutMs = options.totalTimeoutMs ?? 5 * 60 * 1000;
    this.random = options.random ?? Math.random;
    this.maxRateLimitWaitMs = options.maxRateLimitWaitMs ?? 15 * 60 * 1000;
    this.retryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.minListIntervalMs = options.minListIntervalMs ?? 0;
  }

  private get name(): string {
    return `${this.owner}/${this.repo}`;
  }

  /** Every published release whose tag parses; drafts are left out, other tags reported as skipped. */
  list(): Promise<ReleaseListing> {
    const now = this.clock().getTime();
    if (this.lastListing && this.minListIntervalMs > 0 && now - this.lastListing.at < this.minListIntervalMs)
      return Promise.resolve(this.lastListing.listing);
    // Concurrent callers share one walk over the pages.
    this.listing ??= withDeadline(
      `listing the releases of ${this.name} at ${this.printableBase}`,
      this.totalTimeoutMs,
      () => this.listFresh(),
    ).finally(() => {
      this.listing = undefined;
    });
    return this.listing;
  }

  private async listFresh(): Promise<ReleaseListing> {
    const all: GitHubRelease[] = [];
    const seenPages = new Set<string>();
    let url: string | undefined =
      `${this.baseUrl}/repos/${encodeURIComponent(this.owner)}/${encodeURIComponent(this.repo)}/releases?per_page=100`;
    while (url) {
      if (seenPages.has(url)) break; // A Link loop would otherwise never end.
      seenPages.add(url);
      const page = await this.listPage(url);
      all.push(...page.releases);
      url = page.next;
    }
    const byTag = new Map<string, GitHubRelease>();
    for (const release of all) if (!release.draft && !byTag.has(release.tag)) byTag.set(release.tag, release);
    this.releasesByTag = byTag;
    const listing = listingFromTags([...byTag.values()].sort((a, b) => compareText(a.tag, b.tag)));
    this.lastListing = { at: this.clock().getTime(), listing };
    return listing;
  }

  private async listPage(url: string): Promise<RememberedPage> {
    if (new URL(url).origin !== new URL(this.baseUrl).origin) {
      throw new ReleaseSourceError(
        'unavailable',
        `GitHub at ${this.printableBase} sent a pagination link to another host (${printableUrl(url)}) while listing releases of ${this.name}; not following it`,
      );
    }
    const remembered = this.pages.get(url) ?? (await this.storedPage(url));
    try {
      const response = await this.call('listing releases', () =>
        this.octokit.request({ method: 'GET', url, headers: remembered ? { 'if-none-match': remembered.etag } : {} }),
      );
      const data: unknown = response.data;
      if (!Array.isArray(data))
        throw new ReleaseSourceError(
          'unavailable',
          `GitHub at ${this.printableBase} answered the release list of ${this.name} with something that is not a list`,
        );
      const headers = response.headers as Record<string, string | undefined>;
      const page: RememberedPage = { etag: headers.etag ?? '', releases: data.flatMap((raw) => toRelease(raw) ?? []) };
      const next = nextLink(headers.link);
      if (next) page.next = next;
      if (page.etag) {
        this.pages.set(url, page);
        await this.storedPages.put(url, { etag: page.etag, page: toStoredPage(page) });
      } else {
        this.pages.delete(url);
        if (remembered) await this.storedPages.remove(url);
      }
      return page;
    } catch (error) {
      if (remembered && isRequestError(error) && error.status === 304) {
        this.pages.set(url, remembered);
        return remembered;
      }
      throw error;
    }
  }

  /** The page an earlier run stored for `url`, when it verifies. */
  private async storedPage(url: string): Promise<RememberedPage | undefined> {
    const stored = await this.storedPages.get(url);
    return stored ? fromStoredPage(stored.etag, stored.page) : undefined;
  }

  /** The release's files from the verified cache, downloading them first when needed. */
  fetch(tag: string): Promise<FetchedRelease> {
    let pending = this.fetching.get(tag);
    if (!pending) {
      pending = withDeadline(
        `downloading release ${tag} of ${this.name} from ${this.printableBase}`,
        this.totalTimeoutMs,
        () => this.fetchUncoalesced(tag),
      ).finally(() => this.fetching.delete(tag));
      this.fetching.set(tag, pending);
    }
    return pending;
  }

  private async fetchUncoalesced(tag: string): Promise<FetchedRelease> {
    const cacheKey = this.options.assets
      ? `${this.sourceKey}#assets=${[...this.options.assets].sort().join(',')}`
      : this.sourceKey;
    const cached = await this.options.cache.get(cacheKey, tag);
    if (cached) return cached;
    let release = this.releasesByTag.get(tag);
    if (!release) {
      await this.list();
      release = this.releasesByTag.get(tag);
    }
    if (!release || release.draft)
      throw new ReleaseSourceError(
        'not-found',
        `release ${tag} is not in ${this.name}${this.location.includes('@') ? ` at ${this.printableBase}` : ''}`,
      );
    const found = release;
    for (const asset of found.assets) {
      if (!isPlainFileName(asset.name)) {
        throw new ReleaseSourceError(
          'invalid-release',
          `release ${tag} in ${this.name} has an asset named "${asset.name}"; asset names must be plain file names (no "/", "\\" or "..")`,
        );
      }
    }
    const wanted = this.options.assets ?? [METADATA_ASSET];
    for (const name of wanted) {
      if (!found.assets.some((asset) => asset.name === name))
        throw new ReleaseSourceError('invalid-release', `release ${tag} in ${this.name} has no ${name} asset`);
    }
    const downloads = this.options.assets ? found.assets.filter((asset) => wanted.includes(asset.name)) : found.assets;
    return this.options.cache.put(cacheKey, tag, async (dir) => {
      for (const asset of downloads) await this.downloadAsset(tag, asset, path.join(dir, asset.name));
    });
  }

  private async downloadAsset(tag: string, asset: GitHubAsset, file: string): Promise<void> {
    await this.call(`downloading asset ${asset.name} of release ${tag}`, async () => {
      const response = await this.octokit.request('GET /repos/{owner}/{repo}/releases/assets/{asset_id}', {
        owner: this.owner,
        repo: this.repo,
        asset_id: asset.id,
        headers: { accept: 'application/octet-stream' },
        request: { redirect: 'manual', parseSuccessResponseBody: false },
      });
      let body = response.data as unknown as ReadableStream<Uint8Array> | null;
      if (response.status >= 300 && response.status < 400) {
        await body?.cancel().catch(() => {});
        const location = (response.headers as Record<string, string | undefined>).location;
        if (!location)
          throw new TransferError(
            `GitHub answered HTTP ${response.status} without a Location for asset ${asset.name}`,
            true,
          );
        body = await this.followDownload(new URL(location, this.baseUrl), asset);
      }
      if (!body) throw new TransferError(`GitHub sent no content for asset ${asset.name}`, true);
      await this.writeBody(body, file, tag, asset);
    });
  }

  /** Follows the redirect chain of a download; the token goes only to the API's own origin. */
  private async followDownload(start: URL, asset: GitHubAsset): Promise<ReadableStream<Uint8Array> | null> {
    const apiOrigin = new URL(this.baseUrl).origin;
    let url = start;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const headers: Record<string, string> = {
        accept: 'application/octet-stream',
        'user-agent': 'clusterstack-gitops',
      };
      if (this.options.token && url.origin === apiOrigin) headers.authorization = `token ${this.options.token}`;
      let response: Response;
      try {
        response = await this.fetchImpl(url, { headers, redirect: 'manual' });
      } catch (error) {
        throw new TransferError(
          timeoutOf(error)
            ? describeFailure(error)
            : `network error downloading asset ${asset.name} from ${url.origin}: ${(error as Error).message}`,
          true,
          'unavailable',
          { cause: error },
        );
      }
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel().catch(() => {});
        const location = response.headers.get('location');
        if (!location)
          throw new TransferError(
            `the download host ${url.origin} answered HTTP ${response.status} without a Location for asset ${asset.name}`,
            true,
          );
        url = new URL(location, url);
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        const transient = response.status >= 500 || response.status === 408 || response.status === 429;
        throw new TransferError(
          `the download host ${url.origin} answered HTTP ${response.status} for asset ${asset.name}`,
          transient,
          response.status === 404 ? 'not-found' : 'unavailable',
        );
      }
      return response.body;
    }
    throw new TransferError(`more than ${MAX_REDIRECTS} redirects downloading asset ${asset.name}`, false);
  }

  /** Streams to `file`, refusing more bytes than the asset declares and fewer at the end. */
  private async writeBody(
    body: ReadableStream<Uint8Array>,
    file: string,
    tag: string,
    asset: GitHubAsset,
  ): Promise<void> {
    const handle = await open(file, 'w', PRIVATE_FILE_MODE);
    const reader = body.getReader();
    let bytes = 0;
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (error) {
          throw new TransferError(
            timeoutOf(error)
              ? `asset ${asset.name}: ${describeFailure(error)}`
              : `asset ${asset.name} was cut off after ${bytes} of ${asset.size} bytes (${(error as Error).message})`,
            true,
            'unavailable',
            { cause: error },
          );
        }
        if (chunk.done) break;
        bytes += chunk.value.byteLength;
        if (bytes > asset.size) {
          throw new TransferError(
            `asset ${asset.name} of release ${tag} in ${this.name} is larger than the ${asset.size} bytes GitHub lists for it`,
            false,
            'invalid-release',
          );
        }
        await handle.write(chunk.value);
      }
    } catch (error) {
      await reader.cancel().catch(() => {});
      throw error;
    } finally {
      await handle.close();
    }
    if (bytes !== asset.size) {
      throw new TransferError(
        `asset ${asset.name} of release ${tag} in ${this.name} is truncated: downloaded ${bytes} of ${asset.size} bytes`,
        true,
        'invalid-release',
      );
    }
  }

  /**
   * Runs one request with our policy: a rate limit is waited out once when it resets within
   * `maxRateLimitWaitMs`; server errors, network errors and timeouts are retried with backoff; every
   * other failure becomes a ReleaseSourceError. A 304 is passed through for the caller.
   */
  private async call<T>(what: string, operation: () => Promise<T>): Promise<T> {
    let waitedForRateLimit = false;
    let attempts = 0;
    try {
      return await withRetry(
        async ({ attempt }) => {
          attempts = attempt;
          const result = await operation();
          // octokit swallows a body cut short by the deadline: what it returns then is not an answer.
          const deadline = currentDeadline();
          if (deadline?.expired) throw deadline.error;
          return result;
        },
        {
          policy: this.retryPolicy,
          sleep: this.sleep,
          random: this.random,
          isTransient,
          describe: describeFailure,
          serverWaitMs: (error) => {
            const waitMs = this.rateLimitWait(error);
            if (waitMs === undefined) return undefined;
            const until = new Date(this.clock().getTime() + (Number.isFinite(waitMs) ? waitMs : 0));
            // A reset after the operation's deadline cannot be waited for either.
            if (
              waitedForRateLimit ||
              waitMs > this.maxRateLimitWaitMs ||
              waitMs >= (currentDeadline()?.remainingMs() ?? Number.POSITIVE_INFINITY)
            ) {
              throw new ReleaseSourceError(
                'rate-limited',
                `GitHub rate limit for ${this.name} is exhausted until ${Number.isFinite(waitMs) ? until.toISOString() : 'an unknown time'}; ${this.options.token ? 'wait, or use a token with a higher limit' : 'set GITHUB_TOKEN for a higher limit or wait'}`,
                { cause: error },
              );
            }
            waitedForRateLimit = true;
            this.warn(
              { repository: this.name, waitMs, resetAt: until.toISOString() },
              `GitHub rate limit for ${this.name} is exhausted; waiting ${Math.ceil(waitMs / 1000)} s until ${until.toISOString()} before ${what}`,
            );
            return waitMs;
          },
          onRetry: (error, delayMs, { attempt }) =>
            this.options.logger?.warn(
              { repository: this.name, attempt, delayMs, failure: describeFailure(error) },
              'GitHub request failed; retrying',
            ),
        },
      );
    } catch (error) {
      if (error instanceof ReleaseSourceError) throw error;
      if (isRequestError(error) && error.status === 304) throw error;
      const current = currentDeadline();
      const deadline = deadlineErrorOf(error) ?? (current?.expired ? current.error : undefined);
      throw this.toSourceError(what, deadline ?? error, attempts);
    }
  }

  private rateLimitWait(error: unknown): number | undefined {
    if (!isRequestError(error) || (error.status !== 403 && error.status !== 429) || !error.response) return undefined;
    const wait = rateLimitWaitMs(error.response.headers as Record<string, string | undefined>, this.clock());
    if (wait !== undefined) return wait;
    // A 429 without headers is still a rate limit; GitHub asks for at least a minute then.
    return error.status === 429 ? 60_000 : undefined;
  }

  private warn(fields: Record<string, unknown>, message: string): void {
    this.options.logger?.warn(fields, message);
    this.options.onWarning?.(message);
  }

  private toSourceError(what: string, error: unknown, attempts: number): ReleaseSourceError {
    const deadline = deadlineErrorOf(error);
    if (deadline)
      return new ReleaseSourceError(
        'unavailable',
        `GitHub at ${this.printableBase}: ${deadline.message}; retry later`,
        { cause: error },
      );
    if (error instanceof TransferError && !error.transient)
      return new ReleaseSourceError(error.kind, error.message, { cause: error });
    if (error instanceof TransferError && error.kind === 'invalid-release')
      return new ReleaseSourceError('invalid-release', `${error.message} (after ${attempts} attempts)`, {
        cause: error,
      });
    if (isRequestError(error) && !isNetworkFailure(error) && !timeoutOf(error)) {
      const message = error.message.replace(/ - https?:\/\/\S+$/, '');
      if (error.status === 404) {
        return what === 'listing releases'
          ? new ReleaseSourceError(
              'not-found',
              `repository ${this.name} not found${this.location.includes('@') ? ` at ${this.printableBase}` : ''} (or private: set GITHUB_TOKEN)`,
              { cause: error },
            )
          : new ReleaseSourceError('not-found', `GitHub answered 404 ${what} in ${this.name}`, { cause: error });
      }
      if (error.status === 401)
        return new ReleaseSourceError(
          'auth',
          `GitHub refused the token: ${message}; check GITHUB_TOKEN (${what} in ${this.name})`,
          { cause: error },
        );
      if (error.status === 403)
        return new ReleaseSourceError(
          'auth',
          `GitHub refused access to ${this.name}: ${message}; check that the token may read this repository`,
          { cause: error },
        );
      if (error.status < 500)
        return new ReleaseSourceError(
          'unavailable',
          `GitHub answered HTTP ${error.status} ${what} in ${this.name}: ${message}`,
          { cause: error },
        );
    }
    return new ReleaseSourceError(
      'unavailable',
      `GitHub at ${this.printableBase} failed ${what} in ${this.name} after ${attempts} attempt${attempts === 1 ? '' : 's'} (last: ${describeFailure(error)}); retry later`,
      { cause: error },
    );
  }
}
