// Vitest global setup: real API servers shared by the test files of a run. Starting one (etcd,
// kube-apiserver, kube-controller-manager, the CRDs, deploy/'s identity) takes 10-30 s, far more
// than most controller tests, so a run starts at most one per worker, and only once a file asks:
// a file leases a server for itself (test/support/real-controller-fixture.ts), and at its release
// the broker empties it back to what it held when first leased (real-kube-api/server-emptying.ts:
// every object made since deleted through etcd, the file's CRDs through the API) before the next
// file gets it. A file so has the server alone, as if it were fresh, with the
// same fixed namespace names. Having it alone, a file may also freeze (SIGSTOP), thaw or restart its
// kube-apiserver (/api-server); release thaws a frozen one before emptying it. The broker runs in
// vitest's main process and answers the workers on loopback HTTP; teardown kills every server it
// started, and fails when a process of one outlives it.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { readProcStat } from '../../src/core/proc-stat.js';
import { applyShippedIdentity, kustomizeDeploy, shippedIdentityOf } from './shipped-identity.js';
import {
  engineCrdFiles,
  startKubeControllerManager,
  startRealKubeApi,
  waitUntil,
  type KubeControllerManager,
  type LocalProcess,
  type RealKubeApi,
} from './real-kube-api/index.js';
import { emptyServer, serverKeys } from './real-kube-api/server-emptying.js';
import { runWideService, serveOnLoopback } from './run-wide-service.js';

/** What a worker needs to use a leased server: all plain data (it crosses processes). */
export interface LeasedServer {
  id: number;
  name: string;
  /** `https://127.0.0.1:<port>` */
  server: string;
  ca: string;
  /** The admin (`system:masters`): client certificate, and the same as a kubeconfig file. */
  admin: { cert: string; key: string; kubeconfigFile: string };
  /** deploy/argocd with the runtime-extension component applied: the controller's ServiceAccount token. */
  controller: { kubeconfigFile: string; user: string; namespace: string };
  auditLogFile: string;
  /** Namespaces the server keeps between files (system ones, deploy/'s): creating one again is a no-op. */
  kept: string[];
  versions: { kubernetes: string; etcd: string };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The broker's `http://127.0.0.1:<port>`. */
    realKubeApiBroker: string;
  }
}

/** Namespaces a server starts with (and deploy/'s); every other namespace belongs to the file that made it, and goes at its release. */
const SYSTEM_NAMESPACES = new Set(['default', 'kube-system', 'kube-public', 'kube-node-lease']);
/** deploy/argocd's namespaces: the controller's and Argo CD's (a Role there lets it write cluster Secrets). */
const DEPLOY_NAMESPACES = ['clusterstack-system', 'argocd'];
/** Marks the cluster-wide objects a file installed for itself (RealControllerFixture.install); they go at its release, as every object made since the lease. */
export const FILE_OWNED_LABEL = 'test.clusterstack.x-k8s.io/file-owned';
/**
 * Servers at most, for the whole run: two of the three workers (vitest.config.ts maxWorkers) hold one
 * each, and a third leasing file waits, which on two cores costs less than starting a third server.
 */
const MAX_SERVERS = 2;

/** The CRDs every leased server has: ours, Cluster API's core, Flux's, Argo CD's and the cluster-api-operator's. */
function crdFiles(): string[] {
  const ours = ['clusterstacks', 'clusterstackreleases', 'clusteraddons'].map((plural) =>
    path.resolve(`crds/clusterstack.x-k8s.io_${plural}.yaml`),
  );
  const capi = engineCrdFiles('cluster-api').filter((file) =>
    /cluster\.x-k8s\.io_(clusters|clusterclasses)\.yaml$|kubeadmcontrolplanes\.yaml$|extensionconfigs\.yaml$/.test(
      file,
    ),
  );
  const flux = [
    ...engineCrdFiles('kustomize-controller'),
    ...engineCrdFiles('source-controller').filter((file) => /gitrepositories|ocirepositories/.test(file)),
  ];
  return [...ours, ...capi, ...flux, ...engineCrdFiles('argo-cd'), ...engineCrdFiles('cluster-api-operator')];
}

