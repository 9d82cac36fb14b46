// Vitest global setup: the one Flux management cluster the real-Flux files share (a kube-apiserver
// and its etcd, the Cluster API CRDs their objects need, Flux's CRDs and its source- and
// kustomize-controller). Starting it costs the API server most of its CPU (each CRD it establishes,
// the OpenAPI rebuilt after each), and kustomize-controller a start of its own: three files starting
// one each spent about 20 CPU-s on three copies of the same thing. Started when a file first joins
// (a run without a real-Flux file pays nothing), stopped when the last file that joined leaves (a
// later one starts it again) and at the end of the run at the latest. Each file keeps what it must
// have alone (its workload API server, its Git server) and names its Flux objects apart from the
// others' (docs/real-engines.md). It runs in vitest's main process and answers the workers on
// loopback HTTP, as the API server broker does (test/support/real-kube-api-broker.ts).
import type { TestProject } from 'vitest/node';
import {
  crdFilesServing,
  engineCrdFiles,
  startFluxControllers,
  startRealKubeApi,
  type FluxControllers,
  type LocalProcess,
} from './real-kube-api/index.js';
import { runWideService, serveOnLoopback } from './run-wide-service.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared Flux world's `http://127.0.0.1:<port>`. */
    realFluxWorld: string;
  }
}

/** A process of the shared world, as a worker watches it (by pid) and reads its log. */
export interface SharedProcess {
  name: string;
  pid: number;
  logFile: string;
}

/** What a file needs to use the shared management server: plain data (it crosses processes). */
export interface SharedManagement {
  name: string;
  /** `https://127.0.0.1:<port>` */
  server: string;
  ca: string;
  /** The admin (`system:masters`): client certificate, its kubeconfig as text and as a file. */
  admin: { cert: string; key: string; kubeconfig: string; kubeconfigFile: string };
  /** kube-apiserver and etcd. */
  processes: SharedProcess[];
}

/** Flux on the shared management server, once both controllers report ready. */
export interface SharedFlux {
  namespace: string;
  storageUrl: string;
  processes: SharedProcess[];
  /** How long the world's start took and when each phase was done (the same for every file that joined it). */
  startup: string;
}

/**
 * The Cluster API kinds the real-Flux files' objects are made of: the releases' ClusterClass and
 * templates, a Cluster, and the runtime extension's ExtensionConfig (deploy/runtime-extension).
 * Only their CRDs are installed, not all 29 of Cluster API and its Docker provider: each CRD costs
 * the API server seconds of CPU to establish, and nothing here makes the others' objects. A kind
 * missing here fails Flux's dry-run naming it ("no matches for kind").
 */
const CLUSTER_API_KINDS = new Set([
  'cluster.x-k8s.io/ClusterClass',
  'cluster.x-k8s.io/Cluster',
  'infrastructure.cluster.x-k8s.io/DockerClusterTemplate',
  'infrastructure.cluster.x-k8s.io/DockerMachineTemplate',
  'bootstrap.cluster.x-k8s.io/KubeadmConfigTemplate',
  'controlplane.cluster.x-k8s.io/KubeadmControlPlaneTemplate',
  'runtime.cluster.x-k8s.io/ExtensionConfig',
]);

/**
 * kustomize-controller's flags for every file at once. It looks at a dependency that is not Ready
 * again after 1 s (its default is 30 s); a reconcile holds one of its workers for the whole of a
 * wait (a class stage's 60 s, a health check up to its timeout), and the three files together have
 * up to about a dozen such waits at a time, so it runs 24 (default 4) and none queues behind another.
 */
const KUSTOMIZE_CONTROLLER_ARGS = ['--requeue-dependency=1s', '--concurrent=24'];

interface World {
  management: SharedManagement;
  /** Resolves once Flux is ready. */
  flux: Promise<SharedFlux>;
  stop(): Promise<void>;
}

/** Starts the API server with the Cluster API and Flux CRDs established; resolves then, while Flux (in `flux`) may still be starting. */
async function startWorld(): Promise<World> {
  const clock = phaseClock();
  // Started on a seed with the Cluster API and Flux CRDs established (real-kube-api/etcd-seed.ts): installing
  // them on a fresh server cost it 1.1-1.5 CPU-s more; Flux's start below re-applies its own, unchanged.
  const api = await startRealKubeApi({
    name: 'flux-management',
    crds: [
      ...crdFilesServing(
        [...engineCrdFiles('cluster-api'), ...engineCrdFiles('cluster-api-docker')],
        CLUSTER_API_KINDS,
      ),
      ...engineCrdFiles('source-controller'),
      ...engineCrdFiles('kustomize-controller'),
    ],
  });
  clock.mark('API server and CRDs');
  let controllers: FluxControllers | undefined;
  const flux = startFluxControllers(api, { kustomizeControllerArgs: KUSTOMIZE_CONTROLLER_ARGS }).then((started) => {
    controllers = started;
    clock.mark('Flux');
    return started;
  });
  // Its failure is answered to each file that waits for Flux, not an unhandled rejection here.
  flux.catch(() => undefined);
  const stop = async (): Promise<void> => {
    // One still starting is waited for (its processes are known then); then Flux and the API server
    // are killed at once: nothing of them outlives the world, and Flux gets no time to retry.
    const started = await flux.catch(() => undefined);
    await Promise.all([started?.stop(), api.stop()]);
    const alive = [controllers?.sourceController, controllers?.kustomizeController, ...api.processes].filter(
      (process): process is LocalProcess => process !== undefined && !process.exited(),
    );
    if (alive.length > 0)
      throw new Error(
        `the shared Flux world left processes running: ${alive.map((process) => `${process.name} (pid ${process.pid})`).join(', ')}`,
      );
  };
  const shared = (process: LocalProcess): SharedProcess => ({
    name: process.name,
    pid: process.pid,
    logFile: process.logFile,
  });
  const ready = flux.then((started) => ({
    namespace: started.namespace,
    storageUrl: started.storageUrl,
    processes: [started.sourceController, started.kustomizeController, ...api.processes].map(shared),
    startup: clock.summary(),
  }));
  ready.catch(() => undefined);
  return {
    management: {
      name: api.name,
      server: api.server,
      ca: api.pki.ca,
      admin: {
        cert: api.admin.certificate.cert,
        key: api.admin.certificate.key,
        kubeconfig: api.admin.kubeconfig,
        kubeconfigFile: api.admin.kubeconfigFile,
      },
      processes: api.processes.map(shared),
    },
    flux: ready,
    stop,
  };
}

