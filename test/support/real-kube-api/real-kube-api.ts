// A real Kubernetes API server for tests: etcd and kube-apiserver, built from the Go module proxy
// (test/engines/build-engines.sh), on loopback with random free ports, their own CA and an admin
// client certificate. Start one per test file (about 5-15 s on a busy machine) and reuse it; start
// two for a management and a workload cluster. `stop()` kills both processes; the files stay in the
// run's temporary root (test/support/temp-root.ts), removed with it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../registry/start-registry.js';
import { makeClusterPki, type ClientCertificate, type ClusterPki } from './cluster-pki.js';
import { builtEngine, engineBinary } from './engine-cache.js';
import { copyDataDir, dropSeed, keepSeed, keptSeed, seedCacheDir, seedKey } from './etcd-seed.js';
import { installCrds, readCrds } from './install-crds.js';
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
  /** etcd's client URL (`http://127.0.0.1:<port>`, no TLS): its v3 JSON gateway answers there. */
  etcd: string;
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
   * and `restartApiServer` kill the frozen process.
   */
  freezeApiServer(): void;
  /** SIGCONTs kube-apiserver: the requests held since the freeze are answered. A no-op when not frozen. */
  thawApiServer(): void;
  /** Whether kube-apiserver is frozen (freezeApiServer without thawApiServer since). */
  frozen(): boolean;
  /** With `crds`: the seed it started on, and whether this start dropped a kept one (broken) or made it (none kept). */
  seed?: { key: string; dropped: boolean; made: boolean };
  /** Kills etcd and kube-apiserver (SIGKILL, at once) and resolves once both are gone: their data is thrown away. */
  stop(): Promise<void>;
}

