// The one Octokit setup, for the GitHub release source and the pull-request publisher: base URL
// (github.com or GitHub Enterprise), token, injected fetch with per-request timeouts, quiet logs.
//
// octokit's bundled retry and throttling plugins are off. They schedule their waits through
// Bottleneck timers, which ignore our injected sleep and clock and the total deadline of a remote
// operation (remote-deadline.ts), and they would stack their retries on top of ours. Callers own
// what happens after a failure: the release source retries with `withRetry` (http-retry.ts, with
// a bounded rate-limit wait), the publisher fails at once with a classified PublishError and the
// controller's queue retries it with backoff.
import { Octokit, RequestError } from 'octokit';
import { fetchWithTimeout } from '../http/http-retry.js';
import { githubBaseUrl } from './github-location.js';

export { GITHUB_API_URL } from './github-location.js';

export type GitHubClient = InstanceType<typeof Octokit>;

export interface GitHubClientOptions {
  /** API base URL; a trailing "/" is ignored. Default https://api.github.com. */
  baseUrl?: string;
  /** Sent by octokit to the API only; never logged. */
  token?: string;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
  /** Per request: no headers, or no body bytes, for this long fails it with RequestTimeoutError. Default: no limit. */
  requestTimeoutMs?: number;
}

export interface GitHubConnection {
  octokit: GitHubClient;
  /** The fetch octokit uses (with the timeout), for requests made beside it such as redirected downloads. */
  fetch: typeof fetch;
  /** The base URL without a trailing "/". */
  baseUrl: string;
}

/** An Octokit for `baseUrl` that makes exactly one HTTP request per call: no retries, no throttling, no log output. */
export function createGitHubClient(options: GitHubClientOptions = {}): GitHubConnection {
  const baseUrl = githubBaseUrl(options.baseUrl);
  const plainFetch = options.fetch ?? globalThis.fetch;
  const fetchImpl = options.requestTimeoutMs === undefined ? plainFetch : fetchWithTimeout(plainFetch, options.requestTimeoutMs);
  const quiet = (): void => {};
  const octokit = new Octokit({
    baseUrl,
    userAgent: 'clusterstack-gitops',
    ...(options.token ? { auth: options.token } : {}),
    request: { fetch: fetchImpl, retries: 0 },
    throttle: { enabled: false },
    retry: { enabled: false },
    log: { debug: quiet, info: quiet, warn: quiet, error: quiet },
  });
  return { octokit, fetch: fetchImpl, baseUrl };
}

/** True for an error octokit throws for an HTTP status (or a network failure, as status 500 without a response). */
export function isRequestError(error: unknown): error is RequestError {
  return error instanceof RequestError || (error instanceof Error && error.name === 'HttpError' && typeof (error as { status?: unknown }).status === 'number');
}
