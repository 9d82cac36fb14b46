// Controller mode: what `render` does, continuously, from live objects. Two kinds of queue keys:
// one per ClusterStack (`ClusterStack/<ns>/<name>`), which lists that stack's release source with
// its own failure backoff, and one `publish` key, whose reconcile reads everything from the informer
// caches and what the sources answered last, plans, renders, publishes once, then writes owned
// objects, statuses and events. A stack whose source is down or whose spec is invalid is withheld
// (its published output kept); it never holds publishing for the others.
// `runController` (run-controller.ts) wires it to the runtime: informers, the queues, leader
// election, the health server and graceful shutdown.
import type { Logger } from 'pino';
import type { PublishedHistory, UnitDirOf } from '../../gitops/git-history.js';
import type { Publisher } from '../../gitops/publisher.js';
import type { GitOpsEngine, WiringOptions } from '../../gitops/wiring/render-wiring.js';
import type { HelmDependencies } from '../../renderers/helm-dependencies.js';
import type { ClusterStack, KubeObject } from '../api/types.js';
import { namespaceOf } from '../release/resolve-releases.js';
import { buildPlan, errorMessage, sourceLocationOf, type Plan } from '../plan/build-plan.js';
import type { RenderOutcome } from '../render/render-output.js';
import { holdPublishedClusters } from '../plan/held-published-clusters.js';
import { typedFailure, type TypedFailure } from '../core/failure.js';
import type { MassDeletionPolicy } from '../core/mass-deletion-guard.js';
import { renderAndPublish } from '../pipeline/render-and-publish.js';
import { type UnitRecord } from '../output/provenance.js';
import { type PublishedState, readPublishedState } from '../output/published-state.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import type { SecretPolicy } from '../render/secret-policy.js';
import type { EncryptionInput } from '../secrets/secret-encryption.js';
import type { SourceOpener } from '../sources/open-release-source.js';
import type { KubeClient } from './runtime/kube-client.js';
import { ArgoClusterSecrets } from './reconcile/argocd-cluster-secrets.js';
import { EventRecorder } from './reconcile/event-recorder.js';
import { manifestsFrom, specOnly, StackSpecMemory } from './reconcile/live-inputs.js';
import { CrdRuleVerdicts } from '../inputs/crd-rule-verdicts.js';
import { nextReconcile } from './reconcile/next-reconcile.js';
import { observeLive, type Observation } from './reconcile/observe-live.js';
import { applyDesiredState, eventsWithSubjects, type ApplyReport } from './reconcile/apply-desired-state.js';
import { type PublishAttempt, PublishTracker } from './reconcile/publish-tracker.js';
import { OwnWrites } from './reconcile/own-writes.js';
import { addonSnapshot, type AddonSnapshot } from './reconcile/lifecycle-hooks.js';
import { type RoundSources, SourceListings } from './reconcile/source-listings.js';
import { stackKey, stackOfKey, WatchFilter } from './reconcile/watch-filter.js';
import {
  fallbackReleaseTags,
  standInStack,
  WITHHELD_SOURCE_PREFIX,
  withheldSource,
} from './reconcile/withheld-stacks.js';
import type { KindCache } from './runtime/informer-cache.js';
import type { ControllerMetrics, WatchedKind, WatchEvent } from './runtime/runtime-contract.js';
import { desiredState } from './desired-state/desired-state.js';
import { keyOf } from './desired-state/owned-objects.js';
import type { PublishState, StackIssue, StatusInputs } from './desired-state/status-inputs.js';
import { sharedDirOf } from './desired-state/shared-object-state.js';
import { syncStateOf, type UnitSync } from './desired-state/sync-state.js';
import { unitObjects, type UnitObject } from './desired-state/unit-resources.js';
import { desiredLayerStatuses, type LayerStatusInputs } from './desired-state/addons-layer-status.js';
import { type EventIntent, regarding } from './desired-state/event-intents.js';
import { writeStatus } from './reconcile/write-status.js';
import { createProviderFetcher, type ProviderFetcher } from '../providers/provider-fetcher.js';
import { readProviderConfig } from './reconcile/provider-config-objects.js';
import type { LayerChartFetcher } from '../sources/helm-chart-source.js';
import {
  ADDONS_LAYERS,
  ARGO_APPLICATIONS,
  CAPI_CLUSTERS,
  CAPI_PROVIDER_KINDS,
  CLUSTER_ADDONS,
  CLUSTER_REQUESTS,
  CLUSTER_STACK_RELEASES,
  CLUSTER_STACKS,
  FLUX_KUSTOMIZATIONS,
} from './desired-state/watched-kinds.js';
import type { SchedulerConfig } from '../cluster-requests/scheduler-config.js';
import type { SchedulerSetting } from '../cluster-requests/plan-cluster-requests.js';
import type { SchedulerSource } from './reconcile/scheduler-config-file.js';
import { desiredRequestStatuses } from './desired-state/cluster-request-state.js';
import { anyHandover, handoversPending, shardPlan, type Handovers, type ShardHoldings } from '../shards/shard-plan.js';
import { splitNamespaceProblems } from '../shards/shard-namespaces.js';
import { markHandoverWiring, wiringReleasedBy } from '../../gitops/shard-handover-wiring.js';
import { shardOwns, type ShardScope } from '../shards/shard-scope.js';
import { shardLive, shardStatusPlan } from './reconcile/shard-view.js';
import { writeRequestStatuses } from './reconcile/cluster-request-statuses.js';

