// The seam every release backend implements: a local directory, GitHub releases, an OCI registry.
import type { ReleaseTag } from '../core/release-tag.js';

export interface ReleaseRef {
  tag: string;
  parsed: ReleaseTag;
  /** When the release was published (ISO 8601), if the backend knows; orders hash builds. */
  publishedAt?: string;
}

export interface SkippedRelease {
  name: string;
  reason: string;
}

export interface ReleaseListing {
  releases: ReleaseRef[];
  /** Tags or directories that do not parse as releases: reported as warnings, never fatal. */
  skipped: SkippedRelease[];
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
export class ReleaseSourceError extends Error {
  constructor(readonly kind: ReleaseSourceErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ReleaseSourceError';
  }

  get retryable(): boolean {
    return this.kind === 'rate-limited' || this.kind === 'unavailable';
  }
}
