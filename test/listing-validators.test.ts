// GitHub listings stay conditional across runs: the CLI, run twice as separate processes against the
// fake GitHub, reads every page in full once; the second run asks with If-None-Match, is answered
// 304 on every page and costs no rate limit. Stored validators are verified before use.
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RegistryClient } from '../src/oci/registry-client.js';
import { ListingValidators } from '../src/sources/listing-validators.js';
import { createSourceOpener } from '../src/sources/open-release-source.js';
import { defaultRemoteFetch } from '../src/http/remote-fetch.js';
import { removeCliBundle, runCliProcess } from './support/cli-process.js';
import { tempDir } from './support/cli.js';
import { type FakeGitHub, startFakeGitHub } from './support/fake-github/index.js';
import { pushReleaseDirectory } from './support/registry/push-artifact.js';
import { startRegistry } from './support/registry/index.js';

const OWNER = 'org';
const REPO = 'stacks';
let github: FakeGitHub;

beforeEach(async () => {
  github = await startFakeGitHub();
  // 150 releases: two pages of 100.
  for (let major = 1; major <= 150; major += 1)
    github.addRelease(OWNER, REPO, { tag: `docker-ferrol-1-30-v${major}`, assets: [] });
});
afterEach(async () => github.close());
afterAll(removeCliBundle);

const listingRequests = (): FakeGitHub['requests'] =>
  github.requests.filter((request) => request.server === 'api' && request.path.endsWith('/releases'));

async function listReleases(cacheDir: string): Promise<string[]> {
  const result = await runCliProcess(['releases', 'list', '--source', `github:${OWNER}/${REPO}`, '--json'], {
    env: { GITHUB_API_URL: github.apiUrl, CLUSTERSTACK_CACHE_DIR: cacheDir },
  });
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return (JSON.parse(result.stdout) as { tag: string }[]).map((row) => row.tag);
}

describe('listing validators across runs', () => {
  it('lets a second CLI process list an unchanged repository with 304s only, at no rate-limit cost', async () => {
    const cacheDir = await tempDir();
    const first = await listReleases(cacheDir);
    expect(first).toHaveLength(150);
    expect(
      listingRequests().map((request) => [request.status, request.counted, request.ifNoneMatch !== undefined]),
    ).toEqual([
      [200, true, false],
      [200, true, false],
    ]);

    github.clearRequests();
    const remaining = github.rate.remaining;
    const second = await listReleases(cacheDir);

    expect(second).toEqual(first);
    expect(
      listingRequests().map((request) => [request.status, request.counted, request.ifNoneMatch !== undefined]),
    ).toEqual([
      [304, false, true],
      [304, false, true],
    ]);
    expect(github.rate.remaining).toBe(remaining);
  });

  it('reads a changed repository in full again and stores the new validators', async () => {
    const cacheDir = await tempDir();
    await listReleases(cacheDir);
    github.addRelease(OWNER, REPO, { tag: 'docker-ferrol-1-30-v151', assets: [] });
    github.clearRequests();

    const changed = await listReleases(cacheDir);
    expect(changed).toContain('docker-ferrol-1-30-v151');
    expect(listingRequests().every((request) => request.ifNoneMatch !== undefined)).toBe(true);
    expect(listingRequests().filter((request) => request.status === 200).length).toBeGreaterThan(0);

    github.clearRequests();
    expect(await listReleases(cacheDir)).toEqual(changed);
    expect(listingRequests().every((request) => request.status === 304 && !request.counted)).toBe(true);
  });

  it('does not trust a stored page that was altered: it is removed and the page read in full', async () => {
    const cacheDir = await tempDir();
    const first = await listReleases(cacheDir);
    const dir = path.join(cacheDir, 'listings');
    const files = await readdir(dir);
    expect(files).toHaveLength(2);
    // Drop a release from each stored page, keeping the ETag: a 304 must not resurrect this page.
    for (const file of files) {
      const entry = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as { page: { releases: unknown[] } };
      entry.page.releases.pop();
      await writeFile(path.join(dir, file), JSON.stringify(entry));
    }
    github.clearRequests();

    expect(await listReleases(cacheDir)).toEqual(first);
    expect(
      listingRequests().map((request) => [request.status, request.counted, request.ifNoneMatch !== undefined]),
    ).toEqual([
      [200, true, false],
      [200, true, false],
    ]);
  });
});

