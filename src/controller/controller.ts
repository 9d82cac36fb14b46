// Controller mode: what `render` does, continuously, from live objects. Two kinds of queue keys:
// one per ClusterStack (`ClusterStack/<ns>/<name>`), which lists that stack's release source with
// its own failure backoff, and one `publish` key, whose reconcile reads everything from the informer
// caches and what the sources answered last, plans, renders, publishes once, then writes owned
// objects, statuses and events. A stack whose source is down or whose spec is invalid is withheld
// (its published output kept); it never holds publishing for the others.
// `runController` wires it to the runtime: informers, the queues, leader election, the health
// server and graceful shutdown.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { PublishedHistory, UnitDirOf } from '../../gitops/git-history.js';
import type { Publisher } from '../../gitops/publisher.js';
import type { GitOpsEngine, WiringOptions } from '../../gitops/wiring/render-wiring.js';
import type { HelmDependencies } from '../../renderers/helm-dependencies.js';
import type { CapiCluster, ClusterAddon, ClusterStack, ClusterStackRelease, KubeObject } from '../api/types.js';
import { withSpecDefaults } from '../api/types.js';
import { namespaceOf } from '../core/resolve-releases.js';
import { buildPlan, errorMessage, sourceLocationOf, type Plan } from '../plan/build-plan.js';
import type { RenderOutcome } from '../render/render-output.js';
import { failureKindOf } from '../core/failure.js';
import type { MassDeletionPolicy } from '../core/mass-deletion-guard.js';
import { renderAndPublish } from '../pipeline/render-and-publish.js';
import { type UnitRecord } from '../output/provenance.js';
import type { SecretPolicy } from '../render/secret-policy.js';
import type { SourceOpener } from '../sources/open-release-source.js';
import { HealthServer, startHealthServer } from './runtime/health-server.js';
import type { KubeClient, ResourceKind } from './runtime/kube-client.js';
import { LeaderElector } from './runtime/leader-election.js';
import { PrometheusMetrics } from './runtime/metrics.js';
import { ArgoClusterSecrets } from './reconcile/argocd-cluster-secrets.js';
import { EventRecorder } from './reconcile/event-recorder.js';
import { isReferenced, manifestsFrom, referencedObjectKeys, specOnly, StackSpecMemory } from './reconcile/live-inputs.js';
import { applyDesiredState, eventsWithSubjects, type ApplyReport } from './reconcile/apply-desired-state.js';
import { type PublishAttempt, PublishTracker } from './reconcile/publish-tracker.js';
import { unitDirOf } from '../output/tree-layout.js';
import { OwnWrites } from './reconcile/own-writes.js';
import { SourceListings } from './reconcile/source-listings.js';
import { fallbackReleaseTags, standInStack, WITHHELD_SOURCE_PREFIX, withheldSource } from './reconcile/withheld-stacks.js';
import { InformerCache, type KindCache } from './runtime/informer-cache.js';
import { kindRefKey, type KindRef } from './runtime/kind-discovery.js';
import type { ControllerMetrics, WatchedKind, WatchEvent } from './runtime/runtime-contract.js';
import { desiredState } from './desired-state/desired-state.js';
import { keyOf } from './desired-state/owned-objects.js';
import { providerReleaseKind } from './desired-state/provider-release-state.js';
import type { PublishState, StackIssue, StatusInputs } from './desired-state/status-inputs.js';
import { syncStateOf, type UnitSync } from './desired-state/sync-state.js';
import { unitObjects, type UnitObject } from './desired-state/unit-resources.js';
import { ARGO_APPLICATIONS, CAPI_CLUSTERS, CLUSTER_ADDONS, CLUSTER_REQUESTS, CLUSTER_STACK_RELEASES, CLUSTER_STACKS, FLUX_KUSTOMIZATIONS, kindId } from './desired-state/watched-kinds.js';
import type { SchedulerConfig } from '../cluster-requests/scheduler-config.js';
import { desiredRequestStatuses } from './desired-state/cluster-request-state.js';
import { writeRequestStatuses } from './reconcile/cluster-request-statuses.js';
import { KeyedWorkQueue } from './runtime/work-queue.js';

