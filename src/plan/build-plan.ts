// Observe, then decide: read the inputs, list each release source once, resolve (pure), and load the
// releases that are kept. Everything rendering and reporting needs comes out of here. Providers and
// addon layers are planned by modules loaded only when the inputs hold any (start-up of `plan`).
import type { CrdRuleChecker } from '../api/crd-rules.js';
import { ANNOTATION_RELEASE_SOURCE, type ClusterStack } from '../api/types.js';
import { formatProblem, InputError, type Problem } from '../core/problem.js';
import { clusterClassName } from '../core/release-tag.js';
import {
  type AvailableRelease,
  type ReleaseDecision,
  type Resolution,
  resolveReleases,
  type StackInput,
  type UnlistedStack,
} from '../release/resolve-releases.js';
import { formatDotVersion } from '../core/stack-version.js';
import { classifyInputs, type Inputs } from '../inputs/classify-inputs.js';
import { fieldSource, type ParsedManifests } from '../inputs/parse-manifests.js';
import type { LayerPlan } from '../layers/plan-layers.js';
import type { LayerChartFetcher } from '../sources/helm-chart-source.js';
import { loadFileDigestMemo, saveFileDigestMemo } from '../release/file-digest-memo.js';
import { loadRelease, type ReleaseContent } from '../release/load-release.js';
import { type ReleaseListing, type ReleaseSource, ReleaseSourceError } from '../release/release-source.js';
import { UnsafeArchiveError } from '../release/safe-extract.js';
import type { SourceOpener } from '../sources/open-release-source.js';
import type { ProviderFetcher } from '../providers/provider-fetcher.js';
import type { ProviderPlan } from '../providers/plan-providers.js';
import { PROVIDERS_DIR } from '../output/tree-layout.js';
import { failureKindOf } from '../core/failure.js';

export interface PlanOptions {
  manifests: ParsedManifests;
  /** The source for stacks that name none of their own. */
  defaultSource: string;
  openSource: SourceOpener;
  /** Where archives are extracted (content-addressed). */
  workDir: string;
  /** Checks our kinds against their CRDs' CEL rules (src/inputs/crd-rule-verdicts.ts). */
  checkCrdRules: CrdRuleChecker;
  onWarning?: (message: string) => void;
  /** The repository AddonsLayer `spec.source.path`s are relative to (default: the Git work tree holding each layer's file). */
  layerRoot?: string;
  /** Fetches AddonsLayer charts from OCI and HTTP chart repositories; by default one caching in `workDir`. */
  layerChartFetcher?: LayerChartFetcher;
  /** Fetches Cluster API provider releases; by default through `openSource` and a cache in `workDir`. */
  providerFetcher?: ProviderFetcher;
  /** Why objects that providers name could not be read (the controller's reads), by providerInputKey. */
  providerInputProblems?: ReadonlyMap<string, Problem>;
}

export interface LoadedRelease {
  tag: string;
  source: ReleaseSource;
  content?: ReleaseContent;
  problems: Problem[];
}

export interface Plan {
  inputs: Inputs;
  resolution: Resolution;
  /**
   * Kept releases, loaded (or with the problems that stopped them loading), by namespace and tag
   * (`releaseKey`): stacks in two namespaces may name the same tag from different sources. Read
   * them with `loadedRelease`.
   */
  releases: Map<string, LoadedRelease>;
  /** Problems with the inputs (invalid or duplicate objects), each also stopping that object. */
  problems: Problem[];
  warnings: string[];
  /** Addon layers, when the inputs have AddonsLayers. */
  layers?: LayerPlan;
  /** Cluster API providers (operator.cluster.x-k8s.io objects), when the inputs hold any. */
  providers?: ProviderPlan;
}

/** The key of a kept release in `Plan.releases`: its stack's namespace and its tag. */
export function releaseKey(namespace: string, tag: string): string {
  return `${namespace}/${tag}`;
}

/** The kept release `tag` of the stacks in `namespace`, as the plan loaded it. */
export function loadedRelease(
  plan: Pick<Plan, 'releases'>,
  namespace: string,
  tag: string | undefined,
): LoadedRelease | undefined {
  return tag === undefined ? undefined : plan.releases.get(releaseKey(namespace, tag));
}

