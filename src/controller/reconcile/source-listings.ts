// Release listings for a long-running controller, kept apart from publishing. Each ClusterStack's
// own queue key lists its source (`refresh`), with its own failure backoff; the publish reconcile
// only reads what is known (`roundOpener`) and never waits on a source that is down. A source that
// fails keeps serving its last good listing or, after a restart, the releases the target already
// holds; their downloads fail fast, so render withholds them and keeps their published output.
import {
  ReleaseSourceError,
  listingFromTags,
  type FetchedRelease,
  type ReleaseListing,
  type ReleaseSource,
} from '../../release/release-source.js';
import type { SourceOpener } from '../../sources/open-release-source.js';
import { failureKindOf, type FailureKind } from '../../core/failure.js';

/** Why a stack's listing is not a fresh one, for its ReleasesResolved condition. */
interface SourceFailure {
  message: string;
  /** What happens next: retry (down, rate-limited, hanging) or fix-input (not found, refused credentials). */
  kind: FailureKind;
  /** A previous listing was used instead; false: only the releases published before are known. */
  fallback: boolean;
}

interface LocationState {
  listing?: ReleaseListing;
  listedAt?: number;
  /** The last attempt failed (cleared by the next success). */
  failure?: string;
  failureKind?: FailureKind;
  inFlight?: Promise<void>;
  inFlightSince?: number;
  /** Successful downloads of this location, by tag: content-addressed, valid while the process runs. */
  fetched: Map<string, FetchedRelease>;
  /** Counts changes of the listing or failure; `seen` is the count the last render round read. */
  version: number;
  seen: number;
}

export interface SourceListingsOptions {
  /**
   * How long a listing may take before the source counts as hanging: a stack key stops waiting
   * for it (and backs off), a publish goes on without it. Default 15 s.
   */
  listingWaitMs?: number;
  now?: () => number;
}

/** What a render round found out about its sources. */
export interface RoundSources {
  opener: SourceOpener;
  /** The failure a location had in this round, if its listing was not fresh. */
  failureOf(location: string): SourceFailure | undefined;
}

function duration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sameListing(a: ReleaseListing | undefined, b: ReleaseListing): boolean {
  if (!a) return false;
  const key = (listing: ReleaseListing) =>
    JSON.stringify([
      listing.releases.map((release) => [release.tag, release.publishedAt ?? '']),
      listing.skipped.map((skipped) => skipped.name),
    ]);
  return key(a) === key(b);
}

/** The known listing and failure of every release source location, shared by all queue keys. */
export class SourceListings {
  private readonly states = new Map<string, LocationState>();
  private readonly listingWaitMs: number;
  private readonly now: () => number;

  constructor(
    private readonly open: SourceOpener,
    options: SourceListingsOptions = {},
  ) {
    this.listingWaitMs = options.listingWaitMs ?? 15_000;
    this.now = options.now ?? Date.now;
  }

  private stateOf(location: string): LocationState {
    let state = this.states.get(location);
    if (!state) {
      state = { fetched: new Map(), version: 0, seen: 0 };
      this.states.set(location, state);
    }
    return state;
  }