export { InformerCache, type KindCache } from './runtime/informer-cache.js';

/** The key of the reconcile that renders, publishes and reports: every change leads to it. */
export const PUBLISH_KEY = 'publish';
const STACK_KEY_PREFIX = 'ClusterStack/';

/** The queue key of a ClusterStack's own work: listing its release source. */
export function stackKey(namespace: string, name: string): string {
  return `${STACK_KEY_PREFIX}${namespace}/${name}`;
}

export interface ControllerOptions {
  cache: KindCache;
  kube: KubeClient;
  publisher: Publisher;
  /** What the publisher's revision is: a Git commit, an OCI digest, or nothing (a directory). */
  revisionKind: PublishState['revisionKind'];
  /** For Git targets: the branch's history, so conditions name the same commits after a restart. */
  history?: { read(unitDirOf: UnitDirOf): Promise<PublishedHistory> };
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
  /** The publisher proposes pull requests: their body is generated as `render --pull-request` does. */
  pullRequest?: boolean;
  /** The mass-deletion guard; off by default: the controller's inputs are live objects, deleted deliberately. */
  massDeletion?: MassDeletionPolicy;
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
  /** How long a source's listing may take before it counts as hanging (the stack is then withheld). Default 15 s. */
  listingWaitMs?: number;
  /** Publish ClusterProfiles and schedule ClusterRequests (watched, their statuses written). */
  scheduler?: SchedulerConfig;
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
  private readonly listings: SourceListings;
  private readonly stackSpecs = new StackSpecMemory();
  private readonly tracker: PublishTracker;
  private readonly events: EventRecorder;
  private readonly argoSecrets: ArgoClusterSecrets;
  private readonly ownWrites = new OwnWrites();
  private readonly seen = new Map<string, string>();
  private readonly stackSources = new Map<string, string>();
  private readonly unitObjectCache = new Map<string, { digest: string; objects: UnitObject[] }>();
  private reconciles = 0;
  private finished = 0;
  /** The objects of each stack the last reconcile could not write: the next one reports them. */
  private ownedObjectErrors = new Map<string, string[]>();

  constructor(private readonly options: ControllerOptions) {
    this.listings = new SourceListings(options.openSource, options.listingWaitMs !== undefined ? { listingWaitMs: options.listingWaitMs } : {});
    this.tracker = new PublishTracker(options.publisher, {
      revisionKind: options.revisionKind,
      resyncMs: options.resyncMs ?? 300_000,
      ...(options.history ? { history: options.history } : {}),
      onHistoryError: (error) => options.logger.warn({ target: options.publisher.target, error: errorMessage(error) }, 'Could not read the published history; conditions name the head commit until the next publish'),
    });
    this.events = new EventRecorder({ sink: options.kube, logger: options.logger });
    this.argoSecrets = new ArgoClusterSecrets({ store: options.kube, namespace: options.argocdNamespace, logger: options.logger });
  }