export { InformerCache } from './runtime/informer-cache.js';

/** How soon a shard handing Clusters over reads the new shards' subtrees again, unless told otherwise. */
const HANDOVER_RECHECK_MS = 5000;

/** The key of the reconcile that renders, publishes and reports: every change leads to it. */
export const PUBLISH_KEY = 'publish';

export interface ControllerOptions {
  cache: KindCache;
  kube: KubeClient;
  publisher: Publisher;
  /** What the publisher's revision is: a Git commit, an OCI digest, or nothing (a directory). */
  revisionKind: PublishState['revisionKind'];
  /**
   * For Git targets: the branch's history, so conditions name the same commits after a restart. In
   * pull-request mode, the base branch's: what the engine applies (`head` tells when it moved).
   */
  history?: { read(unitDirOf: UnitDirOf): Promise<PublishedHistory>; head?(): Promise<string | null> };
  /** Release source for stacks that name none. */
  defaultSource: string;
  openSource: SourceOpener;
  /** Fetches Cluster API provider releases (default: through `openSource`, cached in `workDir`). */
  providerFetcher?: ProviderFetcher;
  /** Fetches AddonsLayer charts from OCI and HTTP repositories (default: anonymous, plain TLS, cached in `workDir`). */
  layerChartFetcher?: LayerChartFetcher;
  /** Extracted releases (content-addressed). */
  workDir: string;
  helm: HelmDependencies;
  secrets: SecretPolicy;
  /** With `secrets: 'encrypt'`: the recipients given (else the target's `.sops.yaml` decides, on every publish). */
  encryption?: EncryptionInput;
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
  /** Sharded: how soon a shard handing objects over reads the new shards' subtrees again. Default 5 s. */
  handoverRecheckMs?: number;
  /** Render AddonsLayers (watched cluster-wide) whose `spec.source.path`s are relative to this directory (a checkout). */
  layerRoot?: string;
  /** The runtime extension's lifecycle hook progress per Cluster, shown on its ClusterAddon. */
  hookProgress?: StatusInputs['hookProgress'];
  /**
   * Publish ClusterProfiles and schedule ClusterRequests (watched, their statuses written): a fixed
   * configuration, or a source read again when its file changes (reconcile/scheduler-config-file.ts).
   */
  scheduler?: SchedulerConfig | SchedulerSource;
  /**
   * Sharded replicas (src/shards): this controller renders, publishes and writes back only its
   * shard's part of the fleet; `publishedElsewhere` reads which Clusters the other shards' subtrees
   * publish (asked only while a Cluster is being handed over).
   */
  shard?: { scope: ShardScope; publishedElsewhere(): Promise<ShardHoldings> };
}
export interface ReconcileSummary {
  published: PublishState['outcome'];
  revision: string | null;
  apply: ApplyReport;
  withheld: number;
  problems: string[];
}

/** What one reconcile works from, and the failures it meets on the way (typed by what happens next). */
interface ReconcileRound extends Observation {
  logger: Logger;
  now: Date;
  requests: KubeObject[];
  scheduler: { setting: SchedulerSetting; problem?: string } | undefined;
  failures: TypedFailure[];
  signal?: AbortSignal;
}

/** What a reconcile decided before rendering: the plan (or why there is none) and each stack's issue. */
interface RoundDecision {
  plan?: Plan;
  planFailure?: TypedFailure;
  stackIssues: Map<string, StackIssue>;
  /** Stacks rendered from a stand-in only to keep their published output. */
  standIns: Set<string>;
  /** Sharded: every shard's managed Clusters (namespace/name). */
  fleetClusters?: Set<string>;
}

/** Logs a reconcile phase's duration (tests and operators follow them in the debug log). */
function phaseDone(logger: Logger, name: string, since: number): void {
  logger.debug({ phase: name, ms: Date.now() - since }, 'Reconcile phase done');
}

/** Renders and publishes the cluster stacks of a management cluster, and reports back through the API. */
export class Controller {
  private readonly listings: SourceListings;
  // The CRDs' rules for the whole run; the API server already admitted these objects by the same rules,
  // but a stack admitted before a CRD upgrade may break a new one, and is then rendered as its last valid spec.
  private readonly crdRules = CrdRuleVerdicts.inMemory().check;
  private readonly stackSpecs = new StackSpecMemory(this.crdRules);
  private readonly tracker: PublishTracker;
  private readonly events: EventRecorder;
  private readonly argoSecrets: ArgoClusterSecrets;
  private readonly ownWrites = new OwnWrites();
  private readonly watchFilter: WatchFilter;
  private readonly unitObjectCache = new Map<string, { digest: string; objects: UnitObject[] }>();
  private reconciles = 0;
  private finished = 0;
  /** Sharded: how many Clusters the last reconcile still published for their new shard. */
  private handingOver: Handovers = { clusters: [], stacks: [] };
  /** The objects of each stack the last reconcile could not write: the next one reports them. */
  private ownedObjectErrors = new Map<string, string[]>();
  /** What the last reconcile rendered and published per Cluster, for the lifecycle hook handlers. */
  private snapshot: AddonSnapshot | undefined;
  /** The published state of the tree the tracker holds: parsed once per tree, which stays across rounds until a publish. */
  private publishedState: PublishedState | undefined;
  private readonly providerFetcher: ProviderFetcher;

