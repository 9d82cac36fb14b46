// A management cluster for controller tests on the fake API server (for the faults only it makes:
// see its header; everything else uses real-controller-fixture.ts): a bare Git remote, copies of
// the quickstart releases, and a function that starts the controller runtime against them with a
// release source that the test can make fail or hang. Both fixtures start runtimes and wait the
// same way (startController, waitOnChanges), and share the object builders here.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { pino } from 'pino';
import { GitPublisher } from '../../gitops/git-publisher.js';
import { GitHistoryReader } from '../../gitops/git-history.js';
import { createHelmDependencies } from '../../renderers/helm-dependencies.js';
import type { Condition, KubeObject } from '../../src/api/types.js';
import {
  runController,
  type ControllerRuntime,
  type ControllerRuntimeOptions,
} from '../../src/controller/run-controller.js';
import { createKubeClient } from '../../src/controller/runtime/kube-client.js';
import { ReleaseSourceError } from '../../src/release/release-source.js';
import { createSourceOpener, type SourceOpener } from '../../src/sources/open-release-source.js';
import { copyExampleReleases } from './cli.js';
import { startFakeKubeApi, type FakeKubeApi, type FakeKubeApiOptions } from './fake-kube-api/index.js';
import { GitSandbox } from './git-repos.js';
import { kubernetesVersionOf } from './builders.js';

export const GROUP = { group: 'clusterstack.x-k8s.io', version: 'v1alpha1' } as const;
export const CAPI = { group: 'cluster.x-k8s.io', version: 'v1beta1' } as const;
export const MERGE = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * How long a wait may last at most. A wait ends on what it waits for; this limit only stops a stuck
 * test, so it is far above what a loaded machine needs (a publish there takes many seconds).
 */
const WAIT_LIMIT_MS = 120_000;

/**
 * Checks that read more than API objects (the Git remote, a runtime's state) are looked at again
 * this often as well as on every change: a publish lands before the status write that announces it.
 */
const RECHECK_MS = 250;

/**
 * Resolves once `check` holds, looked at on every change `onChange` reports (an object written on
 * the API server) and every RECHECK_MS; throws naming `what` after `limitMs`, which only stops a stuck test.
 */
export function waitOnChanges(
  onChange: (listener: () => void) => () => void,
  check: () => boolean,
  what: string,
  limitMs = WAIT_LIMIT_MS,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error) => {
      unsubscribe();
      clearInterval(recheck);
      clearTimeout(limit);
      if (error) reject(error);
      else resolve();
    };
    const look = () => {
      try {
        if (check()) done();
      } catch (error) {
        done(error as Error);
      }
    };
    const unsubscribe = onChange(look);
    const recheck = setInterval(look, RECHECK_MS);
    const limit = setTimeout(() => done(new Error(`timed out waiting for ${what}`)), limitMs);
    look();
  });
}

export function condition(object: KubeObject | undefined, type: string): Condition | undefined {
  return ((object as { status?: { conditions?: Condition[] } } | undefined)?.status?.conditions ?? []).find(
    (c) => c.type === type,
  );
}

export function aStack(name: string, namespace: string, spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
    kind: 'ClusterStack',
    metadata: { name, namespace },
    spec: {
      provider: 'docker',
      name: 'ferrol',
      kubernetesVersion: '1.30',
      versions: ['v2'],
      noProvider: true,
      ...spec,
    },
  };
}

export function aCluster(name: string, namespace: string, className: string): KubeObject {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name, namespace },
    spec: {
      controlPlaneEndpoint: { host: `${name}.test`, port: 6443 },
      clusterNetwork: { pods: { cidrBlocks: ['10.0.0.0/16'] } },
      topology: { class: className, version: kubernetesVersionOf(className) },
    },
  };
}

export interface ControllerFixture {
  api: FakeKubeApi;
  git: GitSandbox;
  remote: string;
  work: string;
  /** A private copy of the quickstart releases (the default release source). */
  releases: string;
  custom: CustomObjectsApi;
  /** Release source locations that fail (reject) or hang (never answer), for listing and download. */
  down: Map<string, 'fail' | 'hang'>;
  /** Starts a controller runtime; `name` keeps its clone and caches apart from other runs. */
  start(name: string, overrides?: Partial<ControllerRuntimeOptions>): Promise<ControllerRuntime>;
  createNamespace(name: string): Promise<void>;
  create(object: KubeObject): Promise<void>;
  get(kind: string, namespace: string, name: string): KubeObject | undefined;
  /** Files under management/ and clusters/ on the branch. */
  published(): Record<string, string>;
  /** Resolves once `check` holds, looked at on every change on the API server (and every 250 ms for the Git side). */
  waitFor(check: () => boolean, what: string, limitMs?: number): Promise<void>;
  cleanup(): Promise<void>;
}

/** The parts of a fixture `startController` needs: where it publishes, its releases, its outages. */
export interface ControllerWorld {
  kubeConfig: KubeConfig;
  remote: string;
  work: string;
  releases: string;
  down: Map<string, 'fail' | 'hang'>;
  /** Every runtime started, for stopping at cleanup. */
  runtimes: ControllerRuntime[];
}

/**
 * Starts a controller runtime in `world` as the fixtures' `start` does: `name` keeps its clone and
 * caches apart from other runs; its release sources fail or hang as `world.down` says.
 */
