// A small client for the OCI distribution HTTP API: tags, manifests and blobs, with anonymous, Basic
// and Bearer-token auth, retries for transient failures, and digest checks on everything it reads.
//
// Hand-written on purpose: no maintained Node.js registry client fits. The npm ones (docker-registry-
// client, oci-registry-client) are little used and unmaintained, none streams blobs to disk while
// checking their digest, and none takes an injected fetch, our remote deadline or the retry helper.
// The distribution API we need is small: tags, manifests, blobs, and the token dance.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ENVIRONMENT } from '../config.js';
import { fileDigest, sha256Digest } from '../release/content-digest.js';
import type { ReleaseSourceErrorKind } from '../release/release-source.js';
import { PRIVATE_FILE_MODE } from '../cache/private-cache-file.js';
import {
  DEFAULT_RETRY_POLICY,
  fetchWithTimeout,
  rateLimitWaitMs,
  realSleep,
  RequestTimeoutError,
  type RetryPolicy,
  type Sleep,
  withRetry,
} from '../http/http-retry.js';
import { currentDeadline, deadlineErrorOf, sleepWithinDeadline, withDeadline } from '../http/remote-deadline.js';
import { defaultRemoteFetch } from '../http/remote-fetch.js';
import { nextLink } from '../http/link-header.js';
import { CONNECT_TIMEOUT_CODE } from '../http/remote-fetch.js';
import { OciError } from './oci-error.js';
import {
  assertSha256Digest,
  DOCKER_MANIFEST_V2,
  isDigest,
  OCI_INDEX,
  OCI_MANIFEST,
  type OciManifest,
  parseOciManifest,
} from './oci-manifest.js';
import { parseAuthChallenge } from './www-authenticate.js';
import type { Logger } from '../core/logger.js';
import { Failure } from '../core/failure.js';

/** A tag-list page as stored across runs (listing-validators.ts). */
export interface StoredTagPage {
  tags: string[];
  next: string | null;
}

/** Where listTags keeps the ETags of tag-list pages; the OCI source passes a ListingValidators. */
export interface TagPageValidators {
  get(url: string): Promise<{ etag: string; page: StoredTagPage } | undefined>;
  put(url: string, stored: { etag: string; page: StoredTagPage }): Promise<void>;
  remove(url: string): Promise<void>;
}

function isTagPage(page: unknown): page is StoredTagPage {
  const candidate = page as Partial<StoredTagPage> | undefined;
  return (
    Array.isArray(candidate?.tags) &&
    candidate.tags.every((tag) => typeof tag === 'string') &&
    (candidate.next === null || typeof candidate.next === 'string')
  );
}

export interface RegistryCredentials {
  username: string;
  password: string;
}

export interface RegistryClientOptions {
  /** `host[:port]` */
  registry: string;
  /** Talk `http://` instead of `https://` (helm's and oras' `--plain-http`). */
  plainHttp?: boolean;
  credentials?: RegistryCredentials;
  fetch?: typeof fetch;
  sleep?: Sleep;
  logger?: Logger;
  /** No headers (or no body bytes) for this long fails the attempt. Default 30 s. */
  timeoutMs?: number;
  /** One call (a tag list, a manifest, a blob) in total, retries included, unless the caller's operation set a sooner deadline. Default 5 minutes. */
  totalTimeoutMs?: number;
  retry?: RetryPolicy;
  /** Tags asked for per page of the tag list. Default 1000. */
  tagPageSize?: number;
}

export interface ManifestResult {
  /** `sha256:<hex>` of `bytes`. */
  digest: string;
  mediaType: string;
  bytes: Uint8Array;
  manifest: OciManifest;
}

export interface PushedBlob {
  digest: string;
  size: number;
}

export type BlobContent = Uint8Array | { file: string };

const MANIFEST_ACCEPT = [OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST_V2].join(', ');
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
const TAG = /^[\w][\w.-]{0,127}$/;
// TLS failures that mean "this endpoint does not speak HTTPS".
const NOT_TLS = new Set([
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'ERR_SSL_PACKET_LENGTH_TOO_LONG',
  'ERR_SSL_HTTP_REQUEST',
  'EPROTO',
]);
const UNTRUSTED_CERT = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

type Actions = 'pull' | 'pull,push';

