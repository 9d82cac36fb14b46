// How a GitHub repository is named in messages and cache keys. Kept apart from the Octokit client,
// so naming a source (done while planning, for every stack) does not load Octokit.
import { printableUrl } from '../http/http-retry.js';

/** github.com's API; GitHub Enterprise Server's is `https://<host>/api/v3`. */
export const GITHUB_API_URL = 'https://api.github.com';

/** The API base URL without a trailing "/" (github.com's when none is given). */
export function githubBaseUrl(baseUrl?: string): string {
  return (baseUrl ?? GITHUB_API_URL).replace(/\/+$/, '');
}

/**
 * `github:<owner>/<repo>`, with `@<api>` for another API than github.com's; `printableBase` is that
 * API as messages may print it (no credentials, no query).
 */
export function githubLocation(
  owner: string,
  repo: string,
  baseUrl?: string,
): { location: string; sourceKey: string; printableBase: string } {
  const printableBase = printableUrl(githubBaseUrl(baseUrl)).replace(/\/+$/, '');
  const isPublic = printableBase === GITHUB_API_URL;
  return {
    location: isPublic ? `github:${owner}/${repo}` : `github:${owner}/${repo}@${printableBase}`,
    sourceKey: `github:${owner.toLowerCase()}/${repo.toLowerCase()}@${printableBase}`,
    printableBase,
  };
}
