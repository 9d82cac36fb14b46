// Release sources for a long-running controller: a listing that fails (GitHub down, rate limited)
// falls back to the last good listing, so a passing outage never drops releases from the output.
// Each failure is recorded for the round, so the stacks using that source say so in their status.
import type { ReleaseListing, ReleaseSource } from '../release/release-source.js';
import type { SourceOpener } from '../sources/open-release-source.js';

export interface SourceFailure {
  message: string;
  /** A previous listing was used instead. */
  fallback: boolean;
}

class RememberingSource implements ReleaseSource {
  readonly location: string;
  private lastListing: ReleaseListing | undefined;

  constructor(private readonly inner: ReleaseSource, private readonly onFailure: (failure: SourceFailure) => void) {
    this.location = inner.location;
  }

  async list(): Promise<ReleaseListing> {
    try {
      this.lastListing = await this.inner.list();
      return this.lastListing;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.onFailure({ message: `listing releases from ${this.location} failed: ${message}`, fallback: this.lastListing !== undefined });
      if (this.lastListing) return this.lastListing;
      throw error;
    }
  }

  fetch(tag: string) {
    return this.inner.fetch(tag);
  }
}

/** Wraps a SourceOpener; `beginRound()` clears the failures recorded by the previous reconcile. */
export class ResilientSources {
  private readonly sources = new Map<string, RememberingSource>();
  private failures = new Map<string, SourceFailure>();

  constructor(private readonly open: SourceOpener) {}

  readonly opener: SourceOpener = (location) => {
    let source = this.sources.get(location);
    if (!source) {
      source = new RememberingSource(this.open(location), (failure) => this.failures.set(location, failure));
      this.sources.set(location, source);
    }
    return source;
  };

  beginRound(): void {
    this.failures = new Map();
  }

  /** The failure of a location in this round, if its listing failed. */
  failureOf(location: string): SourceFailure | undefined {
    return this.failures.get(location);
  }

  get failed(): boolean {
    return this.failures.size > 0;
  }
}
