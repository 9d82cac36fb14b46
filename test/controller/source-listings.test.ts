// The controller's release listings: per-source answers kept between reconciles, fallbacks when a
// source fails or hangs, and downloads that never wait on a source that is down.
import { describe, expect, it } from 'vitest';
import { SourceListings } from '../../src/controller/reconcile/source-listings.js';
import {
  listingFromTags,
  ReleaseSourceError,
  type ReleaseListing,
  type ReleaseSource,
} from '../../src/release/release-source.js';

const V1 = 'docker-ferrol-1-30-v1';
const V2 = 'docker-ferrol-1-30-v2';

/** A source whose listing answers, fails or hangs as the test says; downloads are counted. */
function aSource(location: string) {
  const control = { mode: 'up' as 'up' | 'fail' | 'refuse' | 'hang', tags: [V1], fetches: [] as string[] };
  const source: ReleaseSource = {
    location,
    list: (): Promise<ReleaseListing> => {
      if (control.mode === 'fail') return Promise.reject(new ReleaseSourceError('unavailable', 'GitHub answered 503'));
      if (control.mode === 'refuse')
        return Promise.reject(new ReleaseSourceError('not-found', 'repository org/stacks not found'));
      if (control.mode === 'hang') return new Promise(() => undefined);
      return Promise.resolve(listingFromTags(control.tags.map((tag) => ({ tag }))));
    },
    fetch: async (tag) => {
      control.fetches.push(tag);
      return { tag, dir: `/releases/${tag}`, digest: `sha256:${tag}` };
    },
  };
  return { source, control };
}

const tagsOf = (listing: ReleaseListing) => listing.releases.map((release) => release.tag);

describe('SourceListings', () => {
  it('keeps the last listing and earlier downloads while a source fails, and fails other downloads at once', async () => {
    const { source, control } = aSource('github:org/stacks');
    const listings = new SourceListings(() => source, { listingWaitMs: 200 });
    expect(await listings.refresh('github:org/stacks')).toEqual({ changed: true });
    const healthy = listings.roundOpener(() => []);
    await healthy.opener('github:org/stacks').list();
    // A render round has read it: the same answer again is no news.
    expect(await listings.refresh('github:org/stacks')).toEqual({ changed: false });
    await healthy.opener('github:org/stacks').fetch(V1);

    control.mode = 'fail';
    await expect(listings.refresh('github:org/stacks')).rejects.toThrow('GitHub answered 503');
    const round = listings.roundOpener(() => [V2]);
    const opened = round.opener('github:org/stacks');
    expect(tagsOf(await opened.list())).toEqual([V1]);
    expect(round.failureOf('github:org/stacks')).toEqual({
      message: 'listing releases from github:org/stacks failed: GitHub answered 503',
      fallback: true,
      kind: 'retry',
    });
    expect((await opened.fetch(V1)).tag).toBe(V1);
    await expect(opened.fetch(V2)).rejects.toThrow(/github:org\/stacks is unavailable/);
    expect(control.fetches).toEqual([V1]);

    control.mode = 'up';
    expect(await listings.refresh('github:org/stacks')).toEqual({ changed: true });
    expect(listings.roundOpener(() => []).failureOf('github:org/stacks')).toBeUndefined();
  });

  it('records what happens next: a refusing source (not found, credentials) is fix-input, a hanging one retry', async () => {
    const { source, control } = aSource('github:org/stacks');
    const listings = new SourceListings(() => source, { listingWaitMs: 50 });
    control.mode = 'refuse';
    await expect(listings.refresh('github:org/stacks')).rejects.toThrow('not found');
    const refused = listings.roundOpener(() => [V1]);
    await refused.opener('github:org/stacks').list();
    expect(refused.failureOf('github:org/stacks')).toMatchObject({ kind: 'fix-input', fallback: false });

    control.mode = 'hang';
    await expect(listings.refresh('github:org/stacks')).rejects.toThrow(/has not answered/);
    const hanging = listings.roundOpener(() => [V1]);
    await hanging.opener('github:org/stacks').list();
    expect(hanging.failureOf('github:org/stacks')).toMatchObject({ kind: 'retry' });
  });

  it('falls back on the published releases when a source never answered, and stops waiting for one that hangs', async () => {
    const { source, control } = aSource('oci://registry/stacks');
    control.mode = 'hang';
    const listings = new SourceListings(() => source, { listingWaitMs: 50 });
    const started = Date.now();
    await expect(listings.refresh('oci://registry/stacks')).rejects.toThrow('has not answered within 50 ms');
    // Another stack key on the same source does not wait for the hanging request.
    expect(await listings.refresh('oci://registry/stacks')).toEqual({ changed: false });
    const round = listings.roundOpener(() => [V1, V2]);
    const opened = round.opener('oci://registry/stacks');
    expect(tagsOf(await opened.list())).toEqual([V1, V2]);
    expect(round.failureOf('oci://registry/stacks')).toMatchObject({ fallback: false });
    await expect(opened.fetch(V1)).rejects.toThrow(/unavailable/);
    // Far from the 50 ms wait (a loaded machine stalls this process for a second at times), and
    // far below the hang it stops waiting for and the 15 s default wait.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(control.fetches).toEqual([]);
  });

  it('reports an answer that a hanging request recorded late as news for the next refresh', async () => {
    let answer!: (listing: ReleaseListing) => void;
    let calls = 0;
    const source: ReleaseSource = {
      location: 'github:org/slow',
      list: () => {
        calls += 1;
        return calls === 1
          ? new Promise<ReleaseListing>((resolve) => (answer = resolve))
          : Promise.resolve(listingFromTags([{ tag: V1 }]));
      },
      fetch: async (tag) => ({ tag, dir: `/releases/${tag}`, digest: `sha256:${tag}` }),
    };
    const listings = new SourceListings(() => source, { listingWaitMs: 30 });
    await expect(listings.refresh('github:org/slow')).rejects.toThrow('has not answered');
    const round = listings.roundOpener(() => []);
    expect(tagsOf(await round.opener('github:org/slow').list())).toEqual([]);
    answer(listingFromTags([{ tag: V1 }]));
    await new Promise((resolve) => setImmediate(resolve));
    // The late answer is in; the next refresh says a render should look (its stack key asks for a publish).
    expect(await listings.refresh('github:org/slow')).toEqual({ changed: true });
    expect(
      tagsOf(
        await listings
          .roundOpener(() => [])
          .opener('github:org/slow')
          .list(),
      ),
    ).toEqual([V1]);
  });

  it('lists a source nobody listed yet once, for the first round that needs it', async () => {
    const { source } = aSource('/releases');
    let opened = 0;
    const listings = new SourceListings(() => {
      opened += 1;
      return source;
    });
    const round = listings.roundOpener(() => []);
    expect(tagsOf(await round.opener('/releases').list())).toEqual([V1]);
    expect(round.failureOf('/releases')).toBeUndefined();
    expect((await round.opener('/releases').fetch(V1)).tag).toBe(V1);
    expect(opened).toBeGreaterThan(0);
  });
});
