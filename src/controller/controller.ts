// Controller mode: what `render` does, continuously, from live objects. Watch events only enqueue
// one key; one reconcile reads everything from the informer caches, plans, renders, publishes once,
// then writes owned objects, statuses and events. `runController` wires it to the runtime: informers,
// the work queue, leader election, the health server and graceful shutdown.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Publisher } from '../../gitops/publisher.js';
import type { GitOpsEngine, WiringOptions } from '../../gitops/wiring/render-wiring.js';
import type { HelmDependencies } from '../../renderers/helm-dependencies.js';
import type { CapiCluster, ClusterAddon, ClusterStack, ClusterStackRelease, KubeObject } from '../api/types.js';
import { withSpecDefaults } from '../api/types.js';
import { namespaceOf } from '../core/resolve-releases.js';
import { buildPlan, errorMessage, sourceLocationOf, type Plan } from '../plan/build-plan.js';
import { readProvenance } from '../render/change-summary.js';
import { renderOutput, type RenderOutcome, type UnitRecord } from '../render/render-output.js';
import type { SecretPolicy } from '../render/secret-policy.js';
import type { SourceOpener } from '../sources/open-release-source.js';
import { HealthServer, startHealthServer } from './health-server.js';
import { InformerSet } from './informer-set.js';
import type { KubeClient } from './kube-client.js';
import { LeaderElector } from './leader-election.js';
import { PrometheusMetrics } from './metrics.js';
import { ArgoClusterSecrets } from './reconcile-argocd-secrets.js';
import { EventRecorder } from './reconcile-events.js';
import { isReferenced, manifestsFrom, referencedObjectKeys, StackSpecMemory } from './reconcile-inputs.js';
import { applyDesiredState, type ApplyReport } from './reconcile-objects.js';
import { PublishTracker } from './reconcile-publish.js';
import { ResilientSources } from './reconcile-sources.js';
import type { ControllerMetrics, ObjectCache, WatchedKind, WatchEvent } from './runtime-contract.js';
import { desiredState } from './status/desired-state.js';
import { keyOf } from './status/owned-objects.js';
import { providerReleaseKind } from './status/provider-release-state.js';
import type { PublishState, StackIssue, StatusInputs } from './status/status-inputs.js';
import { syncStateOf, type UnitSync } from './status/sync-state.js';
import { unitObjects, type UnitObject } from './status/unit-resources.js';
import { ARGO_APPLICATIONS, CAPI_CLUSTERS, CLUSTER_ADDONS, CLUSTER_STACK_RELEASES, CLUSTER_STACKS, FLUX_KUSTOMIZATIONS, kindId, watchedKindOf } from './status/watched-kinds.js';
import { KeyedWorkQueue } from './work-queue.js';

/** The one queue key: every change leads to the same level-based reconcile. */
export const RECONCILE_KEY = 'clusterstacks';

/** An informer cache that can take on kinds found at run time (provider kinds, control planes). */
export interface KindCache extends ObjectCache {
  /** Watches these kinds too (idempotent); true once each has listed or is known not to be served. */
  ensureWatched(kinds: WatchedKind[]): boolean;
}

export interface ControllerOptions {
  cache: KindCache;
  kube: KubeClient;
  publisher: Publisher;
  /** What the publisher's revision is: a Git commit, an OCI digest, or nothing (a directory). */
  revisionKind: PublishState['revisionKind'];
  /** Release source for stacks that name none. */
  defaultSource: string;
  openSource: SourceOpener;
  /** Extracted releases (content-addressed). */
  workDir: string;
  helm: HelmDependencies;
  secrets: SecretPolicy;
  /** Whose sync state is read back (and, with `wiring`, for which engine the wiring is generated). */
  engine: GitOpsEngine;
  /** Generated Flux or Argo CD wiring beside the tree, as `render --gitops` writes it. */
  wiring?: WiringOptions;
  /** The output's `--path` inside the repository, for matching GitOps objects' paths. */
  outputPath: string;
  /** Where Argo CD cluster Secrets go. */
  argocdNamespace: string;
  /** Only objects in this namespace (undefined: all). */
  watchNamespace?: string;
  logger: Logger;
  metrics?: ControllerMetrics;
  now?: () => Date;
  /** Sources are listed and the target compared at least this often, even without events. Default 5 min. */
  resyncMs?: number;
}

