// One Controller driven a round at a time, as the runtime's queues drive it after a change (each
// stack's key lists its release source, then one publish reconcile), on whichever API server a
// kubeconfig names. The rounds are the test's, so it can assert on each one: the commit it made,
// the write that was refused, a round that writes nothing. Before a round the informer caches are
// waited for, on their own watch events, until they hold what the API server holds.
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { GitPublisher } from '../../gitops/git-publisher.js';
import { createHelmDependencies } from '../../renderers/helm-dependencies.js';
import { Controller, InformerCache, type ReconcileSummary } from '../../src/controller/controller.js';
import { createKubeClient } from '../../src/controller/runtime/kube-client.js';
import type { WatchedKind } from '../../src/controller/runtime/runtime-contract.js';
import {
  CAPI_CLUSTERS,
  CLUSTER_ADDONS,
  CLUSTER_STACK_RELEASES,
  CLUSTER_STACKS,
  FLUX_KUSTOMIZATIONS,
} from '../../src/controller/desired-state/watched-kinds.js';
import { ReleaseSourceError } from '../../src/release/release-source.js';
import { createSourceOpener } from '../../src/sources/open-release-source.js';
import { waitOnChanges } from './controller-fixture.js';

/** What a round compares before it starts: the kinds the controller reads its inputs and its own objects from. */
const CAUGHT_UP_KINDS: WatchedKind[] = [
  CLUSTER_STACKS,
  CLUSTER_STACK_RELEASES,
  CLUSTER_ADDONS,
  CAPI_CLUSTERS,
  FLUX_KUSTOMIZATIONS,
];

/** An object as far as a round's catch-up looks at it. */
type Versioned = { metadata?: { namespace?: string; name?: string; resourceVersion?: string } };

export interface SteppedControllerOptions {
  /** Whom the controller is: its informers and writes use this. */
  kubeConfig: KubeConfig;
  /** The objects of one of CAUGHT_UP_KINDS the API server holds now (read as anyone who may). */
  listServer(kind: WatchedKind): Promise<Versioned[]> | Versioned[];
  /** The Git remote (bare) published to, branch main. */
  remote: string;
  /** Clones, caches and helm's home live under it. */
  work: string;
  /** The default release source (a directory of releases). */
  releases: string;
}

/** What a round did: the publish reconcile's answer (or its error) and the errors of the stack keys. */
export interface Round {
  requeueAfterMs: number;
  summary?: ReconcileSummary;
  error?: unknown;
  stackErrors: unknown[];
}

/** A Controller on real informer caches whose rounds the test runs; flux is the engine it reads sync state from. */
export class SteppedController {
  /** Set to make the release source's listing fail, as GitHub does when it is down. */
  sourceDown = false;
  /** The controller the next round runs; replace it with `newController` to restart it on the same caches. */
  controller: Controller;
  private readonly listeners = new Set<() => void>();
  private readonly logger = process.env.CSK_TEST_LOG
    ? pino({ level: 'debug' }, pino.destination(process.env.CSK_TEST_LOG))
    : pino({ level: 'silent' });
  readonly cache: InformerCache;

  private constructor(private readonly options: SteppedControllerOptions) {
    this.cache = new InformerCache({
      kubeConfig: options.kubeConfig,
      kinds: Controller.watchedKinds('flux'),
      onEvent: () => {
        for (const listener of [...this.listeners]) listener();
      },
      logger: this.logger,
    });
    this.controller = this.newController('clone');
  }

  /** Starts the caches and waits until they have listed every kind. */
  static async start(options: SteppedControllerOptions): Promise<SteppedController> {
    const stepped = new SteppedController(options);
    await stepped.cache.start();
    await stepped.cache.whenSynced();
    return stepped;
  }

  /** A fresh Controller on these caches, with its own Git clone `clone`: what a restarted process starts with. */
  newController(clone: string): Controller {
    const { kubeConfig, remote, work, releases } = this.options;
    return new Controller({
      cache: this.cache,
      kube: createKubeClient({ kubeConfig, identity: 'test-controller' }),
      publisher: new GitPublisher({
        repository: remote,
        branch: 'main',
        path: '',
        workDir: path.join(work, clone),
        author: { name: 'clusterstack', email: 'clusterstack@example.test' },
        env: { PATH: process.env.PATH ?? '', HOME: work },
      }),
      revisionKind: 'commit',
      defaultSource: releases,
      openSource: (location) => {
        const source = createSourceOpener({ cacheDir: path.join(work, 'cache') })(location);
        return {
          location: source.location,
          fetch: (tag) => source.fetch(tag),
          list: () =>
            this.sourceDown
              ? Promise.reject(new ReleaseSourceError('unavailable', 'the source answered 503'))
              : source.list(),
        };
      },
      workDir: path.join(work, 'cache'),
      helm: createHelmDependencies({ pathEnv: process.env.PATH ?? '', workDir: path.join(work, 'helm') }),
      secrets: 'refuse',
      engine: 'flux',
      outputPath: '',
      argocdNamespace: 'argocd',
      logger: this.logger,
    });
  }

  /**
   * Resolves once the caches hold every object the API server holds now, at the same
   * resourceVersion, looked at on each of their watch events. Nothing else may be writing then.
   */
  async caughtUp(): Promise<void> {
    const fingerprint = (objects: Versioned[]) =>
      objects
        .map((o) => `${o.metadata?.namespace}/${o.metadata?.name}@${o.metadata?.resourceVersion}`)
        .sort()
        .join(',');
    const server = await Promise.all(
      CAUGHT_UP_KINDS.map(async (kind) => fingerprint(await this.options.listServer(kind))),
    );
    await waitOnChanges(
      (listener) => {
        this.listeners.add(listener);
        return () => this.listeners.delete(listener);
      },
      () => CAUGHT_UP_KINDS.every((kind, index) => fingerprint(this.cache.list(kind)) === server[index]),
      'the caches to catch up with the API server',
    );
  }

  /** Waits for the caches, then does what the runtime does after a change: each stack's key, then one publish reconcile. */
  async round(): Promise<Round> {
    await this.caughtUp();
    const stackErrors: unknown[] = [];
    for (const key of this.controller.stackKeys())
      await this.controller.handle(key).catch((error: unknown) => stackErrors.push(error));
    try {
      return { ...(await this.controller.reconcileOnce()), stackErrors };
    } catch (error) {
      return { requeueAfterMs: -1, error, stackErrors };
    }
  }

  async stop(): Promise<void> {
    await this.cache.stop();
  }
}