/** Marks the end of each phase of a start-up; summary() gives the total and when each phase was done, since the start. */
export function phaseClock(): { mark(phase: string): void; summary(): string } {
  const begun = performance.now();
  const marks: [string, number][] = [];
  return {
    mark: (phase) => void marks.push([phase, performance.now()]),
    summary: () =>
      `${((performance.now() - begun) / 1000).toFixed(1)} s (${marks
        .map(([phase, at]) => `${phase} done at ${((at - begun) / 1000).toFixed(1)} s`)
        .join(', ')})`,
  };
}

/**
 * The world's users: `join` starts the world when none runs (after the last one's stop has ended)
 * and counts the file in; `leave` counts it out and stops the world when it was the last.
 */
function worldKeeper(): {
  join(): Promise<World>;
  leave(): void;
  stop(): Promise<void>;
  starts: () => number;
} {
  let world: Promise<World> | undefined;
  let stopping: Promise<void> = Promise.resolve();
  let users = 0;
  let starts = 0;
  /** What each stop that failed said (a process that outlived it): said at once, and fails the run's teardown. */
  const failures: string[] = [];
  const stopWorld = (): void => {
    const last = world;
    world = undefined;
    if (!last) return;
    stopping = stopping.then(async () => {
      try {
        await (await last.catch(() => undefined))?.stop();
      } catch (error) {
        failures.push(String(error));
        process.stderr.write(`real Flux world: ${String(error)}\n`);
      }
    });
  };
  return {
    join: () => {
      users++;
      if (!world) {
        starts++;
        const started = stopping.then(startWorld);
        world = started;
        // A start that failed is not handed out again: the next file to join starts a fresh one.
        started.catch(() => {
          if (world === started) world = undefined;
        });
      }
      return world;
    },
    leave: () => {
      users = Math.max(0, users - 1);
      if (users === 0) stopWorld();
    },
    stop: async () => {
      stopWorld();
      await stopping;
      if (failures.length > 0) throw new Error(failures.join('\n'));
    },
    starts: () => starts,
  };
}

/** Starts the HTTP server the workers join and leave through; `stop` stops the world and it. */
async function startWorldServer(): Promise<{ url: string; stop: () => Promise<void> }> {
  const keeper = worldKeeper();
  // The world each file joined, by the token /join answered it: /flux and /leave name it.
  const joined = new Map<string, World>();
  let nextToken = 1;
  const { url: serviceUrl, close } = await serveOnLoopback(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const answer = (body: unknown): void =>
      void response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (request.method === 'POST' && url.pathname === '/join') {
      const token = String(nextToken++);
      // A file that gave up while the world started (its hook timed out, its worker ended) leaves again.
      let abandoned = false;
      response.on('close', () => (abandoned = !response.writableFinished));
      let world: World;
      try {
        world = await keeper.join();
      } catch (error) {
        keeper.leave();
        throw error;
      }
      if (abandoned) {
        keeper.leave();
        return;
      }
      joined.set(token, world);
      answer({ token, management: world.management });
      return;
    }
    const world = joined.get(url.searchParams.get('token') ?? '');
    if (request.method === 'POST' && url.pathname === '/flux' && world) {
      answer(await world.flux);
      return;
    }
    if (request.method === 'POST' && url.pathname === '/leave' && world) {
      joined.delete(url.searchParams.get('token')!);
      keeper.leave();
      response.writeHead(204).end();
      return;
    }
    response.writeHead(404).end();
  });
  return {
    url: serviceUrl,
    stop: async () => {
      close();
      if (keeper.starts() > 0)
        process.stderr.write(`real Flux world: started ${keeper.starts()} time(s) in this run\n`);
      await keeper.stop();
    },
  };
}

/**
 * Provides the run's world server to a project: one for the run, whichever project runs a real-Flux
 * file (test/support/run-wide-service.ts); the last project's teardown stops whatever still runs.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { url, teardown } = await runWideService('clusterstack.test.realFluxWorld', startWorldServer);
  project.provide('realFluxWorld', url);
  return teardown;
}
