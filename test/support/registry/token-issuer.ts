// A token server (the `realm` of distribution's token auth): checks Basic credentials and issues RS256
// JWTs that the real registry accepts. The signing certificate is self-signed, made with openssl at
// test time (node:crypto signs but cannot create X.509 certificates); the JWT carries it in `x5c`, and
// the registry's `rootcertbundle` holds the same certificate, so the chain verifies.
import { execFileSync } from 'node:child_process';
import { createSign, randomBytes, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export interface TokenIssuer {
  /** `http://127.0.0.1:<port>/token` */
  realm: string;
  service: string;
  issuer: string;
  /** PEM file for the registry's `auth.token.rootcertbundle`. */
  certFile: string;
  /** Every `scope` parameter requested, in order, for assertions. */
  requestedScopes: string[];
  close(): Promise<void>;
}

export interface TokenIssuerOptions {
  dir: string;
  username: string;
  password: string;
}

/** Starts a token server; keys go to `dir`. */
export async function startTokenIssuer(options: TokenIssuerOptions): Promise<TokenIssuer> {
  const keyFile = path.join(options.dir, 'token-key.pem');
  const certFile = path.join(options.dir, 'token-cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '2',
      '-subj',
      '/CN=clusterstack-test-token-issuer',
    ],
    { stdio: 'pipe' },
  );
  const privateKey = readFileSync(keyFile, 'utf8');
  const certificate = new X509Certificate(readFileSync(certFile));
  const service = 'clusterstack-test-registry';
  const issuer = 'clusterstack-test-issuer';
  const requestedScopes: string[] = [];

  const sign = (claims: object): string => {
    const header = { alg: 'RS256', typ: 'JWT', x5c: [certificate.raw.toString('base64')] };
    const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
    const signature = createSign('RSA-SHA256').update(input).sign(privateKey);
    return `${input}.${base64url(signature)}`;
  };

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const scopes = url.searchParams.getAll('scope');
    requestedScopes.push(...scopes);
    const authorization = request.headers.authorization ?? '';
    const expected = `Basic ${Buffer.from(`${options.username}:${options.password}`).toString('base64')}`;
    if (url.pathname !== '/token' || authorization !== expected || url.searchParams.get('service') !== service) {
      response.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Basic realm="token"' });
      response.end('{"details":"incorrect username or password"}');
      return;
    }
    const now = Math.floor(Date.now() / 1000);
    const access = scopes.flatMap((scope) => {
      const [type, name, actions] = scope.split(':');
      return type && name && actions ? [{ type, name, actions: actions.split(',') }] : [];
    });
    const token = sign({
      iss: issuer,
      sub: options.username,
      aud: service,
      exp: now + 300,
      nbf: now - 10,
      iat: now,
      jti: randomBytes(8).toString('hex'),
      access,
    });
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ token, expires_in: 300 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    realm: `http://127.0.0.1:${port}/token`,
    service,
    issuer,
    certFile,
    requestedScopes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function base64url(data: string | Buffer): string {
  return Buffer.from(data).toString('base64url');
}
