// Pagination links: GitHub's release list and the OCI tag list both say where the next page is in
// an RFC 8288 `Link` header. http-link-header parses the full grammar (quoted parameters holding
// commas or "<", several rel values), which a regular expression gets wrong at the edges.
import LinkHeader from 'http-link-header';

/** The `rel="next"` target of a `Link` header as written (maybe relative); undefined when absent or unreadable. */
export function nextLink(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  try {
    return LinkHeader.parse(header).rel('next')[0]?.uri;
  } catch {
    // A header we cannot read names no page we could trust: the listing ends here.
    return undefined;
  }
}