/** A reconcile that did its job but found something worth retrying with backoff (source, Git, API). */
export class RetryLaterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RetryLaterError';
  }
}

export interface ReconcileSummary {
  published: PublishState['outcome'];
  revision: string | null;
  apply: ApplyReport;
  withheld: number;
  problems: string[];
}

/** Fields of an object whose change can change the output or the status: not status writes of our own. */
function fingerprint(kind: WatchedKind, object: KubeObject): string {
  const meta = object.metadata;
  const common = { deletion: meta.deletionTimestamp ?? null, labels: meta.labels ?? null };
  if (kind.group === CLUSTER_STACKS.group) {
    return JSON.stringify({ ...common, generation: meta.generation ?? null, finalizers: meta.finalizers ?? null, owners: meta.ownerReferences ?? null });
  }
  if (kindId(kind) === kindId(FLUX_KUSTOMIZATIONS) || kindId(kind) === kindId(ARGO_APPLICATIONS)) return JSON.stringify({ spec: object['spec'] ?? null, status: object['status'] ?? null });
  const annotations = Object.fromEntries(Object.entries(meta.annotations ?? {}).filter(([key]) => key !== 'kubectl.kubernetes.io/last-applied-configuration'));
  const ready = (object as { status?: { ready?: unknown } }).status?.ready ?? null;
  return JSON.stringify({ ...common, annotations, spec: object['spec'] ?? null, ready, owners: meta.ownerReferences ?? null });
}

/** Renders and publishes the cluster stacks of a management cluster, and reports back through the API. */
export class Controller {
  private readonly sources: ResilientSources;
  private readonly stackSpecs = new StackSpecMemory();
  private readonly tracker: PublishTracker;
  private readonly events: EventRecorder;
  private readonly argoSecrets: ArgoClusterSecrets;
  private readonly seen = new Map<string, string>();
  private readonly unitObjectCache = new Map<string, { digest: string; objects: UnitObject[] }>();
  private reconciles = 0;

  constructor(private readonly options: ControllerOptions) {
    this.sources = new ResilientSources(options.openSource);
    this.tracker = new PublishTracker(options.publisher, { revisionKind: options.revisionKind, resyncMs: options.resyncMs ?? 300_000 });
    this.events = new EventRecorder({ sink: options.kube, logger: options.logger });
    this.argoSecrets = new ArgoClusterSecrets({ store: options.kube, namespace: options.argocdNamespace, logger: options.logger });
  }

  /** The kinds watched from the start; provider and referenced kinds are added as stacks and Clusters name them. */
  static watchedKinds(engine: GitOpsEngine): WatchedKind[] {
    const kinds = [CLUSTER_STACKS, CLUSTER_STACK_RELEASES, CLUSTER_ADDONS, CAPI_CLUSTERS];
    if (engine === 'flux') kinds.push(FLUX_KUSTOMIZATIONS);
    if (engine === 'argocd') kinds.push(ARGO_APPLICATIONS);
    return kinds;
  }

  /**
   * Whether a watch event can change what we publish or report. Updates that only carry status
   * we wrote ourselves (or CAPI's status churn on Clusters) are dropped, so writes do not loop.
   */
  isRelevant(event: WatchEvent): boolean {
    const key = `${kindId(event.kind)}/${event.object.metadata.namespace ?? ''}/${event.object.metadata.name}`;
    if (event.type === 'delete') {
      this.seen.delete(key);
      return true;
    }
    const print = fingerprint(event.kind, event.object);
    if (this.seen.get(key) === print) return false;
    this.seen.set(key, print);
    return true;
  }

