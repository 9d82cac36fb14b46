// Helm charts from repositories, for addon layers (`spec.source.chart`): an OCI registry, where a
// chart is an artifact `oci://host/path/<chart>:<version>` (Helm's own layout: config
// application/vnd.cncf.helm.config.v1+json, one chart content layer), or an HTTP chart repository
// (`index.yaml`, each version with its archive URL and sha256 digest). Fetched with our own clients
// (the registry client release sources use; fetch for HTTP), verified (the manifest and its blobs
// by digest, an HTTP archive against the index's digest, both against a pinned `digest` when the
// layer gives one), kept in the release cache (re-hashed when read back) and extracted with the
// bounded extraction. A chart's name and version in its Chart.yaml must be the ones asked for.
import { createHash } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { LayerChartRef } from '../api/addons-layer.js';
import { InputError } from '../core/problem.js';
import { formatOciRepository, parseOciRepository } from '../oci/oci-reference.js';
import type { RegistryClient, RegistryCredentials } from '../oci/registry-client.js';
import { treeDigest } from '../release/content-digest.js';
import type { ChartSource } from '../release/load-release.js';
import { extractArchive } from '../release/safe-extract.js';
import { decodeYamlDocument } from '../yaml/kube-yaml.js';
import { ReleaseCache } from './release-cache.js';
import { makePrivateDir, writePrivateFile } from '../cache/private-cache-file.js';
import { ReleaseSourceError } from '../release/release-source.js';
import { withDeadline } from '../http/remote-deadline.js';
import { defaultRemoteFetch } from '../http/remote-fetch.js';

/** Fetches (or reads from the cache) the chart `ref` of layer `layer`; throws ReleaseSourceError, UnsafeArchiveError or InputError naming it. */
export type LayerChartFetcher = (ref: LayerChartRef, layer: string) => Promise<ChartSource>;

export interface LayerChartFetcherOptions {
  cacheDir: string;
  fetch?: typeof fetch;
  plainHttp?: boolean;
  registryCredentials?: RegistryCredentials;
  timeouts?: { readMs?: number; totalMs?: number };
}

const HELM_CONFIG = 'application/vnd.cncf.helm.config.v1+json';
const HELM_CHART_LAYERS = ['application/vnd.cncf.helm.chart.content.v1.tar+gzip', 'application/tar+gzip'];
/** Charts are small; these bound what a repository can make us read. */
const MAX_INDEX_BYTES = 32 * 1024 * 1024;
const MAX_CHART_BYTES = 64 * 1024 * 1024;
const CHART_LIMITS = {
  maxArchiveBytes: MAX_CHART_BYTES,
  maxTotalBytes: 256 * 1024 * 1024,
  maxFileBytes: 32 * 1024 * 1024,
  maxEntries: 10_000,
};
/** Beside the extracted chart in a cache entry: the digest it was verified against. */
const SOURCE_RECORD = 'source.json';
const CHART_DIR = 'chart';

/** Where the chart was fetched from, printable (never credentials). */
function describe(ref: LayerChartRef): string {
  return ref.repository.startsWith('oci://')
    ? `${ref.repository}:${ref.version}`
    : `${ref.name} ${ref.version} from ${indexUrl(ref.repository)}`;
}

function indexUrl(repository: string): string {
  return /\/index\.yaml$/.test(repository) ? repository : `${repository.replace(/\/+$/, '')}/index.yaml`;
}

function pinMismatch(ref: LayerChartRef, actual: string, what: string): ReleaseSourceError {
  return new ReleaseSourceError(
    'invalid-release',
    `${describe(ref)}: ${what} is ${actual}, but the layer pins spec.source.chart.digest ${ref.digest}; refusing it (update the pin if the chart was republished on purpose)`,
  );
}

