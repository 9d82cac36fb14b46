// A management cluster for controller tests on a real kube-apiserver: a server leased from the run's
// broker (test/support/real-kube-api-broker.ts: one per worker at most, emptied between files, our
// CRDs, Cluster API's, Flux's and Argo CD's installed), the controller running as the ServiceAccount
// deploy/ ships (deploy/argocd + runtime-extension, so RBAC decides; a 403 fails the file at
// cleanup), a bare Git remote and copies of the quickstart releases. The test reads live objects
// from a watch-fed mirror, so reads stay synchronous and waits end on the watch event that makes
// them true, not on a poll.
import { readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { CustomObjectsApi, KubeConfig, makeInformer, type KubernetesObject } from '@kubernetes/client-node';
import { Agent, fetch } from 'undici';
import { inject } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { decodeYamlDocuments } from '../../src/yaml/kube-yaml.js';
import type { ControllerRuntime, ControllerRuntimeOptions } from '../../src/controller/run-controller.js';
import { copyExampleReleases } from './cli.js';
import { kubernetesVersionOf } from './builders.js';
import { publishedFiles, startController, waitOnChanges, type ControllerWorld } from './controller-fixture.js';
import { GitSandbox } from './git-repos.js';
import { FILE_OWNED_LABEL, type LeasedServer, type ServerFault } from './real-kube-api-broker.js';
import { auditEvents, describeAuditEvent, grantedNow, type AuditEvent } from './real-kube-api/service-account.js';
import { installCrds } from './real-kube-api/install-crds.js';
import { kubeClient, type KubeClient } from './real-kube-api/kube-client.js';
import { waitUntil } from './real-kube-api/local-process.js';
import { applyShippedIdentity, type ShippedIdentity } from './shipped-identity.js';

/** Cluster API's served version on the real server (1.14 stores v1beta2; v1beta1 has no conversion webhook here). */
export const CAPI_V1BETA2 = { group: 'cluster.x-k8s.io', version: 'v1beta2' } as const;

/** How long a wait may last at most: it ends on what it waits for; this only stops a stuck test. */
const WAIT_LIMIT_MS = 120_000;
/** The kinds every fixture mirrors; `mirror` adds more. */
const MIRRORED = [
  { apiVersion: 'clusterstack.x-k8s.io/v1alpha1', kind: 'ClusterStack' },
  { apiVersion: 'clusterstack.x-k8s.io/v1alpha1', kind: 'ClusterStackRelease' },
  { apiVersion: 'clusterstack.x-k8s.io/v1alpha1', kind: 'ClusterAddon' },
  { apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster' },
  { apiVersion: 'v1', kind: 'Event' },
];

export interface MirroredKind {
  apiVersion: string;
  kind: string;
}

/** A Cluster as Cluster API 1.14 stores it (v1beta2: its class in classRef), on ClusterClass `className`. */
export function aCluster(name: string, namespace: string, className: string): KubeObject {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Cluster',
    metadata: { name, namespace },
    spec: {
      controlPlaneEndpoint: { host: `${name}.test`, port: 6443 },
      clusterNetwork: { pods: { cidrBlocks: ['10.0.0.0/16'] } },
      topology: { classRef: { name: className }, version: kubernetesVersionOf(className) },
    },
  };
}

/** `apis/<group>/<version>` or `api/v1`, and the plural of `kind` (English rules our kinds follow). */
function resourcePath(apiVersion: string, kind: string, namespace?: string): string {
  const lower = kind.toLowerCase();
  const plural = lower.endsWith('y') ? `${lower.slice(0, -1)}ies` : lower.endsWith('s') ? `${lower}es` : `${lower}s`;
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return namespace ? `${base}/namespaces/${namespace}/${plural}` : `${base}/${plural}`;
}

/** An object to write: a plain object or a client-node model, perhaps with a status. */
type SeedObject = KubeObject | (KubernetesObject & { [field: string]: unknown });

export interface RealControllerFixture {
  lease: LeasedServer;
  /** Raw REST as the admin, for setting up and for what the mirror does not hold. */
  admin: KubeClient;
  /** The admin's KubeConfig (client-node), for client-node APIs in tests. */
  adminKubeConfig: KubeConfig;
  /** The controller's: the shipped ServiceAccount's token. `start` uses it. */
  controllerKubeConfig: KubeConfig;
  git: GitSandbox;
  remote: string;
  work: string;
  /** A private copy of the quickstart releases (the default release source). */
  releases: string;
  /** client-node's CustomObjectsApi as the admin. */
  custom: CustomObjectsApi;
  /** Release source locations that fail (reject) or hang (never answer), for listing and download. */
  down: Map<string, 'fail' | 'hang'>;
  /** Starts a controller runtime as the ServiceAccount; `name` keeps its clone and caches apart. */
  start(name: string, overrides?: Partial<ControllerRuntimeOptions>): Promise<ControllerRuntime>;
  createNamespace(name: string): Promise<void>;
  /**
   * Creates any object as the admin; a `status` in it is then written through the status
   * subresource. Resolves once the mirror holds what was written, when the kind is mirrored.
   */
  create(object: SeedObject): Promise<void>;
  /** As create, but replaces the object (and its status) when it exists. */
  put(object: SeedObject): Promise<void>;
  /** Ours or a Cluster, from the mirror. */
  get(kind: string, namespace: string, name: string): KubeObject | undefined;
  /** A mirrored object of any mirrored kind. */
  object(apiVersion: string, kind: string, namespace: string | undefined, name: string): KubeObject | undefined;
  /** Mirrored objects of a kind (all namespaces when undefined), sorted by namespace and name. */
  objects(apiVersion: string, kind: string, namespace?: string): KubeObject[];
  /** Resolves once `check` holds, looked at on every watch event (and every 250 ms for the Git side); throws naming `what` after the limit. */
  waitFor(check: () => boolean, what: string, limitMs?: number): Promise<void>;
  /** Files under management/ and clusters/ on the branch. */
  published(): Record<string, string>;
  /** The ServiceAccount's requests (from the audit log) since `since`, default the lease's start. */
  controllerRequests(since?: Date): AuditEvent[];
  /** The ServiceAccount's requests refused with 403 since the lease began. */
  forbidden(): AuditEvent[];
  /**
   * Creates cluster-wide objects this file alone needs (a test CRD, a ClusterRole and its binding,
   * an admission policy), labelled so that the broker deletes them at release; waits until each CRD
   * is Established.
   */
  install(objects: SeedObject[]): Promise<void>;
  /**
   * A second copy of deploy/<overlay> whose ServiceAccount lives in `namespace` (not the shared
   * clusterstack-system), bound only by that copy's roles (its ClusterRoles renamed): its
   * credentials. The namespace and those ClusterRoles are this file's: the broker deletes them.
   */
  shippedIdentity(options: { overlay: string; namespace: string }): Promise<ShippedIdentity>;
  /**
   * SIGSTOPs the leased kube-apiserver: connections are accepted (by the kernel) and never answered,
   * as a stuck or partitioned server. No other file uses it meanwhile; cleanup thaws it.
   */
  freezeApiServer(): Promise<void>;
  /** SIGCONTs it: what was held is answered, and it serves again. */
  thawApiServer(): Promise<void>;
  /** Whether kube-apiserver answers /readyz (on a new connection) within `withinMs`: never while frozen. */
  apiServerAnswers(withinMs: number): Promise<boolean>;
  /**
   * Kills kube-apiserver and starts it again on the same port and etcd (every watch ends); resolves
   * once ready. A 403 while it starts (its RBAC cache still empty) is excused at cleanup if the server then grants the request.
   */
  restartApiServer(): Promise<void>;
  /** Thaws the server, stops runtimes and the mirror, fails on any 403 of the ServiceAccount (but a restart's), and returns the server to the broker. */
  cleanup(): Promise<void>;
}

/** A real API server leased from the run's broker for this file alone: no other file uses it until `release`. */
export interface LeasedKubeApi {
  lease: LeasedServer;
  /** Raw REST as the admin (`system:masters`). */
  admin: KubeClient;
  /**
   * Installs the CRDs of `files` that the server does not have yet, labelled as this file's (the
   * broker deletes them at release), and waits until they are Established; returns their names. One
   * it has already (the broker's: the same engines' files) is left as it is, never taken over.
   */
  installMissingCrds(files: string[]): Promise<string[]>;
  /** The audit log's events (every request, at Metadata level) since the lease began. */
  auditEvents(): AuditEvent[];
  /** Freezes (SIGSTOP), thaws (SIGCONT) or restarts (SIGKILL, start, ready) the leased kube-apiserver. */
  apiServer(action: ServerFault['action']): Promise<void>;
  /**
   * A copy of deploy/<overlay> (with `components`) whose ServiceAccount lives in `namespace`, bound
   * only by that copy's roles (its ClusterRoles renamed): its credentials, a kubeconfig in `dir`.
   * The namespace and those ClusterRoles are this file's: the broker deletes them.
   */
  shippedIdentity(options: {
    overlay: string;
    namespace: string;
    components?: string[];
    dir: string;
  }): Promise<ShippedIdentity>;
  /** Returns the server to the broker, which empties it for the next file. */
  release(): Promise<void>;
}

/** Leases a real API server from the run's broker (test/support/real-kube-api-broker.ts); waits while every server is leased. */
export async function leaseRealKubeApi(): Promise<LeasedKubeApi> {
  const lease = (await (await brokerCall('/lease')).json()) as LeasedServer;
  // Once leased, not before: the lease may wait for another file, whose requests are not this file's.
  const auditFrom = statSync(lease.auditLogFile).size;
  const admin = kubeClient(lease.server, { ca: lease.ca, cert: lease.admin.cert, key: lease.admin.key });
  return {
    lease,
    admin,
    auditEvents: () => auditEvents({ name: lease.name, auditLogFile: lease.auditLogFile }, auditFrom),
    apiServer: async (action) => void (await brokerCall('/api-server', { id: lease.id, action } satisfies ServerFault)),
    shippedIdentity: ({ overlay, namespace, components, dir }) =>
      applyShippedIdentity(
        {
          name: lease.name,
          server: lease.server,
          dir,
          pki: { ca: lease.ca },
          admin: { client: admin, kubeconfigFile: lease.admin.kubeconfigFile },
        },
        { overlay, namespace, ...(components ? { components } : {}), clusterLabels: { [FILE_OWNED_LABEL]: 'true' } },
      ),
    async installMissingCrds(files) {
      const present = new Set(
        ((await admin.get(CRDS)).items as { metadata: { name: string } }[]).map((crd) => crd.metadata.name),
      );
      const missing = files.filter((file) => {
        const names = decodeYamlDocuments(readFileSync(file, 'utf8')).flatMap(
          (document) => (document.value as { metadata?: { name?: string } } | null)?.metadata?.name ?? [],
        );
        const had = names.filter((name) => present.has(name));
        // Applying the file would label the broker's CRD as this file's, and the broker would delete it.
        if (had.length > 0 && had.length < names.length)
          throw new Error(`${file}: the leased server has ${had.join(', ')} of its CRDs but not the others`);
        return had.length === 0;
      });
      return installCrds({ admin: { client: admin }, processes: [] }, missing, {
        labels: { [FILE_OWNED_LABEL]: 'true' },
      });
    },
    release: async () => void (await brokerCall('/release', { id: lease.id })),
  };
}

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

// A lease may wait for other files' servers longer than fetch's default 300 s for the answer's headers at
// a high load; the file's hook timeout, not the connection, decides how long a file waits.
// And no kept-alive connection (pipelining 0): the service in Vitest's main process closes an idle one
// after 5 s, and a call that reused it just then failed with "other side closed" (seen at load 17-25);
// a file makes only a few calls.
const brokerAgent = new Agent({ headersTimeout: 0, bodyTimeout: 0, pipelining: 0 });

async function brokerCall(pathName: string, body?: unknown): Promise<Response> {
  const response = await fetch(`${inject('realKubeApiBroker')}${pathName}`, {
    method: 'POST',
    dispatcher: brokerAgent,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  if (!response.ok) throw new Error(`real API server broker ${pathName}: ${response.status} ${await response.text()}`);
  return response;
}

/**
 * Leases a real API server for this file and sets up the fixture on it; `mirror` adds kinds to read,
 * `install` objects to install (as `install` does) before the mirror starts: the CRDs of mirrored kinds.
 */
export async function startRealControllerFixture(
  options: { mirror?: MirroredKind[]; install?: SeedObject[] } = {},
): Promise<RealControllerFixture> {
  const leased = await leaseRealKubeApi();
  const { lease, admin, release } = leased;
  // Of the events since the lease, those after leasedAt count.
  const leasedAt = new Date();
  const adminKubeConfig = new KubeConfig();
  adminKubeConfig.loadFromFile(lease.admin.kubeconfigFile);
  const controllerKubeConfig = new KubeConfig();
  controllerKubeConfig.loadFromFile(lease.controller.kubeconfigFile);
  const custom = adminKubeConfig.makeApiClient(CustomObjectsApi);

  const store = new Map<string, Map<string, KubeObject>>();
  const listeners = new Set<() => void>();
  const informers: { start(): Promise<void>; stop(): Promise<void> | void }[] = [];
  let mirroring = true;
  const keyOf = (object: { metadata?: { namespace?: string; name?: string } }) =>
    `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
  const changed = () => {
    for (const listener of [...listeners]) listener();
  };
  const install = async (objects: SeedObject[]): Promise<void> => {
    for (const input of objects) {
      const { metadata, ...rest } = input as KubeObject;
      const body = { ...rest, metadata: { ...metadata, labels: { ...metadata.labels, [FILE_OWNED_LABEL]: 'true' } } };
      const response = await admin.request('POST', resourcePath(body.apiVersion, body.kind), { body });
      if (response.status !== 201)
        throw new Error(`installing ${body.kind} ${metadata.name}: ${response.status} ${response.text}`);
      if (body.kind !== 'CustomResourceDefinition') continue;
      await waitUntil(
        `CRD ${metadata.name} to be Established`,
        async () =>
          (
            (await admin.get(`${CRDS}/${metadata.name}`)).status?.conditions as
              { type: string; status: string }[] | undefined
          )?.some((condition) => condition.type === 'Established' && condition.status === 'True') ?? false,
        [],
        WAIT_LIMIT_MS,
      );
    }
  };
  for (const { apiVersion, kind } of [...MIRRORED, ...(options.mirror ?? [])]) {
    const objects = new Map<string, KubeObject>();
    store.set(`${apiVersion}|${kind}`, objects);
    const collection = resourcePath(apiVersion, kind);
    const informer = makeInformer(adminKubeConfig, collection, () => admin.get(collection));
    const put = (object: KubernetesObject) => {
      objects.set(keyOf(object), object as KubeObject);
      changed();
    };
    informer.on('add', put);
    informer.on('update', put);
    informer.on('delete', (object) => {
      objects.delete(keyOf(object));
      changed();
    });
    // client-node stops a watch after an error other than 410: start it again (the server stays up),
    // unless the fixture is being cleaned up.
    informer.on('error', () =>
      setTimeout(() => void (mirroring ? informer.start().catch(() => undefined) : undefined), 200),
    );
    informers.push(informer);
  }
  try {
    await install(options.install ?? []);
    // Each lists and opens its watch: together, not one round trip after another.
    await Promise.all(informers.map((informer) => informer.start()));
  } catch (error) {
    mirroring = false;
    for (const informer of informers) await informer.stop();
    await release();
    throw error;
  }

  const git = new GitSandbox();
  const remote = git.bareRepo('gitops');
  const work = await mkdtemp(path.join(os.tmpdir(), 'csk-real-fixture-'));
  const releases = await copyExampleReleases();
  const world: ControllerWorld = {
    kubeConfig: controllerKubeConfig,
    remote,
    work,
    releases,
    down: new Map(),
    runtimes: [],
  };
  const controllerRequests = (since = leasedAt) =>
    leased
      .auditEvents()
      .filter(
        (event) => event.user.username === lease.controller.user && new Date(event.requestReceivedTimestamp) >= since,
      );
  const forbidden = () => controllerRequests().filter((event) => event.responseStatus?.code === 403);
  let frozen = false;
  const apiServer = async (action: ServerFault['action']) => {
    await leased.apiServer(action);
    frozen = action === 'freeze';
  };
  // Right after a restart the API server answers before its RBAC cache holds deploy/'s roles: a
  // 403 then is the server starting, not a missing grant. It is excused only inside a restart
  // window, and only if the server, asked at cleanup (SubjectAccessReview), grants that request.
  const restarts: { from: number; to: number }[] = [];
  const unexcused = async (refused: AuditEvent[]): Promise<AuditEvent[]> => {
    const left: AuditEvent[] = [];
    for (const event of refused) {
      const at = Date.parse(event.requestReceivedTimestamp);
      const restarting = restarts.some(({ from, to }) => at >= from && at <= to);
      if (!restarting || !(await grantedNow(admin, event.user, event))) left.push(event);
    }
    return left;
  };

  const object = (apiVersion: string, kind: string, namespace: string | undefined, name: string) => {
    const objects = store.get(`${apiVersion}|${kind}`);
    if (!objects)
      throw new Error(`${apiVersion} ${kind} is not mirrored: pass it in startRealControllerFixture({ mirror })`);
    return objects.get(`${namespace ?? ''}/${name}`);
  };

  const mirrored = (apiVersion: string, kind: string, namespace: string | undefined, name: string, version: string) =>
    new Promise<void>((resolve, reject) => {
      const objects = store.get(`${apiVersion}|${kind}`);
      if (!objects) return resolve();
      const key = `${namespace ?? ''}/${name}`;
      const seen = () => {
        const rv = objects.get(key)?.metadata.resourceVersion;
        return rv !== undefined && BigInt(rv) >= BigInt(version);
      };
      if (seen()) return resolve();
      const look = () => {
        if (!seen()) return;
        listeners.delete(look);
        clearTimeout(limit);
        resolve();
      };
      const limit = setTimeout(() => {
        listeners.delete(look);
        reject(new Error(`the mirror never saw ${kind} ${key} at resourceVersion ${version}`));
      }, WAIT_LIMIT_MS);
      listeners.add(look);
    });
  const write = async (input: SeedObject, replace: boolean): Promise<void> => {
    const { status, ...body } = JSON.parse(JSON.stringify(input)) as KubeObject & { status?: unknown };
    const { namespace, name } = body.metadata;
    const collection = resourcePath(body.apiVersion, body.kind, namespace);
    const what = `${body.kind} ${keyOf(body)}`;
    let written = await admin.request('POST', collection, { body });
    if (written.status === 409 && replace) {
      const live = await admin.get(`${collection}/${name}`);
      written = await admin.request('PUT', `${collection}/${name}`, {
        body: { ...body, metadata: { ...body.metadata, resourceVersion: live.metadata.resourceVersion } },
      });
    }
    if (written.status !== 201 && written.status !== 200)
      throw new Error(`writing ${what}: ${written.status} ${written.body?.message ?? written.text}`);
    if (status !== undefined) {
      written = await admin.request('PATCH', `${collection}/${name}/status`, {
        contentType: 'application/merge-patch+json',
        body: { status },
      });
      if (written.status !== 200)
        throw new Error(`status of ${what}: ${written.status} ${written.body?.message ?? written.text}`);
    }
    await mirrored(body.apiVersion, body.kind, namespace, name, written.body.metadata.resourceVersion as string);
  };

  return {
    lease,
    admin,
    adminKubeConfig,
    controllerKubeConfig,
    git,
    remote,
    work,
    releases,
    custom,
    down: world.down,
    start: (name, overrides = {}) => startController(world, name, overrides),
    async createNamespace(name) {
      const response = await admin.request('POST', '/api/v1/namespaces', {
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
      });
      if (response.status === 409 && lease.kept.includes(name)) return;
      if (response.status !== 201) throw new Error(`creating namespace ${name}: ${response.status} ${response.text}`);
    },
    create: (input) => write(input, false),
    put: (input) => write(input, true),
    get(kind, namespace, name) {
      const apiVersion = kind === 'Cluster' ? 'cluster.x-k8s.io/v1beta2' : 'clusterstack.x-k8s.io/v1alpha1';
      return object(apiVersion, kind, namespace, name);
    },
    object,
    objects(apiVersion, kind, namespace) {
      const objects = store.get(`${apiVersion}|${kind}`);
      if (!objects)
        throw new Error(`${apiVersion} ${kind} is not mirrored: pass it in startRealControllerFixture({ mirror })`);
      return [...objects.entries()]
        .filter(([key]) => namespace === undefined || key.startsWith(`${namespace}/`))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([, value]) => value);
    },
    waitFor: (check, what, limitMs) =>
      waitOnChanges(
        (listener) => {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
        check,
        what,
        limitMs,
      ),
    published: () => publishedFiles(git, remote),
    controllerRequests,
    forbidden,
    install,
    shippedIdentity: ({ overlay, namespace }) => leased.shippedIdentity({ overlay, namespace, dir: work }),
    freezeApiServer: () => apiServer('freeze'),
    thawApiServer: () => apiServer('thaw'),
    apiServerAnswers: (withinMs) =>
      new Promise((resolve) => {
        const outgoing = request(
          `${lease.server}/readyz`,
          { ca: lease.ca, cert: lease.admin.cert, key: lease.admin.key, agent: false },
          (incoming) => {
            incoming.resume();
            resolve(true);
          },
        );
        outgoing.setTimeout(withinMs, () => {
          outgoing.destroy();
          resolve(false);
        });
        outgoing.on('error', () => resolve(false));
        outgoing.end();
      }),
    async restartApiServer() {
      const from = Date.now();
      await apiServer('restart');
      restarts.push({ from, to: Date.now() + 5_000 });
    },
    async cleanup() {
      try {
        // Stopping a runtime talks to the server: it must answer.
        if (frozen) await apiServer('thaw');
        for (const runtime of world.runtimes.reverse()) await runtime.stop();
        mirroring = false;
        for (const informer of informers) await informer.stop();
        const refused = await unexcused(forbidden());
        if (refused.length > 0)
          throw new Error(
            `the controller's ServiceAccount was refused (403) under deploy/'s RBAC:\n${refused.map(describeAuditEvent).join('\n')}`,
          );
      } finally {
        git.cleanup();
        await rm(work, { recursive: true, force: true });
        await rm(releases, { recursive: true, force: true });
        await release();
      }
    },
  };
}
