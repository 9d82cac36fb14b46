/**
 * The HTTP side of the fake GitHub: an API server (releases with Link pagination, ETags and 304s,
 * rate limits, asset redirects, pull requests) and a second server on another port, i.e. another
 * origin, that serves asset bytes the way GitHub's object storage does.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  type FakeAsset,
  type FakeGitHubStore,
  type FakePullRequest,
  type FakeRelease,
  type FakeRepo,
} from './store.js';

export interface FakeGitHubOptions {
  /** Serve the API under this prefix, as GitHub Enterprise does (`/api/v3`). Default: none. */
  pathPrefix?: string;
  /** Tokens the server accepts. A request with any other token gets 401 "Bad credentials". */
  tokens?: string[];
  /**
   * Accepted tokens that may read but not write: the repository reports `permissions.push: false`
   * and pull-request writes answer 403 "Resource not accessible by personal access token".
   */
  readOnlyTokens?: string[];
  /** Requests per rate-limit window (GitHub: 60 unauthenticated). Default 5000. */
  rateLimit?: number;
  /** Length of a rate-limit window in seconds. Default 3600. */
  rateLimitWindowSeconds?: number;
  /** Clock for rate-limit resets and pull-request times. */
  now?: () => Date;
}

/** One request as a fake server saw it. */
export interface GitHubRequestRecord {
  server: 'api' | 'download';
  method: string;
  /** Path as received, prefix included, without the query. */
  path: string;
  query: Record<string, string>;
  /** Whether an Authorization header was sent. */
  authorization: boolean;
  accept?: string;
  ifNoneMatch?: string;
  status?: number;
  /** True when the request counted against the rate limit. */
  counted: boolean;
  /** True when the answer was a rate-limit refusal. */
  rateLimited: boolean;
  /**
   * A trickled answer (fault `trickle`): when its headers went out and when its connection closed
   * (performance.now() ms; `closedAt` unset while open), so that a test can time the client's giving
   * up as the server saw it, apart from whatever else its run did first.
   */
  trickled?: { startedAt: number; closedAt?: number };
}

export type FaultKind =
  /** Answers with this status and `{message}`, or with `body` as JSON when given (e.g. `[]` for a stale list). */
  | { status: number; message?: string; headers?: Record<string, string>; body?: unknown }
  | { hang: true }
  /** Sends the full Content-Length, half the body, then closes the connection. */
  | { closeEarly: true }
  /** Sends half the body with a matching Content-Length: a cleanly ended, short download. */
  | { shortBody: true }
  /** Sends the headers at once, then the body one byte every `intervalMs` (default 1000): alive, but never done. */
  | { trickle: true; intervalMs?: number };

export interface FaultSpec {
  server?: 'api' | 'download';
  /** Matched against the path (prefix included) plus query string. */
  pathIncludes?: string;
  method?: string;
  /** How many matching requests get the fault; default 1, Infinity for all. */
  times?: number;
  fault: FaultKind;
}

