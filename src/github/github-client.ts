// The one GitHub client setup, for the GitHub release source and the pull-request publisher: base
// URL (github.com or GitHub Enterprise), token, injected fetch with per-request timeouts, quiet logs.
//
// It is `@octokit/request` alone: typed routes, one HTTP request per call. No retry or throttling
// plugin: they schedule their waits through Bottleneck timers, which ignore our injected sleep and
// clock and the total deadline of a remote operation (remote-deadline.ts), and they would stack
// their retries on top of ours. Callers own what happens after a failure: the release source
// retries with `withRetry` (http-retry.ts, with a bounded rate-limit wait), the publisher fails at
// once with a classified PublishError and the controller's queue retries it with backoff.
import { request } from '@octokit/request';
import { RequestError } from '@octokit/request-error';
import { fetchWithTimeout } from '../http/http-retry.js';
import { defaultRemoteFetch } from '../http/remote-fetch.js';
import { githubBaseUrl } from './github-location.js';

export { GITHUB_API_URL } from './github-location.js';

/** What the callers use: octokit's typed `request` (`'GET /repos/{owner}/{repo}'` and its parameters). */
export interface GitHubClient {
  request: typeof request;
}

export interface GitHubClientOptions {
  /** API base URL; a trailing "/" is ignored. Default https://api.github.com. */
  baseUrl?: string;
  /** Sent as the Authorization header of this client's requests only; never logged. */
  token?: string;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
  /** Per request: no headers, or no body bytes, for this long fails it with RequestTimeoutError. Default: no limit. */
  requestTimeoutMs?: number;
}

export interface GitHubConnection {
  octokit: GitHubClient;
  /** The fetch the client uses (with the timeout), for requests made beside it such as redirected downloads. */
  fetch: typeof fetch;
  /** The base URL without a trailing "/". */
  baseUrl: string;
}

/** A client for `baseUrl` that makes exactly one HTTP request per call: no retries, no throttling, no log output. */
export function createGitHubClient(options: GitHubClientOptions = {}): GitHubConnection {
  const baseUrl = githubBaseUrl(options.baseUrl);
  const plainFetch = options.fetch ?? defaultRemoteFetch;
  const fetchImpl =
    options.requestTimeoutMs === undefined ? plainFetch : fetchWithTimeout(plainFetch, options.requestTimeoutMs);
  const quiet = (): void => {};
  const client = request.defaults({
    baseUrl,
    headers: {
      'user-agent': 'clusterstack-gitops',
      ...(options.token ? { authorization: authorizationOf(options.token) } : {}),
    },
    request: { fetch: fetchImpl, log: { debug: quiet, info: quiet, warn: quiet, error: quiet } },
  });
  return { octokit: { request: client }, fetch: fetchImpl, baseUrl };
}

/** The Authorization header GitHub takes for a token: `bearer` for a JSON Web Token (a GitHub App), else `token` (as @octokit/auth-token sends it). */
function authorizationOf(token: string): string {
  return token.split('.').length === 3 ? `bearer ${token}` : `token ${token}`;
}

/** True for an error octokit throws for an HTTP status (or a network failure, as status 500 without a response). */
export function isRequestError(error: unknown): error is RequestError {
  return (
    error instanceof RequestError ||
    (error instanceof Error && error.name === 'HttpError' && typeof (error as { status?: unknown }).status === 'number')
  );
}
