// Carries out the units' plan (unit-decisions.ts) into the output tree: the ClusterClass side of
// every kept release and the addons of every Cluster, one object per file, plus kustomizations, a
// README and a provenance record. Helm comes in through RenderDependencies; this module does no
// I/O of its own. Its steps: render the units (values, helm, files), settle what only the output
// shows must be withheld, then place shared objects and build the records and the tree; each step
// lives in its own module: values (evaluate-values), files (unit-files), withholding
// (withhold-units), records (tree-records) and the tree (assemble-tree).
import { holdWithheldClusterMoves } from './held-cluster-moves.js';
import type { ClusterRequestsOutput } from '../output/cluster-requests-record.js';
import type { Provenance, UnitRecord, WithheldEntry } from '../output/provenance.js';
import type { PublishedState } from '../output/published-state.js';
import { clusterDir } from '../output/tree-layout.js';
import type { RenderSummary } from '../output/render-summary.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { failureKindOf } from '../core/failure.js';
import { DeepNestingError } from '../yaml/kube-yaml.js';
import { assembleTree, warmReadmeTemplate } from './assemble-tree.js';
import {
  type DecryptionKeyRef,
  describeEncryptedSecrets,
  encryptUnitSecrets,
  sopsTimestamp,
} from './encrypted-secrets.js';
import { evaluateUnitValues, type ValuesOutcome, valuesFailureRecords } from './evaluate-values.js';
import { previousFiles } from './previous-output.js';
import type { RenderDependencies } from './render-dependencies.js';
import { chartValues, ownerKey, type PendingUnit, renderDigestOf } from './render-units.js';
import { SecretRefusedError, throwRefusals } from './secret-policy.js';
import {
  findReleaseConflicts,
  findStageConflicts,
  handoverNotes,
  identifyUnitObjects,
  placeSharedObjects,
} from './shared-objects.js';
import { buildProvenance, buildSummary } from './tree-records.js';
import { unitFiles, type UnitFiles } from './unit-files.js';
import type { UnitDecision, UnitPlan } from './unit-decisions.js';
import { type AddonMoves, handOverAddonMoves } from './addon-moves.js';
import {
  holdReleasesOfKeptClusters,
  keepPreviousOutput,
  withholdConflicts,
  withholdFailedUnits,
  withholdStrandedLayers,
  withholdValuesFailures,
} from './withhold-units.js';
import { renderProviders } from './render-providers.js';
import { summarizeHelmHooks } from './helm-hooks-summary.js';
import { hookPlacementOf } from './helm-hooks.js';
import { compareText } from '../core/compare-text.js';
import type { KeepMarks } from '../core/engine-rules.js';

export interface RenderProgress {
  releasesDone: number;
  releasesTotal: number;
  clustersDone: number;
  clustersTotal: number;
  /** Units finished (rendered, reused or withheld) of all units. */
  unitsDone: number;
  unitsTotal: number;
  /** Of the finished units, those that went through helm: the ones whose pace predicts the rest. */
  unitsRendered: number;
}

export interface RenderOptions {
  /** What the target holds now; units the plan reuses keep their files from it. */
  previous: PublishedState;
  /** The render's time (epoch ms): `lastmodified` of the SOPS documents it encrypts. */
  renderTime?: number;
  /** With Flux wiring: the Secret that holds the age identity, named in the README next to each encrypted Secret. */
  decryptionKey?: DecryptionKeyRef;
  readmeTemplate?: string;
  onProgress?: (progress: RenderProgress) => void;
  /** ClusterProfiles and generated Clusters (src/cluster-requests): written beside the units. */
  clusterRequests?: ClusterRequestsOutput;
  /**
   * Each unit rendered now, as soon as its files are final (Secrets encrypted): the tree will hold
   * them under the unit's directory unless the unit is withheld or an object moves to a shared
   * directory afterwards. For writing ahead (Publisher.prestage).
   */
  onUnitRendered?: (dir: string, files: ReadonlyMap<string, string>) => void;
}

export interface RenderOutcome {
  tree: RenderedTree;
  provenance: Provenance;
  summary: RenderSummary;
  withheld: WithheldEntry[];
  /** Notes of the published units (also in summary and README): worth a look, never a failure. */
  notes: string[];
  stats: { unitsRendered: number; unitsReused: number };
}

/** What rendering the units left: their files and records, and what went wrong, before withholding settles. */
interface UnitsRendered {
  rendered: Map<string, Map<string, string>>;
  records: UnitRecord[];
  /** The plan's withheld entries (copied: render marks which keep their previous output) and render's own. */
  withheld: WithheldEntry[];
  refusals: SecretRefusedError[];
  unitFailures: Map<PendingUnit, string>;
  failedClusters: Map<string, string>;
  timedOutClusters: Set<string>;
  /** Units that went through helm (or their manifests) in this run. */
  renderedNow: Set<string>;
}