interface RequestSpec {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT';
  url: string;
  repository: string;
  actions: Actions;
  headers?: Record<string, string>;
  /** Called per attempt, so a body can be sent again after an auth challenge. */
  body?: () => Uint8Array | ReadableStream<Uint8Array>;
}

/** A failure worth another attempt; turned into an OciError when the attempts run out. */
class TransientFailure extends Failure {
  constructor(
    readonly kind: ReleaseSourceErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('retry', message, options);
    this.name = 'TransientFailure';
  }
}

export class RegistryClient {
  /** `host[:port]`, printable. */
  readonly registry: string;
  private readonly base: string;
  private readonly credentials: RegistryCredentials | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly sleep: Sleep;
  private readonly logger: Logger | undefined;
  private readonly retry: RetryPolicy;
  private readonly plainHttp: boolean;
  private readonly timeoutMs: number;
  private readonly totalTimeoutMs: number;
  private readonly tagPageSize: number;
  private basicAuth = false;
  private readonly tokens = new Map<string, string>();

  constructor(options: RegistryClientOptions) {
    this.registry = options.registry;
    this.plainHttp = options.plainHttp ?? false;
    this.base = `${this.plainHttp ? 'http' : 'https'}://${options.registry}`;
    this.credentials = options.credentials;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetchImpl = fetchWithTimeout(options.fetch ?? defaultRemoteFetch, this.timeoutMs);
    this.sleep = sleepWithinDeadline(options.sleep ?? realSleep);
    this.totalTimeoutMs = options.totalTimeoutMs ?? 5 * 60 * 1000;
    this.logger = options.logger;
    this.retry = options.retry ?? DEFAULT_RETRY_POLICY;
    this.tagPageSize = options.tagPageSize ?? 1000;
  }

  /** Every tag of `repository`, following `Link` pagination. */
  async listTags(repository: string, validators?: TagPageValidators): Promise<string[]> {
    const tags: string[] = [];
    const seen = new Set<string>();
    let url: string | undefined = `${this.base}/v2/${repository}/tags/list?n=${this.tagPageSize}`;
    while (url !== undefined && !seen.has(url)) {
      seen.add(url);
      const pageUrl: string = url;
      // A page a registry once answered with an ETag is asked for conditionally (a 304 reuses it).
      const stored = await validators?.get(pageUrl);
      const page: { tags: string[]; next: string | undefined } = await this.retrying(repository, async () => {
        const response = await this.send({
          method: 'GET',
          url: pageUrl,
          repository,
          actions: 'pull',
          ...(stored ? { headers: { 'if-none-match': stored.etag } } : {}),
        });
        if (response.status === 304 && stored && isTagPage(stored.page)) {
          await response.body?.cancel();
          return { tags: stored.page.tags, next: stored.page.next ?? undefined };
        }
        if (response.status !== 200) throw await this.failure(response, repository, `the tag list of ${repository}`);
        const body = (await readJson(response)) as { tags?: unknown } | undefined;
        const list = body?.tags ?? [];
        if (!Array.isArray(list) || list.some((tag) => typeof tag !== 'string')) {
          throw new OciError('unavailable', `registry ${this.registry} sent a malformed tag list for ${repository}`);
        }
        const link = nextLink(response.headers.get('link'));
        const read = { tags: list as string[], next: link === undefined ? undefined : new URL(link, this.base).href };
        const etag = response.headers.get('etag');
        if (etag) await validators?.put(pageUrl, { etag, page: { tags: read.tags, next: read.next ?? null } });
        else if (stored) await validators?.remove(pageUrl);
        return read;
      });
      tags.push(...page.tags);
      url = page.next;
    }
    return [...new Set(tags)];
  }