  /**
   * The kinds watched from the start; provider and referenced kinds are added as stacks and
   * Clusters name them. With `namespace`, every kind is watched in that namespace only, and the
   * engine's objects also in `engineNamespaces` (where the generated wiring puts them).
   */
  static watchedKinds(engine: GitOpsEngine, scope: { namespace?: string; engineNamespaces?: string[] } = {}, clusterRequests = false): WatchedKind[] {
    const inScope = (kind: WatchedKind, namespace = scope.namespace): WatchedKind => (namespace === undefined ? kind : { ...kind, namespace });
    const kinds = [CLUSTER_STACKS, CLUSTER_STACK_RELEASES, CLUSTER_ADDONS, CAPI_CLUSTERS, ...(clusterRequests ? [CLUSTER_REQUESTS] : [])].map((kind) => inScope(kind));
    const engineKind = engine === 'flux' ? FLUX_KUSTOMIZATIONS : engine === 'argocd' ? ARGO_APPLICATIONS : undefined;
    if (engineKind) {
      const namespaces = scope.namespace === undefined ? [undefined] : [...new Set([scope.namespace, ...(scope.engineNamespaces ?? [])])];
      for (const namespace of namespaces) kinds.push(inScope(engineKind, namespace));
    }
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
      this.ownWrites.forget(event.object);
      return true;
    }
    const print = fingerprint(event.kind, event.object);
    if (this.seen.get(key) === print) return false;
    this.seen.set(key, print);
    return true;
  }

  /**
   * The stack key to run for a watch event, when the event may change which releases the stack's
   * source offers it (a new stack, another source, a new generation), else undefined.
   */
  stackKeyFor(event: WatchEvent): string | undefined {
    if (kindId(event.kind) !== kindId(CLUSTER_STACKS) || !this.inScope(event.object)) return undefined;
    const key = stackKey(namespaceOf(event.object), event.object.metadata.name);
    if (event.type === 'delete') {
      this.stackSources.delete(key);
      return undefined;
    }
    const print = `${event.object.metadata.generation ?? ''}|${sourceLocationOf(event.object as unknown as ClusterStack, this.options.defaultSource)}`;
    if (this.stackSources.get(key) === print) return undefined;
    this.stackSources.set(key, print);
    return key;
  }

  /** The stack keys of every stack in the cache (when a new leader starts its queues). */
  stackKeys(): string[] {
    return this.listLive(CLUSTER_STACKS).map((stack) => stackKey(namespaceOf(stack), stack.metadata.name));
  }

  private inScope(object: { metadata: { namespace?: string } }): boolean {
    return this.options.watchNamespace === undefined || namespaceOf(object) === this.options.watchNamespace;
  }

  private listLive(kind: WatchedKind): KubeObject[] {
    return this.options.cache.list(kind).filter((object) => this.inScope(object));
  }

  /** Live objects of one of our kinds, with our own writes the cache has not caught up with. */
  private listOwn(kind: WatchedKind): KubeObject[] {
    return this.ownWrites.overlay(`${kind.group}/${kind.version}`, kind.kind, this.listLive(kind));
  }

  /** Provider template and release kinds the stacks name, and the kinds Clusters reference. */
  private kindRefs(stacks: ClusterStack[], clusters: CapiCluster[]): { templates: KindRef[]; releases: KindRef[]; referenced: KindRef[] } {
    const templates = new Map<string, KindRef>();
    const releases = new Map<string, KindRef>();
    for (const stack of stacks) {
      const spec = withSpecDefaults(stack.spec ?? ({} as ClusterStack['spec']));
      const ref = spec.providerRef;
      if (spec.noProvider || !ref?.apiVersion || !ref.kind) continue;
      const template = { apiVersion: ref.apiVersion, kind: ref.kind };
      const release = { apiVersion: ref.apiVersion, kind: providerReleaseKind(ref.kind) };
      templates.set(kindRefKey(template), template);
      releases.set(kindRefKey(release), release);
    }
    const referenced = new Map<string, KindRef>();
    for (const cluster of clusters) {
      for (const ref of referencedObjectKeys(cluster)) referenced.set(kindRefKey(ref), { apiVersion: ref.apiVersion, kind: ref.kind });
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

  /**
   * The work queues' handler. A stack key lists the stack's source (and fails, to back off on its
   * own, when the source does); `onSourcesChanged` is called when what its source offers changed,
   * so the runtime can schedule a publish. The publish key is a full reconcile.
   */
  async handle(key: string, signal?: AbortSignal, onSourcesChanged?: () => void): Promise<{ requeueAfterMs: number }> {
    if (key.startsWith(STACK_KEY_PREFIX)) {
      const { changed, gone } = await this.refreshStackSource(key).catch((error: unknown) => {
        onSourcesChanged?.();
        throw error;
      });
      if (changed) onSourcesChanged?.();
      // A deleted stack's key is done for good.
      return { requeueAfterMs: gone ? 0 : (this.options.resyncMs ?? 300_000) };
    }
    const { requeueAfterMs } = await this.reconcileOnce(signal);
    return { requeueAfterMs };
  }

  /** How many reconciles got as far as writing to the API server (with or without errors), e.g. to wait for one in tests. */
  get completedReconciles(): number {
    return this.finished;
  }

  /**
   * Lists the release source of the stack behind `key` and records the answer for the next
   * publish. Rejects with a RetryLaterError when the source fails; resolves `changed` when what
   * the source offers (or its failure) changed.
   */
  async refreshStackSource(key: string): Promise<{ changed: boolean; gone?: boolean }> {
    const [namespace, name] = key.slice(STACK_KEY_PREFIX.length).split('/') as [string, string];
    const stack = this.options.cache.get(CLUSTER_STACKS, namespace, name) as ClusterStack | undefined;
    if (!stack || !this.inScope(stack)) return { changed: false, gone: true };
    const location = sourceLocationOf(specOnly(stack), this.options.defaultSource);
    try {
      return await this.listings.refresh(location);
    } catch (error) {
      this.options.logger.warn({ stack: `${namespace}/${name}`, source: location, error: errorMessage(error) }, 'Release source failed; the stack is withheld and retried with backoff');
      throw new RetryLaterError(`ClusterStack ${namespace}/${name}: listing releases from ${location} failed: ${errorMessage(error)}`);
    }
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
    const stacks = this.listOwn(CLUSTER_STACKS) as unknown as ClusterStack[];
    const clusters = this.listLive(CAPI_CLUSTERS) as CapiCluster[];
    const requests = this.options.scheduler ? this.listLive(CLUSTER_REQUESTS) : [];
    const refs = this.kindRefs(stacks, clusters);
    const lookups = await cache.resolveKinds([...refs.templates, ...refs.releases, ...refs.referenced]);
    const served = (list: KindRef[]): WatchedKind[] => list.flatMap((ref) => {
      const lookup = lookups.get(kindRefKey(ref));
      return lookup?.served ? [lookup.kind] : [];
    });
    const unservedKinds = new Map<string, string>();
    for (const [key, lookup] of lookups) if (!lookup.served) unservedKinds.set(key, lookup.reason);
    const dynamic = { templates: served(refs.templates), releases: served(refs.releases), referenced: served(refs.referenced) };
    if (!cache.ensureWatched([...dynamic.templates, ...dynamic.releases, ...dynamic.referenced])) {
      logger.debug({ kinds: [...dynamic.templates, ...dynamic.releases, ...dynamic.referenced].map((kind) => kind.kind) }, 'Waiting for newly watched kinds to list');
      return { requeueAfterMs: 250 };
    }
    const providerTemplates = dynamic.templates.flatMap((kind) => this.listLive(kind));
    const providerReleases = dynamic.releases.flatMap((kind) => this.listOwn(kind));
    const referencedKeys = clusters.flatMap(referencedObjectKeys);
    const referenced = dynamic.referenced.flatMap((kind) => this.listLive(kind)).filter((object) => isReferenced(object, referencedKeys));
    const live: StatusInputs['live'] = {
      stacks,
      clusters,
      releases: this.listOwn(CLUSTER_STACK_RELEASES) as unknown as ClusterStackRelease[],
      addons: this.listOwn(CLUSTER_ADDONS) as unknown as ClusterAddon[],
      providerReleases,
      providerTemplates,
    };
    const restKind = (apiVersion: string, kind: string): ResourceKind | undefined => {
      const lookup = lookups.get(kindRefKey({ apiVersion, kind }));
      return lookup?.served ? lookup.kind : undefined;
    };

    // The target's tree first: a stack that cannot be resolved now keeps what it holds.
    let previous: Map<string, string> | undefined;
    let targetError: string | undefined;
    const readStarted = Date.now();
    try {
      previous = await this.tracker.previousTree();
      logger.debug({ phase: 'read target', ms: Date.now() - readStarted }, 'Reconcile phase done');
    } catch (error) {
      targetError = `the publish target ${this.tracker.target} could not be read: ${errorMessage(error)}`;
    }
    const fallbackTags = () => fallbackReleaseTags(previous, live.releases);
    const phase = (name: string, since: number) => logger.debug({ phase: name, ms: Date.now() - since }, 'Reconcile phase done');
    const observedAt = Date.now();

    // Decide: plan from the live objects (invalid stacks from their last valid spec, or withheld).
    const stackIssues = new Map<string, StackIssue>();
    const { selected, standIns } = this.stackSpecs.select(stacks, stackIssues, (stack, problems) => standInStack(stack, problems, fallbackTags()));
    const sources = this.listings.roundOpener(fallbackTags);
    const opener: SourceOpener = (location) =>
      location.startsWith(WITHHELD_SOURCE_PREFIX)
        ? withheldSource(location, fallbackTags(), `ClusterStack ${location.slice(WITHHELD_SOURCE_PREFIX.length)} has an invalid spec (see its ReleasesResolved condition); its published manifests stay in place until it is fixed`)
        : sources.opener(location);
    let plan: Plan | undefined;
    let planError: string | undefined;
    try {
      plan = await buildPlan({
        manifests: manifestsFrom({ stacks: selected, clusters, providerReleases, referenced, requests }),
        defaultSource: this.options.defaultSource,
        openSource: opener,
        workDir: this.options.workDir,
        onWarning: (message) => logger.warn({ warning: message }, 'Release source warning'),
      });
    } catch (error) {
      planError = errorMessage(error);
    }
    phase('plan', observedAt);
    for (const stack of stacks) {
      const key = keyOf(stack);
      if (stackIssues.has(key)) continue;
      const failure = sources.failureOf(sourceLocationOf(specOnly(stack), this.options.defaultSource));
      if (failure) stackIssues.set(key, { reason: 'ReleaseSourceUnavailable', problems: [failure.message], fallback: failure.fallback, keptPublished: !failure.fallback });
      else if (planError) stackIssues.set(key, { reason: 'ReleaseSourceUnavailable', problems: [planError], fallback: false });
      const planProblems = (plan?.problems ?? []).filter((problem) => problem.object === `ClusterStack ${key}`);
      if (planProblems.length > 0 && !stackIssues.has(key)) {
        stackIssues.set(key, { reason: 'InvalidSpec', problems: planProblems.map((problem) => `${problem.path ? `${problem.path} ` : ''}${problem.message}`), fallback: false });
      }
    }

    // Render and publish, once. Withheld stacks are part of the render (their output kept).
    let render: RenderOutcome | undefined;
    let renderError: string | undefined = targetError;
    let publish: PublishState;
    // Set when something a retry may fix went wrong: the reconcile then fails, after writing status, and backs off.
    let retry: string | undefined = targetError;
    if (!plan) {
      publish = this.tracker.skipped(`no plan: ${planError ?? 'unknown error'}`);
      retry = planError ?? 'no plan';
    } else {
      if (!previous) publish = this.tracker.skipped(renderError ?? 'nothing rendered');
      else {
        // The same path the CLI takes: render, wire, guard, summarize, publish through the tracker.
        const started = Date.now();
        const helmBefore = this.options.helm.processesSpawned();
        let attempt: PublishAttempt | undefined;
        let abortedTree: Map<string, string> | undefined;
        try {
          const run = await renderAndPublish(plan, previous, {
            renderer: this.options.helm,
            publish: (tree, change) => this.tracker.publish(tree, change),
            logger,
            // Phases are logged as they end (tests and operators follow them in the debug log).
            metrics: {
              renderDuration: (seconds) => {
                this.options.metrics?.renderDuration(seconds);
                logger.debug({ phase: 'render', ms: Math.round(seconds * 1000) }, 'Reconcile phase done');
              },
              publishDuration: (seconds) => logger.debug({ phase: 'publish', ms: Math.round(seconds * 1000) }, 'Reconcile phase done'),
            },
          }, {
            secrets: this.options.secrets,
            ...(this.options.wiring ? { gitops: this.options.wiring } : {}),
            ...(this.options.pullRequest ? { pullRequest: {} } : {}),
            massDeletion: this.options.massDeletion ?? { allow: true, maxShare: 1 },
            ...(this.options.scheduler ? { scheduler: this.options.scheduler } : {}),
            ...(signal ? { signal } : {}),
          });
          render = run.outcome;
          if (run.status === 'aborted') abortedTree = run.tree;
          else attempt = run.published;
        } catch (error) {
          renderError = errorMessage(error);
          logger.error({ error: renderError }, 'Render failed');
          // A refused mass deletion waits for a person (or --allow-mass-delete), like any input to fix.
          if (failureKindOf(error) !== 'fix-input') retry = renderError;
        }
        this.options.metrics?.helmProcesses(this.options.helm.processesSpawned() - helmBefore);
        if (!attempt) publish = this.tracker.skipped(abortedTree ? 'the controller is shutting down' : (renderError ?? 'nothing rendered'), abortedTree);
        else {
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
    }

    // Report back: owned objects, statuses, events, Argo CD cluster Secrets. A stand-in is no
    // resolution of its own: its stack reports the invalid spec, its objects stay as they are.
    const statusPlan = plan && standIns.size > 0 ? withoutStandIns(plan, standIns) : plan;
    const sync = this.syncState(render, publish);
    const inputs: StatusInputs = {
      now: now.toISOString(),
      engine: this.options.engine,
      live,
      stackIssues,
      publish,
      sync,
      unitObjects: this.unitObjectsOf(render?.tree ?? new Map(), render?.provenance.units ?? []),
      unservedKinds,
      ownedObjectErrors: this.ownedObjectErrors,
      ...(statusPlan ? { plan: statusPlan } : {}),
      ...(render ? { render } : {}),
      ...(renderError ? { renderError } : {}),
    };
    const desired = desiredState(inputs);
    const applyStarted = Date.now();
    const apply = await applyDesiredState(this.options.kube, desired, { now: inputs.now, logger, kindOf: restKind });
    // ClusterRequests hear what the render decided: Granted with their cluster, or Pending and why.
    const requestStatuses = await writeRequestStatuses(this.options.kube, desiredRequestStatuses(requests, render?.summary.clusterRequests, inputs.now), { now: inputs.now, logger });
    apply.statusesWritten += requestStatuses.written;
    if (requestStatuses.failed > 0) retry ??= `${requestStatuses.failed} ClusterRequest status(es) could not be written`;
    phase('apply', applyStarted);
    this.ownWrites.record(apply.written);
    const reportedErrors = this.ownedObjectErrors;
    this.ownedObjectErrors = new Map();
    for (const failure of apply.errors) {
      if (!failure.stack) continue;
      this.ownedObjectErrors.set(failure.stack, [...(this.ownedObjectErrors.get(failure.stack) ?? []), `${failure.object}: ${errorMessage(failure.error)}`]);
    }
    // The statuses just written reported the previous round's failures: look again soon if that changed.
    const reportAgain = JSON.stringify([...reportedErrors]) !== JSON.stringify([...this.ownedObjectErrors]);
    await this.events.record(eventsWithSubjects(desired.events, apply));
    this.finished += 1;
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
    if (retry !== undefined) throw new RetryLaterError(retry);
    return { requeueAfterMs: reportAgain ? 1000 : (this.options.resyncMs ?? 300_000), summary };
  }

  private syncState(render: RenderOutcome | undefined, publish: PublishState): Map<string, UnitSync> {
    if (!render || this.options.engine === 'none') return new Map();
    const kind = this.options.engine === 'flux' ? FLUX_KUSTOMIZATIONS : ARGO_APPLICATIONS;
    const objects = this.options.cache.list(kind);
    return syncStateOf(this.options.engine, objects, render.provenance.units.map((unit) => unit.dir), publish.order, this.options.outputPath);
  }
}

/**
 * The plan as status reads it: stand-in stacks (rendered only to keep their published output) are
 * not resolutions of their own, and their Clusters belong to no resolved stack.
 */
function withoutStandIns(plan: Plan, standIns: Set<string>): Plan {
  const isStandIn = (stack: { namespace: string; name: string } | undefined) => stack !== undefined && standIns.has(`${stack.namespace}/${stack.name}`);
  const clusterStacks = plan.resolution.clusterStacks.filter((stack) => !isStandIn(stack));
  const clusters = plan.resolution.clusters.map((cluster) => {
    if (!isStandIn(cluster.stack)) return cluster;
    const { stack: _stack, ...rest } = cluster;
    return rest;
  });
  return { ...plan, resolution: { ...plan.resolution, clusterStacks, clusters } };
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
  /** Namespaced mode: where the GitOps engine's objects live besides the watched namespace. */
  engineNamespaces?: string[];
  /** Stack keys handled at the same time (sources listed in parallel). Default 4. */
  sourceConcurrency?: number;
  /** Failure backoff of every key: first cap and largest delay (defaults 1 s and 2 min); `random` pins the jitter in tests. */
  backoff?: { baseDelayMs: number; maxDelayMs: number; random?: () => number };
  /** Given when something created before the runtime (the release sources) counts into it too; else a new one. */
  metrics?: PrometheusMetrics;
}

export interface ControllerRuntime {
  readonly controller: Controller;
  readonly metrics: PrometheusMetrics;
  readonly cache: InformerCache;
  readonly healthUrl?: string;
  isLeader(): boolean;
  /** Stops in order: informers, queues (the reconcile in flight finishes or is abandoned), lease, health server. */
  stop(): Promise<void>;
  /** Resolves when the runtime stopped by itself (leadership lost); the process should then exit. */
  readonly done: Promise<{ reason: string }>;
}

/** Starts the controller with its runtime. Only the leader reconciles (and so publishes and writes). */
export async function runController(options: ControllerRuntimeOptions): Promise<ControllerRuntime> {
  const { logger } = options;
  const metrics = options.metrics ?? new PrometheusMetrics();
  const batchWindowMs = options.batchWindowMs ?? 1000;
  const backoff = options.backoff ?? { baseDelayMs: 1000, maxDelayMs: 120_000 };
  // Two queues: the publish key never waits behind a stack whose source hangs, and a stack key
  // never waits behind a long publish.
  let publishQueue: KeyedWorkQueue | undefined;
  let stackQueue: KeyedWorkQueue | undefined;
  let leading = options.leaderElection === undefined;
  let controller: Controller | undefined;
  const requestPublish = () => publishQueue?.addBatched(PUBLISH_KEY, batchWindowMs, undefined, { inputsChanged: true });
  const onEvent = (event: WatchEvent) => {
    if (!controller?.isRelevant(event)) return;
    const key = controller.stackKeyFor(event);
    if (key) stackQueue?.add(key, { inputsChanged: true });
    requestPublish();
  };
  const scope = options.watchNamespace !== undefined ? { namespace: options.watchNamespace, engineNamespaces: options.engineNamespaces ?? [] } : {};
  const cache = new InformerCache({
    kubeConfig: options.kubeConfig,
    kinds: Controller.watchedKinds(options.engine, scope, options.scheduler !== undefined),
    onEvent,
    logger,
    onRestart: (kind) => metrics.informerRestart(kind.kind),
    ...(options.watchNamespace !== undefined ? { namespace: options.watchNamespace } : {}),
  });
  controller = new Controller({ ...options, cache, metrics });
  const ctl = controller;
  const newQueue = (concurrency: number) =>
    new KeyedWorkQueue({
      concurrency,
      handler: (key, signal) => ctl.handle(key, signal, requestPublish),
      logger,
      ...backoff,
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
  const startQueues = () => {
    publishQueue = newQueue(1);
    stackQueue = newQueue(options.sourceConcurrency ?? 4);
    metrics.observeQueueDepth(() => (publishQueue?.depth ?? 0) + (stackQueue?.depth ?? 0));
    publishQueue.start();
    stackQueue.start();
    for (const key of ctl.stackKeys()) stackQueue.add(key);
    publishQueue.add(PUBLISH_KEY);
  };
  const stopQueues = async () => {
    const queues = [publishQueue, stackQueue];
    publishQueue = undefined;
    stackQueue = undefined;
    await Promise.all(queues.map((queue) => queue?.shutdown({ drain: false, timeoutMs: options.shutdownTimeoutMs ?? 20_000 })));
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
          if (!signal.aborted) startQueues();
        },
        onStoppedLeading: () => {
          leading = false;
          void stopQueues();
        },
      })
      .then(
        () => resolveDone({ reason: 'leadership ended' }),
        (error: unknown) => resolveDone({ reason: `leader election failed: ${errorMessage(error)}` }),
      );
  } else {
    startQueues();
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
      await stopQueues();
      await elector?.stop();
      await health?.close();
      resolveDone({ reason: 'stopped' });
    },
  };
}