/**
 * Renders the units `units` marks to render, reuses those it marks to reuse, and withholds what
 * only helm's output shows (reported in the outcome); throws only for a refused Secret or a
 * failure that is not the unit's own. The plan itself is never changed.
 */
export async function renderOutput(
  units: UnitPlan,
  deps: RenderDependencies,
  options: RenderOptions,
): Promise<RenderOutcome> {
  if (units.settings.secrets === 'encrypt' && !units.settings.encryption)
    throw new Error('internal error: --secrets encrypt without resolved recipients');
  const run = await renderUnits(units, deps, options);
  throwRefusals(run.refusals);
  const clustersRenderedNow = settleWithholds(run, options.previous, units.settings.engine.keepMarks);
  return assembleOutcome(units, run, clustersRenderedNow, options);
}

/** Evaluates values and renders every unit the plan renders, concurrently; collects their files, records and failures. */
async function renderUnits(plan: UnitPlan, deps: RenderDependencies, options: RenderOptions): Promise<UnitsRendered> {
  const toRender = plan.units.filter(({ decision }) => decision.kind === 'render').map(({ unit }) => unit);
  // Values are evaluated in chunks while the charts of earlier chunks (and every release) render.
  const values = evaluateUnitValues(toRender, deps, plan.knownValuesFailures);
  const run: UnitsRendered = {
    rendered: new Map(),
    records: [],
    withheld: plan.withheld.map((entry) => ({ ...entry })),
    refusals: [],
    unitFailures: new Map(),
    failedClusters: values.failedClusters,
    timedOutClusters: values.timedOutClusters,
    renderedNow: new Set(),
  };
  const progress = progressTracker(
    plan.units.map(({ unit }) => unit),
    options.onProgress,
  );
  const renderOne = unitRenderer(plan, deps, values, options);
  await Promise.all(
    plan.units.map(async ({ unit, decision }) => {
      await values.ready.get(unit);
      // A cluster with any failing stage is withheld whole: half an addon set is worse than the old
      // one. Its stages share one values chunk, so none of them has rendered. A layer's values fail
      // for that layer alone (its key is namespace/cluster/layers/<layer>).
      if (unit.record.kind !== 'release' && values.failedClusters.has(ownerKey(unit))) return progress(unit);
      const result = await renderOne(unit, decision);
      // Rendered now: what helm answered for, whether or not its output could be used.
      if (result.helmAnswered) run.renderedNow.add(unit.record.dir);
      if ('refusal' in result) run.refusals.push(result.refusal);
      else if ('failure' in result) run.unitFailures.set(unit, result.failure);
      else {
        run.rendered.set(unit.record.dir, result.files);
        run.records.push(result.record);
        if (result.helmAnswered) {
          identifyUnitObjects(result.files);
          options.onUnitRendered?.(unit.record.dir, result.files);
        }
      }
      progress(unit, !('record' in result) || result.helmAnswered);
    }),
  );
  return run;
}

type UnitResult = { helmAnswered: boolean } & (
  { files: Map<string, string>; record: UnitRecord } | { failure: string } | { refusal: SecretRefusedError }
);

/** One unit: its published files when the plan (or, for evaluated values, the render digest) says reuse; else helm's output, checked and encrypted. */
function unitRenderer(
  plan: UnitPlan,
  deps: RenderDependencies,
  values: ValuesOutcome,
  options: RenderOptions,
): (unit: PendingUnit, decision: UnitDecision) => Promise<UnitResult> {
  const { settings, secretsPart } = plan;
  const lastModified = sopsTimestamp(options.renderTime ?? 0);
  // Compiled once the first chart that waited for values is under way (not while the values are
  // prepared, which would delay them): this process has little else to do until helm answers.
  let warmed = false;
  const warmWhileHelmRuns = (): void => {
    if (warmed) return;
    warmed = true;
    setImmediate(() => warmReadmeTemplate(options.readmeTemplate));
  };
  return async (unit, decision) => {
    const old = options.previous.units.get(unit.record.dir);
    const helmValues = chartValues(unit, values.values.get(unit));
    const renderDigest =
      decision.kind === 'reuse'
        ? decision.previous.renderDigest
        : renderDigestOf(unit, helmValues, secretsPart, settings.managementAnnotations?.id);
    // Reused as planned, or (values evaluated now) because helm would be given what it was given before.
    const reused =
      decision.kind === 'reuse'
        ? decision.files
        : old && old.renderDigest === renderDigest && !plan.notReusable.has(unit.record.dir)
          ? previousFiles(old, options.previous, settings.engine.keepMarks)
          : undefined;
    if (reused) return reusedUnit(unit, renderDigest, reused, old);
    const output = await chartOutput(unit, deps, helmValues, values.ready.has(unit) ? warmWhileHelmRuns : undefined);
    if (typeof output !== 'string') return output;
    return renderedUnit(plan, deps, unit, output, renderDigest, lastModified);
  };
}