/** Creates the fetcher layers use; one cache with stack releases (`<cacheDir>`, entries keyed by repository, chart and version). */
export function createLayerChartFetcher(options: LayerChartFetcherOptions): LayerChartFetcher {
  const cache = new ReleaseCache(options.cacheDir);
  const doFetch = options.fetch ?? defaultRemoteFetch;
  const totalMs = options.timeouts?.totalMs ?? 5 * 60 * 1000;
  const clients = new Map<string, RegistryClient>();
  // Loaded on first use, like the remote release sources: plans without chart sources never pay for it.
  const clientFor = async (registry: string): Promise<RegistryClient> => {
    let client = clients.get(registry);
    if (!client) {
      const { RegistryClient } = await import('../oci/registry-client.js');
      client = new RegistryClient({
        registry,
        plainHttp: options.plainHttp ?? false,
        fetch: doFetch,
        ...(options.registryCredentials ? { credentials: options.registryCredentials } : {}),
        ...(options.timeouts?.readMs !== undefined ? { timeoutMs: options.timeouts.readMs } : {}),
        totalTimeoutMs: totalMs,
      });
      clients.set(registry, client);
    }
    return client;
  };

  return async (ref, layer) => {
    const oci = ref.repository.startsWith('oci://');
    let key: string;
    if (oci) {
      try {
        key = `helm-chart ${formatOciRepository(parseOciRepository(ref.repository))}`;
      } catch (error) {
        if (error instanceof InputError)
          throw new ReleaseSourceError(
            'not-found',
            `spec.source.chart.repository: ${error.problems.map((p) => p.message).join('; ')}`,
          );
        throw error;
      }
    } else key = `helm-chart ${indexUrl(ref.repository)}#${ref.name}`;
    const origin = `${describe(ref)} (AddonsLayer ${layer})`;
    const cached = await cache.get(key, ref.version);
    const entry =
      cached ??
      (await withDeadline(`downloading chart ${describe(ref)}`, totalMs, () =>
        cache.put(key, ref.version, async (dir) => {
          const archive = path.join(path.dirname(dir), 'chart.tgz');
          const digest = oci ? await pullOci(ref, clientFor, archive) : await pullHttp(ref, doFetch, archive);
          try {
            await extractArchive(archive, path.join(dir, CHART_DIR), `chart ${describe(ref)}`, CHART_LIMITS);
          } finally {
            await rm(archive, { force: true });
          }
          await writePrivateFile(path.join(dir, SOURCE_RECORD), `${JSON.stringify({ digest })}\n`);
        }),
      ));
    const recorded = JSON.parse(await readFile(path.join(entry.dir, SOURCE_RECORD), 'utf8')) as { digest: string };
    if (ref.digest && recorded.digest !== ref.digest)
      throw pinMismatch(ref, recorded.digest, oci ? 'its manifest digest' : "its archive's digest");
    const chartDir = await singleChartDir(path.join(entry.dir, CHART_DIR), ref);
    return { dir: chartDir, digest: await treeDigest(chartDir), origin };
  };
}

/** Downloads the chart layer of an OCI chart into `archive`; returns the manifest digest. */
async function pullOci(
  ref: LayerChartRef,
  clientFor: (registry: string) => Promise<RegistryClient>,
  archive: string,
): Promise<string> {
  const repo = parseOciRepository(ref.repository);
  const client = await clientFor(repo.apiHost);
  // Helm stores `+` of a semver build part as `_` in the tag (tags cannot hold `+`).
  const { digest, manifest } = await client.getManifest(repo.repository, ref.version.replace(/\+/g, '_'));
  if (ref.digest && digest !== ref.digest) throw pinMismatch(ref, digest, 'its manifest digest');
  if (manifest.config.mediaType !== HELM_CONFIG)
    throw new ReleaseSourceError(
      'invalid-release',
      `${describe(ref)} is not a Helm chart (its config is ${manifest.config.mediaType}, not ${HELM_CONFIG})`,
    );
  const layers = manifest.layers.filter((layer) => HELM_CHART_LAYERS.includes(layer.mediaType));
  if (layers.length !== 1)
    throw new ReleaseSourceError(
      'invalid-release',
      `${describe(ref)} has ${layers.length} chart layers; a Helm chart has exactly one`,
    );
  if (layers[0]!.size > MAX_CHART_BYTES)
    throw new ReleaseSourceError(
      'invalid-release',
      `${describe(ref)}: the chart is ${layers[0]!.size} bytes, more than the ${MAX_CHART_BYTES} a chart may have`,
    );
  await makePrivateDir(path.dirname(archive));
  await client.fetchBlob(repo.repository, layers[0]!.digest, archive, layers[0]!.size);
  return digest;
}

/** Reads at most `limit` bytes of a response body, or fails naming `what`. */
async function boundedBody(response: Response, limit: number, what: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > limit)
    throw new ReleaseSourceError('invalid-release', `${what} is ${declared} bytes, more than the ${limit} allowed`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      if (size > limit)
        throw new ReleaseSourceError('invalid-release', `${what} is more than the ${limit} bytes allowed`);
      chunks.push(chunk);
    }
  }
  return Buffer.concat(chunks);
}

async function httpGet(doFetch: typeof fetch, url: string, what: string, limit: number): Promise<Uint8Array> {
  let response: Response;
  try {
    response = await doFetch(url, { redirect: 'follow' });
  } catch (error) {
    throw new ReleaseSourceError(
      'unavailable',
      `${what}: ${url} cannot be reached (${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}); it is retried on the next render`,
    );
  }
  if (response.status === 404) throw new ReleaseSourceError('not-found', `${what}: ${url} answered 404 Not Found`);
  if (response.status === 401 || response.status === 403)
    throw new ReleaseSourceError(
      'auth',
      `${what}: ${url} answered ${response.status}; only public chart repositories are supported`,
    );
  if (response.status !== 200)
    throw new ReleaseSourceError(
      response.status >= 500 || response.status === 429 ? 'unavailable' : 'invalid-release',
      `${what}: ${url} answered ${response.status}`,
    );
  return boundedBody(response, limit, `${what} (${url})`);
}