  private inScope(object: { metadata: { namespace?: string } }): boolean {
    return this.options.watchNamespace === undefined || namespaceOf(object) === this.options.watchNamespace;
  }

  private listLive(kind: WatchedKind): KubeObject[] {
    return this.options.cache.list(kind).filter((object) => this.inScope(object));
  }

  /** Provider template and release kinds the stacks name, and the kinds Clusters reference. */
  private dynamicKinds(stacks: ClusterStack[], clusters: CapiCluster[]): { templates: WatchedKind[]; releases: WatchedKind[]; referenced: WatchedKind[] } {
    const templates = new Map<string, WatchedKind>();
    const releases = new Map<string, WatchedKind>();
    for (const stack of stacks) {
      const spec = withSpecDefaults(stack.spec ?? ({} as ClusterStack['spec']));
      const ref = spec.providerRef;
      if (spec.noProvider || !ref?.apiVersion || !ref.kind) continue;
      const template = watchedKindOf(ref.apiVersion, ref.kind);
      const release = watchedKindOf(ref.apiVersion, providerReleaseKind(ref.kind));
      templates.set(kindId(template), template);
      releases.set(kindId(release), release);
    }
    const referenced = new Map<string, WatchedKind>();
    for (const cluster of clusters) {
      for (const ref of referencedObjectKeys(cluster)) {
        const kind = watchedKindOf(ref.apiVersion, ref.kind);
        referenced.set(kindId(kind), kind);
      }
    }
    return { templates: [...templates.values()], releases: [...releases.values()], referenced: [...referenced.values()] };
  }

  private unitObjectsOf(tree: Map<string, string>, units: UnitRecord[]): (unit: UnitRecord) => UnitObject[] {
    const present = new Set(units.map((unit) => unit.dir));
    for (const dir of [...this.unitObjectCache.keys()]) if (!present.has(dir)) this.unitObjectCache.delete(dir);
    return (unit) => {
      const cached = this.unitObjectCache.get(unit.dir);
      if (cached && cached.digest === unit.renderDigest) return cached.objects;
      const objects = unitObjects(tree, unit);
      this.unitObjectCache.set(unit.dir, { digest: unit.renderDigest, objects });
      return objects;
    };
  }

  /** The work queue's handler: a reconcile, requeued for the next resync (failures throw, and back off). */
  async handle(signal?: AbortSignal): Promise<{ requeueAfterMs: number }> {
    const { requeueAfterMs } = await this.reconcileOnce(signal);
    return { requeueAfterMs };
  }