export async function startController(
  world: ControllerWorld,
  name: string,
  overrides: Partial<ControllerRuntimeOptions> = {},
): Promise<ControllerRuntime> {
  const unreachable = (location: string) => {
    const mode = world.down.get(location);
    if (mode === 'hang') return new Promise<never>(() => undefined);
    return Promise.reject(new ReleaseSourceError('unavailable', `${location} answered 503 Service Unavailable`));
  };
  const openerFor = (cacheDir: string): SourceOpener => {
    const open = createSourceOpener({ cacheDir });
    return (location) => {
      const inner = open(location);
      return {
        location: inner.location,
        list: () => (world.down.has(location) ? unreachable(location) : inner.list()),
        fetch: (tag) => (world.down.has(location) ? unreachable(location) : inner.fetch(tag)),
      };
    };
  };
  const author = { name: 'clusterstack', email: 'clusterstack@example.test' };
  const env = { PATH: process.env.PATH ?? '', HOME: world.work };
  const dir = path.join(world.work, name);
  const runtimeKubeConfig = overrides.kubeConfig ?? world.kubeConfig;
  const git = (workDir: string) => ({
    repository: world.remote,
    branch: 'main',
    path: '',
    workDir: path.join(dir, workDir),
    author,
    env,
  });
  const runtime = await runController({
    kubeConfig: runtimeKubeConfig,
    kube: createKubeClient({ kubeConfig: runtimeKubeConfig, identity: name }),
    publisher: new GitPublisher(git('clone')),
    history: new GitHistoryReader(git('history')),
    revisionKind: 'commit',
    defaultSource: world.releases,
    openSource: openerFor(path.join(dir, 'cache')),
    workDir: path.join(dir, 'cache'),
    helm: createHelmDependencies({ pathEnv: process.env.PATH ?? '', workDir: path.join(dir, 'helm') }),
    secrets: 'refuse',
    engine: 'none',
    outputPath: '',
    argocdNamespace: 'argocd',
    logger: process.env.CSK_TEST_LOG
      ? pino({ level: 'debug' }, pino.destination(process.env.CSK_TEST_LOG))
      : pino({ level: 'silent' }),
    batchWindowMs: 100,
    listingWaitMs: 300,
    ...overrides,
  });
  world.runtimes.push(runtime);
  return runtime;
}

/** Files under management/ and clusters/ on the branch `main` of `remote`. */
export function publishedFiles(git: GitSandbox, remote: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(git.files(remote, 'main')).filter(
      ([file]) => file.startsWith('management/') || file.startsWith('clusters/'),
    ),
  );
}

export async function startControllerFixture(options: { api?: FakeKubeApiOptions } = {}): Promise<ControllerFixture> {
  const api = await startFakeKubeApi(options.api);
  const git = new GitSandbox();
  const remote = git.bareRepo('gitops');
  const work = await mkdtemp(path.join(os.tmpdir(), 'csk-fixture-'));
  const releases = await copyExampleReleases();
  const kubeConfig = api.kubeConfig();
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const down = new Map<string, 'fail' | 'hang'>();
  const world: ControllerWorld = { kubeConfig, remote, work, releases, down, runtimes: [] };

  const fixture: ControllerFixture = {
    api,
    git,
    remote,
    work,
    releases,
    custom,
    down,
    start: (name, overrides = {}) => startController(world, name, overrides),
    async createNamespace(name) {
      await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    },
    async create(object) {
      const plural = object.kind === 'Cluster' ? 'clusters' : `${object.kind.toLowerCase()}s`;
      const group = object.kind === 'Cluster' ? CAPI : GROUP;
      await custom.createNamespacedCustomObject({
        ...group,
        plural,
        namespace: object.metadata.namespace ?? 'default',
        body: object,
      });
    },
    get(kind, namespace, name) {
      const apiVersion = kind === 'Cluster' ? 'cluster.x-k8s.io/v1beta1' : 'clusterstack.x-k8s.io/v1alpha1';
      return api.get(apiVersion, kind, namespace, name) as KubeObject | undefined;
    },
    published: () => publishedFiles(git, remote),
    waitFor: (check, what, limitMs) => waitOnChanges(api.onChange, check, what, limitMs),
    async cleanup() {
      for (const runtime of world.runtimes.reverse()) await runtime.stop();
      await api.close();
      git.cleanup();
      await rm(work, { recursive: true, force: true });
      await rm(releases, { recursive: true, force: true });
    },
  };
  return fixture;
}

/** A Flux Kustomization `flux-system/<name>` for `./<path>` that is Ready, having applied `revision` of main. */
export function readyKustomization(name: string, dirPath: string, revision: string): KubeObject {
  return {
    apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
    kind: 'Kustomization',
    metadata: { name, namespace: 'flux-system' },
    spec: {
      interval: '10m',
      path: `./${dirPath}`,
      prune: true,
      sourceRef: { kind: 'GitRepository', name: 'clusterstacks' },
    },
    status: {
      // Flux sets it once a reconcile succeeded; the CRD defaults it to -1 (not yet reconciled).
      // Its spec never changes here, so it stays at generation 1.
      observedGeneration: 1,
      lastAppliedRevision: `main@sha1:${revision}`,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'ReconciliationSucceeded',
          message: `Applied revision: main@sha1:${revision}`,
          lastTransitionTime: new Date().toISOString(),
        },
      ],
    },
  } as KubeObject;
}
