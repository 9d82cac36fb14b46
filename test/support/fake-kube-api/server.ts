/** HTTP routing of the fake API server: auth, fault injection, discovery, REST verbs and watch streams. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ObjectApi, type DeleteOptions, type PatchType, type PropagationPolicy } from './object-api.js';
import {
  apiGroupDocument,
  apiGroupList,
  apiResourceList,
  apiVersions,
  ResourceRegistry,
  VERSION_INFO,
  type ResourceDefinition,
  type ResourceType,
} from './resources.js';
import { authorize, type FakeUser, type RequestAttributes } from './rbac.js';
import { ApiError, badRequest, failureStatus } from './status.js';
import { ObjectStore } from './store.js';
import { WatchHub, type WatchEvent } from './watch.js';

export interface FakeKubeApiOptions {
  /** When set, every request must carry `Authorization: Bearer <token>` (401 otherwise). */
  token?: string;
  /** Extra custom resources, as if their CRDs were installed. */
  resources?: ResourceDefinition[];
  /** How many events watches can replay before a resourceVersion is "too old" (410). Default 1000. */
  historyLimit?: number;
  /** Clock for creationTimestamp and deletionTimestamp. */
  now?: () => Date;
  /** Create missing namespaces on the fly instead of answering 404 like a real server. Default false. */
  autoCreateNamespaces?: boolean;
  /**
   * Further bearer tokens and whose they are. Requests with one of them are authorized by RBAC
   * (Roles, ClusterRoles and their bindings in the store; 403 Forbidden otherwise); the admin token
   * (`token`, default `fake-token`) stays `system:masters` and may do anything.
   */
  users?: Record<string, FakeUser>;
}

/** One request as the server saw it. */
export interface RequestRecord {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType?: string;
  /** The User-Agent header, when sent. */
  userAgent?: string;
  /** The user of a `users` token; absent for the admin token. */
  user?: string;
  /** What RBAC would check (verb, group, resource, subresource, namespace, name); absent for discovery and unknown paths. */
  attributes?: RequestAttributes;
  /** The HTTP status sent; for watches, 200 as soon as the stream started. */
  status?: number;
}

/** Makes the next matching request(s) fail with a Status of the given code. */
export interface FaultSpec {
  method?: string;
  /** Matched against the path plus query string, so `'watch=true'` selects watches. */
  pathIncludes?: string;
  status: number;
  /** How many matching requests fail; default 1. */
  times?: number;
  message?: string;
  reason?: string;
  /** Sent as Retry-After (and in the Status details), e.g. with 429. */
  retryAfterSeconds?: number;
}

interface Fault extends FaultSpec {
  remaining: number;
}

interface ResolvedPath {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: 'status';
}

const NOT_FOUND_PAGE = (): ApiError =>
  new ApiError(failureStatus(404, 'the server could not find the requested resource', 'NotFound', {}));

const PATCH_TYPES: Record<string, PatchType> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
  'application/apply-patch+yaml': 'apply',
  'application/apply-patch+cbor': 'apply',
};

const PROPAGATION_POLICIES = new Set(['Background', 'Foreground', 'Orphan']);

/** The HTTP server and everything it serves; `index.ts` wraps it in the public FakeKubeApi. */
export class FakeKubeApiServer {
  readonly registry: ResourceRegistry;
  readonly store: ObjectStore;
  readonly objects: ObjectApi;
  readonly watches: WatchHub;
  readonly requests: RequestRecord[] = [];
  private faults: Fault[] = [];
  private server: Server | undefined;
  private port = 0;