/** A unit whose published files stay: its record as published, with this render's digest. */
function reusedUnit(
  unit: PendingUnit,
  renderDigest: string,
  reused: ReadonlyMap<string, string>,
  old: UnitRecord | undefined,
): UnitResult {
  return {
    files: new Map(reused),
    record: {
      ...unit.record,
      renderDigest,
      files: [...reused.keys()].sort(),
      ...(old?.notes ? { notes: old.notes } : {}),
      ...(old?.secrets ? { secrets: old.secrets } : {}),
      ...(old?.renderedWith ? { renderedWith: old.renderedWith } : {}),
      ...(old?.hooks ? { hooks: old.hooks } : {}),
    },
    helmAnswered: false,
  };
}

/** The unit's manifests: its own, or helm's for its chart; a chart failing for this unit withholds it alone. */
async function chartOutput(
  unit: PendingUnit,
  deps: RenderDependencies,
  helmValues: ReturnType<typeof chartValues>,
  whileHelmRuns: (() => void) | undefined,
): Promise<string | UnitResult> {
  try {
    if (unit.manifests !== undefined) return unit.manifests;
    const rendering = deps.renderChart({
      releaseName: unit.releaseName,
      chart: unit.chart,
      namespace: unit.renderNamespace,
      kubeVersion: unit.kubeVersion,
      apiVersions: unit.apiVersions,
      values: helmValues,
      includeCrds: unit.includeCrds,
    });
    whileHelmRuns?.();
    return await rendering;
  } catch (error) {
    // The chart failed for this unit (a template error, a `fail`): withhold the unit alone. Output
    // nested deeper than this thread reads is not its failure: the command reruns on a deep stack.
    if (failureKindOf(error) !== 'fix-input' || error instanceof DeepNestingError) throw error;
    return { failure: (error as Error).message, helmAnswered: false };
  }
}

/** Helm's output as the unit's files: split, checked against the secrets policy, Secrets encrypted. */
async function renderedUnit(
  { settings }: UnitPlan,
  deps: RenderDependencies,
  unit: PendingUnit,
  output: string,
  renderDigest: string,
  lastModified: string,
): Promise<UnitResult> {
  let result: UnitFiles;
  try {
    result = unitFiles(
      output,
      unit,
      settings.secrets,
      settings.managementAnnotations?.annotationsFor,
      settings.engine.hookPhases,
    );
  } catch (error) {
    if (!(error instanceof SecretRefusedError)) throw error;
    return { refusal: error, helmAnswered: true };
  }
  if (result.problems.length > 0) return { failure: result.problems.join('; '), helmAnswered: true };
  const secrets =
    result.secrets.length > 0
      ? await encryptUnitSecrets(unit.record.dir, result, settings.encryption!, lastModified)
      : undefined;
  const renderedWith = unit.manifests === undefined ? deps.rendererName?.() : undefined;
  return {
    files: result.files,
    record: {
      ...unit.record,
      renderDigest,
      files: [...result.files.keys()].sort(),
      ...(result.notes.length > 0 ? { notes: result.notes } : {}),
      ...(secrets ? { secrets } : {}),
      ...(renderedWith ? { renderedWith } : {}),
      ...(result.hooks.length > 0 ? { hooks: result.hooks } : {}),
    },
    helmAnswered: true,
  };
}

/**
 * Withholds what only the render shows, in a fixed order: values failures and failed units;
 * conflicts among what rendered now; previous output put back for what is withheld; the releases
 * kept Clusters use (their output put back too); conflicts that kept output brings back; layers
 * left without what they wait for (their output put back). Every step only adds withholds (a
 * conflict found in kept output takes that output out again), so one pass in this order settles it.
 * Returns the clusters with a stage rendered now.
 */
