/**
 * A fake Kubernetes API server over real HTTP, for driving code that uses the real
 * `@kubernetes/client-node` (CustomObjectsApi, CoreV1Api, informers, watches) in tests.
 *
 * The real kube-apiserver plays the part of a normal API server (test/support/real-kube-api/,
 * docs/real-engines.md): controller tests lease one shared per worker through
 * test/support/real-controller-fixture.ts and run the controller there as deploy/'s ServiceAccount,
 * with the real CRDs of the kinds they use (ours, Cluster API's, Flux's, Argo CD's, the
 * cluster-api-operator's, openMCP's ClusterRequest) or a schemaless CRD where the Go module proxy
 * serves none (Kraan's AddonsLayer, the cluster-stack-operator's provider kinds, a made-up provider).
 * The shard tests run there too: shards/shard-handover.test.ts (its live Flux Kustomizations
 * created for real, where no Flux controller runs) and shards/shard-kill.test.ts (its shards as the
 * ServiceAccount of a copy of deploy/sharded). A missing CRD is no reason to be here. This fake
 * stays only for what a real server cannot be made to do on demand; these files use it, each for
 * the reason given:
 * - a chosen answer to a chosen request (`failNext`; the real server conflicts only by racing and
 *   never fails a valid write): controller-runtime/informer-set.test.ts (500s and 410s on
 *   list/watch), controller-runtime/leader-election.test.ts ("gives up leadership when it cannot
 *   renew", renewals answered 500; its other cases run on a leased real server),
 *   controller/controller-e2e-conflict.test.ts (a 409 on exactly the status patch under test, and the
 *   re-read it brings; the rest of controller-e2e runs on a leased real server),
 *   controller/controller-rbac.test.ts (a 409 on the provider release's patch, and the re-read `get`
 *   it brings; the rest of that file's RBAC runs on a leased real server),
 *   controller/runtime-extension-e2e.test.ts;
 * - watch streams and the server itself controlled at a chosen moment (`expireWatches`,
 *   `stop`/`restart` on the same port): informer-set.test.ts, runtime-extension-e2e.test.ts. A frozen
 *   or restarted server is not faked for the controller: controller-exit, controller-leadership-loss
 *   and controller-runtime-e2e SIGSTOP/SIGCONT or restart a leased real kube-apiserver
 *   (RealControllerFixture's freezeApiServer, thawApiServer, restartApiServer);
 * - objects nested deeper than Kubernetes' 10,000 levels, which a real server never serves, from a
 *   thread with a deep stack (deep-fake-kube-api-worker.ts): controller-deep-nesting.test.ts;
 * - many API servers, or thousands of objects seeded in milliseconds: the benchmarks
 *   (bench/run-benchmarks.ts, bench/shards-bench.ts);
 * - its own tests: test/fake-kube-api.test.ts, which alone use `endWatches`, `sendBookmarks` and
 *   `dropConnections`, to pin what client-node's informer does on a clean end, a bookmark and a cut
 *   connection (it stops; the controller's informer set starts it again).
 */
import { KubeConfig } from '@kubernetes/client-node';
import * as yaml from 'js-yaml';
import type { KubeObject } from './kube-object.js';
import { parseLabelSelector } from './label-selector.js';
import { typeKey } from './object-api.js';
import type { ResourceDefinition } from './resources.js';
import { FakeKubeApiServer, type FakeKubeApiOptions, type FaultSpec, type RequestRecord } from './server.js';

export type { KubeObject } from './kube-object.js';
export type { FakeKubeApiOptions, RequestRecord } from './server.js';
export { serviceAccountUser } from './rbac.js';
export type { Status } from './status.js';

/** Anything shaped like a Kubernetes object: a plain object or a client-node model. */
interface SeedObject {
  apiVersion?: string;
  kind?: string;
  metadata?: object;
}

export interface FakeKubeApi {
  /** `http://127.0.0.1:<port>`; stays the same across stop() and restart(). */
  readonly url: string;
  /**
   * A fresh KubeConfig for this server (http with skipTLSVerify, a bearer token, namespace
   * `default`); `token` picks one of the `users` tokens instead of the admin's.
   */
  kubeConfig(token?: string): KubeConfig;
  /** The same configuration as kubeconfig YAML, for code that loads a file. */
  kubeConfigYaml(token?: string): string;
  /** Stops the server for good. */
  close(): Promise<void>;

  /** Installs a custom resource, as applying its CRD would. */
  registerResource(definition: ResourceDefinition): void;
  /** Creates or replaces an object directly, status included; creates its namespace if needed. Accepts client-node objects. */
  seed<T extends SeedObject>(obj: T): KubeObject;
  /** The stored object, or undefined. `kind` may be the kind, plural, singular or a short name. */
  get(apiVersion: string, kind: string, namespace: string | undefined, name: string): KubeObject | undefined;
  /** Stored objects of a kind (all namespaces when namespace is undefined), sorted by namespace and name. */
  list(apiVersion: string, kind: string, namespace?: string, options?: { labelSelector?: string }): KubeObject[];