/** The release source location of a stack: spec.releaseSource, then the annotation, then the default. */
export function sourceLocationOf(stack: ClusterStack, defaultSource: string): string {
  return stack.spec.releaseSource ?? stack.metadata.annotations?.[ANNOTATION_RELEASE_SOURCE] ?? defaultSource;
}

export async function buildPlan(options: PlanOptions): Promise<Plan> {
  // File digests of earlier runs (file-digest-memo.ts): a memo that cannot be read or written only means hashing again.
  await loadFileDigestMemo(options.workDir).catch(() => undefined);
  const plan = await assemblePlan(options);
  await saveFileDigestMemo(options.workDir).catch(() => undefined);
  return plan;
}

async function assemblePlan(options: PlanOptions): Promise<Plan> {
  const warnings: string[] = [];
  const warn = (message: string): void => {
    warnings.push(message);
    options.onWarning?.(message);
  };
  const inputs = classifyInputs(options.manifests.objects, options.checkCrdRules);
  const problems = [...options.manifests.problems, ...inputs.problems];
  const listed = await listStackReleases(inputs, options, problems, warn);
  const loads = new ReleaseLoads(options.workDir, warn);
  const { resolution, skipped } = await resolveLoadable(inputs, listed, loads, warn);
  const releases = keptReleases(resolution, listed, loads, skipped);
  checkClusters(resolution, inputs, releases);
  const plan: Plan = { inputs, resolution, releases, problems, warnings };
  if (inputs.providers.length > 0) await addProviders(plan, options);
  if (inputs.addonsLayers.length > 0) await addLayers(plan, options, warn);
  return plan;
}

/** Each ClusterStack's listed releases and source, and the stacks whose source could not be listed. */
interface ListedStacks {
  stackInputs: StackInput[];
  unlisted: UnlistedStack[];
  stackSources: Map<ClusterStack, ReleaseSource>;
}

/**
 * Lists the releases of every ClusterStack's source, one listing per source location however many
 * stacks share it. A source that cannot be opened or listed is the stack's problem; a default source
 * that does not exist stops the plan (the flag names a wrong place).
 */
async function listStackReleases(
  inputs: Inputs,
  options: PlanOptions,
  problems: Problem[],
  warn: (message: string) => void,
): Promise<ListedStacks> {
  const listings = new Map<string, Promise<ReleaseListing>>();
  const listed: ListedStacks = { stackInputs: [], unlisted: [], stackSources: new Map() };
  for (const { object: stack, source: origin } of inputs.clusterStacks) {
    const location = sourceLocationOf(stack, options.defaultSource);
    const object = `ClusterStack ${stack.metadata.namespace ?? 'default'}/${stack.metadata.name}`;
    let source: ReleaseSource;
    try {
      source = options.openSource(location);
    } catch (error) {
      problems.push({ source: origin, object, message: errorMessage(error) });
      continue;
    }
    listed.stackSources.set(stack, source);
    if (!listings.has(location)) listings.set(location, source.list());
    let listing: ReleaseListing;
    try {
      listing = await listings.get(location)!;
    } catch (error) {
      if (error instanceof ReleaseSourceError && location === options.defaultSource && error.kind === 'not-found')
        throw new InputError([{ message: error.message }]);
      problems.push({ source: origin, object, message: errorMessage(error), ...retryableOf(error) });
      listed.unlisted.push({ stack, source: location, retryable: retryableOf(error).retryable === true });
      continue;
    }
    const releases: AvailableRelease[] = listing.releases.map((release) => {
      const available: AvailableRelease = { tag: release.tag, parsed: release.parsed };
      if (release.publishedAt) available.publishedAt = release.publishedAt;
      return available;
    });
    listed.stackInputs.push({ stack, releases });
  }
  for (const [location, listing] of listings) {
    const result = await listing.catch(() => undefined);
    for (const skipped of result?.skipped ?? [])
      warn(`release source ${location}: skipped "${skipped.name}": ${skipped.reason}`);
  }
  return listed;
}