  constructor(private readonly options: ControllerOptions) {
    this.providerFetcher =
      options.providerFetcher ?? createProviderFetcher({ cacheDir: options.workDir }, options.openSource);
    this.listings = new SourceListings(
      options.openSource,
      options.listingWaitMs !== undefined ? { listingWaitMs: options.listingWaitMs } : {},
    );
    this.tracker = new PublishTracker(options.publisher, {
      revisionKind: options.revisionKind,
      resyncMs: options.resyncMs ?? 300_000,
      ...(options.history ? { history: options.history } : {}),
      ...(options.pullRequest ? { proposes: true } : {}),
      onHistoryError: (error) =>
        options.logger.warn(
          { target: options.publisher.target, error: errorMessage(error) },
          'Could not read the published history; conditions name the head commit until the next publish',
        ),
    });
    this.events = new EventRecorder({ sink: options.kube, logger: options.logger });
    this.watchFilter = new WatchFilter({
      defaultSource: options.defaultSource,
      inScope: (object) => this.inScope(object),
      onDelete: (object) => this.ownWrites.forget(object),
    });
    this.argoSecrets = new ArgoClusterSecrets({
      store: options.kube,
      namespace: options.argocdNamespace,
      logger: options.logger,
    });
  }

  /**
   * The kinds watched from the start; provider and referenced kinds are added as stacks and
   * Clusters name them. With `namespace`, every kind is watched in that namespace only, and the
   * engine's objects also in `engineNamespaces` (where the generated wiring puts them).
   */
  static watchedKinds(
    engine: GitOpsEngine,
    scope: { namespace?: string; engineNamespaces?: string[]; layers?: boolean } = {},
    clusterRequests = false,
  ): WatchedKind[] {
    const inScope = (kind: WatchedKind, namespace = scope.namespace): WatchedKind =>
      namespace === undefined ? kind : { ...kind, namespace };
    const kinds = [
      CLUSTER_STACKS,
      CLUSTER_STACK_RELEASES,
      CLUSTER_ADDONS,
      CAPI_CLUSTERS,
      ...CAPI_PROVIDER_KINDS,
      ...(clusterRequests ? [CLUSTER_REQUESTS] : []),
    ].map((kind) => inScope(kind));
    const engineKind = engine === 'flux' ? FLUX_KUSTOMIZATIONS : engine === 'argocd' ? ARGO_APPLICATIONS : undefined;
    if (engineKind) {
      const namespaces =
        scope.namespace === undefined
          ? [undefined]
          : [...new Set([scope.namespace, ...(scope.engineNamespaces ?? [])])];
      for (const namespace of namespaces) kinds.push(inScope(engineKind, namespace));
    }
    // AddonsLayers are cluster-scoped (as in Kraan): watched cluster-wide even in namespaced mode.
    if (scope.layers) kinds.push(ADDONS_LAYERS);
    return kinds;
  }

  /**
   * Whether a watch event can change what we publish or report. Updates that only carry status
   * we wrote ourselves (or CAPI's status churn on Clusters) are dropped, so writes do not loop.
   */
  isRelevant(event: WatchEvent): boolean {
    return this.watchFilter.isRelevant(event);
  }

  /**
   * The stack key to run for a watch event, when the event may change which releases the stack's
   * source offers it (a new stack, another source, a new generation), else undefined.
   */
  stackKeyFor(event: WatchEvent): string | undefined {
    return this.watchFilter.stackKeyFor(event);
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
   * own, when the source is down); `onSourcesChanged` is called when what its source offers
   * changed, so the runtime can schedule a publish. The publish key is a full reconcile.
   */
  async handle(
    key: string,
    signal?: AbortSignal,
    onSourcesChanged?: () => void,
  ): Promise<{ requeueAfterMs: number; resync?: boolean }> {
    if (stackOfKey(key)) {
      const { changed, gone } = await this.refreshStackSource(key).catch((error: unknown) => {
        onSourcesChanged?.();
        throw error;
      });
      if (changed) onSourcesChanged?.();
      // A deleted stack's key is done for good.
      return { requeueAfterMs: gone ? 0 : this.resyncMs, resync: true };
    }
    const { requeueAfterMs, resync } = await this.reconcileOnce(signal);
    return { requeueAfterMs, ...(resync ? { resync } : {}) };
  }

  /** What the last reconcile rendered and published per Cluster (undefined before the first plan). */
  addonSnapshot(): AddonSnapshot | undefined {
    return this.snapshot;
  }

  private get resyncMs(): number {
    return this.options.resyncMs ?? 300_000;
  }

  /** How many reconciles got as far as writing to the API server (with or without errors), e.g. to wait for one in tests. */
  get completedReconciles(): number {
    return this.finished;
  }

  /**
   * Lists the release source of the stack behind `key` and records the answer for the next
   * publish. Resolves `changed` when what the source offers (or its failure) changed. A failure
   * reacts as the failure table says: a source that is down rejects with a RetryLaterError (the
   * key backs off); one that refuses (not found, bad credentials) waits for the stack to change
   * or the resync, since retrying alone will not help.
   */
  async refreshStackSource(key: string): Promise<{ changed: boolean; gone?: boolean }> {
    const { namespace, name } = stackOfKey(key)!;
    const stack = this.options.cache.get(CLUSTER_STACKS, namespace, name) as ClusterStack | undefined;
    if (!stack || !this.inScope(stack)) return { changed: false, gone: true };
    const location = sourceLocationOf(specOnly(stack), this.options.defaultSource);
    try {
      return await this.listings.refresh(location);
    } catch (error) {
      const failure = typedFailure(error);
      failure.message = `ClusterStack ${namespace}/${name}: listing releases from ${location} failed: ${failure.message}`;
      this.options.logger.warn(
        { stack: `${namespace}/${name}`, source: location, error: errorMessage(error), next: failure.kind },
        'Release source failed; the stack is withheld',
      );
      nextReconcile([failure], { resyncMs: this.resyncMs });
      return { changed: true };
    }
  }

