// Turns a source string (a directory, `github:owner/repo`, `oci://registry/repo`) into a ReleaseSource.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { InputError } from '../core/problem.js';
import type { RemoteTimeouts } from '../config.js';
import type { RegistryCredentials } from '../oci/registry-client.js';
import { OCI_LAYOUT_FILE, type ReleaseSource } from '../release/release-source.js';
import { githubLocation } from '../github/github-location.js';
import { formatOciRepository, parseOciRepository } from '../oci/oci-reference.js';
import type { Logger } from '../core/logger.js';
import { LocalReleaseSource } from './local-release-source.js';
import { countingFetch, type RequestOutcome } from '../http/counting-fetch.js';
import { defaultRemoteFetch } from '../http/remote-fetch.js';
import { lazyReleaseSource } from './lazy-release-source.js';
import { ReleaseCache } from './release-cache.js';

export interface SourceOptions {
  /** Where downloaded releases are cached. */
  cacheDir: string;
  /** GitHub token for `github:` sources; sent to the GitHub API only, never logged. */
  githubToken?: string;
  /** GitHub API base URL (GitHub Enterprise: https://host/api/v3). */
  githubApiUrl?: string;
  fetch?: typeof fetch;
  logger?: Logger;
  onWarning?: (message: string) => void;
  /** Talk plain HTTP to `oci://` registries (`--plain-http`). */
  plainHttp?: boolean;
  /** Credentials for `oci://` registries; never logged. */
  registryCredentials?: RegistryCredentials;
  /** Idle and total limits for GitHub and registry requests; the sources' defaults when absent. */
  timeouts?: Pick<RemoteTimeouts, 'readMs' | 'totalMs'>;
  /** Called once per HTTP request of a `github:` or `oci://` source, with its outcome (the controller's metrics). */
  onRequest?: (kind: 'github' | 'oci', outcome: RequestOutcome) => void;
}

// `#assets=a,b` (internal, e.g. cert-manager): only those assets of a release, each required.
const GITHUB_LOCATION = /^github:([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)(?:#assets=([A-Za-z0-9_.,-]+))?$/;

/**
 * Throws, as opening it would, when `location` is a malformed `github:` or `oci://` location; any
 * other string names a directory and passes. Lets a command refuse a bad flag before reading anything.
 */
export function checkSourceLocation(location: string): void {
  if (location.startsWith('github:') && !GITHUB_LOCATION.test(location)) throw githubLocationError(location);
  if (location.startsWith('oci://')) parseOciRepository(location);
}

function githubLocationError(location: string): InputError {
  return new InputError([
    {
      message: `release source ${location}: expected github:<owner>/<repo>, e.g. github:SovereignCloudStack/cluster-stacks`,
    },
  ]);
}

/** Opens a release source; the same string always yields the same (shared) source object. */
export type SourceOpener = (location: string) => ReleaseSource;

export function createSourceOpener(options: SourceOptions): SourceOpener {
  const opened = new Map<string, ReleaseSource>();
  let cache: ReleaseCache | undefined;
  const { onRequest } = options;
  const fetchFor = (kind: 'github' | 'oci'): typeof fetch | undefined =>
    onRequest
      ? countingFetch(
          () => options.fetch ?? defaultRemoteFetch,
          (outcome) => onRequest(kind, outcome),
        )
      : options.fetch;
  return (location) => {
    const existing = opened.get(location);
    if (existing) return existing;
    let source: ReleaseSource;
    if (location.startsWith('github:')) {
      const match = GITHUB_LOCATION.exec(location);
      if (!match) throw githubLocationError(location);
      const releaseCache = (cache ??= new ReleaseCache(options.cacheDir));
      const fetchImpl = fetchFor('github');
      // Octokit is loaded when the source is first listed or fetched, not when it is named.
      source = lazyReleaseSource(
        githubLocation(match[1]!, match[2]!, options.githubApiUrl).location,
        async () =>
          new (await import('./github-release-source.js')).GitHubReleaseSource({
            owner: match[1]!,
            repo: match[2]!,
            cache: releaseCache,
            ...(options.githubApiUrl ? { baseUrl: options.githubApiUrl } : {}),
            ...(options.githubToken ? { token: options.githubToken } : {}),
            ...(fetchImpl ? { fetch: fetchImpl } : {}),
            ...(options.logger ? { logger: options.logger } : {}),
            ...(options.onWarning ? { onWarning: options.onWarning } : {}),
            ...(options.timeouts
              ? { requestTimeoutMs: options.timeouts.readMs, totalTimeoutMs: options.timeouts.totalMs }
              : {}),
            ...(match[3] ? { assets: match[3].split(',') } : {}),
          }),
      );
    } else if (location.startsWith('oci://')) {
      const releaseCache = (cache ??= new ReleaseCache(options.cacheDir));
      const fetchImpl = fetchFor('oci');
      // A malformed reference is refused here, as before; the registry client loads on first use.
      source = lazyReleaseSource(
        formatOciRepository(parseOciRepository(location)),
        async () =>
          new (await import('./oci-release-source.js')).OciReleaseSource({
            reference: location,
            plainHttp: options.plainHttp ?? false,
            cache: releaseCache,
            ...(options.registryCredentials ? { credentials: options.registryCredentials } : {}),
            ...(fetchImpl ? { fetch: fetchImpl } : {}),
            ...(options.logger ? { logger: options.logger } : {}),
            ...(options.timeouts
              ? { timeoutMs: options.timeouts.readMs, totalTimeoutMs: options.timeouts.totalMs }
              : {}),
          }),
      );
    } else if (existsSync(path.join(location, OCI_LAYOUT_FILE))) {
      const releaseCache = (cache ??= new ReleaseCache(options.cacheDir));
      source = lazyReleaseSource(
        location,
        async () => new (await import('./oci-layout-source.js')).OciLayoutSource(location, { cache: releaseCache }),
      );
    } else {
      source = new LocalReleaseSource(location);
    }
    opened.set(location, source);
    return source;
  };
}
