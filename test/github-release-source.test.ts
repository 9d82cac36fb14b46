import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { treeDigest } from '../src/release/content-digest.js';
import { ReleaseSourceError } from '../src/release/release-source.js';
import { GitHubReleaseSource, type GitHubReleaseSourceOptions } from '../src/sources/github-release-source.js';
import { createSourceOpener } from '../src/sources/open-release-source.js';
import { ReleaseCache } from '../src/sources/release-cache.js';
import {
  type AssetSpec,
  type FakeGitHub,
  type FakeGitHubOptions,
  startFakeGitHub,
} from './support/fake-github/index.js';

const OWNER = 'example';
const REPO = 'stacks';
const TOKEN = 'ghp_secretTokenValue123';
const TAG = 'docker-ferrol-1-30-v1';
const QUICKSTART_RELEASES = path.resolve(import.meta.dirname, '../examples/quickstart/releases');

let github: FakeGitHub;
let cacheRoot: string;
let nowMs: number;
let sleeps: number[];
let warnings: string[];

const clock = (): Date => new Date(nowMs);
/** Sleeps instantly but moves the shared clock, so the fake's rate-limit window passes. */
const sleep = async (ms: number): Promise<void> => {
  sleeps.push(ms);
  nowMs += ms;
};

async function startGitHub(options: FakeGitHubOptions = {}): Promise<FakeGitHub> {
  github = await startFakeGitHub({ now: clock, tokens: [TOKEN], ...options });
  return github;
}

function source(overrides: Partial<GitHubReleaseSourceOptions> = {}): GitHubReleaseSource {
  return new GitHubReleaseSource({
    owner: OWNER,
    repo: REPO,
    baseUrl: github.apiUrl,
    cache: new ReleaseCache(cacheRoot),
    clock,
    sleep,
    random: () => 0.5,
    // Only a fault's hanging request should run out: an answered one may take seconds on a loaded machine.
    requestTimeoutMs: 30_000,
    onWarning: (message) => warnings.push(message),
    ...overrides,
  });
}

function releaseAssets(tag: string, extra: AssetSpec[] = []): AssetSpec[] {
  return [
    {
      name: 'metadata.yaml',
      content: `apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\nversions:\n  clusterStack: ${tag}\n`,
    },
    { name: `${tag}-cluster-class.tgz`, content: Buffer.alloc(64 * 1024, 7) },
    ...extra,
  ];
}

async function rejection(promise: Promise<unknown>): Promise<ReleaseSourceError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ReleaseSourceError);
  return error as ReleaseSourceError;
}

async function cacheIsEmpty(): Promise<void> {
  expect(await new ReleaseCache(cacheRoot).entries()).toEqual([]);
  const visible = await readdir(path.join(cacheRoot, 'releases')).catch(() => []);
  expect(visible).toEqual([]);
  const temp = await readdir(path.join(cacheRoot, 'tmp')).catch(() => []);
  expect(temp).toEqual([]);
}

const apiRequests = (): FakeGitHub['requests'] => github.requests.filter((request) => request.server === 'api');
const downloads = (): FakeGitHub['requests'] => github.requests.filter((request) => request.server === 'download');

beforeEach(async () => {
  cacheRoot = await mkdtemp(path.join(os.tmpdir(), 'github-source-'));
  nowMs = Date.parse('2025-06-01T12:00:00Z');
  sleeps = [];
  warnings = [];
});

afterEach(async () => {
  await github?.close();
  await rm(cacheRoot, { recursive: true, force: true });
});