  /**
   * One full reconcile: observe (caches), plan, render, publish once, then write owned objects,
   * statuses and events. The failures met on the way decide the requeue (nextReconcile): it
   * throws RetryLaterError, after writing status, when one of them backs off.
   */
  async reconcileOnce(
    signal?: AbortSignal,
  ): Promise<{ requeueAfterMs: number; resync?: true } & { summary?: ReconcileSummary }> {
    const { cache, logger: baseLogger } = this.options;
    const logger = baseLogger.child({ reconcile: ++this.reconciles });
    if (!cache.synced()) return { requeueAfterMs: 500 };
    const now = (this.options.now ?? (() => new Date()))();
    const observation = await observeLive(cache, {
      live: (kind) => this.listLive(kind),
      own: (kind) => this.listOwn(kind),
    });
    if (!observation) {
      logger.debug('Waiting for newly watched kinds to list');
      return { requeueAfterMs: 250 };
    }
    const round: ReconcileRound = {
      ...observation,
      logger,
      now,
      requests: this.options.scheduler ? this.listLive(CLUSTER_REQUESTS) : [],
      // The scheduler configuration of this round (a file may have changed since the last one).
      scheduler: this.schedulerNow(),
      failures: [],
      ...(signal ? { signal } : {}),
    };
    // The target's tree first: a stack that cannot be resolved now keeps what it holds.
    const { previous, readFailure } = await this.readTarget(round);
    const decided = await this.decide(round, previous);
    const { render, publish, renderFailure } = await this.renderAndPublishRound(round, decided, previous, readFailure);
    // Report back: owned objects, statuses, events, Argo CD cluster Secrets. A stand-in is no
    // resolution of its own: its stack reports the invalid spec, its objects stay as they are.
    const shardPlanOf = (whole: Plan | undefined) =>
      whole && this.options.shard ? shardStatusPlan(whole, this.options.shard.scope) : whole;
    const { plan, standIns } = decided;
    const ownPlan = shardPlanOf(plan && standIns.size > 0 ? withoutStandIns(plan, standIns) : plan);
    // A Cluster the render held (its class unreadable now, its addons published before) keeps its
    // ClusterAddon, which says why, instead of losing it as a Cluster that is not ours.
    const statusPlan = ownPlan && previous ? holdPublishedClusters(ownPlan, previous).plan : ownPlan;
    if (plan) this.snapshot = addonSnapshot(statusPlan, render, publish);
    const { apply, reportAgain } = await this.writeBack(round, {
      stackIssues: decided.stackIssues,
      publish,
      ...(statusPlan ? { statusPlan } : {}),
      ...(render ? { render } : {}),
      ...((renderFailure ?? readFailure) ? { renderFailure: renderFailure ?? readFailure } : {}),
    });
    this.finished += 1;
    if (this.options.engine === 'argocd' && plan)
      await this.writeArgoSecrets(round, statusPlan ?? plan, decided.fleetClusters);
    return this.finishRound(round, { publish, apply, render, stackIssues: decided.stackIssues, reportAgain });
  }

  /** The published state of the target, or the failure reading it (then nothing is published this round). */
  private async readTarget(round: ReconcileRound): Promise<{ previous?: PublishedState; readFailure?: TypedFailure }> {
    const readStarted = Date.now();
    try {
      const previous = this.publishedStateOf(await this.tracker.previousTree());
      phaseDone(round.logger, 'read target', readStarted);
      return { previous };
    } catch (error) {
      const readFailure = typedFailure(error);
      readFailure.message = `the publish target ${this.tracker.target} could not be read: ${readFailure.message}`;
      round.failures.push(readFailure);
      return { readFailure };
    }
  }

  /**
   * Decide: plan from the live objects (invalid stacks from their last valid spec, or withheld),
   * take the shard's part of it, and say per stack what keeps it from being published as it is.
   */
  private async decide(round: ReconcileRound, previous: PublishedState | undefined): Promise<RoundDecision> {
    const { live, logger } = round;
    const fallbackTags = () => fallbackReleaseTags(previous, live.releases);
    const observedAt = Date.now();
    const stackIssues = new Map<string, StackIssue>();
    const { selected, standIns } = this.stackSpecs.select(live.stacks, stackIssues, (stack, problems) =>
      standInStack(stack, problems, fallbackTags()),
    );
    const sources = this.listings.roundOpener(fallbackTags);
    const planned = await this.planRound(round, selected, sources, fallbackTags);
    let plan = planned.plan;
    const planFailure = planned.planFailure;
    phaseDone(logger, 'plan', observedAt);
    // Sharded: every shard's Clusters, whose Argo CD cluster Secrets the other shards keep.
    let fleetClusters: Set<string> | undefined;
    if (plan && previous && this.options.shard) {
      fleetClusters = new Set(
        plan.resolution.clusters
          .filter((cluster) => cluster.managed)
          .map((cluster) => `${cluster.namespace}/${cluster.name}`),
      );
      plan = await this.shardPartOf(plan, previous, logger);
    }
    this.noteStackIssues(live.stacks, stackIssues, { sources, plan, planFailure });
    return {
      stackIssues,
      standIns,
      ...(plan ? { plan } : {}),
      ...(planFailure ? { planFailure } : {}),
      ...(fleetClusters ? { fleetClusters } : {}),
    };
  }

