// The seam every release backend implements: a local directory, GitHub releases, an OCI registry.
import { parseReleaseTag, type ReleaseTag } from '../core/release-tag.js';
import { Failure } from '../core/failure.js';

interface ReleaseRef {
  tag: string;
  parsed: ReleaseTag;
  /** When the release was published (ISO 8601), if the backend knows; orders hash builds. */
  publishedAt?: string;
}

interface SkippedRelease {
  name: string;
  reason: string;
}

/** The file that marks a directory as an OCI image layout (a release source of its own kind). */
export const OCI_LAYOUT_FILE = 'oci-layout';

export interface ReleaseListing {
  releases: ReleaseRef[];
  /** Tags or directories that do not parse as releases: reported as warnings, never fatal. */
  skipped: SkippedRelease[];
}

/**
 * The listing for tags as a backend found them, in the order given: tags that parse become
 * releases, the others are skipped with the reason (a warning, never fatal).
 */
export function listingFromTags(
  tags: readonly { tag: string; publishedAt?: string | null | undefined }[],
): ReleaseListing {
  const listing: ReleaseListing = { releases: [], skipped: [] };
  for (const { tag, publishedAt } of tags) {
    try {
      const ref: ReleaseRef = { tag, parsed: parseReleaseTag(tag) };
      if (publishedAt) ref.publishedAt = publishedAt;
      listing.releases.push(ref);
    } catch (error) {
      listing.skipped.push({ name: tag, reason: (error as Error).message });
    }
  }
  return listing;
}

/** A release's files, present in a local directory (the source's own, or a verified cache entry). */
export interface FetchedRelease {
  tag: string;
  dir: string;
  /** sha256 over the release's files (names and contents), `sha256:<hex>`. */
  digest: string;
}

export interface ReleaseSource {
  /** Where releases come from, printable in messages and logs (never carries a credential). */
  readonly location: string;
  list(): Promise<ReleaseListing>;
  fetch(tag: string): Promise<FetchedRelease>;
}

export type ReleaseSourceErrorKind = 'not-found' | 'auth' | 'rate-limited' | 'unavailable' | 'invalid-release';

/** A failure of a release source, classified so callers can decide: fix input, or retry later. */
export class ReleaseSourceError extends Failure {
  constructor(
    readonly kind: ReleaseSourceErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(kind === 'rate-limited' || kind === 'unavailable' ? 'retry' : 'fix-input', message, options);
    this.name = 'ReleaseSourceError';
  }

  /** True when the same request may succeed later without anyone changing anything. */
  get retryable(): boolean {
    return this.failureKind === 'retry';
  }
}
