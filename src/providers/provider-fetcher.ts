// Where a provider's components come from, per fetchConfig: a GitHub release (`url`: assets
// metadata.yaml and <type>-components.yaml, through the GitHub release source with its
// conditional requests, cache and token), an OCI artifact (`oci`: the cluster-api-operator's
// layout, files named by their title annotation, tag defaulting to the version), or ConfigMaps
// (`selector`: the operator's layout, here from the inputs, version from its label or name,
// components gzip-compressed when its annotation says so). Downloads are verified and cached like
// stack releases (ReleaseCache).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { semver } from '../core/semver-functions.js';
import {
  COMPRESSED_ANNOTATION,
  CONFIGMAP_VERSION_LABEL,
  type CapiProvider,
  PROVIDER_KINDS,
} from '../api/provider-types.js';
import type { KubeObject } from '../api/types.js';
import { InputError } from '../core/problem.js';
import { OciError } from '../oci/oci-error.js';
import { TITLE_ANNOTATION } from '../oci/oci-manifest.js';
import { isPlainFileName } from '../oci/release-artifact.js';
import { RegistryClient } from '../oci/registry-client.js';
import { sha256Digest } from '../release/content-digest.js';
import { ReleaseSourceError } from '../release/release-source.js';
import type { SourceOpener, SourceOptions } from '../sources/open-release-source.js';
import { ReleaseCache } from '../sources/release-cache.js';
import { type LabelSelector, matchesLabelSelector } from '../core/label-selector.js';
import { failureKindOf } from '../core/failure.js';

/** One version of a provider's release: its metadata.yaml and components, and where they came from. */
export interface ProviderRelease {
  version: string;
  metadata: string;
  components: string;
  /** Printable origin (never a credential): `github:owner/repo`, `oci://registry/repo`, `ConfigMap ns/name`. */
  source: string;
  /** sha256 over metadata and components. */
  digest: string;
}

/** cert-manager's components (one cert-manager.yaml) at a version, and where they came from. */
export interface CertManagerRelease {
  version: string;
  components: string;
  /** Printable origin: `github:cert-manager/cert-manager cert-manager.yaml`, or the local file. */
  source: string;
  digest: string;
}

/** Lists and fetches provider releases; every failure is a ReleaseSourceError (fix input, or retry later). */
export interface ProviderFetcher {
  /** Every version the provider's source offers (semantic versions only). */
  versions(provider: CapiProvider, inputs: KubeObject[]): Promise<string[]>;
  fetch(provider: CapiProvider, version: string, inputs: KubeObject[]): Promise<ProviderRelease>;
  /** cert-manager as clusterctl's configuration names it (`url`, `version`); absent: this fetcher cannot. */
  certManager?(url: string, version: string | undefined): Promise<CertManagerRelease>;
}

/** Where cert-manager comes from: a GitHub release asset, or a local file. */
export type CertManagerLocation =
  { kind: 'github'; owner: string; repo: string; tag: string; asset: string } | { kind: 'file'; path: string };

/**
 * Reads clusterctl's `cert-manager.url` with its `version`: a GitHub release asset
 * (`https://github.com/<owner>/<repo>/releases/[download/]<tag or latest>/<asset>`) or a local
 * file (`file:///...` or an absolute path); a `latest` path segment is the version, as clusterctl
 * replaces it. Returns the location and the version (from the URL when it names a tag). Throws
 * ReleaseSourceError `not-found` (the input's to fix).
 */