  /** The plan of the selected stacks and the live objects, or the failure that kept it from being made. */
  private async planRound(
    round: ReconcileRound,
    selected: ClusterStack[],
    sources: RoundSources,
    fallbackTags: () => string[],
  ): Promise<{ plan?: Plan; planFailure?: TypedFailure }> {
    const { live, referenced, requests, logger } = round;
    const opener: SourceOpener = (location) =>
      location.startsWith(WITHHELD_SOURCE_PREFIX)
        ? withheldSource(
            location,
            fallbackTags(),
            `ClusterStack ${location.slice(WITHHELD_SOURCE_PREFIX.length)} has an invalid spec (see its ReleasesResolved condition); its published manifests stay in place until it is fixed`,
          )
        : sources.opener(location);
    // What the providers name (configSecret, additionalManifests, selector ConfigMaps), read afresh.
    // Sharded: the Cluster API providers are published by the shard their labels select (one owner each).
    const capiProviders = (live.capiProviders ?? []).filter(
      (provider) => !this.options.shard || shardOwns(this.options.shard.scope, provider),
    );
    const providerConfig =
      capiProviders.length > 0 ? await readProviderConfig(capiProviders, this.options.kube) : undefined;
    try {
      const plan = await buildPlan({
        manifests: manifestsFrom({
          stacks: selected,
          clusters: live.clusters,
          providerReleases: live.providerReleases,
          referenced,
          requests,
          capiProviders,
          layers: this.liveLayers(),
          providerConfig: providerConfig?.objects ?? [],
        }),
        ...(providerConfig ? { providerInputProblems: providerConfig.problems } : {}),
        ...(this.options.layerRoot !== undefined ? { layerRoot: this.options.layerRoot } : {}),
        defaultSource: this.options.defaultSource,
        openSource: opener,
        // Provider releases are not stack listings: fetched straight through the sources (cached).
        providerFetcher: this.providerFetcher,
        ...(this.options.layerChartFetcher ? { layerChartFetcher: this.options.layerChartFetcher } : {}),
        workDir: this.options.workDir,
        checkCrdRules: this.crdRules,
        onWarning: (message) => logger.warn({ warning: message }, 'Release source warning'),
      });
      return { plan };
    } catch (error) {
      const planFailure = typedFailure(error);
      round.failures.push(planFailure);
      return { planFailure };
    }
  }

  /** Per stack without an issue yet: its source's failure, the plan's failure, a split namespace, or its plan problems. */
  private noteStackIssues(
    stacks: ClusterStack[],
    stackIssues: Map<string, StackIssue>,
    decided: { sources: RoundSources; plan: Plan | undefined; planFailure: TypedFailure | undefined },
  ): void {
    const { sources, plan, planFailure } = decided;
    // Sharded: a namespace's stacks split over shards are told so (shard-namespaces.ts).
    const splitNamespaces = this.options.shard && splitNamespaceProblems(this.options.shard.scope, stacks);
    for (const stack of stacks) {
      const key = keyOf(stack);
      if (stackIssues.has(key)) continue;
      const failure = sources.failureOf(sourceLocationOf(specOnly(stack), this.options.defaultSource));
      if (failure) {
        const reason = failure.kind === 'fix-input' ? 'ReleaseSourceFailed' : 'ReleaseSourceUnavailable';
        stackIssues.set(key, {
          reason,
          problems: [failure.message],
          fallback: failure.fallback,
          keptPublished: !failure.fallback,
        });
      } else if (planFailure)
        stackIssues.set(key, {
          reason: planFailure.kind === 'fix-input' ? 'ReleaseSourceFailed' : 'ReleaseSourceUnavailable',
          problems: [planFailure.message],
          fallback: false,
        });
      const planProblems = (plan?.problems ?? []).filter((problem) => problem.object === `ClusterStack ${key}`);
      const split = splitNamespaces?.get(key);
      if (split !== undefined && planProblems.length === 0 && !stackIssues.has(key))
        stackIssues.set(key, { reason: 'InvalidSpec', problems: [split], fallback: true });
      if (planProblems.length > 0 && !stackIssues.has(key)) {
        stackIssues.set(key, {
          reason: 'InvalidSpec',
          problems: planProblems.map((problem) => `${problem.path ? `${problem.path} ` : ''}${problem.message}`),
          fallback: false,
        });
      }
    }
  }

  /**
   * Render and publish, once, when there is a plan and a readable target (else the publish is
   * skipped, saying why). Withheld stacks are part of the render (their output kept).
   */
  private async renderAndPublishRound(
    round: ReconcileRound,
    decided: RoundDecision,
    previous: PublishedState | undefined,
    readFailure: TypedFailure | undefined,
  ): Promise<{ render?: RenderOutcome; publish: PublishState; renderFailure?: TypedFailure }> {
    const { plan, planFailure } = decided;
    if (!plan) return { publish: this.tracker.skipped(`no plan: ${planFailure?.message ?? 'unknown error'}`) };
    if (!previous) return { publish: this.tracker.skipped(readFailure?.message ?? 'nothing rendered') };
    const helmBefore = this.options.helm.processesSpawned();
    const { render, attempt, abortedTree, renderFailure } = await this.renderRound(round, plan, previous);
    this.options.metrics?.helmProcesses(this.options.helm.processesSpawned() - helmBefore);
    const publish = attempt
      ? this.publishOutcome(round, attempt)
      : this.tracker.skipped(
          abortedTree ? 'the controller is shutting down' : (renderFailure?.message ?? 'nothing rendered'),
          abortedTree,
        );
    return { publish, ...(render ? { render } : {}), ...(renderFailure ? { renderFailure } : {}) };
  }