interface Pooled {
  lease: LeasedServer;
  api: RealKubeApi;
  kcm: KubeControllerManager;
  /** etcd's keys after its start and identity: what it holds when leased (real-kube-api/server-emptying.ts). */
  baseline: ReadonlySet<string>;
  /** Resolves once emptied after its last lease. */
  clean: Promise<void>;
  busy: boolean;
  cpu: CpuLedger;
}

/** The phases of a server's life its CPU is counted in (said at teardown: where the servers' CPU goes). */
type Phase = 'start' | 'identity' | 'tests' | 'emptying' | 'idle';

/**
 * CPU-s of a server's processes by phase and program: each `mark` counts what they used since the
 * last one to the phase that just ended (from /proc: Linux).
 */
class CpuLedger {
  readonly spent = new Map<Phase, Map<string, number>>();
  readonly leases = { count: 0 };
  private readonly last = new Map<number, number>();
  constructor(private readonly processes: () => LocalProcess[]) {}

  mark(phase: Phase): void {
    const programs = this.spent.get(phase) ?? new Map<string, number>();
    this.spent.set(phase, programs);
    for (const process of this.processes()) {
      const now = readProcStat(process.pid)?.cpuSeconds;
      // Gone (a restarted kube-apiserver): what it used since the last mark is not counted.
      if (now === undefined) continue;
      const program = process.name.split(' ')[0]!;
      programs.set(program, (programs.get(program) ?? 0) + now - (this.last.get(process.pid) ?? 0));
      this.last.set(process.pid, now);
    }
  }

  /** One line: each phase's CPU-s, by program. */
  describe(name: string): string {
    const phases = [...this.spent].map(([phase, programs]) => {
      const total = [...programs.values()].reduce((sum, value) => sum + value, 0);
      const each = [...programs].map(([program, value]) => `${program} ${value.toFixed(1)}`).join(', ');
      return `${phase} ${total.toFixed(1)} (${each})`;
    });
    return `real API server ${name}, CPU-s over ${this.leases.count} leases: ${phases.join('; ')}`;
  }
}

/** The kube-controller-manager controllers a leased server runs, and the ServiceAccount each makes itself and runs as. */
const KCM_CONTROLLERS: Readonly<Record<string, string>> = {
  garbagecollector: 'generic-garbage-collector',
  namespace: 'namespace-controller',
};

/** deploy/ as every leased server has it: the argocd overlay with the runtime extension, in the argocd namespace. */
const IDENTITY = { overlay: 'argocd', components: ['runtime-extension'] };

/**
 * deploy/'s identity as seed objects (real-kube-api.ts): applying it at each start took 0.6-0.9 CPU-s
 * of kube-apiserver's (its CRDs updated, OpenAPI rebuilt) and three kubectl runs. Keyed by what
 * `kubectl kustomize` builds of deploy/.
 */
function identitySeedObjects(): NonNullable<Parameters<typeof startRealKubeApi>[0]>['seedObjects'] {
  const built = JSON.stringify(kustomizeDeploy(IDENTITY.overlay, IDENTITY.components));
  return {
    key: createHash('sha256').update(built).digest('hex'),
    apply: async (api) => {
      await api.admin.client.request('POST', '/api/v1/namespaces', {
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } },
      });
      await applyShippedIdentity(api, IDENTITY);
    },
  };
}