  /**
   * One full reconcile: observe (caches), plan, render, publish once, then write owned objects,
   * statuses and events. Throws RetryLaterError after writing status when a retry may help.
   */
  async reconcileOnce(signal?: AbortSignal): Promise<{ requeueAfterMs: number } & { summary?: ReconcileSummary }> {
    const { cache, logger: baseLogger } = this.options;
    const round = ++this.reconciles;
    const logger = baseLogger.child({ reconcile: round });
    if (!cache.synced()) return { requeueAfterMs: 500 };
    const now = (this.options.now ?? (() => new Date()))();

    // Observe.
    const stacks = this.listLive(CLUSTER_STACKS) as unknown as ClusterStack[];
    const clusters = this.listLive(CAPI_CLUSTERS) as CapiCluster[];
    const dynamic = this.dynamicKinds(stacks, clusters);
    if (!cache.ensureWatched([...dynamic.templates, ...dynamic.releases, ...dynamic.referenced])) {
      logger.debug({ kinds: [...dynamic.templates, ...dynamic.releases, ...dynamic.referenced].map((kind) => kind.kind) }, 'Waiting for newly watched kinds to list');
      return { requeueAfterMs: 250 };
    }
    const providerTemplates = dynamic.templates.flatMap((kind) => this.listLive(kind));
    const providerReleases = dynamic.releases.flatMap((kind) => this.listLive(kind));
    const referencedKeys = clusters.flatMap(referencedObjectKeys);
    const referenced = dynamic.referenced.flatMap((kind) => this.listLive(kind)).filter((object) => isReferenced(object, referencedKeys));
    const live: StatusInputs['live'] = {
      stacks,
      clusters,
      releases: this.listLive(CLUSTER_STACK_RELEASES) as unknown as ClusterStackRelease[],
      addons: this.listLive(CLUSTER_ADDONS) as unknown as ClusterAddon[],
      providerReleases,
      providerTemplates,
    };

    // Decide: plan from the live objects (invalid stacks from their last valid spec).
    const stackIssues = new Map<string, StackIssue>();
    const selected = this.stackSpecs.select(stacks, stackIssues);
    this.sources.beginRound();
    let plan: Plan | undefined;
    let planError: string | undefined;
    try {
      plan = await buildPlan({
        manifests: manifestsFrom({ stacks: selected, clusters, providerReleases, referenced }),
        defaultSource: this.options.defaultSource,
        openSource: this.sources.opener,
        workDir: this.options.workDir,
        onWarning: (message) => logger.warn({ warning: message }, 'Release source warning'),
      });
    } catch (error) {
      planError = errorMessage(error);
    }
    for (const stack of stacks) {
      const key = keyOf(stack);
      const failure = this.sources.failureOf(sourceLocationOf(stack, this.options.defaultSource));
      if (failure && !stackIssues.has(key)) stackIssues.set(key, { reason: 'ReleaseSourceUnavailable', problems: [failure.message], fallback: failure.fallback });
      else if (planError && !stackIssues.has(key)) stackIssues.set(key, { reason: 'ReleaseSourceUnavailable', problems: [planError], fallback: false });
      const planProblems = (plan?.problems ?? []).filter((problem) => problem.object === `ClusterStack ${key}`);
      if (planProblems.length > 0 && !stackIssues.has(key)) {
        stackIssues.set(key, { reason: 'InvalidSpec', problems: planProblems.map((problem) => `${problem.path ? `${problem.path} ` : ''}${problem.message}`), fallback: false });
      }
    }

    // Render and publish, once.
    let render: RenderOutcome | undefined;
    let renderError: string | undefined;
    let publish: PublishState;
    // Set when something a retry may fix went wrong: the reconcile then fails, after writing status, and backs off.
    let retry: string | undefined;
    if (!plan) {
      publish = this.tracker.skipped(`the release source failed: ${planError ?? 'unknown error'}`);
      retry = planError ?? 'no plan';
    } else {
      let previous: Map<string, string> | undefined;
      try {
        previous = await this.tracker.previousTree();
      } catch (error) {
        renderError = `the publish target ${this.tracker.target} could not be read: ${errorMessage(error)}`;
        retry = renderError;
      }
      if (previous) {
        const started = Date.now();
        const helmBefore = this.options.helm.processesSpawned();
        try {
          render = await renderOutput(plan, this.options.helm, { secrets: this.options.secrets, previous, ...(this.options.wiring ? { gitops: this.options.wiring } : {}) });
        } catch (error) {
          renderError = errorMessage(error);
          logger.error({ error: renderError }, 'Render failed');
        }
        this.options.metrics?.renderDuration((Date.now() - started) / 1000);
        this.options.metrics?.helmProcesses(this.options.helm.processesSpawned() - helmBefore);
      }
      const held = render ? this.publishHold(previous, stackIssues, stacks) : undefined;
      if (!render) publish = this.tracker.skipped(renderError ?? 'nothing rendered');
      else if (held) {
        publish = this.tracker.skipped(held, render.tree);
        retry = held;
      } else if (signal?.aborted) {
        publish = this.tracker.skipped('the controller is shutting down', render.tree);
      } else {
        const attempt = await this.tracker.publish(render.tree, render.provenance.inputDigest);
        publish = attempt.state;
        if (attempt.durationSeconds !== undefined) this.options.metrics?.publishDuration(attempt.durationSeconds);
        if (attempt.durationSeconds !== undefined && this.options.revisionKind === 'commit') this.options.metrics?.remoteRequest('git', publish.outcome === 'failed' ? 'error' : 'ok');
        if (publish.outcome === 'failed') {
          // A refused push (auth, protected branch) waits for the resync or the next change instead.
          if (attempt.retryable !== false) retry = publish.message ?? 'publish failed';
          logger.warn({ target: publish.target, error: publish.message }, 'Publish failed; the previous output stays in place');
        } else if (publish.outcome === 'published') logger.info({ target: publish.target, revision: publish.revision, units: publish.dirtyDirs.size }, 'Published rendered manifests');
      }
    }

    // Report back: owned objects, statuses, events, Argo CD cluster Secrets.
    const sync = this.syncState(render, publish);
    const inputs: StatusInputs = {
      now: now.toISOString(),
      engine: this.options.engine,
      live,
      stackIssues,
      publish,
      sync,
      unitObjects: this.unitObjectsOf(render?.tree ?? new Map(), render?.provenance.units ?? []),
      ...(plan ? { plan } : {}),
      ...(render ? { render } : {}),
      ...(renderError ? { renderError } : {}),
    };
    const desired = desiredState(inputs);
    const apply = await applyDesiredState(this.options.kube, desired, { now: inputs.now, logger });
    await this.events.record(desired.events);
    if (this.options.engine === 'argocd' && plan) {
      const workload = plan.resolution.clusters.filter((cluster) => cluster.managed).map((cluster) => ({ namespace: cluster.namespace, name: cluster.name }));
      try {
        const report = await this.argoSecrets.reconcile(workload);
        if (report.errors.length > 0) retry ??= `${report.errors.length} Argo CD cluster secret(s) could not be written`;
      } catch (error) {
        retry ??= `Argo CD cluster secrets: ${errorMessage(error)}`;
      }
    }

    const summary: ReconcileSummary = {
      published: publish.outcome,
      revision: publish.revision,
      apply,
      withheld: render?.withheld.length ?? 0,
      problems: [...stackIssues.entries()].map(([key, issue]) => `${key}: ${issue.reason}`),
    };
    logger.info(
      { published: publish.outcome, revision: publish.revision, created: apply.created.length, updated: apply.updated.length, deleted: apply.deleted.length, statuses: apply.statusesWritten, withheld: summary.withheld, issues: summary.problems.length },
      'Reconciled',
    );
    if (apply.errors.length > 0) retry ??= `${apply.errors.length} object(s) could not be written`;
    if (retry === undefined && this.sources.failed) retry = 'a release source failed; its last listing was used';
    if (retry !== undefined) throw new RetryLaterError(retry);
    return { requeueAfterMs: this.options.resyncMs ?? 300_000, summary };
  }