  /** The OCI manifest `reference` (tag or digest) names; its bytes are verified when `reference` is a digest. */
  async getManifest(repository: string, reference: string): Promise<ManifestResult> {
    if (!TAG.test(reference) && !isDigest(reference)) {
      throw new OciError('not-found', `"${reference}" is neither a tag nor a digest`);
    }
    const where = `manifest ${this.registry}/${repository}${isDigest(reference) ? '@' : ':'}${reference}`;
    const { bytes, contentType } = await this.retrying(repository, async () => {
      const response = await this.send({
        method: 'GET',
        url: `${this.base}/v2/${repository}/manifests/${reference}`,
        repository,
        actions: 'pull',
        headers: { accept: MANIFEST_ACCEPT },
      });
      if (response.status !== 200)
        throw await this.failure(response, repository, `${isDigest(reference) ? 'manifest' : 'tag'} ${reference}`);
      const length = Number(response.headers.get('content-length') ?? '0');
      if (length > MAX_MANIFEST_BYTES)
        throw new OciError('invalid-release', `${where} is ${length} bytes, larger than any manifest should be`);
      const body = new Uint8Array(await readBody(response));
      return { bytes: body, contentType: response.headers.get('content-type') ?? undefined };
    });
    const digest = sha256Digest(bytes);
    if (isDigest(reference)) {
      assertSha256Digest(reference, where);
      if (digest !== reference)
        throw new OciError('invalid-release', `${where}: the registry sent content with digest ${digest}; refusing it`);
    }
    const manifest = parseOciManifest(bytes, contentType, where);
    return { digest, mediaType: manifest.mediaType ?? OCI_MANIFEST, bytes, manifest };
  }

