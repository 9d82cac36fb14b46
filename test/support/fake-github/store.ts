/** In-memory repositories, releases, assets and pull requests of the fake GitHub. */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

export interface FakeAsset {
  id: number;
  name: string;
  content: Buffer;
  contentType: string;
  /** The size the API reports; defaults to the content length (set it to fake a broken upload). */
  size: number;
}

export interface FakeRelease {
  id: number;
  tag: string;
  name: string;
  draft: boolean;
  prerelease: boolean;
  createdAt: string;
  publishedAt: string | null;
  assets: FakeAsset[];
}

export interface FakePullRequest {
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  /** The branch name. */
  headRef: string;
  /** `owner:branch`. */
  headLabel: string;
  baseRef: string;
  draft: boolean;
  createdAt: string;
  updatedAt: string;
  /** Bodies of the comments posted on it, oldest first. */
  comments: string[];
}

export interface FakeRepo {
  owner: string;
  name: string;
  /** Private repositories answer 404 unless a valid token is sent, as on GitHub. */
  private: boolean;
  defaultBranch: string;
  releases: FakeRelease[];
  pulls: FakePullRequest[];
}

export interface AssetSpec {
  name: string;
  content: string | Buffer;
  contentType?: string;
  /** Reported size when it should differ from the content length. */
  size?: number;
}

export interface ReleaseSpec {
  tag: string;
  assets?: AssetSpec[];
  draft?: boolean;
  prerelease?: boolean;
  name?: string;
  /** ISO 8601; defaults to a time derived from the release id, so later releases are newer. */
  publishedAt?: string;
}

const BASE_TIME = Date.parse('2024-01-01T00:00:00Z');

export class FakeGitHubStore {
  private readonly repos = new Map<string, FakeRepo>();
  private nextId = 1000;

  allRepos(): FakeRepo[] {
    return [...this.repos.values()];
  }

  repo(owner: string, name: string): FakeRepo | undefined {
    return this.repos.get(`${owner}/${name}`.toLowerCase());
  }

  /** Creates the repository if needed and returns it. */
  addRepo(owner: string, name: string, options: { private?: boolean; defaultBranch?: string } = {}): FakeRepo {
    const existing = this.repo(owner, name);
    if (existing) {
      if (options.private !== undefined) existing.private = options.private;
      return existing;
    }
    const repo: FakeRepo = {
      owner,
      name,
      private: options.private ?? false,
      defaultBranch: options.defaultBranch ?? 'main',
      releases: [],
      pulls: [],
    };
    this.repos.set(`${owner}/${name}`.toLowerCase(), repo);
    return repo;
  }

  addRelease(owner: string, name: string, spec: ReleaseSpec): FakeRelease {
    const repo = this.addRepo(owner, name);
    const id = this.nextId++;
    const created = new Date(BASE_TIME + id * 60_000).toISOString();
    const release: FakeRelease = {
      id,
      tag: spec.tag,
      name: spec.name ?? spec.tag,
      draft: spec.draft ?? false,
      prerelease: spec.prerelease ?? false,
      createdAt: created,
      publishedAt: spec.draft ? null : (spec.publishedAt ?? created),
      assets: (spec.assets ?? []).map((asset) => {
        const content = typeof asset.content === 'string' ? Buffer.from(asset.content) : asset.content;
        return {
          id: this.nextId++,
          name: asset.name,
          content,
          contentType: asset.contentType ?? 'application/octet-stream',
          size: asset.size ?? content.length,
        };
      }),
    };
    repo.releases.push(release);
    return release;
  }

  /** Adds one release per sub-directory of `dir` (named by tag), its files as assets. */
  async addReleasesFromDirectory(owner: string, name: string, dir: string): Promise<FakeRelease[]> {
    const added: FakeRelease[] = [];
    const entries = (await readdir(dir, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      const files = (await readdir(path.join(dir, entry.name), { withFileTypes: true }))
        .filter((file) => file.isFile())
        .sort((a, b) => a.name.localeCompare(b.name));
      const assets: AssetSpec[] = [];
      for (const file of files)
        assets.push({ name: file.name, content: await readFile(path.join(dir, entry.name, file.name)) });
      added.push(this.addRelease(owner, name, { tag: entry.name, assets }));
    }
    return added;
  }

  /** Newest first, as GitHub lists them. */
  releasesOf(repo: FakeRepo): FakeRelease[] {
    return [...repo.releases].sort((a, b) => b.id - a.id);
  }

  findAsset(repo: FakeRepo, id: number): FakeAsset | undefined {
    for (const release of repo.releases) {
      const asset = release.assets.find((candidate) => candidate.id === id);
      if (asset) return asset;
    }
    return undefined;
  }

  createPull(
    repo: FakeRepo,
    spec: { title: string; head: string; base: string; body?: string | null; draft?: boolean },
    now: Date,
  ): FakePullRequest | 'duplicate' {
    const headRef = spec.head.includes(':') ? spec.head.slice(spec.head.indexOf(':') + 1) : spec.head;
    const headLabel = spec.head.includes(':') ? spec.head : `${repo.owner}:${spec.head}`;
    if (repo.pulls.some((pull) => pull.state === 'open' && pull.headLabel === headLabel && pull.baseRef === spec.base))
      return 'duplicate';
    const pull: FakePullRequest = {
      number: repo.pulls.length + 1,
      title: spec.title,
      body: spec.body ?? null,
      state: 'open',
      headRef,
      headLabel,
      baseRef: spec.base,
      draft: spec.draft ?? false,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      comments: [],
    };
    repo.pulls.push(pull);
    return pull;
  }
}