  /**
   * Lists `location` now and records the outcome. Resolves to whether what is known differs from
   * what the last render round read (a new listing, a failure appearing or ending, also one that
   * an earlier, slow request recorded late); rejects with the source's error after recording it.
   * While a listing of the location is under way, another caller does not wait for it (a source
   * that hangs must not hold a second worker): it resolves at once, unchanged.
   */
  async refresh(location: string): Promise<{ changed: boolean }> {
    const state = this.stateOf(location);
    if (state.inFlight) return { changed: false };
    let failure: unknown;
    state.inFlightSince = this.now();
    // Started on the next tick, so that it is recorded as in flight before it can finish.
    const inFlight = Promise.resolve().then(async () => {
      try {
        const listing = await this.open(location).list();
        if (!sameListing(state.listing, listing) || state.failure !== undefined) state.version += 1;
        state.listing = listing;
        state.listedAt = this.now();
        delete state.failure;
        delete state.failureKind;
      } catch (error) {
        failure = error;
        const message = `listing releases from ${location} failed: ${describe(error)}`;
        if (state.failure !== message) state.version += 1;
        state.failure = message;
        state.failureKind = failureKindOf(error);
      } finally {
        delete state.inFlight;
        delete state.inFlightSince;
      }
    });
    state.inFlight = inFlight;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      inFlight.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), this.listingWaitMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      // The request goes on and records its answer when it comes; until then the source counts
      // as failing (publishes do not wait for it), and this key backs off.
      const message = `listing releases from ${location} has not answered within ${duration(this.listingWaitMs)}`;
      if (state.inFlight === inFlight && state.failure !== message) {
        state.failure = message;
        state.failureKind = 'retry';
        state.version += 1;
      }
      throw new ReleaseSourceError('unavailable', message);
    }
    if (failure !== undefined) throw failure;
    return { changed: state.version !== state.seen };
  }

  /** A listing has been under way for longer than a first listing may take: the source hangs. */
  private hanging(state: LocationState): boolean {
    return state.inFlightSince !== undefined && this.now() - state.inFlightSince >= this.listingWaitMs;
  }

  /** Whether the location ever answered or failed (so a render need not wait for it). */
  private attempted(location: string): boolean {
    const state = this.states.get(location);
    return state?.listing !== undefined || state?.failure !== undefined;
  }

  /**
   * The sources one render round reads. `list()` answers from what is known: the last listing, or
   * when there is none and the source failed, `fallbackTags(location)` (the releases the target
   * already holds), so a stack whose source is down is never dropped from the output. A location
   * nobody listed yet is listed once, waiting at most `listingWaitMs`. `fetch()` of a location
   * whose last listing failed answers from this process's earlier downloads or fails at once.
   */
  roundOpener(fallbackTags: () => string[]): RoundSources {
    const failures = new Map<string, SourceFailure>();
    const fail = (location: string, message: string, fallback: boolean, kind: FailureKind = 'retry') =>
      failures.set(location, { message, fallback, kind });
    const sources = new Map<string, ReleaseSource>();
    const opener: SourceOpener = (location) => {
      const existing = sources.get(location);
      if (existing) return existing;
      const inner = this.open(location);
      const source: ReleaseSource = {
        location: inner.location,
        list: async () => {
          if (!this.attempted(location)) await this.firstListing(location);
          const state = this.stateOf(location);
          state.seen = state.version;
          const silent = `listing releases from ${location} has not answered within ${duration(this.listingWaitMs)}`;
          if (state.failure !== undefined)
            fail(location, state.failure, state.listing !== undefined, state.failureKind);
          else if (!state.listing || this.hanging(state)) fail(location, silent, state.listing !== undefined);
          return state.listing ?? listingFromTags(fallbackTags().map((tag) => ({ tag })));
        },
        fetch: async (tag) => {
          const state = this.stateOf(location);
          const known = state.fetched.get(tag);
          if (known) return known;
          // A source that fails, or hangs on listing, would hang the download too: only what this
          // process already has is used until it answers again.
          if (state.failure !== undefined || !state.listing || this.hanging(state)) {
            // No error text here: it ends up in the published README, which must not change with every retry.
            throw new ReleaseSourceError(
              'unavailable',
              `release source ${location} is unavailable (see the ClusterStack's ReleasesResolved condition); the release is downloaded once it answers`,
            );
          }
          const fetched = await inner.fetch(tag);
          state.fetched.set(tag, fetched);
          return fetched;
        },
      };
      sources.set(location, source);
      return source;
    };
    return { opener, failureOf: (location) => failures.get(location) };
  }

  private async firstListing(location: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.listingWaitMs);
    });
    try {
      const state = this.stateOf(location);
      await Promise.race([state.inFlight ?? this.refresh(location).catch(() => undefined), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