export function certManagerLocation(
  url: string,
  version: string | undefined,
  githubHosts: readonly string[],
): { location: CertManagerLocation; version: string } {
  const refuse = (why: string): never => {
    throw new ReleaseSourceError('not-found', `cert-manager URL ${JSON.stringify(url)}: ${why}`);
  };
  if (version !== undefined && semver.valid(version) === null)
    refuse(`version ${JSON.stringify(version)} is not a semantic version (e.g. v1.16.2)`);
  const replaceLatest = (segments: string[]): string[] =>
    segments.map((segment) =>
      segment === 'latest'
        ? (version ??
          refuse('names "latest" but no version is given; set the version (clusterctl replaces "latest" with it)'))
        : segment,
    );
  if (url.startsWith('file://') || url.startsWith('/')) {
    const file = url.startsWith('file://') ? url.slice('file://'.length) : url;
    if (!path.isAbsolute(file)) refuse('a local file must be an absolute path (file:///path/to/cert-manager.yaml)');
    if (version === undefined) refuse('a local file needs the version set, to record and compare it');
    return { location: { kind: 'file', path: replaceLatest(file.split('/')).join('/') }, version: version! };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse('is neither a URL nor an absolute path');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    refuse('must be https://, file:// or an absolute path');
  if (!githubHosts.includes(parsed.host))
    refuse(`only GitHub release assets (${githubHosts.join(', ')}) or local files are supported`);
  const segments = parsed.pathname.split('/').filter((segment) => segment !== '');
  const shape =
    segments.length === 6 && segments[2] === 'releases' && segments[3] === 'download'
      ? [segments[0], segments[1], segments[4], segments[5]]
      : segments.length === 5 && segments[2] === 'releases'
        ? [segments[0], segments[1], segments[3], segments[4]]
        : undefined;
  if (!shape)
    return refuse(
      'expected https://github.com/<owner>/<repo>/releases/[download/]<version or latest>/<asset>, as clusterctl names it',
    );
  const [owner, repo, named, asset] = shape as [string, string, string, string];
  if (![owner, repo, asset].every((part) => /^[A-Za-z0-9_.-]+$/.test(part) && part !== '.' && part !== '..'))
    refuse('owner, repository and asset must be plain names');
  const tag = named === 'latest' ? replaceLatest([named])[0]! : named;
  if (version !== undefined && tag !== version)
    refuse(`names release ${tag}, but the version says ${version}; give one of them, or put "latest" in the URL`);
  if (semver.valid(tag) === null) refuse(`release ${JSON.stringify(tag)} is not a semantic version`);
  return { location: { kind: 'github', owner, repo, tag, asset }, version: tag };
}

const GITHUB_URL = /^https?:\/\/([^/]+)\/([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)(\/|$)/;
const METADATA_FILE = 'metadata.yaml';

function releaseOf(version: string, metadata: string, components: string, source: string): ProviderRelease {
  return { version, metadata, components, source, digest: sha256Digest(`${metadata}\0${components}`) };
}

/** The operator's OCI reference: `[http://]registry/repo[:tag]`, the tag defaulting to the version. */
function parseProviderOci(
  reference: string,
  version: string,
): { registry: string; repository: string; tag: string; plainHttp: boolean } {
  const plainHttp = reference.startsWith('http://');
  let rest = reference.replace(/^(https?|oci):\/\//, '');
  let tag = version;
  const slash = rest.indexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > slash && slash >= 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  if (slash < 0)
    throw new ReleaseSourceError(
      'not-found',
      `fetchConfig.oci ${JSON.stringify(reference)} must be registry/repository[:tag]`,
    );
  return { registry: rest.slice(0, slash), repository: rest.slice(slash + 1), tag, plainHttp };
}

function fromInputs(provider: CapiProvider, inputs: KubeObject[]): { version: string; configMap: KubeObject }[] {
  // Validated with the provider (validate-provider.ts), so its operators are Kubernetes' own.
  const selector = (provider.spec?.fetchConfig?.selector ?? {}) as LabelSelector;
  const namespace = provider.metadata.namespace ?? 'default';
  return inputs
    .filter(
      (object) =>
        object.kind === 'ConfigMap' &&
        object.apiVersion === 'v1' &&
        (object.metadata.namespace ?? 'default') === namespace &&
        matchesLabelSelector(selector, object.metadata.labels),
    )
    .map((configMap) => ({
      version: configMap.metadata.labels?.[CONFIGMAP_VERSION_LABEL] ?? configMap.metadata.name,
      configMap,
    }));
}

function configMapRelease(provider: CapiProvider, version: string, inputs: KubeObject[]): ProviderRelease {
  const found = fromInputs(provider, inputs).filter((entry) => entry.version === version);
  const where = `ConfigMaps matching ${provider.kind} ${provider.metadata.namespace ?? 'default'}/${provider.metadata.name}'s fetchConfig.selector`;
  if (found.length === 0)
    throw new ReleaseSourceError('not-found', `no ConfigMap for version ${version} among the ${where}`);
  if (found.length > 1)
    throw new ReleaseSourceError(
      'invalid-release',
      `${found.length} ConfigMaps hold version ${version} among the ${where}: ${found.map((entry) => entry.configMap.metadata.name).join(', ')}; keep one`,
    );
  const configMap = found[0]!.configMap as KubeObject & {
    data?: Record<string, unknown>;
    binaryData?: Record<string, unknown>;
  };
  const name = `ConfigMap ${configMap.metadata.namespace ?? 'default'}/${configMap.metadata.name}`;
  const metadata = configMap.data?.metadata;
  if (typeof metadata !== 'string')
    throw new ReleaseSourceError('invalid-release', `${name} has no data.metadata (the provider's metadata.yaml)`);
  let components: unknown;
  if (configMap.metadata.annotations?.[COMPRESSED_ANNOTATION] === 'true') {
    const packed = configMap.binaryData?.components;
    if (typeof packed !== 'string')
      throw new ReleaseSourceError(
        'invalid-release',
        `${name} is annotated ${COMPRESSED_ANNOTATION}: "true" but has no binaryData.components`,
      );
    try {
      // Bounded like release archives: a components file is a few MiB.
      components = gunzipSync(Buffer.from(packed, 'base64'), { maxOutputLength: 64 * 1024 * 1024 }).toString('utf8');
    } catch (error) {
      throw new ReleaseSourceError(
        'invalid-release',
        `${name}: binaryData.components is not gzip data of at most 64 MiB (${(error as Error).message})`,
      );
    }
  } else components = configMap.data?.components;
  if (typeof components !== 'string')
    throw new ReleaseSourceError(
      'invalid-release',
      `${name} has no data.components (or binaryData.components with ${COMPRESSED_ANNOTATION}: "true")`,
    );
  return releaseOf(version, metadata, components, name);
}

function sortedVersions(tags: string[]): string[] {
  return [...new Set(tags.filter((tag) => semver.valid(tag) !== null))].sort((a, b) => semver.compare(a, b));
}

/** A fetcher over the same options (cache, tokens, fetch, timeouts) as the stack release sources. */
export function createProviderFetcher(options: SourceOptions, openSource: SourceOpener): ProviderFetcher {
  return new ProviderReleases(options, openSource);
}

/** Provider releases from GitHub, OCI registries or ConfigMaps of the inputs; one release cache, one client per registry. */
class ProviderReleases implements ProviderFetcher {
  private cache: ReleaseCache | undefined;
  private readonly clients = new Map<string, RegistryClient>();

  constructor(
    private readonly options: SourceOptions,
    private readonly openSource: SourceOpener,
  ) {}

  async versions(provider: CapiProvider, inputs: KubeObject[]): Promise<string[]> {
    const fetchConfig = provider.spec?.fetchConfig;
    if (fetchConfig?.url) {
      // Every tag is in the listing: stack release tags as releases, the others (v1.8.0) as skipped names.
      const listing = await this.openSource(this.githubOf(provider)).list();
      return sortedVersions([
        ...listing.releases.map((release) => release.tag),
        ...listing.skipped.map((skipped) => skipped.name),
      ]);
    }
    if (fetchConfig?.oci) {
      const ref = parseProviderOci(fetchConfig.oci, '');
      if (ref.tag) return [ref.tag];
      return sortedVersions(await this.registryFor(ref.registry, ref.plainHttp).listTags(ref.repository));
    }
    if (fetchConfig?.selector) return sortedVersions(fromInputs(provider, inputs).map((entry) => entry.version));
    return noSource(provider);
  }

  async fetch(provider: CapiProvider, version: string, inputs: KubeObject[]): Promise<ProviderRelease> {
    const fetchConfig = provider.spec?.fetchConfig;
    if (fetchConfig?.selector) return configMapRelease(provider, version, inputs);
    if (fetchConfig?.url) return this.fetchFromGitHub(provider, version);
    if (fetchConfig?.oci) return this.fetchFromOci(provider, version, fetchConfig.oci);
    return noSource(provider);
  }

  async certManager(url: string, version: string | undefined): Promise<CertManagerRelease> {
    const enterpriseHost = this.options.githubApiUrl ? new URL(this.options.githubApiUrl).host : undefined;
    const { location, version: resolved } = certManagerLocation(url, version, [
      'github.com',
      ...(enterpriseHost ? [enterpriseHost] : []),
    ]);
    if (location.kind === 'file') {
      let components: string;
      try {
        components = await readFile(location.path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT')
          throw new ReleaseSourceError('not-found', `cert-manager ${resolved}: there is no file ${location.path}`);
        throw error;
      }
      return { version: resolved, components, source: location.path, digest: sha256Digest(components) };
    }
    // Only the one asset, through the GitHub source: conditional listing, token, verified cache.
    const source = `github:${location.owner}/${location.repo}`;
    const fetched = await this.openSource(`${source}#assets=${location.asset}`).fetch(location.tag);
    const components = await readFile(path.join(fetched.dir, location.asset), 'utf8');
    return { version: resolved, components, source: `${source} ${location.asset}`, digest: sha256Digest(components) };
  }

  /** A release's metadata.yaml and components asset, through the GitHub release source. */
  private async fetchFromGitHub(provider: CapiProvider, version: string): Promise<ProviderRelease> {
    const info = PROVIDER_KINDS[provider.kind]!;
    const location = this.githubOf(provider);
    const fetched = await this.openSource(location).fetch(version);
    const read = async (file: string): Promise<string> => {
      try {
        return await readFile(path.join(fetched.dir, file), 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT')
          throw new ReleaseSourceError(
            'invalid-release',
            `release ${version} of ${location} has no ${file} asset (a ${provider.kind} needs ${METADATA_FILE} and ${info.componentsAsset})`,
          );
        throw error;
      }
    };
    return releaseOf(version, await read(METADATA_FILE), await read(info.componentsAsset), location);
  }

  /** A release from an OCI artifact in the cluster-api-operator's layout, its layers cached as files. */
  private async fetchFromOci(provider: CapiProvider, version: string, reference: string): Promise<ProviderRelease> {
    const info = PROVIDER_KINDS[provider.kind]!;
    const ref = parseProviderOci(reference, version);
    const where = `oci://${ref.registry}/${ref.repository}:${ref.tag}`;
    const entry = await this.cachedArtifact(ref, where);
    const name = provider.metadata.name;
    const pick = async (candidates: string[], what: string): Promise<string> => {
      for (const file of candidates) {
        try {
          return await readFile(path.join(entry.dir, file), 'utf8');
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
      throw new ReleaseSourceError(
        'invalid-release',
        `${where} has no ${what}: it needs one of ${candidates.join(', ')} (the cluster-api-operator's layout)`,
      );
    };
    const metadata = await pick([`${info.type}-${name}-${version}-metadata.yaml`, METADATA_FILE], 'metadata');
    const components = await pick(
      [`${info.type}-${name}-${version}-components.yaml`, `${info.type}-components.yaml`, 'components.yaml'],
      'components',
    );
    return releaseOf(version, metadata, components, `oci://${ref.registry}/${ref.repository}`);
  }

  /** The artifact's layers as files in the release cache, each layer named by its title annotation. */
  private async cachedArtifact(
    ref: ReturnType<typeof parseProviderOci>,
    where: string,
  ): Promise<NonNullable<Awaited<ReturnType<ReleaseCache['get']>>>> {
    const client = this.registryFor(ref.registry, ref.plainHttp);
    this.cache ??= new ReleaseCache(this.options.cacheDir);
    const sourceKey = `provider-oci:${ref.registry}/${ref.repository}`;
    const entry = await this.cache.get(sourceKey, ref.tag);
    if (entry) return entry;
    const { manifest } = await client.getManifest(ref.repository, ref.tag);
    const layers = manifest.layers.map((layer, index) => {
      const title = layer.annotations?.[TITLE_ANNOTATION];
      if (title === undefined || !isPlainFileName(title))
        throw new OciError('invalid-release', `${where}: layer ${index} has no plain file name in ${TITLE_ANNOTATION}`);
      return { file: title, digest: layer.digest, size: layer.size };
    });
    return this.cache.put(sourceKey, ref.tag, async (dir) => {
      for (const layer of layers)
        await client.fetchBlob(ref.repository, layer.digest, path.join(dir, layer.file), layer.size);
    });
  }

  private registryFor(registry: string, plainHttp: boolean): RegistryClient {
    const { options } = this;
    const key = `${plainHttp ? 'http' : 'https'}://${registry}`;
    let client = this.clients.get(key);
    if (!client) {
      client = new RegistryClient({
        registry,
        plainHttp: plainHttp || (options.plainHttp ?? false),
        ...(options.registryCredentials ? { credentials: options.registryCredentials } : {}),
        ...(options.fetch ? { fetch: options.fetch } : {}),
        ...(options.logger ? { logger: options.logger } : {}),
        ...(options.timeouts ? { timeoutMs: options.timeouts.readMs, totalTimeoutMs: options.timeouts.totalMs } : {}),
      });
      this.clients.set(key, client);
    }
    return client;
  }

  /** The GitHub release source of `fetchConfig.url`: github.com, or the GitHub Enterprise host --github-api-url names. */
  private githubOf(provider: CapiProvider): string {
    const url = provider.spec?.fetchConfig?.url ?? '';
    const match = GITHUB_URL.exec(url);
    const enterpriseHost = this.options.githubApiUrl ? new URL(this.options.githubApiUrl).host : undefined;
    if (!match || (match[1] !== 'github.com' && match[1] !== enterpriseHost)) {
      throw new ReleaseSourceError(
        'not-found',
        `fetchConfig.url ${JSON.stringify(url)} is not a GitHub repository URL (https://github.com/<owner>/<repo>/releases, or on the GitHub Enterprise host --github-api-url names); other hosts are not supported`,
      );
    }
    return `github:${match[2]}/${match[3]!.replace(/\.git$/, '')}`;
  }
}

function noSource(provider: CapiProvider): never {
  throw new ReleaseSourceError(
    'not-found',
    `${provider.kind} ${provider.metadata.namespace ?? 'default'}/${provider.metadata.name} has no spec.fetchConfig; clusterctl's built-in provider list is not bundled, so name the release with fetchConfig.url (e.g. https://github.com/kubernetes-sigs/cluster-api/releases), oci or selector`,
  );
}

/** Problems of a fetch failure, for the plan: a release that is not there is the input's to fix; a remote down is retryable. */
export function fetchProblem(error: unknown, object: string): { object: string; message: string; retryable?: true } {
  if (error instanceof InputError) return { object, message: error.message };
  const retryable = failureKindOf(error) === 'retry';
  return { object, message: (error as Error).message, ...(retryable ? { retryable: true as const } : {}) };
}