/** The releases given up on per stack: tag -> why it cannot be loaded. */
type SkippedReleases = Map<ClusterStack, Map<string, string>>;

/**
 * Resolves which releases are kept, and loads them. A release kept only as the newest (ready) one
 * that cannot be loaded (an empty directory, a truncated archive, a half-uploaded GitHub release) is
 * skipped for its stack, and the next newest takes its place: a broken new upload nobody asked for
 * must not stop every other stack. A release pinned in spec.versions or used by a Cluster is never
 * skipped: its problem is reported. Resolves again until no more are skipped.
 */
async function resolveLoadable(
  inputs: Inputs,
  { stackInputs, unlisted, stackSources }: ListedStacks,
  loads: ReleaseLoads,
  warn: (message: string) => void,
): Promise<{ resolution: Resolution; skipped: SkippedReleases }> {
  const clusters = inputs.clusters.map((c) => c.object);
  const providerReleases = inputs.providerReleases.map((p) => p.object);
  const skipped: SkippedReleases = new Map();
  for (;;) {
    const resolution = resolveReleases({
      stacks: stackInputs.map((input) => ({
        ...input,
        releases: input.releases.filter((release) => !skipped.get(input.stack)?.has(release.tag)),
      })),
      unlisted,
      clusters,
      providerReleases,
    });
    let skippedMore = false;
    for (const stack of resolution.clusterStacks) {
      const source = stackSources.get(stack.stack);
      if (!source) continue;
      for (const decision of stack.releases.filter((release) => release.kept)) {
        const loaded = await loads.load(source, decision.name);
        if (loaded.content || !keptOnlyAsNewest(decision) || !loaded.skippable) continue;
        const reason = loaded.problems.map(formatProblem).join('; ');
        if (!skipped.has(stack.stack)) skipped.set(stack.stack, new Map());
        skipped.get(stack.stack)!.set(decision.name, reason);
        warn(
          `ClusterStack ${stack.namespace}/${stack.name}: release ${decision.name} cannot be loaded and is skipped (${reason}); no spec.versions entry or Cluster needs it, so the newest release that loads is used instead`,
        );
        skippedMore = true;
      }
    }
    if (!skippedMore) return { resolution, skipped };
  }
}

/** Loads of kept releases, each source and tag tried once in a run. */
class ReleaseLoads {
  private readonly attempts = new Map<string, LoadAttempt>();
  // A source that failed in a way retrying later may fix (down, timed out) is not asked again in
  // this run: every further release would wait out the same deadline.
  private readonly unavailable = new Map<ReleaseSource, string>();

  constructor(
    private readonly workDir: string,
    private readonly warn: (message: string) => void,
  ) {}

  /** The release loaded, or the problems that stopped it; its warnings reported once. */
  async load(source: ReleaseSource, tag: string): Promise<LoadAttempt> {
    const key = `${source.location}\n${tag}`;
    const earlier = this.attempts.get(key);
    if (earlier) return earlier;
    const down = this.unavailable.get(source);
    const loaded = down === undefined ? await loadKeptRelease(source, tag, this.workDir) : notTried(source, tag, down);
    this.attempts.set(key, loaded);
    // Reported (plan and render print them, the controller logs them), never withholding the release.
    for (const warning of loaded.content?.warnings ?? []) this.warn(formatProblem(warning));
    const failure = loaded.problems.find((problem) => problem.retryable);
    if (failure && !this.unavailable.has(source)) this.unavailable.set(source, `${tag}: ${failure.message}`);
    return loaded;
  }

  /** What `load` gave for a release it was asked for. */
  loaded(source: ReleaseSource, tag: string): LoadAttempt {
    return this.attempts.get(`${source.location}\n${tag}`)!;
  }
}

/**
 * The kept releases as loaded, by releaseKey. Skipped releases are added to their stack's decisions,
 * so plans and reports show them with the reason.
 */