  /** Calls `listener` after every stored change (create, update, delete); returns the unsubscribe. */
  onChange(listener: () => void): () => void;
  /** Every request received so far, oldest first. */
  readonly requests: readonly RequestRecord[];
  clearRequests(): void;
  /** Resolves once at least `count` watch streams are open (e.g. an informer has finished starting). */
  waitForWatches(count?: number, timeoutMs?: number): Promise<void>;
  /** Number of watch streams currently open. */
  watchCount(): number;

  /** Makes the next matching request(s) fail with a Status of the given HTTP code. */
  failNext(fault: FaultSpec): void;
  clearFaults(): void;
  /** Sends `ERROR 410 Expired` to all open watches, ends them, and makes older resourceVersions unwatchable. */
  expireWatches(): void;
  /** Ends all watch streams cleanly, as a server-side watch timeout does (clients resume without relisting). */
  endWatches(): void;
  /** Sends a BOOKMARK to watches opened with allowWatchBookmarks=true. */
  sendBookmarks(): void;
  /** Cuts every open connection, watches included, but keeps listening. */
  dropConnections(): void;
  /** Stops listening and cuts connections; state is kept for restart(). */
  stop(): Promise<void>;
  /** Listens again on the same port with the same objects and resourceVersions. */
  restart(): Promise<void>;
}

/** Starts a fake API server on 127.0.0.1 (random port) with the core kinds and the clusterstack CRDs registered. */
export async function startFakeKubeApi(options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
  const server = new FakeKubeApiServer(options);
  await server.listen(0);
  const token = options.token ?? 'fake-token';
  const typeOf = (apiVersion: string, kind: string) => {
    const type = server.registry.byApiVersion(apiVersion, kind);
    if (!type)
      throw new Error(`fake kube api: no resource ${kind} in ${apiVersion}; register it with registerResource()`);
    return type;
  };
  for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
    server.objects.create(typeOf('v1', 'Namespace'), undefined, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name },
    });
  }

  const kubeConfig = (as: string = token): KubeConfig => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: server.url, skipTLSVerify: true }],
      users: [{ name: 'fake', token: as }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'fake', namespace: 'default' }],
      currentContext: 'fake',
    });
    return kc;
  };

  return {
    get url() {
      return server.url;
    },
    kubeConfig,
    kubeConfigYaml: (as?: string) => yaml.dump(JSON.parse(kubeConfig(as).exportConfig())),
    close: () => server.stop(),
    registerResource: (definition) => void server.registry.register(definition),
    seed: (input) => {
      // Round-trip through JSON so client-node model objects (with Date fields) are stored as the wire shows them.
      const obj = JSON.parse(JSON.stringify({ ...input, metadata: input.metadata ?? {} })) as KubeObject;
      const type = typeOf(obj.apiVersion ?? '', obj.kind ?? '');
      const namespace = type.namespaced ? (obj.metadata.namespace ?? 'default') : undefined;
      return server.objects.create(type, namespace, obj, true);
    },
    get: (apiVersion, kind, namespace, name) => {
      const type = typeOf(apiVersion, kind);
      return server.store.get(typeKey(type), type.namespaced ? namespace : undefined, name);
    },
    list: (apiVersion, kind, namespace, { labelSelector } = {}) => {
      const type = typeOf(apiVersion, kind);
      const matches = parseLabelSelector(labelSelector);
      return server.store
        .list(typeKey(type), type.namespaced ? namespace : undefined)
        .filter((obj) => matches(obj.metadata.labels));
    },
    onChange: (listener) => server.store.subscribe(() => listener()),
    get requests() {
      return server.requests;
    },
    clearRequests: () => void server.requests.splice(0),
    waitForWatches: async (count = 1, timeoutMs = 5000) => {
      const deadline = Date.now() + timeoutMs;
      while (server.watches.openCount() < count) {
        if (Date.now() > deadline)
          throw new Error(`fake kube api: expected ${count} open watch(es), have ${server.watches.openCount()}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    watchCount: () => server.watches.openCount(),
    failNext: (fault) => server.addFault(fault),
    clearFaults: () => server.clearFaults(),
    expireWatches: () => server.watches.expireAll(),
    endWatches: () => server.watches.endAll(),
    sendBookmarks: () => server.watches.bookmarkAll(),
    dropConnections: () => server.dropConnections(),
    stop: () => server.stop(),
    restart: () => server.listen(),
  };
}