  /** The same path the CLI takes: render, wire, guard, summarize, publish through the tracker. */
  private async renderRound(
    round: ReconcileRound,
    plan: Plan,
    previous: PublishedState,
  ): Promise<{
    render?: RenderOutcome;
    attempt?: PublishAttempt;
    abortedTree?: Map<string, string>;
    renderFailure?: TypedFailure;
  }> {
    const { logger, scheduler, signal } = round;
    try {
      const run = await renderAndPublish(
        plan,
        previous,
        {
          renderer: this.options.helm,
          // Sharded: what this shard hands over keeps its wiring, marked against pruning.
          publish: (tree, change) => this.tracker.publish(this.withHandoverMarks(tree, plan), change),
          logger,
          // Phases are logged as they end (tests and operators follow them in the debug log).
          metrics: {
            renderDuration: (seconds) => {
              this.options.metrics?.renderDuration(seconds);
              logger.debug({ phase: 'render', ms: Math.round(seconds * 1000) }, 'Reconcile phase done');
            },
            publishDuration: (seconds) =>
              logger.debug({ phase: 'publish', ms: Math.round(seconds * 1000) }, 'Reconcile phase done'),
          },
        },
        {
          secrets: this.options.secrets,
          ...(this.options.encryption ? { encryption: this.options.encryption } : {}),
          ...(this.options.wiring ? { gitops: this.options.wiring } : {}),
          ...(this.options.pullRequest ? { pullRequest: {} } : {}),
          massDeletion: this.options.massDeletion ?? { allow: true, maxShare: 1 },
          // A provider downgrade or contract mismatch holds back that provider, not the whole publish.
          providerGuards: 'withhold',
          ...(scheduler ? { scheduler: scheduler.setting } : {}),
          ...(signal ? { signal } : {}),
        },
      );
      return run.status === 'aborted'
        ? { render: run.outcome, abortedTree: run.tree }
        : { render: run.outcome, attempt: run.published };
    } catch (error) {
      // A refused mass deletion is fix-input: it waits for a person (or --allow-mass-delete).
      const renderFailure = typedFailure(error);
      round.failures.push(renderFailure);
      logger.error({ error: renderFailure.message, next: renderFailure.kind }, 'Render failed');
      return { renderFailure };
    }
  }

  /** What a publish attempt did, counted in the metrics and logged; a failed one is a failure of the round. */
  private publishOutcome(round: ReconcileRound, attempt: PublishAttempt): PublishState {
    const { logger } = round;
    const publish = attempt.state;
    if (attempt.durationSeconds !== undefined) this.options.metrics?.publishDuration(attempt.durationSeconds);
    if (attempt.durationSeconds !== undefined && this.options.revisionKind === 'commit')
      this.options.metrics?.remoteRequest('git', publish.outcome === 'failed' ? 'error' : 'ok');
    if (publish.outcome === 'failed') {
      // A refused push (auth, protected branch) waits for the resync or the next change instead.
      round.failures.push({
        kind: attempt.retryable === false ? 'fix-input' : 'retry',
        message: publish.message ?? 'publish failed',
      });
      logger.warn(
        { target: publish.target, error: publish.message },
        'Publish failed; the previous output stays in place',
      );
    } else if (publish.outcome === 'published')
      logger.info(
        { target: publish.target, revision: publish.revision, units: publish.dirtyDirs.size },
        'Published rendered manifests',
      );
    return publish;
  }