  constructor(private readonly options: FakeKubeApiOptions) {
    this.registry = new ResourceRegistry(options.resources ?? []);
    this.store = new ObjectStore(options.historyLimit ?? 1000);
    this.objects = new ObjectApi(this.store, this.registry, {
      now: options.now ?? (() => new Date()),
      autoCreateNamespaces: options.autoCreateNamespaces ?? false,
    });
    this.watches = new WatchHub(this.store);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Listens on 127.0.0.1; port 0 picks a free one, a later restart reuses it. */
  async listen(port = this.port): Promise<void> {
    const server = createServer({ noDelay: true }, (req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Stops accepting connections and cuts the open ones, like an API server going away. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  /** Cuts every open connection (watches included) but keeps listening. */
  dropConnections(): void {
    this.server?.closeAllConnections();
  }

  addFault(spec: FaultSpec): void {
    this.faults.push({ ...spec, remaining: spec.times ?? 1 });
  }

  clearFaults(): void {
    this.faults = [];
  }

  private takeFault(method: string, pathAndQuery: string): Fault | undefined {
    const fault = this.faults.find(
      (f) =>
        (!f.method || f.method.toUpperCase() === method) && (!f.pathIncludes || pathAndQuery.includes(f.pathIncludes)),
    );
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.faults = this.faults.filter((f) => f !== fault);
    return fault;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const method = (req.method ?? 'GET').toUpperCase();
    const record: RequestRecord = { method, path: url.pathname, query: Object.fromEntries(url.searchParams) };
    if (req.headers['content-type']) record.contentType = req.headers['content-type'];
    if (req.headers['user-agent']) record.userAgent = req.headers['user-agent'];
    const attributes = this.attributesOf(method, url);
    if (attributes) record.attributes = attributes;
    this.requests.push(record);
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      record.status = status;
      if (res.headersSent || res.destroyed) return;
      res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    try {
      const user = this.authenticate(req.headers.authorization);
      if (user) record.user = user.name;
      const fault = this.takeFault(method, url.pathname + url.search);
      if (fault) {
        const details =
          fault.retryAfterSeconds !== undefined ? { retryAfterSeconds: fault.retryAfterSeconds } : undefined;
        const status = failureStatus(
          fault.status,
          fault.message ?? `injected fault (HTTP ${fault.status})`,
          fault.reason,
          details,
        );
        const headers: Record<string, string> =
          fault.retryAfterSeconds !== undefined ? { 'Retry-After': String(fault.retryAfterSeconds) } : {};
        reply(fault.status, status, headers);
        return;
      }
      if (url.searchParams.has('dryRun')) {
        // Silently persisting a dry run would hide bugs; say so instead.
        throw badRequest('dryRun is not supported by the fake API server');
      }
      const body = await readBody(req);
      const watch = url.searchParams.get('watch');
      if (user) this.authorizeRequest(user, method, url);
      if (method === 'GET' && (watch === 'true' || watch === '1')) {
        this.serveWatch(res, url, record);
        return;
      }
      const [status, result] = this.route(method, url, body, req.headers['content-type']);
      reply(status, result);
    } catch (err) {
      if (err instanceof ApiError) reply(err.code, err.status);
      else
        reply(
          500,
          failureStatus(
            500,
            `Internal error occurred: ${err instanceof Error ? err.message : String(err)}`,
            'InternalError',
          ),
        );
    }
  }

  /** The user behind a bearer token: undefined for the admin (no RBAC check); 401 for an unknown token. */
  private authenticate(authorization: string | undefined): FakeUser | undefined {
    const token = authorization?.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : undefined;
    const user = token !== undefined ? this.options.users?.[token] : undefined;
    if (user) return user;
    const strict = this.options.token !== undefined || this.options.users !== undefined;
    if (strict && token !== (this.options.token ?? 'fake-token'))
      throw new ApiError(failureStatus(401, 'Unauthorized', 'Unauthorized'));
    return undefined;
  }

  /** RBAC for resource requests; discovery is open to every authenticated user (system:discovery). */
  private authorizeRequest(user: FakeUser, method: string, url: URL): void {
    const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (this.discovery(segments) !== undefined) return;
    authorize(this.store, user, this.requestAttributes(method, url, this.resolve(segments)));
  }

  /** The RBAC attributes of a resource request; undefined for discovery and paths that name no known resource. */
  private attributesOf(method: string, url: URL): RequestAttributes | undefined {
    try {
      const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
      if (this.discovery(segments) !== undefined) return undefined;
      return this.requestAttributes(method, url, this.resolve(segments));
    } catch {
      return undefined;
    }
  }

  private requestAttributes(method: string, url: URL, target: ResolvedPath): RequestAttributes {
    const watch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    const collection = target.name === undefined;
    const verbs: Record<string, string> = {
      GET: watch ? 'watch' : collection ? 'list' : 'get',
      POST: 'create',
      PUT: 'update',
      PATCH: 'patch',
      DELETE: collection ? 'deletecollection' : 'delete',
    };
    const attributes: RequestAttributes = {
      verb: verbs[method] ?? method.toLowerCase(),
      group: target.type.group,
      resource: target.type.plural,
    };
    if (target.subresource) attributes.subresource = target.subresource;
    if (target.namespace !== undefined) attributes.namespace = target.namespace;
    if (target.name !== undefined) attributes.name = target.name;
    return attributes;
  }

  private route(method: string, url: URL, body: unknown, contentType: string | undefined): [number, unknown] {
    const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const discovery = this.discovery(segments);
    if (discovery !== undefined) {
      if (method !== 'GET')
        throw new ApiError(
          failureStatus(405, 'the server does not allow this method on the requested resource', 'MethodNotAllowed'),
        );
      return [200, discovery];
    }
    const target = this.resolve(segments);
    const { type, namespace, name, subresource } = target;
    const params = url.searchParams;
    if (name === undefined) {
      const listOptions = {
        labelSelector: params.get('labelSelector') ?? undefined,
        fieldSelector: params.get('fieldSelector') ?? undefined,
        limit: params.has('limit') ? Number(params.get('limit')) : undefined,
        continue: params.get('continue') ?? undefined,
      };
      switch (method) {
        case 'GET':
          return [200, this.objects.list(type, namespace, listOptions)];
        case 'POST':
          if (type.namespaced && namespace === undefined) break;
          return [201, this.objects.create(type, namespace, body)];
        case 'DELETE':
          return [200, this.objects.deleteCollection(type, namespace, listOptions)];
      }
      throw new ApiError(
        failureStatus(405, 'the server does not allow this method on the requested resource', 'MethodNotAllowed'),
      );
    }
    switch (method) {
      case 'GET':
        return [200, this.objects.get(type, namespace, name)];
      case 'PUT':
        return [200, this.objects.update(type, namespace, name, body, subresource)];
      case 'PATCH': {
        const patchType = PATCH_TYPES[(contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? ''];
        if (!patchType) {
          throw new ApiError(
            failureStatus(
              415,
              `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
              'UnsupportedMediaType',
            ),
          );
        }
        return [200, this.objects.patch(type, namespace, name, patchType, body, subresource)];
      }
      case 'DELETE':
        if (subresource) break;
        return [200, this.objects.delete(type, namespace, name, deleteOptions(body, params))];
    }
    throw new ApiError(
      failureStatus(405, 'the server does not allow this method on the requested resource', 'MethodNotAllowed'),
    );
  }

  /** Discovery documents, or undefined when the path is not a discovery path. */
  private discovery(segments: string[]): unknown | undefined {
    const path = segments.join('/');
    if (path === 'version') return VERSION_INFO;
    if (path === 'api') return apiVersions(`127.0.0.1:${this.port}`);
    if (path === 'apis') return apiGroupList(this.registry);
    if (segments[0] === 'api' && segments.length === 2)
      return apiResourceList(this.registry, '', segments[1] ?? '') ?? this.throwNotFound();
    if (segments[0] === 'apis' && segments.length === 2)
      return apiGroupDocument(this.registry, segments[1] ?? '') ?? this.throwNotFound();
    if (segments[0] === 'apis' && segments.length === 3)
      return apiResourceList(this.registry, segments[1] ?? '', segments[2] ?? '') ?? this.throwNotFound();
    return undefined;
  }

  private throwNotFound(): never {
    throw NOT_FOUND_PAGE();
  }

  /** Maps `/api/v1/...` and `/apis/<g>/<v>/...` to a resource, namespace, name and subresource. */
  private resolve(segments: string[]): ResolvedPath {
    let group: string;
    let version: string;
    let rest: string[];
    if (segments[0] === 'api' && segments.length > 2) {
      group = '';
      version = segments[1] ?? '';
      rest = segments.slice(2);
    } else if (segments[0] === 'apis' && segments.length > 3) {
      group = segments[1] ?? '';
      version = segments[2] ?? '';
      rest = segments.slice(3);
    } else {
      throw NOT_FOUND_PAGE();
    }
    let namespace: string | undefined;
    if (
      rest[0] === 'namespaces' &&
      rest.length >= 3 &&
      this.registry.byPath(group, version, rest[2] ?? '')?.namespaced
    ) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const type = this.registry.byPath(group, version, rest[0] ?? '');
    if (!type || rest.length > 3) throw NOT_FOUND_PAGE();
    // A namespaced object is only reachable below /namespaces/<ns>/, a cluster-scoped one only outside it.
    if (type.namespaced && namespace === undefined && rest.length > 1) throw NOT_FOUND_PAGE();
    const resolved: ResolvedPath = { type };
    if (namespace !== undefined) resolved.namespace = namespace;
    if (rest[1] !== undefined) resolved.name = rest[1];
    if (rest[2] !== undefined) {
      if (rest[2] !== 'status' || !type.statusSubresource) throw NOT_FOUND_PAGE();
      resolved.subresource = 'status';
    }
    return resolved;
  }

  private serveWatch(res: ServerResponse, url: URL, record: RequestRecord): void {
    const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const target = this.resolve(segments);
    if (target.name !== undefined) throw NOT_FOUND_PAGE();
    const params = url.searchParams;
    let timer: NodeJS.Timeout | undefined;
    const head = (): void => {
      if (res.headersSent) return;
      record.status = 200;
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
      // client-node's Watch resolves only once headers arrive; the real server flushes them at once.
      res.flushHeaders();
    };
    const sink = {
      send: (event: WatchEvent): void => {
        if (res.writableEnded || res.destroyed) return;
        head();
        res.write(`${JSON.stringify(event)}\n`);
      },
      end: (): void => {
        if (timer) clearTimeout(timer);
        if (res.writableEnded || res.destroyed) return;
        head();
        res.end();
      },
    };
    const request = {
      type: target.type,
      allowWatchBookmarks: params.get('allowWatchBookmarks') === 'true',
      ...(target.namespace !== undefined ? { namespace: target.namespace } : {}),
      ...(params.get('resourceVersion') !== null ? { resourceVersion: params.get('resourceVersion') ?? '' } : {}),
      ...(params.get('labelSelector') !== null ? { labelSelector: params.get('labelSelector') ?? '' } : {}),
      ...(params.get('fieldSelector') !== null ? { fieldSelector: params.get('fieldSelector') ?? '' } : {}),
    };
    const close = this.watches.open(request, sink);
    head();
    res.on('close', () => {
      if (timer) clearTimeout(timer);
      close();
    });
    const timeoutSeconds = Number(params.get('timeoutSeconds') ?? '0');
    if (timeoutSeconds > 0 && !res.writableEnded) {
      timer = setTimeout(() => {
        close();
        sink.end();
      }, timeoutSeconds * 1000);
    }
  }
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
  // Server-side apply bodies may be YAML; they are refused later with 415, so there is nothing to parse.
  if (contentType === 'application/apply-patch+yaml') return text;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(
      `couldn't get version/kind; json parse error: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

function deleteOptions(body: unknown, params: URLSearchParams): DeleteOptions {
  const options: DeleteOptions = {};
  const fromBody = (typeof body === 'object' && body !== null ? body : {}) as {
    propagationPolicy?: string;
    orphanDependents?: boolean;
    preconditions?: { uid?: string; resourceVersion?: string };
  };
  let policy = params.get('propagationPolicy') ?? fromBody.propagationPolicy;
  const orphan = params.get('orphanDependents') ?? fromBody.orphanDependents;
  if (policy === undefined && (orphan === true || orphan === 'true')) policy = 'Orphan';
  if (policy !== undefined) {
    if (!PROPAGATION_POLICIES.has(policy))
      throw badRequest(
        `propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"`,
      );
    options.propagationPolicy = policy as PropagationPolicy;
  }
  if (fromBody.preconditions) options.preconditions = fromBody.preconditions;
  return options;
}
