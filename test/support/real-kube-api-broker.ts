// Vitest global setup: real API servers shared by the test files of a run. Starting one (etcd,
// kube-apiserver, kube-controller-manager, the CRDs, deploy/'s identity) takes 10-30 s, far more
// than most controller tests, so a run starts at most one per worker, and only once a file asks:
// a file leases a server for itself (test/support/real-controller-fixture.ts), and at its release
// the broker empties it (finalizers stripped, the file's namespaces deleted, leases and events
// gone) before the next file gets it. A file so has the server alone, as if it were fresh, with the
// same fixed namespace names. Having it alone, a file may also freeze (SIGSTOP), thaw or restart its
// kube-apiserver (/api-server); release thaws a frozen one before emptying it. The broker runs in
// vitest's main process and answers the workers on loopback HTTP; teardown stops every server it started.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { applyShippedIdentity } from './shipped-identity.js';
import {
  engineCrdFiles,
  installCrds,
  startKubeControllerManager,
  startRealKubeApi,
  waitUntil,
  type KubeControllerManager,
  type RealKubeApi,
} from './real-kube-api/index.js';

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

/** Namespaces a server starts with (and deploy/'s); every other namespace belongs to the file that made it. */
const SYSTEM_NAMESPACES = new Set(['default', 'kube-system', 'kube-public', 'kube-node-lease']);
/** deploy/argocd's namespaces: the controller's and Argo CD's (a Role there lets it write cluster Secrets). */
const DEPLOY_NAMESPACES = ['clusterstack-system', 'argocd'];
/** The kinds the controller puts finalizers on: stripped, so that a namespace's deletion ends. */
const FINALIZED = [
  ['/apis/clusterstack.x-k8s.io/v1alpha1', 'clusterstacks'],
  ['/apis/clusterstack.x-k8s.io/v1alpha1', 'clusterstackreleases'],
  ['/apis/clusterstack.x-k8s.io/v1alpha1', 'clusteraddons'],
  ['/apis/cluster.x-k8s.io/v1beta2', 'clusters'],
] as const;
/** What a file may leave in a kept namespace, besides FINALIZED; deploy/'s own objects (labelled part-of) stay. */
const LEFT_IN_KEPT = [
  ['/api/v1', 'secrets'],
  ['/api/v1', 'configmaps'],
  ['/api/v1', 'events'],
  ['/apis/coordination.k8s.io/v1', 'leases'],
  ['/apis/discovery.k8s.io/v1', 'endpointslices'],
  ['/apis/argoproj.io/v1alpha1', 'applications'],
  ['/apis/argoproj.io/v1alpha1', 'applicationsets'],
  ['/apis/argoproj.io/v1alpha1', 'appprojects'],
] as const;
/** Cluster-wide objects a file installed for itself (RealControllerFixture.install): deleted at its release. */
export const FILE_OWNED_LABEL = 'test.clusterstack.x-k8s.io/file-owned';
/** The cluster-wide kinds a file may install: deleted by FILE_OWNED_LABEL, CRDs last (their objects go with them). */
const FILE_OWNED_KINDS = [
  '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings',
  '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies',
  '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  '/apis/rbac.authorization.k8s.io/v1/clusterroles',
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
];
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
  /** Resolves once emptied after its last lease. */
  clean: Promise<void>;
  busy: boolean;
}

async function startPooled(id: number): Promise<Pooled> {
  const api = await startRealKubeApi({ name: `shared-${id}`, auditLog: true });
  try {
    const kcm = await startKubeControllerManager(api, { controllers: ['garbagecollector', 'namespace'] });
    await installCrds(api, crdFiles());
    await api.admin.client.request('POST', '/api/v1/namespaces', {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } },
    });
    const identity = await applyShippedIdentity(api, { overlay: 'argocd', components: ['runtime-extension'] });
    return {
      api,
      kcm,
      clean: Promise.resolve(),
      busy: false,
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
    await api.stop();
    throw error;
  }
}

/** Removes what a file left: finalizers, its namespaces (kube-controller-manager deletes their content), what it put in kept ones. */
async function empty(pooled: Pooled): Promise<void> {
  const client = pooled.api.admin.client;
  const kept = new Set(pooled.lease.kept);
  for (const [prefix, plural] of FINALIZED) {
    const listed = await client.get(`${prefix}/${plural}`);
    for (const item of listed.items as { metadata: { name: string; namespace: string; finalizers?: string[] } }[]) {
      if (!item.metadata.finalizers?.length) continue;
      await client.request('PATCH', `${prefix}/namespaces/${item.metadata.namespace}/${plural}/${item.metadata.name}`, {
        contentType: 'application/merge-patch+json',
        body: { metadata: { finalizers: null } },
      });
    }
  }
  const namespaces = (await client.get('/api/v1/namespaces')).items as { metadata: { name: string } }[];
  const owned = namespaces.map((ns) => ns.metadata.name).filter((name) => !kept.has(name));
  for (const name of owned) await client.request('DELETE', `/api/v1/namespaces/${name}`);
  for (const namespace of kept) {
    for (const [prefix, plural] of [...FINALIZED, ...LEFT_IN_KEPT]) {
      const collection = `${prefix}/namespaces/${namespace}/${plural}`;
      // A CRD established moments ago answers 429 while its storage starts: ask again.
      await waitUntil(
        `${collection} to be emptied`,
        async () =>
          (await client.request('DELETE', collection, { query: { labelSelector: '!app.kubernetes.io/part-of' } }))
            .status === 200,
        pooled.api.processes,
        30_000,
      );
    }
  }
  // The namespaces go first, while the file's own CRDs still serve their kinds: deleted together,
  // kube-controller-manager could finalize a namespace whose objects of such a kind it no longer
  // saw, and the next file met one (a ClusterRequest of the same name) in its new namespace.
  await waitUntil(
    `the namespaces of the last file (${owned.join(', ')}) to be deleted`,
    async () => {
      const left = ((await client.get('/api/v1/namespaces')).items as { metadata: { name: string } }[]).filter((ns) =>
        owned.includes(ns.metadata.name),
      );
      return left.length === 0;
    },
    [...pooled.api.processes, pooled.kcm.process],
    120_000,
  );
  await deleteObjectsOfOwnCrds(client, pooled.lease.name);
  for (const collection of FILE_OWNED_KINDS)
    await client.request('DELETE', collection, { query: { labelSelector: FILE_OWNED_LABEL } });
  // A CRD of the same name installed by the next file would meet this one still terminating.
  await waitUntil(
    `the last file's own CRDs to be deleted`,
    async () =>
      (
        (await client.request('GET', FILE_OWNED_KINDS.at(-1)!, { query: { labelSelector: FILE_OWNED_LABEL } })).body
          .items as unknown[]
      ).length === 0,
    pooled.api.processes,
    120_000,
  );
}