export interface RealKubeApiOptions {
  /** Names the directory and the logs: e.g. `management`, `workload`. */
  name?: string;
  /** Extra kube-apiserver flags (`--flag=value`). */
  extraArgs?: string[];
  /** Write an audit log of every request (who, what, the answer's code) to `<dir>/audit.log`. */
  auditLog?: boolean;
  /**
   * CRD files the server starts with, Established: it starts on a copy of the per-machine seed for
   * these files and engines (etcd-seed.ts), made once by installing them when none is kept.
   */
  crds?: string[];
  /** Where seeds are kept (default: the per-machine seedCacheDir()). */
  seedCache?: string;
  /**
   * With `crds`: objects the seed holds besides them, made by `apply` on the server the seed is made
   * from, after the CRDs. `key` names what `apply` makes (it is part of the seed's key): change it
   * whenever that changes.
   */
  seedObjects?: { key: string; apply(api: RealKubeApi): Promise<void> };
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

/**
 * Starts etcd and kube-apiserver and waits until the API server is ready (/readyz) and serves every
 * CRD of `options.crds`.
 */
export async function startRealKubeApi(options: RealKubeApiOptions = {}): Promise<RealKubeApi> {
  const crdFiles = options.crds ?? [];
  if (crdFiles.length === 0) return startServer(options);
  const key = serverSeedKey(options);
  const root = options.seedCache ?? seedCacheDir();
  const names = readCrds(crdFiles).map((crd) => crd.name);
  const kept = keptSeed(root, key);
  let dropped = false;
  if (kept) {
    try {
      return Object.assign(await startOnSeed(options, kept, names), { seed: { key, dropped, made: false } });
    } catch (error) {
      // Never trusted when it does not start or hold what its key says: made again.
      process.stderr.write(`real API server seed ${key} dropped and made again: ${String(error)}\n`);
      dropSeed(root, key);
      dropped = true;
    }
  }
  const made = await makeSeed(root, key, crdFiles, options);
  return Object.assign(await startOnSeed(options, made, names), { seed: { key, dropped, made: true } });
}

/** The key of the seed a server started with `options` (and its `crds`) uses. */
export function serverSeedKey(options: RealKubeApiOptions): string {
  return seedKey(options.crds ?? [], {
    serviceCidr: SERVICE_CIDR,
    extraArgs: JSON.stringify(options.extraArgs ?? []),
    ...(options.seedObjects ? { seedObjects: options.seedObjects.key } : {}),
  });
}

/** The seeds this process is making, by key: two servers asking at once make one. */
const making = new Map<string, Promise<string>>();

/** The seed for `key`, made by installing `crdFiles` (and `seedObjects`) into a fresh server, then stopping it cleanly. */
function makeSeed(
  root: string,
  key: string,
  crdFiles: string[],
  { extraArgs, seedObjects }: Pick<RealKubeApiOptions, 'extraArgs' | 'seedObjects'>,
): Promise<string> {
  const started =
    making.get(`${root}\n${key}`) ??
    (async () => {
      const api = await startServer({ name: 'seed', ...(extraArgs ? { extraArgs } : {}) });
      try {
        const names = await installCrds(api, crdFiles);
        await seedObjects?.apply(api);
        // kube-apiserver first (killed: its graceful drain takes seconds, and nothing of it needs to
        // survive), then etcd by SIGTERM: it closes its database and log whole.
        const [etcd, apiServer] = api.processes;
        await apiServer!.kill();
        await etcd!.stop();
        keepSeed(root, key, path.join(api.dir, 'etcd'), names);
      } finally {
        await api.stop();
        rmSync(api.dir, { recursive: true, force: true });
      }
      const seed = keptSeed(root, key);
      if (!seed) throw new Error(`the real API server seed ${key} was made but is not kept in ${root}`);
      return seed;
    })().finally(() => making.delete(`${root}\n${key}`));
  making.set(`${root}\n${key}`, started);
  return started;
}

/**
 * Starts a server on a copy of `seed` and checks that it serves exactly the CRDs `names`,
 * Established, and lists them in discovery; stops it and throws otherwise.
 */
async function startOnSeed(options: RealKubeApiOptions, seed: string, names: string[]): Promise<RealKubeApi> {
  const api = await startServer(options, seed);
  try {
    const listed = (await api.admin.client.get(CRD_PATH)).items as {
      metadata: { name: string };
      spec: { group: string; names: { plural: string }; versions: { name: string; served: boolean }[] };
      status?: { conditions?: { type: string; status: string }[] };
    }[];
    const found = listed.map((crd) => crd.metadata.name).sort();
    if (JSON.stringify(found) !== JSON.stringify([...names].sort()))
      throw new Error(`it holds the CRDs ${found.join(', ') || 'none'}, not ${[...names].sort().join(', ')}`);
    const unestablished = listed.filter(
      (crd) =>
        !crd.status?.conditions?.some((condition) => condition.type === 'Established' && condition.status === 'True'),
    );
    if (unestablished.length > 0)
      throw new Error(`its CRDs ${unestablished.map((crd) => crd.metadata.name).join(', ')} are not Established`);
    // Discovery follows the CRDs' informer moments after /readyz: what kubectl and the broker read.
    const served = listed.flatMap((crd) =>
      crd.spec.versions
        .filter((version) => version.served)
        .map((version) => `${crd.spec.group}/${version.name}/${crd.spec.names.plural}`),
    );
    await waitUntil(
      `kube-apiserver (${api.name}) to list its CRDs in discovery`,
      async () => {
        const discovered = await discoveredResources(api.admin.client);
        return served.every((resource) => discovered.has(resource));
      },
      api.processes,
      60_000,
    );
    return api;
  } catch (error) {
    await api.stop();
    throw error;
  }
}

/** `group/version/plural` of every resource aggregated discovery lists under /apis. */
async function discoveredResources(client: KubeClient): Promise<Set<string>> {
  const response = await client.request('GET', '/apis', {
    accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
  });
  const resources = new Set<string>();
  if (response.status !== 200) return resources;
  for (const group of response.body.items as {
    metadata: { name?: string };
    versions: { version: string; resources: { resource: string }[] }[];
  }[])
    for (const version of group.versions)
      for (const resource of version.resources)
        resources.add(`${group.metadata.name ?? ''}/${version.version}/${resource.resource}`);
  return resources;
}

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** Starts etcd (on a copy of `seed` when given) and kube-apiserver, and waits until the API server is ready. */
async function startServer(options: RealKubeApiOptions, seed?: string): Promise<RealKubeApi> {
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
    // Killed, both at once: nothing of a test server outlives it (its files are the run's to remove),
    // and a SIGTERM cost a second each, kube-apiserver's graceful drain. SIGKILL ends a frozen one too.
    await Promise.all(processes.map((process) => process.kill()));
    frozen = false;
  };
  try {
    const [clientPort, peerPort, securePort] = await distinctFreePorts(3);
    const etcdUrl = `http://127.0.0.1:${clientPort}`;
    // A seed's etcd keeps its member and cluster as they were made; a lone member needs no peer.
    if (seed) copyDataDir(seed, path.join(dir, 'etcd'));
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
      etcd: etcdUrl,
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