async function startPooled(id: number): Promise<Pooled> {
  // Its CRDs and deploy/'s identity from the per-machine seed (real-kube-api/etcd-seed.ts): installing
  // the CRDs took 4.3-5 CPU-s of kube-apiserver's a start.
  const api = await startRealKubeApi({
    name: `shared-${id}`,
    auditLog: true,
    crds: crdFiles(),
    seedObjects: identitySeedObjects(),
  });
  let kcm: KubeControllerManager | undefined;
  const cpu = new CpuLedger(() => [...api.processes, ...(kcm ? [kcm.process] : [])]);
  try {
    kcm = await startKubeControllerManager(api, { controllers: Object.keys(KCM_CONTROLLERS) });
    cpu.mark('start');
    const identity = await shippedIdentityOf(api);
    // Taken once kube-controller-manager made its controllers' ServiceAccounts (after its /healthz):
    // one missing from the baseline would be deleted at the first release, and its controller locked out.
    const accounts = Object.values(KCM_CONTROLLERS).map((name) => `/registry/serviceaccounts/kube-system/${name}`);
    let baseline = new Set<string>();
    await waitUntil(
      `kube-controller-manager (${api.name}) to make the ServiceAccounts ${Object.values(KCM_CONTROLLERS).join(', ')}`,
      async () => {
        baseline = new Set((await serverKeys(api)).keys);
        return accounts.every((key) => baseline.has(key));
      },
      [...api.processes, kcm.process],
      120_000,
    );
    cpu.mark('identity');
    return {
      api,
      kcm,
      baseline,
      clean: Promise.resolve(),
      busy: false,
      cpu,
      lease: {
        id,
        name: api.name,
        server: api.server,
        ca: api.pki.ca,
        admin: {
          cert: api.admin.certificate.cert,
          key: api.admin.certificate.key,
          kubeconfigFile: api.admin.kubeconfigFile,
        },
        controller: { kubeconfigFile: identity.kubeconfigFile, user: identity.user, namespace: identity.namespace },
        auditLogFile: api.auditLogFile!,
        kept: [...SYSTEM_NAMESPACES, ...DEPLOY_NAMESPACES],
        versions: api.versions,
      },
    };
  } catch (error) {
    await kcm?.stop();
    await api.stop();
    throw error;
  }
}

/** Empties a released server back to its baseline; fails (and the server is replaced) when it cannot. */
function empty(pooled: Pooled): Promise<void> {
  return emptyServer(pooled.api, pooled.baseline, [...pooled.api.processes, pooled.kcm.process]);
}

/** What a file may do to the kube-apiserver of the server it leased (RealControllerFixture's freeze, thaw, restart). */
export interface ServerFault {
  id: number;
  action: 'freeze' | 'thaw' | 'restart';
}

/** Freezes (SIGSTOP), thaws (SIGCONT) or restarts the leased server's kube-apiserver: the file has it alone, no other file sees it. */
async function serverFault(pool: Pooled[], { id, action }: ServerFault): Promise<void> {
  const pooled = pool.find((candidate) => candidate.lease.id === id && candidate.busy);
  if (!pooled) throw new Error(`no leased server ${id}`);
  if (action === 'freeze') pooled.api.freezeApiServer();
  else if (action === 'thaw') pooled.api.thawApiServer();
  else await pooled.api.restartApiServer();
}

function body(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    request.on('end', () => resolve(text));
    request.on('error', reject);
  });
}