/**
 * Deletes, finalizers stripped, every namespaced object still there of a kind a file-owned CRD
 * serves. None should be (its namespaces are gone); one that is would meet the next file installing the same
 * CRD, so it is removed and said on stderr, to be found.
 */
async function deleteObjectsOfOwnCrds(client: RealKubeApi['admin']['client'], server: string): Promise<void> {
  const crds = (await client.get(`${FILE_OWNED_KINDS.at(-1)!}?labelSelector=${encodeURIComponent(FILE_OWNED_LABEL)}`))
    .items as { spec: { group: string; names: { plural: string }; versions: { name: string; storage: boolean }[] } }[];
  for (const crd of crds) {
    const version = crd.spec.versions.find((candidate) => candidate.storage)?.name ?? crd.spec.versions[0]!.name;
    const collection = `/apis/${crd.spec.group}/${version}/${crd.spec.names.plural}`;
    const listed = await client.request('GET', collection);
    const items = (listed.status === 200 ? listed.body.items : []) as {
      metadata: { name: string; namespace?: string; finalizers?: string[] };
    }[];
    // Cluster-scoped ones go with their CRD; a namespaced one left means its namespace went without it.
    for (const item of items.filter((candidate) => candidate.metadata.namespace !== undefined)) {
      const where = `/apis/${crd.spec.group}/${version}/namespaces/${item.metadata.namespace}/${crd.spec.names.plural}/${item.metadata.name}`;
      process.stderr.write(
        `real API server ${server}: ${crd.spec.names.plural} ${where} outlived its namespace; deleted\n`,
      );
      if (item.metadata.finalizers?.length)
        await client.request('PATCH', where, {
          contentType: 'application/merge-patch+json',
          body: { metadata: { finalizers: null } },
        });
      await client.request('DELETE', where);
    }
  }
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

/** A broker as the projects of one run share it. */
interface SharedBroker {
  started: Promise<{ url: string; stop: () => Promise<void> }>;
  /** Projects whose teardown has not run yet: the last one stops the broker. */
  users: number;
}
const SHARED_BROKER = Symbol.for('clusterstack.test.realKubeApiBroker');

/**
 * Provides the run's broker URL to a project. Vitest runs a global setup once per project
 * (vitest.config.ts has one per helm and the shared and the rest, all extending the root): they share
 * one broker, so that MAX_SERVERS bounds the servers of the run, not of each project. The last
 * project's teardown stops every server started.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const holder = globalThis as { [SHARED_BROKER]?: SharedBroker };
  const shared = (holder[SHARED_BROKER] ??= { started: startBroker(), users: 0 });
  shared.users++;
  const { url, stop } = await shared.started;
  project.provide('realKubeApiBroker', url);
  return async () => {
    shared.users--;
    if (shared.users > 0) return;
    delete holder[SHARED_BROKER];
    await stop();
  };
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

  const server: Server = createServer((request, response) => {
    void (async () => {
      try {
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
          response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(pooled.lease));
          return;
        }
        if (request.method === 'POST' && request.url === '/release') {
          const { id } = JSON.parse(await body(request)) as { id: number };
          const pooled = pool.find((candidate) => candidate.lease.id === id);
          if (!pooled) throw new Error(`no leased server ${id}`);
          // A file that froze its server and failed before thawing it never hands a frozen one on.
          pooled.api.thawApiServer();
          pooled.clean = empty(pooled).catch(async (error: unknown) => {
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
          });
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
      } catch (error) {
        response.writeHead(500, { 'content-type': 'text/plain' }).end(String((error as Error).stack ?? error));
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;

  const stop = async (): Promise<void> => {
    stopping = true;
    if (waits.leases > 0)
      process.stderr.write(
        `real API server broker: ${nextId - 1} servers started (at most ${MAX_SERVERS}), ${waits.leases} leases, ` +
          `${waits.waited} waited for a server: ${(waits.totalMs / 1000).toFixed(1)} s in all, the longest ${(waits.longestMs / 1000).toFixed(1)} s\n`,
      );
    server.close();
    server.closeAllConnections();
    await Promise.allSettled(starting);
    // Not emptied first: the run is over, and the last file's namespaces may take long to go.
    for (const pooled of pool) {
      await pooled.kcm.stop();
      await pooled.api.stop();
    }
  };
  return { url, stop };
}
