/** A Git smart-HTTP server for tests: git's own `git http-backend` run as CGI behind node:http. */
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export interface GitHttpServerOptions {
  /** Directory holding the bare repositories; `/<name>.git` in the URL is `<projectRoot>/<name>.git`. */
  projectRoot: string;
  /** When set, requests must carry `Authorization: Basic base64(<any user>:<token>)`; 401 otherwise. */
  token?: string;
}

export interface GitHttpServer {
  /** `http://127.0.0.1:<port>`; append `/<repo>.git`. */
  url: string;
  /** Every request as `METHOD path?query -> status`, for assertions and failure messages. */
  requests: string[];
  /** Authorization headers received (to check what the client sent, never for logging). */
  authorizations: string[];
  close(): Promise<void>;
}

const BACKEND = path.join(spawnSync('git', ['--exec-path'], { encoding: 'utf8' }).stdout.trim(), 'git-http-backend');

function tokenOf(header: string | undefined): string | undefined {
  if (header === undefined || !header.startsWith('Basic ')) return undefined;
  const decoded = Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

/** Runs the CGI and copies its `Status:` and headers into the response, then streams the body. */
function runBackend(
  projectRoot: string,
  request: IncomingMessage,
  response: ServerResponse,
  remoteUser: string,
  done: (status: number) => void,
): void {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GIT_PROJECT_ROOT: projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    REQUEST_METHOD: request.method ?? 'GET',
    QUERY_STRING: url.search.replace(/^\?/, ''),
    PATH_INFO: decodeURIComponent(url.pathname),
    CONTENT_TYPE: request.headers['content-type'] ?? '',
    REMOTE_USER: remoteUser,
    REMOTE_ADDR: '127.0.0.1',
    GIT_CONFIG_NOSYSTEM: '1',
    HOME: projectRoot,
  };
  if (request.headers['content-length'] !== undefined) env.CONTENT_LENGTH = request.headers['content-length'];
  if (request.headers['content-encoding'] !== undefined)
    env.HTTP_CONTENT_ENCODING = request.headers['content-encoding'];
  if (request.headers['git-protocol'] !== undefined) env.GIT_PROTOCOL = String(request.headers['git-protocol']);
  const cgi = spawn(BACKEND, [], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  request.pipe(cgi.stdin);
  let head = Buffer.alloc(0);
  let headersSent = false;
  let status = 200;
  cgi.stdout.on('data', (chunk: Buffer) => {
    if (headersSent) {
      response.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const text = head.toString('latin1');
    const end = text.search(/\r?\n\r?\n/);
    if (end < 0) return;
    const separator = text.slice(end).match(/^\r?\n\r?\n/)?.[0] ?? '\n\n';
    for (const line of text.slice(0, end).split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
      else response.setHeader(name, value);
    }
    response.statusCode = status;
    headersSent = true;
    const rest = head.subarray(end + separator.length);
    if (rest.length > 0) response.write(rest);
  });
  cgi.on('close', (code) => {
    if (!headersSent) {
      status = 500;
      response.statusCode = 500;
      response.end(`git http-backend exited with ${code}\n`);
    } else response.end();
    done(status);
  });
  cgi.on('error', (error) => {
    response.statusCode = 500;
    response.end(String(error));
    done(500);
  });
}

/** Starts the server on 127.0.0.1 with a free port. Enable pushes per repo with `http.receivepack`. */
export async function startGitHttpServer(options: GitHttpServerOptions): Promise<GitHttpServer> {
  const requests: string[] = [];
  const authorizations: string[] = [];
  const server = createServer((request, response) => {
    const line = `${request.method} ${request.url}`;
    const authorization = request.headers.authorization;
    if (authorization !== undefined) authorizations.push(authorization);
    if (options.token !== undefined && tokenOf(authorization) !== options.token) {
      requests.push(`${line} -> 401`);
      request.resume();
      response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git-http-server"', 'Content-Type': 'text/plain' });
      response.end('authentication required\n');
      return;
    }
    runBackend(
      options.projectRoot,
      request,
      response,
      options.token === undefined ? 'anonymous' : 'token-user',
      (status) => requests.push(`${line} -> ${status}`),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    authorizations,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