/**
 * Provides the run's broker URL to a project: one broker for the run (test/support/run-wide-service.ts),
 * so that MAX_SERVERS bounds the servers of the run, not of each project. The last project's teardown
 * stops every server started.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { url, teardown } = await runWideService('clusterstack.test.realKubeApiBroker', startBroker);
  project.provide('realKubeApiBroker', url);
  return teardown;
}

/** Starts the broker (its HTTP server; API servers start as files lease them); `stop` stops every server started. */
async function startBroker(): Promise<{ url: string; stop: () => Promise<void> }> {
  const pool: Pooled[] = [];
  const starting: Promise<Pooled>[] = [];
  const waiting: ((pooled: Pooled) => void)[] = [];
  let nextId = 1;
  // How often a file had to wait for a server and for how long (said at teardown: whether MAX_SERVERS fits maxWorkers).
  const waits = { leases: 0, waited: 0, totalMs: 0, longestMs: 0 };
  // Set by teardown: servers are stopped as they are, without emptying them first.
  let stopping = false;

  const handOver = (pooled: Pooled): void => {
    const next = waiting.shift();
    if (next) {
      pooled.busy = true;
      next(pooled);
    } else pooled.busy = false;
  };
  const lease = async (): Promise<Pooled> => {
    const free = pool.find((pooled) => !pooled.busy);
    if (free) {
      free.busy = true;
      return emptied(free);
    }
    if (pool.length + starting.length < MAX_SERVERS) {
      const started = startPooled(nextId++);
      starting.push(started);
      try {
        const pooled = await started;
        pooled.busy = true;
        pool.push(pooled);
        return pooled;
      } finally {
        starting.splice(starting.indexOf(started), 1);
      }
    }
    const since = Date.now();
    const handed = await emptied(await new Promise<Pooled>((resolve) => waiting.push(resolve)));
    const waitedMs = Date.now() - since;
    waits.waited++;
    waits.totalMs += waitedMs;
    waits.longestMs = Math.max(waits.longestMs, waitedMs);
    return handed;
  };
  // A server once the last file's leftovers are gone; one that could not be emptied has left the
  // pool, and the lease goes to another (or a fresh) server instead of failing the file.
  const emptied = async (pooled: Pooled): Promise<Pooled> => {
    try {
      await pooled.clean;
      return pooled;
    } catch {
      return lease();
    }
  };

  const { url, close } = await serveOnLoopback(async (request, response) => {
    if (request.method === 'POST' && request.url === '/lease') {
      waits.leases++;
      // A file that gave up waiting (its hook timed out, its worker ended) has closed the connection:
      // the server it would have had goes to the next file instead of to no one, for the rest of the run.
      let abandoned = false;
      response.on('close', () => (abandoned = !response.writableFinished));
      const pooled = await lease();
      if (abandoned) {
        process.stderr.write(
          `real API server broker: a lease was given up while waiting; ${pooled.lease.name} handed on\n`,
        );
        handOver(pooled);
        return;
      }
      pooled.cpu.mark('idle');
      pooled.cpu.leases.count++;
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(pooled.lease));
      return;
    }
    if (request.method === 'POST' && request.url === '/release') {
      const { id } = JSON.parse(await body(request)) as { id: number };
      const pooled = pool.find((candidate) => candidate.lease.id === id);
      if (!pooled) throw new Error(`no leased server ${id}`);
      // A file that froze its server and failed before thawing it never hands a frozen one on.
      pooled.api.thawApiServer();
      pooled.cpu.mark('tests');
      pooled.clean = empty(pooled).then(
        () => pooled.cpu.mark('emptying'),
        async (error: unknown) => {
          if (stopping) return;
          // A server that cannot be emptied is not handed out again: the next lease starts a fresh one.
          // Said on stderr: the run goes on, but slower, and a file's leftovers are worth fixing.
          process.stderr.write(
            `real API server ${pooled.lease.name} could not be emptied, replaced: ${String(error)}\n`,
          );
          pool.splice(pool.indexOf(pooled), 1);
          await pooled.kcm.stop();
          await pooled.api.stop();
          throw error;
        },
      );
      // Seen by the next lease; not an unhandled rejection when there is none.
      pooled.clean.catch(() => undefined);
      handOver(pooled);
      response.writeHead(204).end();
      return;
    }
    if (request.method === 'POST' && request.url === '/api-server') {
      await serverFault(pool, JSON.parse(await body(request)) as ServerFault);
      response.writeHead(204).end();
      return;
    }
    response.writeHead(404).end();
  });

  const stop = async (): Promise<void> => {
    stopping = true;
    if (waits.leases > 0)
      process.stderr.write(
        `real API server broker: ${nextId - 1} servers started (at most ${MAX_SERVERS}), ${waits.leases} leases, ` +
          `${waits.waited} waited for a server: ${(waits.totalMs / 1000).toFixed(1)} s in all, the longest ${(waits.longestMs / 1000).toFixed(1)} s\n`,
      );
    close();
    await Promise.allSettled(starting);
    for (const pooled of pool) {
      pooled.cpu.mark(pooled.busy ? 'tests' : 'idle');
      process.stderr.write(`${pooled.cpu.describe(pooled.lease.name)}\n`);
    }
    // Not emptied first: the run is over, and the last file's namespaces may take long to go. Every
    // server killed at once (one by one with SIGTERM, they took 1.1-1.3 s each at the end of a run);
    // one not gone within 10 s of SIGKILL (stuck in the kernel) fails the teardown, named.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(pool.flatMap((pooled) => [pooled.kcm.stop(), pooled.api.stop()])),
      new Promise((resolve) => (timer = setTimeout(resolve, 10_000))),
    ]);
    clearTimeout(timer);
    const alive = pool
      .flatMap((pooled) => [...pooled.api.processes, pooled.kcm.process])
      .filter((process) => !process.exited());
    if (alive.length > 0)
      throw new Error(
        `the real API server broker left processes running: ${alive.map((process) => `${process.name} (pid ${process.pid})`).join(', ')}`,
      );
  };
  return { url, stop };
}
