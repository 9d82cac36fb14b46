// Counts the HTTP requests a remote release source makes (clusterstack_remote_requests_total).
// Wrapping the fetch a source is given sees every request it makes (octokit's API calls, asset
// downloads, registry token exchanges, manifests and blobs, each retry) without a metrics call in
// each of those places.

/** How one request went: `error` when no answer came (network, timeout) or the server failed (5xx) or throttled (429). */
export type RequestOutcome = 'ok' | 'error';

/** A fetch that behaves as `fetchImpl` and reports each request's outcome to `record`. */
export function countingFetch(fetchImpl: () => typeof fetch, record: (outcome: RequestOutcome) => void): typeof fetch {
  return async (input, init) => {
    let response: Response;
    try {
      response = await fetchImpl()(input, init);
    } catch (error) {
      record('error');
      throw error;
    }
    // A 4xx is an answer (a missing tag, an auth challenge the client answers next): the remote works.
    record(response.status >= 500 || response.status === 429 ? 'error' : 'ok');
    return response;
  };
}
