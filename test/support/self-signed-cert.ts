// A self-signed serving certificate for 127.0.0.1 and localhost, made with the real openssl, as
// cert-manager's Secret would hold it (tls.crt, tls.key).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface SelfSignedCert {
  dir: string;
  certFile: string;
  keyFile: string;
  /** The PEM certificate, to trust as the CA. */
  ca: string;
}

/** Writes tls.crt and tls.key into `dir` (a new temporary directory when not given). */
export function makeSelfSignedCert(
  dir = mkdtempSync(path.join(os.tmpdir(), 'csk-tls-')),
  commonName = 'clusterstack-runtime-extension',
): SelfSignedCert {
  const certFile = path.join(dir, 'tls.crt');
  const keyFile = path.join(dir, 'tls.key');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'pipe' },
  );
  return { dir, certFile, keyFile, ca: readFileSync(certFile, 'utf8') };
}
