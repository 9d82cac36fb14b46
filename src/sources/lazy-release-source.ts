// A ReleaseSource whose adapter module is loaded on first use. The GitHub and OCI adapters pull in
// Octokit and the registry client, which together cost more start-up time than a whole plan over
// local releases; a command that never lists a remote source never loads them.
import type { FetchedRelease, ReleaseListing, ReleaseSource } from '../release/release-source.js';

/** Wraps `open` (which may import the adapter) so it runs once, when the source is first asked. */
export function lazyReleaseSource(location: string, open: () => Promise<ReleaseSource>): ReleaseSource {
  let source: Promise<ReleaseSource> | undefined;
  const opened = (): Promise<ReleaseSource> => {
    source ??= open();
    // A failed import is not remembered: the next call tries again.
    source.catch(() => (source = undefined));
    return source;
  };
  return {
    location,
    list: async (): Promise<ReleaseListing> => (await opened()).list(),
    fetch: async (tag: string): Promise<FetchedRelease> => (await opened()).fetch(tag),
  };
}