  /**
   * Writes back what the round decided: owned objects and statuses, AddonsLayer and ClusterRequest
   * statuses, and events. `reportAgain`: the owned-object errors differ from those the statuses
   * just reported (the previous round's), so look again soon.
   */
  private async writeBack(
    round: ReconcileRound,
    outcome: Pick<StatusInputs, 'stackIssues' | 'publish' | 'render' | 'renderFailure'> & { statusPlan?: Plan },
  ): Promise<{ apply: ApplyReport; reportAgain: boolean }> {
    const { logger, live, requests, scheduler, restKind, unservedKinds } = round;
    const { statusPlan, render, publish } = outcome;
    const sync = this.syncState(render, publish);
    const inputs: StatusInputs = {
      now: round.now.toISOString(),
      engine: this.options.engine,
      live: this.options.shard ? shardLive(live, this.options.shard.scope) : live,
      stackIssues: outcome.stackIssues,
      publish,
      sync,
      unitObjects: this.unitObjectsOf(render?.tree ?? new Map(), render?.provenance.units ?? []),
      unservedKinds,
      ownedObjectErrors: this.ownedObjectErrors,
      ...(this.options.hookProgress ? { hookProgress: this.options.hookProgress } : {}),
      ...(statusPlan ? { plan: statusPlan } : {}),
      ...(render ? { render } : {}),
      ...(outcome.renderFailure ? { renderFailure: outcome.renderFailure } : {}),
    };
    const desired = desiredState(inputs);
    const applyStarted = Date.now();
    const apply = await applyDesiredState(this.options.kube, desired, { now: inputs.now, logger, kindOf: restKind });
    const layerEvents = await this.writeLayerStatuses(
      {
        now: inputs.now,
        // Sharded: each AddonsLayer's status has one writer, the shard its labels select.
        layers: this.liveLayers().filter((layer) => !this.options.shard || shardOwns(this.options.shard.scope, layer)),
        sync,
        engine: this.options.engine,
        ...(statusPlan ? { plan: statusPlan } : {}),
        ...(render ? { render } : {}),
      },
      apply,
      logger,
    );
    desired.events.push(...layerEvents);
    // ClusterRequests hear what the render decided: Granted with their cluster, or Pending and why.
    const requestStatuses = await writeRequestStatuses(
      this.options.kube,
      desiredRequestStatuses(requests, render?.summary.clusterRequests, inputs.now),
      { now: inputs.now, logger },
    );
    // A configuration that is not valid is told on every request (the recorder keeps it to once an hour).
    if (scheduler?.problem)
      desired.events.push(
        ...requests.map((request) => ({
          regarding: regarding(request),
          type: 'Warning' as const,
          reason: 'SchedulerConfigInvalid',
          message: scheduler.problem!,
        })),
      );
    apply.statusesWritten += requestStatuses.written;
    if (requestStatuses.failed > 0)
      round.failures.push({
        kind: 'retry',
        message: `${requestStatuses.failed} ClusterRequest status(es) could not be written`,
      });
    phaseDone(logger, 'apply', applyStarted);
    this.ownWrites.record(apply.written);
    const reportAgain = this.rememberOwnedObjectErrors(apply);
    await this.events.record(eventsWithSubjects(desired.events, apply));
    return { apply, reportAgain };
  }

  /** Keeps the owned-object errors of this apply for the next round's statuses; true when they changed. */
  private rememberOwnedObjectErrors(apply: ApplyReport): boolean {
    const reportedErrors = this.ownedObjectErrors;
    this.ownedObjectErrors = new Map();
    for (const failure of apply.errors) {
      if (!failure.stack) continue;
      this.ownedObjectErrors.set(failure.stack, [
        ...(this.ownedObjectErrors.get(failure.stack) ?? []),
        `${failure.object}: ${errorMessage(failure.error)}`,
      ]);
    }
    return JSON.stringify([...reportedErrors]) !== JSON.stringify([...this.ownedObjectErrors]);
  }

  /** Argo CD: the managed Clusters' cluster Secrets written; what failed is a retry of the round. */
  private async writeArgoSecrets(
    round: ReconcileRound,
    plan: Plan,
    fleetClusters: Set<string> | undefined,
  ): Promise<void> {
    const workload = plan.resolution.clusters
      .filter((cluster) => cluster.managed)
      .map((cluster) => ({ namespace: cluster.namespace, name: cluster.name }));
    try {
      const report = await this.argoSecrets.reconcile(workload, fleetClusters);
      if (report.errors.length > 0)
        round.failures.push({
          kind: 'retry',
          message: `${report.errors.length} Argo CD cluster secret(s) could not be written`,
        });
    } catch (error) {
      round.failures.push({ kind: 'retry', message: `Argo CD cluster secrets: ${errorMessage(error)}` });
    }
  }

  /** The round's summary, logged, and when to reconcile next (nextReconcile over the round's failures). */
  private finishRound(
    round: ReconcileRound,
    outcome: {
      publish: PublishState;
      apply: ApplyReport;
      render: RenderOutcome | undefined;
      stackIssues: Map<string, StackIssue>;
      reportAgain: boolean;
    },
  ): { requeueAfterMs: number; resync?: true } & { summary: ReconcileSummary } {
    const { publish, apply } = outcome;
    const summary: ReconcileSummary = {
      published: publish.outcome,
      revision: publish.revision,
      apply,
      withheld: outcome.render?.withheld.length ?? 0,
      problems: [...outcome.stackIssues.entries()].map(([key, issue]) => `${key}: ${issue.reason}`),
    };
    round.logger.info(
      {
        published: publish.outcome,
        revision: publish.revision,
        created: apply.created.length,
        updated: apply.updated.length,
        deleted: apply.deleted.length,
        statuses: apply.statusesWritten,
        withheld: summary.withheld,
        issues: summary.problems.length,
      },
      'Reconciled',
    );
    if (apply.errors.length > 0)
      round.failures.push({ kind: 'retry', message: `${apply.errors.length} object(s) could not be written` });
    // A handover in progress looks again soon: the new shard's commit is no event here.
    const soonMs = outcome.reportAgain
      ? 1000
      : anyHandover(this.handingOver)
        ? (this.options.handoverRecheckMs ?? HANDOVER_RECHECK_MS)
        : undefined;
    return {
      ...nextReconcile(round.failures, { resyncMs: this.resyncMs, ...(soonMs !== undefined ? { soonMs } : {}) }),
      summary,
    };
  }

  /** `tree`'s published state, read again only when the tracker holds another tree. */
  private publishedStateOf(tree: RenderedTree): PublishedState {
    if (this.publishedState?.tree !== tree) this.publishedState = readPublishedState(tree);
    return this.publishedState;
  }