describe('GitHubReleaseSource.list', () => {
  it('lists every release across Link-paginated pages', async () => {
    await startGitHub();
    for (let major = 1; major <= 250; major++)
      github.addRelease(OWNER, REPO, { tag: `docker-ferrol-1-30-v${major}`, assets: releaseAssets(`v${major}`) });
    const listing = await source().list();
    expect(listing.releases).toHaveLength(250);
    expect(listing.skipped).toEqual([]);
    expect(new Set(listing.releases.map((release) => release.tag)).size).toBe(250);
    expect(listing.releases.find((release) => release.tag === 'docker-ferrol-1-30-v250')).toMatchObject({
      parsed: { provider: 'docker', name: 'ferrol', kubernetesMajor: 1, kubernetesMinor: 30 },
      publishedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(apiRequests().map((request) => request.query)).toEqual([
      { per_page: '100' },
      { per_page: '100', page: '2' },
      { per_page: '100', page: '3' },
    ]);
  });

  it('skips tags that do not parse, naming them, and leaves drafts out', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    github.addRelease(OWNER, REPO, { tag: 'v1.2.3', assets: [] });
    github.addRelease(OWNER, REPO, { tag: 'docker-ferrol-1-x-v1', assets: [] });
    github.addRelease(OWNER, REPO, { tag: 'docker-ferrol-1-30-v2', draft: true, assets: releaseAssets('v2') });
    const listing = await source().list();
    expect(listing.releases.map((release) => release.tag)).toEqual([TAG]);
    expect(listing.skipped.map((skipped) => skipped.name)).toEqual(['docker-ferrol-1-x-v1', 'v1.2.3']);
    for (const skipped of listing.skipped)
      expect(skipped.reason).toContain(`"${skipped.name}" is not a cluster stack release tag`);
  });

  it('lists an unchanged repository again with conditional requests only, all answered 304 at no rate-limit cost', async () => {
    await startGitHub();
    for (let major = 1; major <= 250; major++)
      github.addRelease(OWNER, REPO, { tag: `docker-ferrol-1-30-v${major}`, assets: releaseAssets(`v${major}`) });
    const releases = source();
    const first = await releases.list();
    const remaining = github.rate.remaining;
    github.clearRequests();

    const second = await releases.list();
    expect(second).toEqual(first);
    expect(apiRequests()).toHaveLength(3);
    for (const request of apiRequests()) {
      expect(request.ifNoneMatch).toMatch(/^W\/"/);
      expect(request.status).toBe(304);
      expect(request.counted).toBe(false);
    }
    expect(github.rate.remaining).toBe(remaining);

    // A new release changes the pages: they are fetched again and the listing shows it.
    github.addRelease(OWNER, REPO, { tag: 'docker-ferrol-1-30-v251', assets: releaseAssets('v251') });
    github.clearRequests();
    const third = await releases.list();
    expect(third.releases).toHaveLength(251);
    expect(apiRequests().map((request) => request.status)).toEqual([200, 200, 200]);
  });

  it('shares one walk between concurrent listings and reuses a listing within minListIntervalMs', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    const releases = source({ minListIntervalMs: 60_000 });
    const [a, b] = await Promise.all([releases.list(), releases.list()]);
    expect(a).toBe(b);
    expect(apiRequests()).toHaveLength(1);
    await releases.list();
    expect(apiRequests()).toHaveLength(1);
    nowMs += 61_000;
    await releases.list();
    expect(apiRequests()).toHaveLength(2);
  });

  it('names a missing repository, and hints at a token for private ones', async () => {
    await startGitHub();
    github.addRepo(OWNER, 'private-stacks', { private: true });
    const error = await rejection(source({ repo: 'missing' }).list());
    expect(error.kind).toBe('not-found');
    expect(error.message).toContain('repository example/missing not found');
    expect(error.message).toContain('(or private: set GITHUB_TOKEN)');
    expect(sleeps).toEqual([]);

    const hidden = await rejection(source({ repo: 'private-stacks' }).list());
    expect(hidden.kind).toBe('not-found');
    await expect(source({ repo: 'private-stacks', token: TOKEN }).list()).resolves.toEqual({
      releases: [],
      skipped: [],
    });
  });

  it('reports a refused token without revealing it', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    const error = await rejection(source({ token: 'ghp_wrongTokenValue' }).list());
    expect(error.kind).toBe('auth');
    expect(error.message).toMatch(/^GitHub refused the token: Bad credentials/);
    expect(error.message).not.toContain('ghp_');
    expect(inspect(error, { depth: 20 })).not.toContain('wrongTokenValue');
    expect(error.retryable).toBe(false);
    expect(apiRequests()).toHaveLength(1);
  });

  it('waits for a rate limit that resets within the bound, reports the wait, then succeeds', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    github.exhaustRateLimit(2);
    const listing = await source().list();
    expect(listing.releases.map((release) => release.tag)).toEqual([TAG]);
    expect(sleeps).toEqual([2000]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(
      'GitHub rate limit for example/stacks is exhausted; waiting 2 s until 2025-06-01T12:00:02.000Z',
    );
    expect(apiRequests().map((request) => request.rateLimited)).toEqual([true, false]);
  });

  it('gives up with a clear rate-limited error when the reset is beyond the bound, without a retry loop', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    github.exhaustRateLimit(3600);
    const error = await rejection(source({ maxRateLimitWaitMs: 60_000 }).list());
    expect(error.kind).toBe('rate-limited');
    expect(error.retryable).toBe(true);
    expect(error.message).toBe(
      'GitHub rate limit for example/stacks is exhausted until 2025-06-01T13:00:00.000Z; set GITHUB_TOKEN for a higher limit or wait',
    );
    expect(sleeps).toEqual([]);
    expect(apiRequests()).toHaveLength(1);
  });

  it('waits only once: a limit still exhausted after the wait is an error', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    github.addFault({ pathIncludes: '/releases', times: 2, fault: { status: 429, headers: { 'retry-after': '5' } } });
    const error = await rejection(source().list());
    expect(error.kind).toBe('rate-limited');
    expect(sleeps).toEqual([5000]);
    expect(apiRequests()).toHaveLength(2);
  });

  it('retries server errors with backoff, then succeeds', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    github.addFault({ pathIncludes: '/releases', times: 1, fault: { status: 502 } });
    github.addFault({ pathIncludes: '/releases', times: 1, fault: { status: 500 } });
    const listing = await source().list();
    expect(listing.releases).toHaveLength(1);
    expect(apiRequests().map((request) => request.status)).toEqual([502, 500, 200]);
    expect(sleeps).toHaveLength(2);
  });

  it('reports a persistently failing server as unavailable after a bounded number of growing backoffs', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    github.addFault({ pathIncludes: '/releases', times: Infinity, fault: { status: 500 } });
    const releases = source({ random: Math.random });
    const error = await rejection(releases.list());
    expect(error.kind).toBe('unavailable');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('example/stacks');
    expect(error.message).toContain('after 4 attempts (last: HTTP 500)');
    expect(apiRequests()).toHaveLength(4);
    expect(sleeps).toHaveLength(3);
    for (let i = 1; i < sleeps.length; i++) expect(sleeps[i]!).toBeGreaterThanOrEqual(sleeps[i - 1]!);
    expect(sleeps[2]!).toBeGreaterThan(sleeps[0]!);
    expect(sleeps[0]!).toBeGreaterThanOrEqual(250);
    expect(sleeps[2]!).toBeLessThanOrEqual(2000);
  });

  it('times out a request that never answers, and retries it', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    github.addFault({ pathIncludes: '/releases', times: 1, fault: { hang: true } });
    // The retry is answered under the same limit: this process's own fake answers in milliseconds,
    // but not always within 200 ms at load 47-90 (a second timeout, one more sleep). 1 s is five times
    // that, and the case waits it out three times, so not more.
    const limitMs = 1_000;
    const listing = await source({ requestTimeoutMs: limitMs }).list();
    expect(listing.releases).toHaveLength(1);
    expect(sleeps).toHaveLength(1);

    github.addFault({ pathIncludes: '/releases', times: Infinity, fault: { hang: true } });
    const error = await rejection(source({ requestTimeoutMs: limitMs, retry: { attempts: 2 } }).list());
    expect(error.kind).toBe('unavailable');
    expect(error.message).toContain('(last: timed out after 1000 ms)');
  });

  it('works against GitHub Enterprise under /api/v3', async () => {
    await startGitHub({ pathPrefix: '/api/v3' });
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    const releases = source({ token: TOKEN });
    expect(github.apiUrl).toMatch(/\/api\/v3$/);
    expect(releases.location).toBe(`github:example/stacks@${github.apiUrl}`);
    expect((await releases.list()).releases.map((release) => release.tag)).toEqual([TAG]);
    const fetched = await releases.fetch(TAG);
    expect(await readFile(path.join(fetched.dir, 'metadata.yaml'), 'utf8')).toContain(`clusterStack: ${TAG}`);
    for (const request of apiRequests()) expect(request.path).toMatch(/^\/api\/v3\/repos\/example\/stacks\//);
  });
});