  /**
   * Why publishing must wait, if it must: a stack that was published before but cannot be resolved
   * now (source down with no earlier listing, or invalid with no earlier valid spec) would otherwise
   * vanish from the output, and the GitOps engine would prune its ClusterClasses.
   */
  private publishHold(previous: Map<string, string> | undefined, issues: Map<string, StackIssue>, stacks: ClusterStack[]): string | undefined {
    const before = previous ? readProvenance(previous) : undefined;
    const publishedStacks = new Set((before?.inputs ?? []).filter((input) => input.kind.endsWith('/ClusterStack')).map((input) => `${input.namespace}/${input.name}`));
    const stranded = stacks.filter((stack) => {
      const issue = issues.get(keyOf(stack));
      return issue && !issue.fallback && publishedStacks.has(keyOf(stack));
    });
    if (stranded.length === 0) return undefined;
    return `ClusterStack ${stranded.map(keyOf).join(', ')} cannot be resolved now and was published before; publishing waits so its ClusterClasses are not pruned`;
  }

  private syncState(render: RenderOutcome | undefined, publish: PublishState): Map<string, UnitSync> {
    if (!render || this.options.engine === 'none') return new Map();
    const kind = this.options.engine === 'flux' ? FLUX_KUSTOMIZATIONS : ARGO_APPLICATIONS;
    const objects = this.options.cache.list(kind);
    return syncStateOf(this.options.engine, objects, render.provenance.units.map((unit) => unit.dir), publish.order, this.options.outputPath);
  }
}