  /**
   * The shard's part of the fleet's plan. Clusters another shard now owns stay while their new
   * shard's subtree does not publish them yet; if that cannot be read, they stay (never a gap).
   */
  private async shardPartOf(plan: Plan, previous: PublishedState, logger: Logger): Promise<Plan> {
    const shard = this.options.shard!;
    let elsewhere: ShardHoldings | undefined;
    if (anyHandover(handoversPending(plan, shard.scope, previous))) {
      elsewhere = await shard.publishedElsewhere().catch((error: unknown) => {
        logger.warn(
          { shard: shard.scope.name, error: errorMessage(error) },
          "Could not read the other shards' subtrees; what is being handed over stays published here",
        );
        return undefined;
      });
    }
    // The live wiring objects a handover must not leave to this shard's root to prune (see shard-plan.ts).
    const engineKind =
      this.options.engine === 'flux'
        ? FLUX_KUSTOMIZATIONS
        : this.options.engine === 'argocd'
          ? ARGO_APPLICATIONS
          : undefined;
    const wiringReleased =
      this.options.wiring && engineKind
        ? wiringReleasedBy(this.options.cache.list(engineKind), this.options.wiring.name)
        : undefined;
    const part = shardPlan(plan, shard.scope, previous, {
      publishedElsewhere: elsewhere,
      ...(wiringReleased ? { wiringReleased } : {}),
    });
    this.handingOver = part.handingOver;
    if (anyHandover(part.handingOver))
      logger.info(
        { shard: shard.scope.name, ...part.handingOver },
        'Still publishing what another shard owns until its subtree holds it and no wiring would be pruned',
      );
    if (anyHandover(part.handedOver))
      logger.info({ shard: shard.scope.name, ...part.handedOver }, 'Handed over what its new shard publishes');
    return part.plan;
  }

  /** The tree to publish: sharded, the wiring of what this shard hands over marked against pruning. */
  private withHandoverMarks(tree: Map<string, string>, plan: Plan): Map<string, string> {
    if (!this.options.shard || !anyHandover(this.handingOver)) return tree;
    const releasesOf = (stack: string) =>
      plan.resolution.clusterStacks
        .filter((resolved) => `${resolved.namespace}/${resolved.name}` === stack)
        .flatMap((resolved) => resolved.releases.filter((release) => release.kept))
        .map((release) => `${stack.slice(0, stack.indexOf('/'))}/${release.name}`);
    return markHandoverWiring(tree, this.handingOver, releasesOf);
  }

  /** The scheduler configuration in effect and what is wrong with the file, if anything. */
  private schedulerNow(): { setting: SchedulerSetting; problem?: string } | undefined {
    const scheduler = this.options.scheduler;
    if (!scheduler) return undefined;
    if (!('current' in scheduler)) return { setting: { config: scheduler } };
    const setting = scheduler.current();
    const problem = 'refused' in setting ? setting.refused : scheduler.problem();
    return { setting, ...(problem !== undefined ? { problem } : {}) };
  }

  /** The AddonsLayers to render (none unless a layer root is configured). */
  private liveLayers(): KubeObject[] {
    return this.options.layerRoot === undefined ? [] : this.options.cache.list(ADDONS_LAYERS);
  }

  /** Writes each AddonsLayer's Kraan-shaped status (when it changed); returns the events of state changes. */
  private async writeLayerStatuses(
    input: LayerStatusInputs,
    apply: ApplyReport,
    logger: Logger,
  ): Promise<EventIntent[]> {
    if (input.layers.length === 0) return [];
    const { layers, events } = desiredLayerStatuses(input);
    for (const { live, status } of layers) {
      try {
        const result = await writeStatus(
          this.options.kube,
          ADDONS_LAYERS,
          live,
          status as unknown as Record<string, unknown>,
          { now: input.now },
        );
        if (result.outcome === 'written') apply.statusesWritten += 1;
      } catch (error) {
        apply.errors.push({ object: `AddonsLayer ${live.metadata.name}`, error });
        logger.warn(
          { object: `AddonsLayer ${live.metadata.name}`, error: errorMessage(error) },
          'could not write a status; the reconcile will be retried',
        );
      }
    }
    return events;
  }

  private syncState(render: RenderOutcome | undefined, publish: PublishState): Map<string, UnitSync> {
    if (!render || this.options.engine === 'none') return new Map();
    const kind = this.options.engine === 'flux' ? FLUX_KUSTOMIZATIONS : ARGO_APPLICATIONS;
    const objects = this.options.cache.list(kind);
    // Shared directories (objects several releases render) have their own Kustomization / Application.
    const sharedDirs = new Set(
      (render.provenance.sharedObjects ?? [])
        .filter((shared) => shared.path.startsWith('management/'))
        .map(sharedDirOf),
    );
    return syncStateOf(
      this.options.engine,
      objects,
      [...render.provenance.units.map((unit) => unit.dir), ...sharedDirs],
      publish.order,
      this.options.outputPath,
    );
  }
}

/**
 * The plan as status reads it: stand-in stacks (rendered only to keep their published output) are
 * not resolutions of their own, and their Clusters belong to no resolved stack.
 */
function withoutStandIns(plan: Plan, standIns: Set<string>): Plan {
  const isStandIn = (stack: { namespace: string; name: string } | undefined) =>
    stack !== undefined && standIns.has(`${stack.namespace}/${stack.name}`);
  const clusterStacks = plan.resolution.clusterStacks.filter((stack) => !isStandIn(stack));
  const clusters = plan.resolution.clusters.map((cluster) => {
    if (!isStandIn(cluster.stack)) return cluster;
    const { stack: _stack, ...rest } = cluster;
    return rest;
  });
  return { ...plan, resolution: { ...plan.resolution, clusterStacks, clusters } };
}