interface Fault extends FaultSpec {
  remaining: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** Headers now, then one byte per interval until the body is out or the client goes away. */
function trickle(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: Buffer,
  intervalMs: number,
  record: GitHubRequestRecord,
): void {
  const trickled: NonNullable<GitHubRequestRecord['trickled']> = { startedAt: performance.now() };
  record.trickled = trickled;
  res.writeHead(status, { ...headers, 'content-length': String(body.length) });
  res.flushHeaders();
  let sent = 0;
  const timer = setInterval(() => {
    if (sent >= body.length || res.destroyed) {
      clearInterval(timer);
      if (!res.destroyed) res.end();
      return;
    }
    res.write(body.subarray(sent, sent + 1));
    sent += 1;
  }, intervalMs);
  res.on('close', () => {
    clearInterval(timer);
    trickled.closedAt = performance.now();
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

export class FakeGitHubServer {
  readonly requests: GitHubRequestRecord[] = [];
  private readonly faults: Fault[] = [];
  private readonly apiServer: Server;
  private readonly downloadServer: Server;
  private readonly sockets = new Set<Socket>();
  private readonly prefix: string;
  private readonly now: () => Date;
  private readonly windowSeconds: number;
  private readonly downloadSecret = randomBytes(8).toString('hex');
  apiPort = 0;
  downloadPort = 0;
  readonly rate: { limit: number; remaining: number; reset: number; used: number };

  constructor(
    private readonly store: FakeGitHubStore,
    private readonly options: FakeGitHubOptions = {},
  ) {
    this.prefix = (options.pathPrefix ?? '').replace(/\/$/, '');
    this.now = options.now ?? (() => new Date());
    this.windowSeconds = options.rateLimitWindowSeconds ?? 3600;
    const limit = options.rateLimit ?? 5000;
    this.rate = { limit, remaining: limit, reset: this.epochSeconds() + this.windowSeconds, used: 0 };
    this.apiServer = createServer((req, res) => void this.handle('api', req, res));
    this.downloadServer = createServer((req, res) => void this.handle('download', req, res));
    for (const server of [this.apiServer, this.downloadServer])
      server.on('connection', (socket) => {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
      });
  }

  async start(): Promise<void> {
    this.apiPort = await listen(this.apiServer);
    this.downloadPort = await listen(this.downloadServer);
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.apiPort}${this.prefix}`;
  }

  get downloadOrigin(): string {
    return `http://127.0.0.1:${this.downloadPort}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(
      [this.apiServer, this.downloadServer].map(
        (server) => new Promise<void>((resolve) => server.close(() => resolve())),
      ),
    );
  }

  addFault(spec: FaultSpec): void {
    this.faults.push({ ...spec, remaining: spec.times ?? 1 });
  }

  clearFaults(): void {
    this.faults.length = 0;
  }

  /** Uses up the rate limit; it comes back `resetInSeconds` from now. */
  exhaustRateLimit(resetInSeconds: number): void {
    this.rate.used += this.rate.remaining;
    this.rate.remaining = 0;
    this.rate.reset = this.epochSeconds() + resetInSeconds;
  }

  private epochSeconds(): number {
    return Math.floor(this.now().getTime() / 1000);
  }

  private takeFault(server: 'api' | 'download', method: string, pathAndQuery: string): FaultKind | undefined {
    const index = this.faults.findIndex(
      (fault) =>
        fault.remaining > 0 &&
        (fault.server ?? 'api') === server &&
        (!fault.method || fault.method === method) &&
        (!fault.pathIncludes || pathAndQuery.includes(fault.pathIncludes)),
    );
    if (index < 0) return undefined;
    const fault = this.faults[index]!;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.faults.splice(index, 1);
    return fault.fault;
  }

  private rateHeaders(): Record<string, string> {
    return {
      'x-ratelimit-limit': String(this.rate.limit),
      'x-ratelimit-remaining': String(this.rate.remaining),
      'x-ratelimit-reset': String(this.rate.reset),
      'x-ratelimit-used': String(this.rate.used),
      'x-ratelimit-resource': 'core',
    };
  }

  private async handle(server: 'api' | 'download', req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const record: GitHubRequestRecord = {
      server,
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      authorization: req.headers.authorization !== undefined,
      counted: false,
      rateLimited: false,
    };
    if (req.headers.accept) record.accept = req.headers.accept;
    if (req.headers['if-none-match']) record.ifNoneMatch = String(req.headers['if-none-match']);
    this.requests.push(record);
    const fault = this.takeFault(server, record.method, `${url.pathname}${url.search}`);
    const send = (status: number, headers: Record<string, string>, body?: string | Buffer): void => {
      record.status = status;
      if (fault && 'trickle' in fault) {
        trickle(res, status, headers, Buffer.from(body ?? ''), fault.intervalMs ?? 1000, record);
        return;
      }
      res.writeHead(status, headers);
      res.end(body);
    };
    if (fault && 'hang' in fault) {
      record.status = 0;
      return; // Never answers; close() destroys the socket.
    }
    if (fault && 'status' in fault) {
      const body = fault.body !== undefined ? fault.body : { message: fault.message ?? `injected ${fault.status}` };
      send(fault.status, { 'content-type': 'application/json; charset=utf-8', ...fault.headers }, JSON.stringify(body));
      return;
    }
    try {
      if (server === 'download') {
        this.serveDownload(url, fault, record, res);
        return;
      }
      await this.serveApi(req, url, record, send);
    } catch (error) {
      if (error instanceof HttpError) {
        send(
          error.status,
          { 'content-type': 'application/json; charset=utf-8', ...(server === 'api' ? this.rateHeaders() : {}) },
          JSON.stringify({ message: error.message, documentation_url: 'https://docs.github.com/rest', ...error.extra }),
        );
      } else {
        send(
          500,
          { 'content-type': 'application/json; charset=utf-8' },
          JSON.stringify({ message: (error as Error).message }),
        );
      }
    }
  }

  private serveDownload(
    url: URL,
    fault: FaultKind | undefined,
    record: GitHubRequestRecord,
    res: ServerResponse,
  ): void {
    const match = /^\/download\/(\d+)$/.exec(url.pathname);
    const asset = match ? this.findAnyAsset(Number(match[1])) : undefined;
    if (!asset || url.searchParams.get('sig') !== this.signature(asset.id)) {
      record.status = 404;
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    const half = asset.content.subarray(0, Math.floor(asset.content.length / 2));
    if (fault && 'closeEarly' in fault) {
      record.status = 200;
      res.writeHead(200, { 'content-type': asset.contentType, 'content-length': String(asset.content.length) });
      res.write(half, () => res.destroy());
      return;
    }
    if (fault && 'trickle' in fault) {
      record.status = 200;
      trickle(
        res,
        200,
        { 'content-type': asset.contentType, 'content-length': String(asset.content.length) },
        asset.content,
        fault.intervalMs ?? 1000,
        record,
      );
      return;
    }
    const body = fault && 'shortBody' in fault ? half : asset.content;
    record.status = 200;
    res.writeHead(200, { 'content-type': asset.contentType, 'content-length': String(body.length) });
    res.end(body);
  }

  private findAnyAsset(id: number): FakeAsset | undefined {
    for (const repo of this.store.allRepos()) {
      const asset = this.store.findAsset(repo, id);
      if (asset) return asset;
    }
    return undefined;
  }

  private signature(assetId: number): string {
    return createHash('sha256').update(`${this.downloadSecret}:${assetId}`).digest('hex').slice(0, 16);
  }

  /** Checks the token and the rate limit; returns whether the caller is authenticated and may write. */
  private admit(req: IncomingMessage, record: GitHubRequestRecord): { authenticated: boolean; canWrite: boolean } {
    const authorization = req.headers.authorization;
    let authenticated = false;
    let canWrite = false;
    if (authorization !== undefined) {
      const token = authorization.replace(/^(token|bearer)\s+/i, '');
      const readOnly = (this.options.readOnlyTokens ?? []).includes(token);
      if (!(this.options.tokens ?? []).includes(token) && !readOnly) throw new HttpError(401, 'Bad credentials');
      authenticated = true;
      canWrite = !readOnly;
    }
    if (this.epochSeconds() >= this.rate.reset) {
      this.rate.remaining = this.rate.limit;
      this.rate.used = 0;
      this.rate.reset = this.epochSeconds() + this.windowSeconds;
    }
    if (this.rate.remaining <= 0) {
      record.rateLimited = true;
      throw new HttpError(
        403,
        `API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)`,
      );
    }
    return { authenticated, canWrite };
  }

  private count(record: GitHubRequestRecord): void {
    record.counted = true;
    this.rate.remaining -= 1;
    this.rate.used += 1;
  }

  private repoOr404(owner: string, name: string, authenticated: boolean): FakeRepo {
    const repo = this.store.repo(owner, name);
    if (!repo || (repo.private && !authenticated)) throw new HttpError(404, 'Not Found');
    return repo;
  }

  private async serveApi(
    req: IncomingMessage,
    url: URL,
    record: GitHubRequestRecord,
    send: (status: number, headers: Record<string, string>, body?: string | Buffer) => void,
  ): Promise<void> {
    if (this.prefix && !url.pathname.startsWith(`${this.prefix}/`)) throw new HttpError(404, 'Not Found');
    const route = url.pathname.slice(this.prefix.length);
    const method = req.method ?? 'GET';
    if (method === 'GET' && route === '/rate_limit') {
      send(
        200,
        { 'content-type': 'application/json; charset=utf-8', ...this.rateHeaders() },
        JSON.stringify({ resources: { core: this.rate }, rate: this.rate }),
      );
      return;
    }
    const { authenticated, canWrite } = this.admit(req, record);
    const json = (status: number, data: unknown, headers: Record<string, string> = {}): void => {
      send(
        status,
        { 'content-type': 'application/json; charset=utf-8', ...this.rateHeaders(), ...headers },
        JSON.stringify(data),
      );
    };
    // Conditional GETs: a matching ETag is answered 304 and, as on GitHub, not counted.
    const conditional = (data: unknown, headers: Record<string, string> = {}): void => {
      const body = JSON.stringify(data);
      const etag = `W/"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"`;
      const ifNoneMatch = req.headers['if-none-match'];
      if (
        ifNoneMatch &&
        ifNoneMatch
          .split(',')
          .map((value) => value.trim())
          .includes(etag)
      ) {
        send(304, { etag, ...this.rateHeaders(), ...headers });
        return;
      }
      this.count(record);
      send(200, { 'content-type': 'application/json; charset=utf-8', etag, ...this.rateHeaders(), ...headers }, body);
    };

    const repoMatch = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(route);
    if (!repoMatch) {
      this.count(record);
      throw new HttpError(404, 'Not Found');
    }
    const [, owner, name, rest = ''] = repoMatch as unknown as [string, string, string, string | undefined];
    let repo: FakeRepo;
    try {
      repo = this.repoOr404(decodeURIComponent(owner), decodeURIComponent(name), authenticated);
    } catch (error) {
      this.count(record);
      throw error;
    }
    const base = `${this.apiUrl}/repos/${repo.owner}/${repo.name}`;

    if (method === 'GET' && rest === '') {
      conditional({
        id: 1,
        name: repo.name,
        full_name: `${repo.owner}/${repo.name}`,
        private: repo.private,
        default_branch: repo.defaultBranch,
        owner: { login: repo.owner },
        // As on GitHub: only authenticated callers see what their token may do.
        ...(authenticated
          ? { permissions: { admin: false, maintain: false, push: canWrite, triage: canWrite, pull: true } }
          : {}),
      });
      return;
    }
    if (method === 'GET' && rest === '/releases') {
      const perPage = Math.min(100, Math.max(1, Number(url.searchParams.get('per_page') ?? 30) || 30));
      const page = Math.max(1, Number(url.searchParams.get('page') ?? 1) || 1);
      const releases = this.store.releasesOf(repo);
      const last = Math.max(1, Math.ceil(releases.length / perPage));
      const items = releases
        .slice((page - 1) * perPage, page * perPage)
        .map((release) => this.releaseJson(base, release));
      const link = (p: number, rel: string): string => `<${base}/releases?per_page=${perPage}&page=${p}>; rel="${rel}"`;
      const links: string[] = [];
      if (page > 1) links.push(link(page - 1, 'prev'));
      if (page < last) links.push(link(page + 1, 'next'), link(last, 'last'));
      if (page > 1) links.push(link(1, 'first'));
      conditional(items, links.length > 0 ? { link: links.join(', ') } : {});
      return;
    }
    const tagMatch = /^\/releases\/tags\/(.+)$/.exec(rest);
    if (method === 'GET' && tagMatch) {
      const release = repo.releases.find(
        (candidate) => candidate.tag === decodeURIComponent(tagMatch[1]!) && !candidate.draft,
      );
      this.count(record);
      if (!release) throw new HttpError(404, 'Not Found');
      json(200, this.releaseJson(base, release));
      return;
    }
    const assetMatch = /^\/releases\/assets\/(\d+)$/.exec(rest);
    if (method === 'GET' && assetMatch) {
      this.count(record);
      const asset = this.store.findAsset(repo, Number(assetMatch[1]));
      if (!asset) throw new HttpError(404, 'Not Found');
      if ((req.headers.accept ?? '').includes('application/octet-stream')) {
        send(302, {
          location: `${this.downloadOrigin}/download/${asset.id}?sig=${this.signature(asset.id)}`,
          ...this.rateHeaders(),
        });
      } else {
        json(200, this.assetJson(base, asset));
      }
      return;
    }
    if (rest === '/pulls' || /^\/pulls\/\d+$/.test(rest) || /^\/issues\/\d+\/comments$/.test(rest)) {
      this.count(record);
      if (method !== 'GET' && authenticated && !canWrite)
        throw new HttpError(403, 'Resource not accessible by personal access token');
      await this.servePulls(req, url, repo, rest, json);
      return;
    }
    this.count(record);
    throw new HttpError(404, 'Not Found');
  }

  private async servePulls(
    req: IncomingMessage,
    url: URL,
    repo: FakeRepo,
    rest: string,
    json: (status: number, data: unknown) => void,
  ): Promise<void> {
    const method = req.method ?? 'GET';
    const now = this.now();
    if (rest === '/pulls' && method === 'GET') {
      const state = url.searchParams.get('state') ?? 'open';
      const head = url.searchParams.get('head');
      const baseRef = url.searchParams.get('base');
      const pulls = repo.pulls.filter(
        (pull) =>
          (state === 'all' || pull.state === state) &&
          (!head || pull.headLabel === head) &&
          (!baseRef || pull.baseRef === baseRef),
      );
      json(
        200,
        pulls.map((pull) => this.pullJson(repo, pull)),
      );
      return;
    }
    if (rest === '/pulls' && method === 'POST') {
      const input = JSON.parse((await readBody(req)) || '{}') as {
        title?: string;
        head?: string;
        base?: string;
        body?: string;
        draft?: boolean;
      };
      if (!input.title || !input.head || !input.base) {
        throw new HttpError(422, 'Validation Failed', {
          errors: [
            {
              resource: 'PullRequest',
              code: 'missing_field',
              field: !input.title ? 'title' : !input.head ? 'head' : 'base',
            },
          ],
        });
      }
      const created = this.store.createPull(
        repo,
        {
          title: input.title,
          head: input.head,
          base: input.base,
          body: input.body ?? null,
          draft: input.draft ?? false,
        },
        now,
      );
      if (created === 'duplicate') {
        const label = input.head.includes(':') ? input.head : `${repo.owner}:${input.head}`;
        throw new HttpError(422, 'Validation Failed', {
          errors: [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${label}.` }],
        });
      }
      json(201, this.pullJson(repo, created));
      return;
    }
    const comment = /^\/issues\/(\d+)\/comments$/.exec(rest);
    if (comment && method === 'POST') {
      // Pull requests are issues too: GitHub comments on both through the issues API.
      const target = repo.pulls.find((candidate) => candidate.number === Number(comment[1]));
      if (!target) throw new HttpError(404, 'Not Found');
      const input = JSON.parse((await readBody(req)) || '{}') as { body?: string };
      if (!input.body)
        throw new HttpError(422, 'Validation Failed', {
          errors: [{ resource: 'IssueComment', code: 'missing_field', field: 'body' }],
        });
      target.comments.push(input.body);
      json(201, {
        id: 900_000 + target.comments.length,
        body: input.body,
        html_url: `https://github.example/${repo.owner}/${repo.name}/pull/${target.number}#issuecomment-${target.comments.length}`,
      });
      return;
    }
    const number = Number(rest.slice('/pulls/'.length));
    const pull = repo.pulls.find((candidate) => candidate.number === number);
    if (!pull) throw new HttpError(404, 'Not Found');
    if (method === 'GET') {
      json(200, this.pullJson(repo, pull));
      return;
    }
    if (method === 'PATCH') {
      const input = JSON.parse((await readBody(req)) || '{}') as {
        title?: string;
        body?: string;
        state?: 'open' | 'closed';
        base?: string;
      };
      if (input.title !== undefined) pull.title = input.title;
      if (input.body !== undefined) pull.body = input.body;
      if (input.state === 'open' || input.state === 'closed') pull.state = input.state;
      if (input.base !== undefined) pull.baseRef = input.base;
      pull.updatedAt = now.toISOString();
      json(200, this.pullJson(repo, pull));
      return;
    }
    throw new HttpError(404, 'Not Found');
  }

  private releaseJson(base: string, release: FakeRelease): unknown {
    return {
      id: release.id,
      url: `${base}/releases/${release.id}`,
      html_url: `https://github.example/releases/tag/${release.tag}`,
      tag_name: release.tag,
      name: release.name,
      draft: release.draft,
      prerelease: release.prerelease,
      created_at: release.createdAt,
      published_at: release.publishedAt,
      assets: release.assets.map((asset) => this.assetJson(base, asset)),
    };
  }

  private assetJson(base: string, asset: FakeAsset): unknown {
    return {
      id: asset.id,
      url: `${base}/releases/assets/${asset.id}`,
      browser_download_url: `${this.downloadOrigin}/download/${asset.id}`,
      name: asset.name,
      content_type: asset.contentType,
      state: 'uploaded',
      size: asset.size,
    };
  }

  private pullJson(repo: FakeRepo, pull: FakePullRequest): unknown {
    return {
      id: 500_000 + pull.number,
      number: pull.number,
      url: `${this.apiUrl}/repos/${repo.owner}/${repo.name}/pulls/${pull.number}`,
      html_url: `https://github.example/${repo.owner}/${repo.name}/pull/${pull.number}`,
      state: pull.state,
      title: pull.title,
      body: pull.body,
      draft: pull.draft,
      head: { ref: pull.headRef, label: pull.headLabel },
      base: { ref: pull.baseRef, label: `${repo.owner}:${pull.baseRef}` },
      created_at: pull.createdAt,
      updated_at: pull.updatedAt,
    };
  }
}