function settleWithholds(run: UnitsRendered, published: PublishedState, marks: KeepMarks): Set<string> {
  const { rendered, records, withheld } = run;
  withholdValuesFailures(run.failedClusters, withheld);
  withholdFailedUnits(run.unitFailures, rendered, records, withheld);
  // One object, one content: a release (or a cluster) rendering an object another kept release
  // (or another stage) renders differently is withheld; what it published before comes back only
  // if that does not bring the conflict back with it.
  const conflicts = (onlyClusters?: Set<string>): ReturnType<typeof findReleaseConflicts> => [
    ...findReleaseConflicts(records, rendered),
    ...findStageConflicts(records, rendered, onlyClusters),
  ];
  // Stages reused together from the previous tree were checked together when it was rendered (a
  // conflict there withheld a unit, which renders again now): only clusters with a stage rendered
  // now can have a new conflict.
  const clustersRenderedNow = new Set(
    records
      .filter((record) => record.kind === 'cluster-stage' && run.renderedNow.has(record.dir))
      .map((record) => clusterDir(record.namespace, record.name)),
  );
  withholdConflicts(conflicts(clustersRenderedNow), rendered, records, withheld);
  keepPreviousOutput(withheld, published, rendered, records, marks);
  // A Cluster whose previous addons stay keeps the release they were rendered for.
  if (holdReleasesOfKeptClusters(withheld, published.units, records))
    keepPreviousOutput(withheld, published, rendered, records, marks);
  if (withheld.some((entry) => entry.previousKept)) withholdConflicts(conflicts(), rendered, records, withheld);
  // A layer whose dependency (or the stack's addons) ended up with nothing in the tree waits too.
  if (withholdStrandedLayers(rendered, records, withheld))
    keepPreviousOutput(withheld, published, rendered, records, marks);
  return clustersRenderedNow;
}

/** Places shared objects and handovers, renders the providers, and builds the records and the tree. */
function assembleOutcome(
  plan: UnitPlan,
  run: UnitsRendered,
  clustersRenderedNow: Set<string>,
  options: RenderOptions,
): RenderOutcome {
  const published = options.previous;
  const { withheld } = run;
  // A cluster none of whose stages rendered now keeps the placement the previous tree recorded.
  const placement = placeSharedObjects(run.records, run.rendered, {
    renderedClusters: clustersRenderedNow,
    before: published.units,
    sharedObjects: [...published.sharedObjects],
  });
  // An addon object that changed directory within its cluster stays one render in the old one, marked against pruning.
  const moves = handOverAddonMoves(published, placement.rendered, placement.records, plan.settings.engine.keepMarks);
  const placed = placement.records.sort((a, b) => compareText(a.dir, b.dir));
  const providers = addProviders(plan, published, placement.rendered, withheld);
  const { provenance, summary } = outcomeRecords(plan, run, placed, placement, providers, moves, options);
  summary.notes.push(...movedObjectNotes(published, placed, placement, moves));
  // A Cluster made for requests moves to another class only with its new addons (held-cluster-moves.ts).
  const requestFiles = options.clusterRequests
    ? holdWithheldClusterMoves(options.clusterRequests.files, withheld, published.tree)
    : undefined;
  if (requestFiles) summary.notes.push(...requestFiles.notes);
  const tree = assembleTree(
    placement.rendered,
    [...placed, ...providers.records],
    provenance,
    summary,
    options.readmeTemplate,
    requestFiles?.files,
    { files: new Map([...placement.sharedFiles, ...moves.files]), dirs: placement.sharedDirs },
  );
  const notes = [...summary.notes, ...moves.warnings, ...handEditWarnings(plan, placed, published)];
  return {
    tree,
    provenance,
    summary,
    withheld,
    notes,
    stats: {
      unitsRendered: run.renderedNow.size,
      unitsReused: placed.filter((record) => !run.renderedNow.has(record.dir)).length,
    },
  };
}

type Placement = ReturnType<typeof placeSharedObjects>;

/** Cluster API providers (management/providers/): no helm, rendered every time, same bytes. Their withholds join the run's, sorted. */
function addProviders(
  plan: UnitPlan,
  published: PublishedState,
  rendered: Placement['rendered'],
  withheld: WithheldEntry[],
): ReturnType<typeof renderProviders> {
  const providers = renderProviders(
    plan.plan.providers,
    published.tree,
    [...published.providers],
    plan.settings.secrets,
    plan.settings.engine.keepMarks,
  );
  for (const [dir, files] of providers.rendered) rendered.set(dir, files);
  withheld.push(...providers.withheld);
  withheld.sort((a, b) =>
    compareText(
      `${a.kind}/${a.namespace}/${a.name}/${a.layer ?? ''}`,
      `${b.kind}/${b.namespace}/${b.name}/${b.layer ?? ''}`,
    ),
  );
  return providers;
}

