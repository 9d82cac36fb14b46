// A real Kubernetes API server for tests: etcd and kube-apiserver, built from the Go module proxy
// (test/engines/build-engines.sh), on loopback with random free ports, their own CA and an admin
// client certificate. Start one per test file (about 5-15 s on a busy machine) and reuse it; start
// two for a management and a workload cluster. `stop()` ends both processes; the files stay in the
// run's temporary root (test/support/temp-root.ts), removed with it.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../registry/start-registry.js';
import { makeClusterPki, type ClientCertificate, type ClusterPki } from './cluster-pki.js';
import { builtEngine, engineBinary } from './engine-cache.js';
import { kubeClient, type KubeClient } from './kube-client.js';
import { startLocalProcess, waitUntil, type LocalProcess } from './local-process.js';

export interface KubeCredential {
  /** A kubeconfig (as YAML text: JSON is YAML) for this user, with certificate data inline. */
  kubeconfig: string;
  kubeconfigFile: string;
  client: KubeClient;
  certificate: ClientCertificate;
}

export interface RealKubeApi {
  name: string;
  /** `https://127.0.0.1:<port>` */
  server: string;
  dir: string;
  pki: ClusterPki;
  /** `system:masters`: the admin, for setting up what a test needs. */
  admin: KubeCredential;
  /** A credential for any user and groups (RBAC decides what it may do). */
  credential(user: string, groups?: string[]): KubeCredential;
  /** The versions it runs: kube-apiserver's (as /version reports it) and etcd's. */
  versions: { kubernetes: string; etcd: string };
  processes: LocalProcess[];
  /** With `auditLog`: the API server's audit log (JSON lines, one event per request at Metadata level). */
  auditLogFile?: string;
  /**
   * Kills kube-apiserver (SIGKILL: its graceful SIGTERM drain takes over 10 s) and starts it again on
   * the same port and etcd, as after a crash; resolves once ready. Clients see their connections cut.
   */
  restartApiServer(): Promise<void>;
  /**
   * SIGSTOPs kube-apiserver, as a stuck or partitioned server: the kernel still accepts connections,
   * nothing answers them, and requests already sent hang. `thawApiServer` (SIGCONT) ends it; `stop`
   * thaws first, `restartApiServer` kills the frozen process.
   */
  freezeApiServer(): void;
  /** SIGCONTs kube-apiserver: the requests held since the freeze are answered. A no-op when not frozen. */
  thawApiServer(): void;
  /** Whether kube-apiserver is frozen (freezeApiServer without thawApiServer since). */
  frozen(): boolean;
  stop(): Promise<void>;
}

export interface RealKubeApiOptions {
  /** Names the directory and the logs: e.g. `management`, `workload`. */
  name?: string;
  /** Extra kube-apiserver flags (`--flag=value`). */
  extraArgs?: string[];
  /** Write an audit log of every request (who, what, the answer's code) to `<dir>/audit.log`. */
  auditLog?: boolean;
}