describe('GitHubReleaseSource.fetch', () => {
  it('downloads every asset through the redirect to another origin, without forwarding the token there', async () => {
    await startGitHub();
    await github.addReleasesFromDirectory(OWNER, REPO, QUICKSTART_RELEASES);
    const releases = source({ token: TOKEN });
    const fetched = await releases.fetch('docker-ferrol-1-30-v1');
    const local = path.join(QUICKSTART_RELEASES, 'docker-ferrol-1-30-v1');
    expect(fetched.tag).toBe('docker-ferrol-1-30-v1');
    expect(fetched.digest).toBe(await treeDigest(local));
    expect((await readdir(fetched.dir)).sort()).toEqual((await readdir(local)).sort());

    const assetCalls = apiRequests().filter((request) => request.path.includes('/releases/assets/'));
    expect(assetCalls.length).toBe((await readdir(local)).length);
    for (const call of assetCalls) {
      expect(call.status).toBe(302);
      expect(call.authorization).toBe(true);
      expect(call.accept).toContain('application/octet-stream');
    }
    expect(downloads()).toHaveLength(assetCalls.length);
    for (const download of downloads()) {
      expect(download.status).toBe(200);
      expect(download.authorization).toBe(false);
    }
  });

  it('serves a fetched release from the cache after a restart, with no downloads', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    const first = await source().fetch(TAG);
    github.clearRequests();

    const restarted = source();
    const again = await restarted.fetch(TAG);
    expect(again).toEqual(first);
    expect(github.requests).toEqual([]);
  });

  it('downloads a release once for concurrent fetches', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    const releases = source();
    const [a, b] = await Promise.all([releases.fetch(TAG), releases.fetch(TAG)]);
    expect(a).toEqual(b);
    expect(downloads()).toHaveLength(2);
  });

  it('refuses a truncated download, naming the asset, and caches nothing', async () => {
    await startGitHub();
    const release = github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    const chart = release.assets.find((asset) => asset.name.endsWith('.tgz'))!;
    github.addFault({
      server: 'download',
      pathIncludes: `/download/${chart.id}?`,
      times: Infinity,
      fault: { shortBody: true },
    });
    const error = await rejection(source().fetch(TAG));
    expect(error.kind).toBe('invalid-release');
    expect(error.message).toContain(
      `asset ${TAG}-cluster-class.tgz of release ${TAG} in example/stacks is truncated: downloaded 32768 of 65536 bytes (after 4 attempts)`,
    );
    await cacheIsEmpty();
  });

  it('retries a download cut off mid-body, and reports a persistent cut-off as unavailable with nothing cached', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    github.addFault({ server: 'download', pathIncludes: '/download/', times: 1, fault: { closeEarly: true } });
    const fetched = await source().fetch(TAG);
    expect((await readFile(path.join(fetched.dir, `${TAG}-cluster-class.tgz`))).length).toBe(65536);
    expect(sleeps).toHaveLength(1);

    await rm(cacheRoot, { recursive: true, force: true });
    github.addFault({ server: 'download', times: Infinity, fault: { closeEarly: true } });
    const error = await rejection(source().fetch(TAG));
    expect(error.kind).toBe('unavailable');
    expect(error.message).toMatch(/was cut off after \d+ of \d+ bytes/);
    await cacheIsEmpty();
  });

  it('refuses an asset larger than GitHub lists it, without retrying', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, {
      tag: TAG,
      assets: releaseAssets(TAG, [{ name: 'hashes.json', content: '{"a":1}', size: 3 }]),
    });
    const error = await rejection(source().fetch(TAG));
    expect(error.kind).toBe('invalid-release');
    expect(error.message).toContain(
      'asset hashes.json of release docker-ferrol-1-30-v1 in example/stacks is larger than the 3 bytes GitHub lists for it',
    );
    expect(sleeps).toEqual([]);
    await cacheIsEmpty();
  });

  it('refuses a release without metadata.yaml before downloading anything', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: [{ name: 'chart.tgz', content: 'x' }] });
    const error = await rejection(source().fetch(TAG));
    expect(error.kind).toBe('invalid-release');
    expect(error.message).toBe(`release ${TAG} in example/stacks has no metadata.yaml asset`);
    expect(downloads()).toEqual([]);
    await cacheIsEmpty();
  });

  it('refuses asset names that are not plain file names', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, {
      tag: TAG,
      assets: releaseAssets(TAG, [{ name: '../escape.yaml', content: 'x' }]),
    });
    const error = await rejection(source().fetch(TAG));
    expect(error.kind).toBe('invalid-release');
    expect(error.message).toContain('has an asset named "../escape.yaml"; asset names must be plain file names');
    expect(downloads()).toEqual([]);
    await cacheIsEmpty();
  });

  it('says which release is missing', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    const error = await rejection(source().fetch('docker-ferrol-1-30-v9'));
    expect(error.kind).toBe('not-found');
    expect(error.message).toBe(`release docker-ferrol-1-30-v9 is not in example/stacks at ${github.apiUrl}`);
  });

  it('retries server errors of the asset API', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    github.addFault({ pathIncludes: '/releases/assets/', times: 2, fault: { status: 503 } });
    github.addFault({ server: 'download', times: 1, fault: { status: 500 } });
    const fetched = await source().fetch(TAG);
    expect(fetched.digest).toBe(await treeDigest(fetched.dir));
    expect(sleeps).toHaveLength(3);
  });
});

describe('createSourceOpener', () => {
  it('opens github: locations as one shared source per repository, named as GitHubReleaseSource names it', async () => {
    await startGitHub();
    github.addRelease(OWNER, REPO, { tag: TAG, assets: releaseAssets(TAG) });
    const open = createSourceOpener({ cacheDir: cacheRoot, githubApiUrl: github.apiUrl, githubToken: TOKEN });
    const releases = open('github:example/stacks');
    // Octokit loads on first use: the opener hands out a stand-in with the adapter's own name.
    expect(releases.location).toBe(
      new GitHubReleaseSource({
        owner: 'example',
        repo: 'stacks',
        baseUrl: github.apiUrl,
        cache: new ReleaseCache(cacheRoot),
      }).location,
    );
    expect(open('github:example/stacks')).toBe(releases);
    expect(releases.location).not.toContain(TOKEN);
    expect((await releases.list()).releases.map((release) => release.tag)).toEqual([TAG]);
    expect(() => open('github:not a repo')).toThrow(/expected github:<owner>\/<repo>/);
  });
});