/** The runtime's informers, plus sets started on demand for kinds found at run time. */
export class InformerCache implements KindCache {
  private readonly core: InformerSet;
  private readonly coreKinds: Set<string>;
  private readonly dynamic = new Map<string, InformerSet>();
  private readonly since = new Map<string, number>();
  private readonly givenUp = new Set<string>();
  private readonly listGraceMs: number;
  private running = false;

  constructor(private readonly options: { kubeConfig: KubeConfig; kinds: WatchedKind[]; onEvent: (event: WatchEvent) => void; logger: Logger; onRestart?: (kind: WatchedKind) => void; listGraceMs?: number }) {
    this.coreKinds = new Set(options.kinds.map(kindId));
    this.listGraceMs = options.listGraceMs ?? 10_000;
    this.core = this.makeSet(options.kinds);
  }

  private makeSet(kinds: WatchedKind[]): InformerSet {
    return new InformerSet({ kubeConfig: this.options.kubeConfig, kinds, onEvent: this.options.onEvent, logger: this.options.logger, ...(this.options.onRestart ? { onRestart: this.options.onRestart } : {}) });
  }

  async start(): Promise<void> {
    this.running = true;
    await this.core.start();
    await Promise.all([...this.dynamic.values()].map((set) => set.start()));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all([this.core.stop(), ...[...this.dynamic.values()].map((set) => set.stop())]);
  }

  whenSynced(signal?: AbortSignal): Promise<void> {
    return this.core.whenSynced(signal);
  }

  synced(): boolean {
    return this.core.synced();
  }

  private setOf(kind: WatchedKind): InformerSet | undefined {
    if (this.coreKinds.has(kindId(kind))) return this.core;
    return this.dynamic.get(kindId(kind));
  }

  list(kind: WatchedKind): KubeObject[] {
    return this.setOf(kind)?.list(kind) ?? [];
  }

  get(kind: WatchedKind, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.setOf(kind)?.get(kind, namespace, name);
  }

  ensureWatched(kinds: WatchedKind[]): boolean {
    let ready = true;
    for (const kind of kinds) {
      let set = this.setOf(kind);
      if (!set) {
        set = this.makeSet([kind]);
        this.dynamic.set(kindId(kind), set);
        this.since.set(kindId(kind), Date.now());
        this.options.logger.info({ kind: kind.kind, apiVersion: `${kind.group}/${kind.version}` }, 'Watching a kind named by a ClusterStack or Cluster');
        if (this.running) void set.start();
      }
      if (set === this.core || set.isServed(kind) !== undefined) continue;
      // A kind that keeps failing (no RBAC rule for it, say) must not hold every reconcile back:
      // after a grace period the controller goes on without it, and the informer keeps retrying.
      const waited = Date.now() - (this.since.get(kindId(kind)) ?? 0);
      if (waited < this.listGraceMs) ready = false;
      else if (!this.givenUp.has(kindId(kind))) {
        this.givenUp.add(kindId(kind));
        this.options.logger.warn({ kind: kind.kind, apiVersion: `${kind.group}/${kind.version}`, waitedMs: waited }, 'A watched kind has not listed; going on without it (check the RBAC rules for it)');
      }
    }
    return ready;
  }
}

export interface ControllerRuntimeOptions extends Omit<ControllerOptions, 'cache' | 'metrics'> {
  kubeConfig: KubeConfig;
  /** Undefined: no leader election (a single replica). */
  leaderElection?: { namespace: string; name: string; identity: string; leaseDurationMs?: number; renewDeadlineMs?: number; retryPeriodMs?: number };
  /** Undefined: no health/metrics server. */
  health?: { port: number; host?: string };
  /** Changes within this window are published together. Default 1 s. */
  batchWindowMs?: number;
  /** Abandon a reconcile (publish) still running this long after shutdown starts. Default 20 s. */
  shutdownTimeoutMs?: number;
}