// Metadata of every request once answered (and of a watch when it starts): enough to find any
// request refused with 403, and to see watches opened.
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
`;

/** The service network the API servers use; the API server's own Service takes its first address. */
const SERVICE_CIDR = '10.0.0.0/24';

/** A kubeconfig for `server` as `user` with this client certificate. */
function kubeconfigYaml(
  name: string,
  server: string,
  ca: string,
  certificate: ClientCertificate,
  user: string,
): string {
  const base64 = (text: string): string => Buffer.from(text).toString('base64');
  return `${JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name, cluster: { server, 'certificate-authority-data': base64(ca) } }],
      users: [
        {
          name: user,
          user: { 'client-certificate-data': base64(certificate.cert), 'client-key-data': base64(certificate.key) },
        },
      ],
      contexts: [{ name, context: { cluster: name, user } }],
      'current-context': name,
    },
    null,
    2,
  )}\n`;
}

/** Starts etcd and kube-apiserver and waits until the API server is ready (/readyz). */
export async function startRealKubeApi(options: RealKubeApiOptions = {}): Promise<RealKubeApi> {
  const name = options.name ?? 'kube';
  const etcdBinary = engineBinary('etcd', 'etcd');
  const apiServerBinary = engineBinary('kubernetes', 'kube-apiserver');
  const dir = mkdtempSync(path.join(os.tmpdir(), `csk-kube-${name}-`));
  const pki = makeClusterPki(mkdirAt(dir, 'pki'));
  const processes: LocalProcess[] = [];
  let frozen = false;
  const apiServerProcess = (): LocalProcess | undefined =>
    processes.find((process) => process.name === `kube-apiserver (${name})`);
  const signalApiServer = (signal: 'SIGSTOP' | 'SIGCONT'): void => {
    const process = apiServerProcess();
    if (process && !process.exited()) globalThis.process.kill(process.pid, signal);
  };
  const thawApiServer = (): void => {
    if (!frozen) return;
    signalApiServer('SIGCONT');
    frozen = false;
  };
  const stop = async (): Promise<void> => {
    // A stopped process takes no SIGTERM: it would wait out the SIGKILL delay.
    thawApiServer();
    // The API server first: it would log etcd's absence at length otherwise.
    for (const process of [...processes].reverse()) await process.stop();
  };
  try {
    const [clientPort, peerPort, securePort] = await distinctFreePorts(3);
    const etcdUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const etcd = startLocalProcess(
      `etcd (${name})`,
      etcdBinary,
      [
        `--name=${name}`,
        `--data-dir=${path.join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=${name}=${peerUrl}`,
        // A test's data need not survive a crash: no fsync, as envtest runs it.
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      path.join(dir, 'etcd.log'),
    );
    processes.push(etcd);
    await waitUntil(
      `etcd (${name}) to be healthy`,
      async () => {
        const response = await fetch(`${etcdUrl}/health`);
        return response.ok && ((await response.json()) as { health?: string }).health === 'true';
      },
      [etcd],
    );

    const server = `https://127.0.0.1:${securePort}`;
    const auditLogFile = options.auditLog ? path.join(dir, 'audit.log') : undefined;
    const auditArgs: string[] = [];
    if (auditLogFile) {
      const policyFile = path.join(dir, 'audit-policy.yaml');
      writeFileSync(policyFile, AUDIT_POLICY);
      auditArgs.push(
        `--audit-policy-file=${policyFile}`,
        `--audit-log-path=${auditLogFile}`,
        '--audit-log-mode=blocking',
      );
    }
    const apiServerArgs = [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // The reconciler refuses a loopback address for the kubernetes Service's endpoints.
      '--endpoint-reconciler-type=none',
      `--secure-port=${securePort}`,
      `--tls-cert-file=${pki.servingCertFile}`,
      `--tls-private-key-file=${pki.servingKeyFile}`,
      `--client-ca-file=${pki.caFile}`,
      `--service-account-issuer=https://kubernetes.default.svc.cluster.local`,
      `--service-account-key-file=${pki.serviceAccountPublicKeyFile}`,
      `--service-account-signing-key-file=${pki.serviceAccountKeyFile}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--authorization-mode=RBAC',
      // No kube-controller-manager by default makes no token or default ServiceAccount: the
      // admission plugin would refuse every Pod without one.
      '--disable-admission-plugins=ServiceAccount',
      '--allow-privileged=true',
      `--cert-dir=${mkdirAt(dir, 'apiserver-certs')}`,
      '--profiling=false',
      ...auditArgs,
      ...(options.extraArgs ?? []),
    ];
    const startApiServer = (): LocalProcess =>
      startLocalProcess(
        `kube-apiserver (${name})`,
        apiServerBinary,
        apiServerArgs,
        path.join(dir, 'kube-apiserver.log'),
      );
    processes.push(startApiServer());

    const credential = (user: string, groups: string[] = []): KubeCredential => {
      const fileName = user.replace(/[^a-zA-Z0-9.-]/g, '_');
      const certificate = pki.clientCertificate(fileName, user, groups);
      const kubeconfig = kubeconfigYaml(name, server, pki.ca, certificate, user);
      const kubeconfigFile = path.join(dir, `${fileName}.kubeconfig`);
      writeFileSync(kubeconfigFile, kubeconfig, { mode: 0o600 });
      return {
        kubeconfig,
        kubeconfigFile,
        certificate,
        client: kubeClient(server, { ca: pki.ca, cert: certificate.cert, key: certificate.key }),
      };
    };
    const admin = credential('clusterstack-test-admin', ['system:masters']);
    const ready = (): Promise<void> =>
      waitUntil(
        `kube-apiserver (${name}) to be ready`,
        async () => (await admin.client.request('GET', '/readyz')).status === 200,
        processes,
        120_000,
      );
    await ready();
    const version = (await admin.client.get('/version')) as { gitVersion: string };
    return {
      name,
      server,
      dir,
      pki,
      admin,
      credential,
      versions: { kubernetes: version.gitVersion, etcd: builtEngine('etcd').version },
      processes,
      ...(auditLogFile ? { auditLogFile } : {}),
      async restartApiServer() {
        // In place: callers hold `processes` to watch it.
        const index = processes.findIndex((process) => process.name === `kube-apiserver (${name})`);
        // SIGKILL ends a frozen process too, without its held requests being answered first.
        await processes[index]!.kill();
        frozen = false;
        processes[index] = startApiServer();
        await ready();
      },
      freezeApiServer() {
        signalApiServer('SIGSTOP');
        frozen = true;
      },
      thawApiServer,
      frozen: () => frozen,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function mkdirAt(parent: string, name: string): string {
  const dir = path.join(parent, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** `count` ports that were free a moment ago, all different. */
export async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}