function keptReleases(
  resolution: Resolution,
  { stackInputs, stackSources }: ListedStacks,
  loads: ReleaseLoads,
  skipped: SkippedReleases,
): Map<string, LoadedRelease> {
  const releases = new Map<string, LoadedRelease>();
  for (const stack of resolution.clusterStacks) {
    const source = stackSources.get(stack.stack);
    if (!source) continue;
    for (const decision of stack.releases.filter((release) => release.kept)) {
      const key = releaseKey(stack.namespace, decision.name);
      if (releases.has(key)) continue;
      const { skippable: _skippable, ...loaded } = loads.loaded(source, decision.name);
      releases.set(key, loaded);
    }
    for (const [tag, reason] of skipped.get(stack.stack) ?? [])
      stack.releases.push(
        skippedDecision(
          tag,
          reason,
          stackInputs.find((input) => input.stack === stack.stack),
        ),
      );
  }
  return releases;
}

/** The Cluster API providers of the inputs (which hold at least one), their problems the plan's. */
async function addProviders(plan: Plan, options: PlanOptions): Promise<void> {
  const { inputs, problems } = plan;
  const objects = options.manifests.objects.map((sourced) => sourced.object);
  const [{ planProviders }, { createProviderFetcher }] = await Promise.all([
    import('../providers/plan-providers.js'),
    import('../providers/provider-fetcher.js'),
  ]);
  const providers = await planProviders(
    inputs.providers,
    objects,
    options.providerFetcher ?? createProviderFetcher({ cacheDir: options.workDir }, options.openSource),
    options.providerInputProblems,
  );
  plan.providers = providers;
  problems.push(
    ...providers.problems,
    ...providers.providers.flatMap((planned) => planned.problems),
    ...(providers.certManager?.problems ?? []),
  );
  const providersNamespace = PROVIDERS_DIR.split('/')[1];
  for (const { object: stack, source } of inputs.clusterStacks.filter(
    (sourced) => sourced.object.metadata.namespace === providersNamespace,
  )) {
    problems.push({
      source,
      object: `ClusterStack ${providersNamespace}/${stack.metadata.name}`,
      message: `lives in namespace "${providersNamespace}", whose output directory (${PROVIDERS_DIR}/) holds the Cluster API providers; move the ClusterStack to another namespace`,
    });
  }
}

/** The addon layers of the inputs (which hold at least one AddonsLayer): their problems the plan's, their notes warnings. */
async function addLayers(plan: Plan, options: PlanOptions, warn: (message: string) => void): Promise<void> {
  const contentOf = (cluster: { stack?: { namespace: string }; namespace: string; release?: string }) =>
    loadedRelease(plan, cluster.stack?.namespace ?? cluster.namespace, cluster.release)?.content;
  const layers = await planAddonsLayers(plan.inputs, plan.resolution, contentOf, options);
  if (!layers) return;
  plan.layers = layers;
  plan.problems.push(...layers.problems);
  for (const note of layers.resolution.notes) warn(note);
  for (const [name, reason] of layers.sourceFailures)
    warn(`AddonsLayer ${name}: ${reason}; the layer is withheld for its Clusters`);
}

/**
 * What only the loaded releases can tell about each Cluster, and where each Cluster's problems are:
 * `spec.topology.version` must be exactly its release's Kubernetes version (metadata.yaml, with the
 * patch), as the cluster-stack-operator's Cluster webhook requires; every problem of a Cluster or
 * ClusterStack names the file and the line of its field.
 */
function checkClusters(resolution: Resolution, inputs: Inputs, releases: Map<string, LoadedRelease>): void {
  const sources = new Map(inputs.clusters.map((sourced) => [sourced.object, sourced.source]));
  for (const cluster of resolution.clusters) {
    const version = cluster.cluster.spec?.topology?.version;
    const content = cluster.stack
      ? loadedRelease({ releases }, cluster.stack.namespace, cluster.release)?.content
      : undefined;
    const expected = content ? `v${content.metadata.kubernetesVersion}` : undefined;
    if (
      expected &&
      typeof version === 'string' &&
      version !== expected &&
      !cluster.problems.some((problem) => problem.path === 'spec.topology.version')
    ) {
      cluster.problems.push({
        object: `Cluster ${cluster.namespace}/${cluster.name}`,
        path: 'spec.topology.version',
        message: `is ${version} but class ${cluster.className}'s release ${cluster.release} is for Kubernetes ${expected} (its metadata.yaml); the cluster-stack-operator accepts only that version: set spec.topology.version: ${expected}`,
      });
    }
    const source = sources.get(cluster.cluster);
    if (source)
      for (const problem of cluster.problems) problem.source ??= fieldSource(cluster.cluster, source, problem.path);
  }
  // A ClusterStack's problems name the line of their field too (`spec.versions[1]`).
  const stackSources = new Map(inputs.clusterStacks.map((sourced) => [sourced.object, sourced.source]));
  for (const stack of resolution.clusterStacks) {
    const source = stackSources.get(stack.stack);
    if (source) for (const problem of stack.problems) problem.source ??= fieldSource(stack.stack, source, problem.path);
  }
}

