// The certificates a real API server needs, made with the real openssl: a cluster CA, the API
// server's serving certificate for loopback, the service account signing key, and client
// certificates (the API server authenticates them as CN = user, O = groups).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface ClientCertificate {
  certFile: string;
  keyFile: string;
  /** PEM, for a kubeconfig's client-certificate-data. */
  cert: string;
  key: string;
}

export interface ClusterPki {
  dir: string;
  caFile: string;
  /** The CA certificate (PEM) clients trust. */
  ca: string;
  servingCertFile: string;
  servingKeyFile: string;
  serviceAccountKeyFile: string;
  serviceAccountPublicKeyFile: string;
  /** Signs a client certificate for `user` in `groups` (files named after `name`). */
  clientCertificate(name: string, user: string, groups?: string[]): ClientCertificate;
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: 'pipe' });
}

/** Writes a CA, a loopback serving certificate and a service account key pair into `dir`. */
export function makeClusterPki(dir: string): ClusterPki {
  const file = (name: string): string => path.join(dir, name);
  const caFile = file('ca.crt');
  const caKey = file('ca.key');
  openssl([
    'req',
    '-x509',
    ...EC_KEY,
    '-days',
    '2',
    '-subj',
    '/CN=clusterstack-test-ca',
    '-keyout',
    caKey,
    '-out',
    caFile,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  ]);

  const sign = (name: string, subject: string, extensions: string): { certFile: string; keyFile: string } => {
    const keyFile = file(`${name}.key`);
    const certFile = file(`${name}.crt`);
    const csr = file(`${name}.csr`);
    const ext = file(`${name}.ext`);
    writeFileSync(ext, extensions);
    openssl(['req', '-new', ...EC_KEY, '-subj', subject, '-keyout', keyFile, '-out', csr]);
    openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      caFile,
      '-CAkey',
      caKey,
      '-set_serial',
      `0x${Buffer.from(name).toString('hex').slice(0, 30)}`,
      '-days',
      '2',
      '-out',
      certFile,
      '-extfile',
      ext,
    ]);
    return { certFile, keyFile };
  };

  // The names a client in the cluster would use, and loopback, where the tests reach it.
  const serving = sign(
    'apiserver',
    '/CN=kube-apiserver',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' +
      'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n',
  );

  const serviceAccountKeyFile = file('sa.key');
  const serviceAccountPublicKeyFile = file('sa.pub');
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', serviceAccountKeyFile]);
  openssl(['pkey', '-in', serviceAccountKeyFile, '-pubout', '-out', serviceAccountPublicKeyFile]);

  return {
    dir,
    caFile,
    ca: readFileSync(caFile, 'utf8'),
    servingCertFile: serving.certFile,
    servingKeyFile: serving.keyFile,
    serviceAccountKeyFile,
    serviceAccountPublicKeyFile,
    clientCertificate(name, user, groups = []) {
      const subject = `/CN=${user}${groups.map((group) => `/O=${group}`).join('')}`;
      const { certFile, keyFile } = sign(
        `client-${name}`,
        subject,
        'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
      );
      return { certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
    },
  };
}