export interface ControllerRuntime {
  readonly controller: Controller;
  readonly metrics: PrometheusMetrics;
  readonly cache: InformerCache;
  readonly healthUrl?: string;
  isLeader(): boolean;
  /** Stops in order: informers, queue (the reconcile in flight finishes or is abandoned), lease, health server. */
  stop(): Promise<void>;
  /** Resolves when the runtime stopped by itself (leadership lost); the process should then exit. */
  readonly done: Promise<{ reason: string }>;
}

/** Starts the controller with its runtime. Only the leader reconciles (and so publishes and writes). */
export async function runController(options: ControllerRuntimeOptions): Promise<ControllerRuntime> {
  const { logger } = options;
  const metrics = new PrometheusMetrics();
  const batchWindowMs = options.batchWindowMs ?? 1000;
  let queue: KeyedWorkQueue | undefined;
  let leading = options.leaderElection === undefined;
  let controller: Controller | undefined;
  const onEvent = (event: WatchEvent) => {
    if (controller?.isRelevant(event)) queue?.addBatched(RECONCILE_KEY, batchWindowMs);
  };
  const cache = new InformerCache({ kubeConfig: options.kubeConfig, kinds: Controller.watchedKinds(options.engine), onEvent, logger, onRestart: (kind) => metrics.informerRestart(kind.kind) });
  controller = new Controller({ ...options, cache, metrics });
  const ctl = controller;
  const newQueue = () =>
    new KeyedWorkQueue({
      concurrency: 1,
      handler: (_key, signal) => ctl.handle(signal),
      logger,
      baseDelayMs: 1000,
      maxDelayMs: 120_000,
      onResult: (_key, outcome) => metrics.reconcileTotal(outcome),
    });

  let health: HealthServer | undefined;
  if (options.health) {
    health = await startHealthServer({ port: options.health.port, ...(options.health.host ? { host: options.health.host } : {}), metrics, ready: () => cache.synced(), healthy: () => true });
  }
  await cache.start();

  let resolveDone!: (value: { reason: string }) => void;
  const done = new Promise<{ reason: string }>((resolve) => {
    resolveDone = resolve;
  });
  const startQueue = () => {
    queue = newQueue();
    metrics.observeQueueDepth(() => queue?.depth ?? 0);
    queue.start();
    queue.add(RECONCILE_KEY);
  };
  const stopQueue = async () => {
    const current = queue;
    queue = undefined;
    if (current) await current.shutdown({ drain: false, timeoutMs: options.shutdownTimeoutMs ?? 20_000 });
  };

  let elector: LeaderElector | undefined;
  metrics.observeLeader(() => leading);
  if (options.leaderElection) {
    const election = options.leaderElection;
    elector = new LeaderElector({
      kubeConfig: options.kubeConfig,
      namespace: election.namespace,
      name: election.name,
      identity: election.identity,
      leaseDurationMs: election.leaseDurationMs ?? 15_000,
      renewDeadlineMs: election.renewDeadlineMs ?? 10_000,
      retryPeriodMs: election.retryPeriodMs ?? 2_000,
      logger,
    });
    void elector
      .run({
        onStartedLeading: async (signal) => {
          leading = true;
          await cache.whenSynced(signal).catch(() => undefined);
          if (!signal.aborted) startQueue();
        },
        onStoppedLeading: () => {
          leading = false;
          void stopQueue();
        },
      })
      .then(
        () => resolveDone({ reason: 'leadership ended' }),
        (error: unknown) => resolveDone({ reason: `leader election failed: ${errorMessage(error)}` }),
      );
  } else {
    startQueue();
  }

  let stopped = false;
  return {
    controller: ctl,
    metrics,
    cache,
    ...(health ? { healthUrl: health.url } : {}),
    isLeader: () => leading,
    done,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await cache.stop();
      await stopQueue();
      await elector?.stop();
      await health?.close();
      resolveDone({ reason: 'stopped' });
    },
  };
}