/** The addon layers of the inputs (which hold at least one AddonsLayer). */
async function planAddonsLayers(
  inputs: Inputs,
  resolution: Resolution,
  contentOf: Parameters<typeof import('../layers/plan-layers.js').planLayers>[2],
  options: PlanOptions,
): Promise<LayerPlan | undefined> {
  const { planLayers } = await import('../layers/plan-layers.js');
  const chartFetcher =
    options.layerChartFetcher ??
    (inputs.addonsLayers.some((layer) => layer.object.spec.source.chart)
      ? (await import('../sources/helm-chart-source.js')).createLayerChartFetcher({ cacheDir: options.workDir })
      : undefined);
  return planLayers(inputs.addonsLayers, resolution.clusters, contentOf, options.layerRoot, chartFetcher);
}

/** A loading attempt, and whether its failure is the release's own (so it may be skipped). */
type LoadAttempt = LoadedRelease & { skippable: boolean };

async function loadKeptRelease(source: ReleaseSource, tag: string, workDir: string): Promise<LoadAttempt> {
  const loaded: LoadAttempt = { tag, source, problems: [], skippable: false };
  try {
    loaded.content = await loadRelease(await source.fetch(tag), workDir);
  } catch (error) {
    loaded.problems.push(...problemsOf(error, tag));
    loaded.skippable = isReleaseFault(error);
  }
  return loaded;
}

function notTried(source: ReleaseSource, tag: string, because: string): LoadAttempt {
  return {
    tag,
    source,
    skippable: false,
    problems: [
      {
        source: tag,
        message: `not fetched: ${source.location} failed earlier in this run (${because})`,
        retryable: true,
      },
    ],
  };
}

/** Broken content or a release that is not (fully) there; not a remote that is down or refuses us. */
function isReleaseFault(error: unknown): boolean {
  if (error instanceof ReleaseSourceError) return error.kind === 'invalid-release' || error.kind === 'not-found';
  return error instanceof InputError || error instanceof UnsafeArchiveError;
}

const NEWEST_REASONS = new Set(['newest release (autoSubscribe)', 'newest ready release']);

function keptOnlyAsNewest(decision: ReleaseDecision): boolean {
  return decision.reasons.every((reason) => NEWEST_REASONS.has(reason));
}

function skippedDecision(tag: string, reason: string, input: StackInput | undefined): ReleaseDecision {
  const parsed = input?.releases.find((release) => release.tag === tag)?.parsed;
  return {
    name: tag,
    className: parsed ? clusterClassName(parsed) : tag,
    version: parsed ? formatDotVersion(parsed.version) : '',
    kept: false,
    reasons: [`skipped: cannot be loaded (${reason})`],
    ready: false,
    usedBy: [],
  };
}

function retryableOf(error: unknown): { retryable?: true } {
  return failureKindOf(error) === 'retry' ? { retryable: true } : {};
}

function problemsOf(error: unknown, release: string): Problem[] {
  if (error instanceof InputError)
    return error.problems.map((problem) => ({ ...problem, source: problem.source ?? release }));
  return [{ source: release, message: errorMessage(error), ...retryableOf(error) }];
}

export function errorMessage(error: unknown): string {
  if (error instanceof InputError) return error.problems.map(formatProblem).join('; ');
  return error instanceof Error ? error.message : String(error);
}