interface IndexEntry {
  version?: unknown;
  digest?: unknown;
  urls?: unknown;
}

/** Downloads an HTTP repository's chart archive into `archive`, verified against the index; returns `sha256:<hex>` of it. */
async function pullHttp(ref: LayerChartRef, doFetch: typeof fetch, archive: string): Promise<string> {
  const index = indexUrl(ref.repository);
  const text = Buffer.from(await httpGet(doFetch, index, 'the chart repository index', MAX_INDEX_BYTES)).toString(
    'utf8',
  );
  let parsed: unknown;
  try {
    parsed = decodeYamlDocument(text).value;
  } catch (error) {
    throw new ReleaseSourceError(
      'invalid-release',
      `${index} is not a chart repository index: ${(error as Error).message}`,
    );
  }
  const entries = (parsed as { entries?: Record<string, IndexEntry[]> } | null)?.entries;
  if (!entries || typeof entries !== 'object')
    throw new ReleaseSourceError('invalid-release', `${index} is not a chart repository index (it has no entries)`);
  const versions = Array.isArray(entries[ref.name!]) ? entries[ref.name!]! : [];
  if (versions.length === 0)
    throw new ReleaseSourceError(
      'not-found',
      `${index} has no chart named ${ref.name}${Object.keys(entries).length > 0 ? `; it has ${Object.keys(entries).sort().slice(0, 10).join(', ')}` : ''}`,
    );
  const entry = versions.find((candidate) => candidate.version === ref.version);
  if (!entry) {
    const known = versions.map((candidate) => String(candidate.version)).slice(0, 10);
    throw new ReleaseSourceError(
      'not-found',
      `${index} has no version ${ref.version} of chart ${ref.name}; it has ${known.join(', ')}${versions.length > known.length ? ', ...' : ''}`,
    );
  }
  const hex = typeof entry.digest === 'string' && /^[0-9a-f]{64}$/.test(entry.digest) ? entry.digest : undefined;
  if (!hex && !ref.digest)
    throw new ReleaseSourceError(
      'invalid-release',
      `${describe(ref)}: the index gives no sha256 digest for it, so it cannot be verified; pin one with spec.source.chart.digest`,
    );
  const expected = ref.digest ?? `sha256:${hex}`;
  if (ref.digest && hex && ref.digest !== `sha256:${hex}`)
    throw pinMismatch(ref, `sha256:${hex}`, "the index's digest");
  const url =
    Array.isArray(entry.urls) && typeof entry.urls[0] === 'string' ? new URL(entry.urls[0], index) : undefined;
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:'))
    throw new ReleaseSourceError('invalid-release', `${describe(ref)}: the index gives no http(s) URL for the archive`);
  const bytes = await httpGet(doFetch, url.href, `chart ${describe(ref)}`, MAX_CHART_BYTES);
  const actual = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  if (actual !== expected)
    throw new ReleaseSourceError(
      'invalid-release',
      `${describe(ref)}: the archive from ${url.href} has digest ${actual}, but ${ref.digest ? 'the pinned digest' : 'the index says'} ${expected}; it was altered (or the index is stale), so it is refused`,
    );
  await makePrivateDir(path.dirname(archive));
  await writePrivateFile(archive, bytes);
  return actual;
}

/** The one chart directory an archive holds (`<name>/Chart.yaml`), checked to be the chart and version asked for. */
async function singleChartDir(root: string, ref: LayerChartRef): Promise<string> {
  const dirs = (await readdir(root, { withFileTypes: true })).filter((entry) => entry.isDirectory());
  const found: string[] = [];
  for (const dir of dirs) {
    try {
      const chart = decodeYamlDocument(await readFile(path.join(root, dir.name, 'Chart.yaml'), 'utf8')).value as {
        name?: unknown;
        version?: unknown;
      };
      found.push(dir.name);
      const expectedName = ref.name ?? ref.repository.replace(/\/+$/, '').split('/').at(-1);
      if (
        chart.name !== expectedName ||
        (String(chart.version) !== ref.version.replace(/^v(?=\d)/, '') && String(chart.version) !== ref.version)
      ) {
        throw new ReleaseSourceError(
          'invalid-release',
          `${describe(ref)} holds chart ${String(chart.name)} ${String(chart.version)}, not ${expectedName} ${ref.version}`,
        );
      }
    } catch (error) {
      if (error instanceof ReleaseSourceError) throw error;
    }
  }
  if (found.length !== 1)
    throw new ReleaseSourceError(
      'invalid-release',
      `${describe(ref)}: the archive holds ${found.length} chart directories (a directory with a Chart.yaml); a chart archive holds one`,
    );
  return path.join(root, found[0]!);
}
