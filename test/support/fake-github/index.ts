/**
 * A fake GitHub over real HTTP on 127.0.0.1 (random ports), for driving code that uses the real
 * `octokit`: releases with Link pagination, ETag / If-None-Match (304, not counted), rate-limit
 * headers and 403 when exhausted, asset downloads redirected (302) to a second origin, pull
 * requests, fault injection and a request log.
 */
import { FakeGitHubServer, type FakeGitHubOptions, type FaultSpec, type GitHubRequestRecord } from './server.js';
import { FakeGitHubStore, type FakePullRequest, type FakeRelease, type FakeRepo, type ReleaseSpec } from './store.js';

export type { FakeGitHubOptions } from './server.js';
export type { AssetSpec } from './store.js';

export interface FakeGitHub {
  /** The API base URL to give octokit (`http://127.0.0.1:<port>` plus the path prefix, if any). */
  readonly apiUrl: string;
  /** The origin asset downloads are redirected to (a different port, so a different origin). */
  readonly downloadOrigin: string;
  /** Every request both servers saw, in order. */
  readonly requests: GitHubRequestRecord[];
  /** The current rate-limit window (mutable: tests may set `remaining`). */
  readonly rate: { limit: number; remaining: number; reset: number; used: number };

  addRepo(owner: string, name: string, options?: { private?: boolean; defaultBranch?: string }): FakeRepo;
  addRelease(owner: string, name: string, spec: ReleaseSpec): FakeRelease;
  /** One release per sub-directory of `dir`, named by its tag; its files become the assets. */
  addReleasesFromDirectory(owner: string, name: string, dir: string): Promise<FakeRelease[]>;
  pulls(owner: string, name: string): FakePullRequest[];
  /** Opens a pull request as someone else would (no request logged); `head` is `branch` or `owner:branch`. */
  addPull(
    owner: string,
    name: string,
    spec: { title: string; head: string; base: string; body?: string },
  ): FakePullRequest;

  /** Makes the next matching request(s) fail: an HTTP status, a hang, or a truncated download. */
  addFault(spec: FaultSpec): void;
  clearFaults(): void;
  /** Uses up the rate limit until `resetInSeconds` from the server's clock. */
  exhaustRateLimit(resetInSeconds: number): void;
  /** Forgets the request log. */
  clearRequests(): void;
  close(): Promise<void>;
}

export async function startFakeGitHub(options: FakeGitHubOptions = {}): Promise<FakeGitHub> {
  const store = new FakeGitHubStore();
  const server = new FakeGitHubServer(store, options);
  await server.start();
  return {
    get apiUrl() {
      return server.apiUrl;
    },
    get downloadOrigin() {
      return server.downloadOrigin;
    },
    requests: server.requests,
    rate: server.rate,
    addRepo: (owner, name, repoOptions) => store.addRepo(owner, name, repoOptions),
    addRelease: (owner, name, spec) => store.addRelease(owner, name, spec),
    addReleasesFromDirectory: (owner, name, dir) => store.addReleasesFromDirectory(owner, name, dir),
    pulls: (owner, name) => store.repo(owner, name)?.pulls ?? [],
    addPull: (owner, name, spec) => {
      const created = store.createPull(store.addRepo(owner, name), spec, options.now?.() ?? new Date());
      if (created === 'duplicate')
        throw new Error(`an open pull request for ${spec.head} into ${spec.base} exists already`);
      return created;
    },
    addFault: (spec) => server.addFault(spec),
    clearFaults: () => server.clearFaults(),
    exhaustRateLimit: (seconds) => server.exhaustRateLimit(seconds),
    clearRequests: () => {
      server.requests.length = 0;
    },
    close: () => server.close(),
  };
}