describe('ListingValidators', () => {
  it('keeps pages apart per kind, source and URL, and writes no credential', async () => {
    const root = await tempDir();
    const github = new ListingValidators<{ n: number }>(
      root,
      'github-releases',
      'github:org/stacks@https://api.github.com',
    );
    const other = new ListingValidators<{ n: number }>(
      root,
      'github-releases',
      'github:org/other@https://api.github.com',
    );
    await github.put('https://api.github.com/repos/org/stacks/releases?per_page=100', {
      etag: 'W/"1"',
      page: { n: 1 },
    });
    expect(await github.get('https://api.github.com/repos/org/stacks/releases?per_page=100')).toEqual({
      etag: 'W/"1"',
      page: { n: 1 },
    });
    expect(await github.get('https://api.github.com/repos/org/stacks/releases?per_page=100&page=2')).toBeUndefined();
    expect(await other.get('https://api.github.com/repos/org/stacks/releases?per_page=100')).toBeUndefined();
    await github.remove('https://api.github.com/repos/org/stacks/releases?per_page=100');
    expect(await github.get('https://api.github.com/repos/org/stacks/releases?per_page=100')).toBeUndefined();
  });

  it('removes an entry that is not JSON', async () => {
    const root = await tempDir();
    const store = new ListingValidators<unknown>(root, 'oci-tags', 'oci://registry.example.test/stacks');
    await store.put('https://registry.example.test/v2/stacks/tags/list', { etag: '"abc"', page: ['a'] });
    const [file] = await readdir(path.join(root, 'listings'));
    await writeFile(path.join(root, 'listings', file!), '{"schema":1,');
    expect(await store.get('https://registry.example.test/v2/stacks/tags/list')).toBeUndefined();
    expect(await readdir(path.join(root, 'listings'))).toEqual([]);
  });
});

describe('OCI tag lists across runs', () => {
  // Debian's docker-registry sends no ETag on tag lists; registries (and the caches in front of
  // them) that do are modelled by a fetch that adds a content ETag and answers If-None-Match.
  function etagFetch(log: { status: number; conditional: boolean }[]): typeof fetch {
    return async (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      const response = await defaultRemoteFetch(input, init);
      if (!url.includes('/tags/list') || response.status !== 200) return response;
      const body = await response.text();
      const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
      const ifNoneMatch = new Headers(init?.headers).get('if-none-match');
      const status = ifNoneMatch === etag ? 304 : 200;
      log.push({ status, conditional: ifNoneMatch !== null });
      const headers = new Headers(response.headers);
      headers.set('etag', etag);
      return status === 304 ? new Response(null, { status, headers }) : new Response(body, { status, headers });
    };
  }

  it('asks for an unchanged tag list with If-None-Match in a later run and reuses the stored page on 304', async () => {
    const registry = await startRegistry();
    try {
      const client = new RegistryClient({ registry: registry.host, plainHttp: true });
      await pushReleaseDirectory(
        client,
        'scs/stacks',
        'docker-ferrol-1-30-v1',
        path.resolve('examples/quickstart/releases/docker-ferrol-1-30-v1'),
      );
      const cacheDir = await tempDir();
      const log: { status: number; conditional: boolean }[] = [];
      // Two openers on one cache directory: two runs.
      const list = async (): Promise<string[]> =>
        (
          await createSourceOpener({ cacheDir, plainHttp: true, fetch: etagFetch(log) })(
            `oci://${registry.host}/scs/stacks`,
          ).list()
        ).releases.map((release) => release.tag);
      expect(await list()).toEqual(['docker-ferrol-1-30-v1']);
      expect(await list()).toEqual(['docker-ferrol-1-30-v1']);
      expect(log).toEqual([
        { status: 200, conditional: false },
        { status: 304, conditional: true },
      ]);
      await pushReleaseDirectory(
        client,
        'scs/stacks',
        'docker-ferrol-1-30-v3',
        path.resolve('examples/quickstart/releases/docker-ferrol-1-30-v3'),
      );
      expect(await list()).toEqual(['docker-ferrol-1-30-v1', 'docker-ferrol-1-30-v3']);
      expect(log.at(-1)).toEqual({ status: 200, conditional: true });
    } finally {
      await registry.stop();
    }
  });
});