  /** Downloads a blob to `destFile`, hashing while streaming; on a digest or size mismatch the file is removed and invalid-release thrown. */
  async fetchBlob(repository: string, digest: string, destFile: string, expectedSize?: number): Promise<void> {
    assertSha256Digest(digest, `blob of ${repository}`);
    const where = `blob ${digest} of ${this.registry}/${repository}`;
    await this.retrying(repository, async () => {
      const response = await this.send({
        method: 'GET',
        url: `${this.base}/v2/${repository}/blobs/${digest}`,
        repository,
        actions: 'pull',
      });
      if (response.status !== 200) throw await this.failure(response, repository, `blob ${digest}`);
      if (!response.body)
        throw new TransientFailure('unavailable', `registry ${this.registry} sent no content for ${where}`);
      const hash = createHash('sha256');
      let size = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          size += chunk.length;
          if (expectedSize !== undefined && size > expectedSize) {
            done(
              new OciError(
                'invalid-release',
                `${where} is larger than the ${expectedSize} bytes its descriptor declares; refusing it`,
              ),
            );
            return;
          }
          hash.update(chunk);
          done(null, chunk);
        },
      });
      try {
        await pipeline(
          Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
          counter,
          createWriteStream(destFile, { mode: PRIVATE_FILE_MODE }),
        );
      } catch (error) {
        await rm(destFile, { force: true });
        if (error instanceof OciError) throw error;
        throw this.networkFailure(error, `downloading ${where}`);
      }
      const actual = `sha256:${hash.digest('hex')}`;
      if ((expectedSize !== undefined && size !== expectedSize) || actual !== digest) {
        await rm(destFile, { force: true });
        throw new OciError(
          'invalid-release',
          `${where} arrived as ${actual} (${size} bytes${expectedSize === undefined ? '' : `, expected ${expectedSize}`}); the registry or something between it and us altered it, so it was discarded`,
        );
      }
    });
  }

  /** True when the registry holds the blob. */
  async blobExists(repository: string, digest: string, actions: Actions = 'pull'): Promise<boolean> {
    assertSha256Digest(digest, `blob of ${repository}`);
    return this.retrying(repository, async () => {
      const response = await this.send({
        method: 'HEAD',
        url: `${this.base}/v2/${repository}/blobs/${digest}`,
        repository,
        actions,
      });
      if (response.status === 200) return true;
      if (response.status === 404) return false;
      throw await this.failure(response, repository, `blob ${digest}`);
    });
  }

  /** Uploads a blob (POST, then PUT with the digest), unless the registry has it already. */
  async pushBlob(repository: string, content: BlobContent): Promise<PushedBlob> {
    const isFile = !(content instanceof Uint8Array);
    const digest = isFile ? await fileDigest(content.file) : sha256Digest(content);
    const size = isFile ? (await stat(content.file)).size : content.byteLength;
    if (await this.blobExists(repository, digest, 'pull,push')) return { digest, size };
    await this.retrying(repository, async () => {
      const started = await this.send({
        method: 'POST',
        url: `${this.base}/v2/${repository}/blobs/uploads/`,
        repository,
        actions: 'pull,push',
        headers: { 'content-length': '0' },
      });
      if (started.status !== 202) throw await this.failure(started, repository, 'a blob upload');
      await started.body?.cancel();
      const location = started.headers.get('location');
      if (!location)
        throw new OciError(
          'unavailable',
          `registry ${this.registry} started an upload for ${repository} without a Location`,
        );
      const target = new URL(location, `${this.base}/v2/${repository}/blobs/uploads/`).href;
      const url = `${target}${target.includes('?') ? '&' : '?'}digest=${encodeURIComponent(digest)}`;
      const finished = await this.send({
        method: 'PUT',
        url,
        repository,
        actions: 'pull,push',
        headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) },
        body: () => (isFile ? (Readable.toWeb(createReadStream(content.file)) as ReadableStream<Uint8Array>) : content),
      });
      if (finished.status !== 201) throw await this.failure(finished, repository, `blob ${digest}`);
      await finished.body?.cancel();
    });
    return { digest, size };
  }

  /** Stores a manifest under `reference` (a tag, or its digest); returns its digest. */
  async pushManifest(repository: string, reference: string, bytes: Uint8Array, mediaType: string): Promise<string> {
    const digest = sha256Digest(bytes);
    if (!TAG.test(reference) && reference !== digest)
      throw new OciError('invalid-release', `"${reference}" is not a valid tag`);
    await this.retrying(repository, async () => {
      const response = await this.send({
        method: 'PUT',
        url: `${this.base}/v2/${repository}/manifests/${reference}`,
        repository,
        actions: 'pull,push',
        headers: { 'content-type': mediaType },
        body: () => bytes,
      });
      if (response.status !== 201) throw await this.failure(response, repository, `manifest ${reference}`);
      await response.body?.cancel();
    });
    return digest;
  }

  private async retrying<T>(repository: string, operation: () => Promise<T>): Promise<T> {
    return withDeadline(`a request to registry ${this.registry} for ${repository}`, this.totalTimeoutMs, () =>
      this.retryingWithinDeadline(repository, operation),
    );
  }

  private async retryingWithinDeadline<T>(repository: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await withRetry(operation, {
        policy: this.retry,
        sleep: this.sleep,
        isTransient: (error) => error instanceof TransientFailure,
        onRetry: (error, delayMs, { attempt }) =>
          this.logger?.warn(
            { registry: this.registry, repository, attempt, delayMs, reason: (error as Error).message },
            'registry request failed, retrying',
          ),
      });
    } catch (error) {
      const deadline = deadlineErrorOf(error) ?? (currentDeadline()?.expired ? currentDeadline()?.error : undefined);
      if (deadline)
        throw new OciError(
          'unavailable',
          `registry ${this.registry}, repository ${repository}: ${deadline.message}; retry later`,
          { cause: error },
        );
      if (error instanceof TransientFailure) {
        throw new OciError(error.kind, `${error.message} (gave up after ${this.retry.attempts} attempts)`, {
          cause: error.cause,
        });
      }
      throw error;
    }
  }

  /** One request through the auth dance: answers a 401 with Basic credentials or a Bearer token, then sends again. */
  private async send(spec: RequestSpec): Promise<Response> {
    const scope = `repository:${spec.repository}:${spec.actions}`;
    const sameOrigin = new URL(spec.url).origin === new URL(this.base).origin;
    let fetchedToken = false;
    for (;;) {
      const authorization = sameOrigin ? this.authorization(scope) : undefined;
      const response = await this.attempt(spec, authorization);
      if (response.status !== 401 || !sameOrigin) return response;
      const challenge = parseAuthChallenge(response.headers.get('www-authenticate'));
      await response.body?.cancel();
      if (challenge?.scheme === 'basic') {
        if (!this.credentials) throw this.authError(spec, 'missing');
        if (authorization?.startsWith('Basic ')) throw this.authError(spec, 'refused');
        this.basicAuth = true;
      } else if (challenge?.scheme === 'bearer' && !fetchedToken) {
        this.tokens.set(scope, await this.fetchToken(spec, scope, challenge.params));
        fetchedToken = true;
      } else if (challenge?.scheme === 'bearer') {
        throw this.authError(spec, this.credentials ? 'refused' : 'missing');
      } else {
        throw new OciError(
          'auth',
          `registry ${this.registry} asks for an unsupported authentication scheme (${challenge?.scheme ?? 'none'}) for ${spec.repository}`,
        );
      }
    }
  }

  private authorization(scope: string): string | undefined {
    const token = this.tokens.get(scope);
    if (token !== undefined) return `Bearer ${token}`;
    if (this.basicAuth && this.credentials) return basicHeader(this.credentials);
    return undefined;
  }

  private async fetchToken(spec: RequestSpec, scope: string, challenge: Record<string, string>): Promise<string> {
    if (!challenge.realm)
      throw new OciError('auth', `registry ${this.registry} asked for a token without naming a realm`);
    let realm: URL;
    try {
      realm = new URL(challenge.realm);
    } catch {
      throw new OciError('auth', `registry ${this.registry} named a token realm that is not a URL`);
    }
    if (challenge.service) realm.searchParams.set('service', challenge.service);
    realm.searchParams.append('scope', scope);
    if (challenge.scope && challenge.scope !== scope) realm.searchParams.append('scope', challenge.scope);
    const headers: Record<string, string> = this.credentials ? { authorization: basicHeader(this.credentials) } : {};
    let response: Response;
    try {
      response = await this.fetchImpl(realm, { method: 'GET', headers });
    } catch (error) {
      throw this.networkFailure(error, `getting a token from ${realm.host} for ${this.registry}`);
    }
    if (response.status === 401 || response.status === 403) {
      await response.body?.cancel();
      throw this.authError(spec, this.credentials ? 'refused' : 'missing');
    }
    if (response.status >= 500 || response.status === 429) {
      await response.body?.cancel();
      throw new TransientFailure(
        'unavailable',
        `the token service ${realm.host} of registry ${this.registry} answered ${response.status}`,
      );
    }
    const body = response.ok
      ? ((await readJson(response).catch(() => undefined)) as { token?: unknown; access_token?: unknown } | undefined)
      : undefined;
    const token = body?.token ?? body?.access_token;
    if (typeof token !== 'string' || token === '') {
      throw new OciError(
        'auth',
        `the token service ${realm.host} of registry ${this.registry} answered ${response.status} without a token`,
      );
    }
    return token;
  }

  private async attempt(spec: RequestSpec, authorization: string | undefined): Promise<Response> {
    const headers: Record<string, string> = { ...spec.headers };
    if (authorization) headers.authorization = authorization;
    const body = spec.body?.();
    const init: RequestInit & { duplex?: 'half' } = { method: spec.method, headers, redirect: 'follow' };
    if (body !== undefined) {
      init.body = body;
      if (!(body instanceof Uint8Array)) init.duplex = 'half';
    }
    try {
      return await this.fetchImpl(spec.url, init);
    } catch (error) {
      throw this.networkFailure(
        error,
        `${spec.method === 'GET' || spec.method === 'HEAD' ? 'reading' : 'writing'} ${spec.repository}`,
      );
    }
  }

  /** Classifies a thrown network error: wrong scheme and untrusted certificates need a fix; the rest may pass. */
  private networkFailure(error: unknown, doing: string): Error {
    if (error instanceof OciError || error instanceof TransientFailure) return error;
    const deadline = deadlineErrorOf(error);
    if (deadline) return deadline;
    if (error instanceof RequestTimeoutError) {
      return new TransientFailure(
        'unavailable',
        `registry ${this.registry} did not answer within ${this.timeoutMs} ms while ${doing}`,
        { cause: error },
      );
    }
    const cause = (error as { cause?: { code?: unknown; reason?: unknown } })?.cause;
    const code =
      typeof cause?.code === 'string'
        ? cause.code
        : typeof (error as { code?: unknown })?.code === 'string'
          ? String((error as { code: string }).code)
          : undefined;
    if (
      !this.plainHttp &&
      code !== undefined &&
      (NOT_TLS.has(code) || /wrong version number|http request/i.test(String(cause?.reason ?? '')))
    ) {
      return new OciError(
        'unavailable',
        `registry ${this.registry} does not speak HTTPS (${code}); if it is a plain-HTTP registry, pass --plain-http`,
        { cause: error },
      );
    }
    if (code !== undefined && UNTRUSTED_CERT.has(code)) {
      return new OciError(
        'unavailable',
        `the TLS certificate of registry ${this.registry} is not trusted (${code}); add its CA with NODE_EXTRA_CA_CERTS`,
        { cause: error },
      );
    }
    if (code === CONNECT_TIMEOUT_CODE) {
      return new TransientFailure(
        'unavailable',
        `registry ${this.registry} did not accept a connection in time (${code}; --connect-timeout / CLUSTERSTACK_CONNECT_TIMEOUT) while ${doing}; check the address and that the registry is running`,
        { cause: error },
      );
    }
    const reason = code ?? (error instanceof Error ? error.message : String(error));
    return new TransientFailure(
      'unavailable',
      `registry ${this.registry} is unreachable (${reason}) while ${doing}; check the address and that the registry is running`,
      { cause: error },
    );
  }

  private authError(spec: RequestSpec, problem: 'missing' | 'refused'): OciError {
    const access = spec.actions === 'pull' ? 'read' : 'push to';
    const fix = `set ${ENVIRONMENT.registryUsername} and ${ENVIRONMENT.registryPassword}`;
    return problem === 'missing'
      ? new OciError('auth', `registry ${this.registry} requires credentials to ${access} ${spec.repository}; ${fix}`)
      : new OciError(
          'auth',
          `registry ${this.registry} refused the credentials to ${access} ${spec.repository}; check ${ENVIRONMENT.registryUsername} and ${ENVIRONMENT.registryPassword} and the account's access`,
        );
  }

  /** Turns a non-success answer into the error to throw: transient ones are retried by `retrying`. */
  private async failure(response: Response, repository: string, what: string): Promise<Error> {
    const text = await readText(response);
    const codes = errorCodes(text);
    const detail = codes.length > 0 ? ` (${codes.join(', ')})` : '';
    const status = response.status;
    if (status === 404) {
      if (codes.includes('NAME_UNKNOWN'))
        return new OciError('not-found', `repository ${repository} does not exist on registry ${this.registry}`);
      return new OciError('not-found', `${what} not found in ${this.registry}/${repository}${detail}`);
    }
    if (status === 401 || status === 403) {
      return new OciError(
        'auth',
        `registry ${this.registry} denied access to ${what} of ${repository} (${status}${codes.length ? ` ${codes.join(', ')}` : ''}); check ${ENVIRONMENT.registryUsername} and ${ENVIRONMENT.registryPassword} and the account's access`,
      );
    }
    if (status === 429) {
      const wait = rateLimitWaitMs(response.headers, new Date());
      if (wait !== undefined && Number.isFinite(wait)) await this.sleep(Math.min(wait, this.retry.maxDelayMs));
      return new TransientFailure(
        'rate-limited',
        `registry ${this.registry} rate-limited requests for ${what} of ${repository}`,
      );
    }
    if (status >= 500 || status === 408)
      return new TransientFailure(
        'unavailable',
        `registry ${this.registry} answered ${status} for ${what} of ${repository}${detail}`,
      );
    if (status === 400 && this.plainHttp && /HTTP request to an HTTPS server/i.test(text)) {
      return new OciError('unavailable', `registry ${this.registry} speaks HTTPS; drop --plain-http`);
    }
    return new OciError(
      'invalid-release',
      `registry ${this.registry} refused ${what} of ${repository} with ${status}${detail}`,
    );
  }
}

function basicHeader(credentials: RegistryCredentials): string {
  return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
}

async function readBody(response: Response): Promise<ArrayBuffer> {
  try {
    return await response.arrayBuffer();
  } catch (error) {
    throw new TransientFailure(
      'unavailable',
      `the connection broke while reading a registry answer (${(error as Error).message})`,
      { cause: error },
    );
  }
}

async function readText(response: Response): Promise<string> {
  try {
    return await response.text();
  } catch {
    return '';
  }
}

async function readJson(response: Response): Promise<unknown> {
  const text = Buffer.from(await readBody(response)).toString('utf8');
  try {
    return text.trim() === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The `errors[].code` values of a distribution error body. */
function errorCodes(text: string): string[] {
  try {
    const body = JSON.parse(text) as { errors?: { code?: unknown }[] };
    return (body.errors ?? []).map((error) => error.code).filter((code): code is string => typeof code === 'string');
  } catch {
    return [];
  }
}