/** The tree's provenance and summary: units, withholds, providers, requests, handovers, hooks and encrypted Secrets. */
function outcomeRecords(
  plan: UnitPlan,
  run: UnitsRendered,
  placed: UnitRecord[],
  placement: Placement,
  providers: ReturnType<typeof renderProviders>,
  moves: AddonMoves,
  options: RenderOptions,
): { provenance: Provenance; summary: RenderSummary } {
  const { withheld } = run;
  const allUnits = plan.units.map(({ unit }) => unit);
  const provenance = buildProvenance(
    plan.plan,
    placed,
    withheld,
    valuesFailureRecords(allUnits, run.failedClusters, run.timedOutClusters),
    providers.records,
    placement.sharedObjects,
  );
  if (moves.handovers.length > 0) provenance.addonHandovers = moves.handovers;
  provenance.helmHooks = hookPlacementOf(plan.settings.engine.hookPhases);
  const summary = buildSummary(
    plan.plan,
    placed,
    withheld,
    provenance.inputDigest,
    plan.clusterUnits as Map<string, PendingUnit[]>,
    placement.sharedObjects,
  );
  if (providers.records.length > 0)
    summary.providers = providers.records.map(({ kind, namespace, name, version, contract, source, dir }) => ({
      kind,
      namespace,
      name,
      version,
      contract,
      source,
      dir,
    }));
  if (options.clusterRequests) {
    provenance.clusterRequests = options.clusterRequests.record;
    summary.clusterRequests = options.clusterRequests.summary;
  }
  const helmHooks = summarizeHelmHooks(placed);
  if (helmHooks.length > 0) summary.helmHooks = helmHooks;
  if (placed.some((record) => record.secrets))
    summary.encryptedSecrets = describeEncryptedSecrets(placed, options.decryptionKey);
  return { provenance, summary };
}

/** Notes on objects moving between releases and shared/, and on addon objects handed over between directories. */
function movedObjectNotes(
  published: PublishedState,
  placed: UnitRecord[],
  placement: Placement,
  moves: AddonMoves,
): string[] {
  const placedFiles = [
    ...placed
      .filter((record) => record.kind === 'release')
      .flatMap((record) =>
        [...(placement.rendered.get(record.dir) ?? [])].map(([file, text]): [string, string] => [
          `${record.dir}/${file}`,
          text,
        ]),
      ),
    ...placement.sharedFiles,
  ];
  return [
    ...handoverNotes(
      published.tree,
      placedFiles,
      new Set(placed.filter((record) => record.kind === 'release').map((record) => record.dir)),
    ),
    ...moves.notes,
  ];
}

/**
 * Said once, for this run (not kept in the unit's notes): the hand edit is gone with this render,
 * or, when the unit is withheld, stays until it renders again.
 */
function handEditWarnings(plan: UnitPlan, placed: readonly UnitRecord[], published: PublishedState): string[] {
  const recordOf = new Map(placed.map((record) => [record.dir, record]));
  return [...plan.handEdited].flatMap(([dir, files]) => {
    const renderedAgain = recordOf.has(dir) && recordOf.get(dir)!.secrets !== published.units.get(dir)?.secrets;
    return files.map(
      (file) =>
        `${file} was changed since clusterstack encrypted it (edited by hand?); ${renderedAgain ? 'it was encrypted again from the render' : 'it is kept as it is while its unit is withheld'}`,
    );
  });
}

/** Counts finished releases and clusters (a cluster when its last stage is done) for onProgress. */
function progressTracker(
  active: readonly PendingUnit[],
  onProgress: RenderOptions['onProgress'],
): (unit: PendingUnit, rendered?: boolean) => void {
  const progress: RenderProgress = {
    releasesDone: 0,
    releasesTotal: active.filter((u) => u.record.kind === 'release').length,
    clustersDone: 0,
    clustersTotal: new Set(active.filter((u) => u.record.kind === 'cluster-stage').map(ownerKey)).size,
    unitsDone: 0,
    unitsTotal: active.length,
    unitsRendered: 0,
  };
  const stagesLeft = new Map<string, number>();
  for (const unit of active)
    if (unit.record.kind === 'cluster-stage') stagesLeft.set(ownerKey(unit), (stagesLeft.get(ownerKey(unit)) ?? 0) + 1);
  return (unit, rendered = false) => {
    progress.unitsDone += 1;
    if (rendered) progress.unitsRendered += 1;
    if (unit.record.kind === 'release') progress.releasesDone += 1;
    else if (unit.record.kind === 'cluster-stage') {
      const left = (stagesLeft.get(ownerKey(unit)) ?? 1) - 1;
      stagesLeft.set(ownerKey(unit), left);
      if (left === 0) progress.clustersDone += 1;
    }
    onProgress?.({ ...progress });
  };
}
