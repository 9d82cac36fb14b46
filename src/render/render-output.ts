// Turns a Plan into the output tree: the ClusterClass side of every kept release and the addons of
// every Cluster, one object per file, plus kustomizations, a README and a provenance record.
// Helm comes in through RenderDependencies; this module does no I/O of its own. The steps live in
// their own modules: units (render-units), values (evaluate-values), files (unit-files),
// withholding (withhold-units), records (tree-records) and the tree (assemble-tree).
import { holdWithheldClusterMoves } from '../cluster-requests/held-cluster-moves.js';
import type { ClusterRequestsOutput } from '../output/cluster-requests-record.js';
import type { HookPlacement } from '../output/helm-hooks-record.js';
import type { Provenance, UnitRecord, WithheldEntry } from '../output/provenance.js';
import { OUTPUT_FORMAT } from '../output/provenance.js';
import { clusterDir } from '../output/tree-layout.js';
import type { RenderSummary } from '../output/render-summary.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import type { Plan } from '../plan/build-plan.js';
import { sha256Digest } from '../release/content-digest.js';
import { failureKindOf } from '../core/failure.js';
import { assembleTree, warmReadmeTemplate } from './assemble-tree.js';
import { canonicalJson } from './canonical-json.js';
import { type SecretEncryption, secretsDigestPart } from '../secrets/secrets-digest.js';
import { type DecryptionKeyRef, describeEncryptedSecrets, encryptUnitSecrets, handEditedSecrets, sopsTimestamp } from './encrypted-secrets.js';
import { evaluateUnitValues, valuesFailureRecords } from './evaluate-values.js';
import { previousFiles, previousRecords } from './previous-output.js';
import type { RenderDependencies } from './render-dependencies.js';
import { ownerKey, type PendingUnit, planUnits } from './render-units.js';
import { type SecretPolicy, SecretRefusedError } from './secret-policy.js';
import { findReleaseConflicts, findStageConflicts, handoverNotes, identifyUnitObjects, placeSharedObjects } from './shared-objects.js';
import { buildProvenance, buildSummary } from './tree-records.js';
import { type AnnotationsFor, unitFiles, type UnitFiles } from './unit-files.js';
import { layerUnits } from './layer-units.js';
import { handOverAddonMoves } from './addon-moves.js';
import { holdReleasesOfKeptClusters, keepPreviousOutput, withholdConflicts, withholdFailedUnits, withholdStrandedLayers, withholdValuesFailures } from './withhold-units.js';
import { readProvenance } from '../output/provenance.js';
import { renderProviders } from './render-providers.js';
import { unitsWithMisplacedHooks } from './previous-hook-layout.js';
import { summarizeHelmHooks } from './helm-hooks-summary.js';

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
  secrets: SecretPolicy;
  /** With `secrets: 'encrypt'`: who the Secrets are encrypted for (secret-encryption.ts). */
  encryption?: SecretEncryption;
  /** The render's time (epoch ms): `lastmodified` of the SOPS documents it encrypts. */
  renderTime?: number;
  /** With Flux wiring: the Secret that holds the age identity, named in the README next to each encrypted Secret. */
  decryptionKey?: DecryptionKeyRef;
  /** The tree the target holds now; units whose inputs did not change keep their files from it. */
  previous: RenderedTree;
  /**
   * Annotations on management-side objects where the chart set none (Argo CD sync waves); `id`
   * names them in every digest, so a tree rendered with other annotations is rendered again.
   */
  managementAnnotations?: { id: string; annotationsFor: AnnotationsFor };
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
  /** How helm hooks are laid out (helm-hooks-record.ts): `argocd` for Argo CD, `staged` (the default) for Flux and plain appliers. */
  hookPlacement?: HookPlacement;
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

/** Renders what changed and reuses what did not; throws only for a refused Secret or a failure that is not the unit's own. */
export async function renderOutput(plan: Plan, deps: RenderDependencies, options: RenderOptions): Promise<RenderOutcome> {
  const { units: before, failures: failedBefore, sharedObjects: sharedBefore } = previousRecords(options.previous);
  if (options.secrets === 'encrypt' && !options.encryption) throw new Error('internal error: --secrets encrypt without resolved recipients');
  const secretsPart = secretsDigestPart(options.secrets, options.encryption);
  const lastModified = sopsTimestamp(options.renderTime ?? 0);
  const { units, clusterUnits, withheld } = planUnits(plan, { secrets: options.secrets, ...(options.encryption ? { encryption: options.encryption } : {}), ...(options.managementAnnotations ? { managementAnnotations: options.managementAnnotations.id } : {}) });
  const layers = layerUnits(plan, secretsPart);
  units.push(...layers.units);
  withheld.push(...layers.withheld);

  // Encrypted files edited by hand since we wrote them are not reused: they are encrypted again from the render.
  const handEdited = new Map(units.map((unit) => [unit.record.dir, handEditedSecrets(before.get(unit.record.dir), options.previous)] as const).filter(([, files]) => files.length > 0));
  // Units whose hooks were laid out for another engine (or before hooks were handled) render again.
  const hookPlacement = options.hookPlacement ?? 'staged';
  const notReusable = new Set([...handEdited.keys(), ...unitsWithMisplacedHooks(options.previous, before, hookPlacement)]);
  // Values are evaluated in chunks while the charts of earlier chunks (and every release) render.
  const { reused, failedClusters, timedOutClusters, ready } = evaluateUnitValues(units, before, failedBefore, options.previous, deps, notReusable);
  // Compiled once the first chart that waited for values is under way (not while the values are
  // prepared, which would delay them): this process has little else to do until helm answers.
  let warmed = false;
  const warmWhileHelmRuns = (): void => {
    if (warmed) return;
    warmed = true;
    setImmediate(() => warmReadmeTemplate(options.readmeTemplate));
  };

  // Render what changed; reuse what did not (including charts that generate random data).
  const rendered = new Map<string, Map<string, string>>();
  const records: UnitRecord[] = [];
  const refusals: SecretRefusedError[] = [];
  const unitFailures = new Map<PendingUnit, string>();
  const progress = progressTracker(units, options.onProgress);
  let unitsRendered = 0;
  // Units rendered in this run; one withheld afterwards (its cluster or a dependency failed) is neither published nor reused.
  const renderedNow = new Set<string>();
  await Promise.all(
    units.map(async (unit) => {
      await ready.get(unit);
      // A cluster with any failing stage is withheld whole: half an addon set is worse than the old
      // one. Its stages share one values chunk, so none of them has rendered. A layer's values fail
      // for that layer alone (its key is namespace/cluster/layers/<layer>).
      if (unit.record.kind !== 'release' && failedClusters.has(ownerKey(unit))) {
        progress(unit);
        return;
      }
      const values = [...unit.values, ...(unit.extraValues ? [unit.extraValues] : [])];
      let renderDigest = sha256Digest(canonicalJson({ format: OUTPUT_FORMAT, chart: unit.chart.digest, values, kubeVersion: unit.kubeVersion, apiVersions: unit.apiVersions, releaseName: unit.releaseName, namespace: unit.renderNamespace, includeCrds: unit.includeCrds, secrets: secretsPart, annotations: unit.annotated ? (options.managementAnnotations?.id ?? null) : null }));
      let files = reused.get(unit.record.dir);
      const old = before.get(unit.record.dir);
      let notes = old?.notes;
      let renderedWith = old?.renderedWith;
      let hooks = old?.hooks;
      let fresh = false;
      // Reused by input digest: values were not evaluated, so the old render digest still holds.
      if (files && old) renderDigest = old.renderDigest;
      else if (old && old.renderDigest === renderDigest && !notReusable.has(unit.record.dir)) files = previousFiles(old, options.previous);
      let secrets = files ? old?.secrets : undefined;
      if (!files) {
        let output: string;
        try {
          if (unit.manifests !== undefined) output = unit.manifests;
          else {
            const rendering = deps.renderChart({ releaseName: unit.releaseName, chart: unit.chart, namespace: unit.renderNamespace, kubeVersion: unit.kubeVersion, apiVersions: unit.apiVersions, values, includeCrds: unit.includeCrds });
            if (ready.has(unit)) warmWhileHelmRuns();
            output = await rendering;
          }
        } catch (error) {
          // The chart failed for this unit (a template error, a `fail`): withhold the unit alone.
          if (failureKindOf(error) !== 'fix-input') throw error;
          unitFailures.set(unit, (error as Error).message);
          progress(unit, true);
          return;
        }
        unitsRendered += 1;
        renderedNow.add(unit.record.dir);
        let result: UnitFiles;
        try {
          result = unitFiles(output, unit, options.secrets, options.managementAnnotations?.annotationsFor, hookPlacement);
        } catch (error) {
          if (!(error instanceof SecretRefusedError)) throw error;
          refusals.push(error);
          progress(unit, true);
          return;
        }
        if (result.problems.length > 0) {
          unitFailures.set(unit, result.problems.join('; '));
          progress(unit, true);
          return;
        }
        secrets = result.secrets.length > 0 ? await encryptUnitSecrets(unit.record.dir, result, options.encryption!, lastModified) : undefined;
        files = result.files;
        notes = result.notes.length > 0 ? result.notes : undefined;
        renderedWith = unit.manifests === undefined ? deps.rendererName?.() : undefined;
        hooks = result.hooks.length > 0 ? result.hooks : undefined;
        fresh = true;
      }
      rendered.set(unit.record.dir, files);
      records.push({ ...unit.record, renderDigest, files: [...files.keys()].sort(), ...(notes ? { notes } : {}), ...(secrets ? { secrets } : {}), ...(renderedWith ? { renderedWith } : {}), ...(hooks ? { hooks } : {}) });
      if (fresh) {
        identifyUnitObjects(files);
        options.onUnitRendered?.(unit.record.dir, files);
      }
      progress(unit, fresh);
    }),
  );
  withholdValuesFailures(failedClusters, withheld);
  const valuesFailures = valuesFailureRecords(units, failedClusters, timedOutClusters);
  if (refusals.length > 0) {
    throw refusals.length === 1 ? refusals[0]! : new SecretRefusedError(refusals.map((r) => r.unit).join(', '), refusals.flatMap((r) => r.findings));
  }
  withholdFailedUnits(unitFailures, rendered, records, withheld);
  // One object, one content: a release (or a cluster) rendering an object another kept release
  // (or another stage) renders differently is withheld; what it published before comes back only
  // if that does not bring the conflict back with it.
  const conflicts = (onlyClusters?: Set<string>): ReturnType<typeof findReleaseConflicts> => [...findReleaseConflicts(records, rendered), ...findStageConflicts(records, rendered, onlyClusters)];
  // Stages reused together from the previous tree were checked together when it was rendered (a
  // conflict there withheld a unit, which renders again now): only clusters with a stage rendered
  // now can have a new conflict.
  const clustersRenderedNow = new Set(records.filter((record) => record.kind === 'cluster-stage' && renderedNow.has(record.dir)).map((record) => clusterDir(record.namespace, record.name)));
  withholdConflicts(conflicts(clustersRenderedNow), rendered, records, withheld);
  keepPreviousOutput(withheld, before, options.previous, rendered, records);
  // A Cluster whose previous addons stay keeps the release they were rendered for.
  if (holdReleasesOfKeptClusters(withheld, before, records)) keepPreviousOutput(withheld, before, options.previous, rendered, records);
  if (withheld.some((entry) => entry.previousKept)) withholdConflicts(conflicts(), rendered, records, withheld);
  // A layer whose dependency (or the stack's addons) ended up with nothing in the tree waits too.
  if (withholdStrandedLayers(rendered, records, withheld)) keepPreviousOutput(withheld, before, options.previous, rendered, records);

  // A cluster none of whose stages rendered now keeps the placement the previous tree recorded.
  const placement = placeSharedObjects(records, rendered, { renderedClusters: clustersRenderedNow, before, sharedObjects: sharedBefore });
  // An addon object that changed directory within its cluster stays one render in the old one, marked against pruning.
  const moves = handOverAddonMoves(options.previous, placement.rendered, placement.records);
  const placed = placement.records.sort((a, b) => a.dir.localeCompare(b.dir));
  // Cluster API providers (management/providers/): no helm, rendered every time, same bytes.
  const providers = renderProviders(plan.providers, options.previous, readProvenance(options.previous)?.providers ?? [], options.secrets);
  for (const [dir, files] of providers.rendered) placement.rendered.set(dir, files);
  withheld.push(...providers.withheld);

  withheld.sort((a, b) => `${a.kind}/${a.namespace}/${a.name}/${a.layer ?? ''}`.localeCompare(`${b.kind}/${b.namespace}/${b.name}/${b.layer ?? ''}`));
  const provenance = buildProvenance(plan, placed, withheld, valuesFailures, providers.records, placement.sharedObjects);
  if (moves.handovers.length > 0) provenance.addonHandovers = moves.handovers;
  provenance.helmHooks = hookPlacement;
  const summary = buildSummary(plan, placed, withheld, provenance.inputDigest, clusterUnits, placement.sharedObjects);
  if (providers.records.length > 0) summary.providers = providers.records.map(({ kind, namespace, name, version, contract, source, dir }) => ({ kind, namespace, name, version, contract, source, dir }));
  if (options.clusterRequests) {
    provenance.clusterRequests = options.clusterRequests.record;
    summary.clusterRequests = options.clusterRequests.summary;
  }
  const helmHooks = summarizeHelmHooks(placed);
  if (helmHooks.length > 0) summary.helmHooks = helmHooks;
  if (placed.some((record) => record.secrets)) summary.encryptedSecrets = describeEncryptedSecrets(placed, options.decryptionKey);
  const placedFiles = [...placed.filter((record) => record.kind === 'release').flatMap((record) => [...(placement.rendered.get(record.dir) ?? [])].map(([file, text]): [string, string] => [`${record.dir}/${file}`, text])), ...placement.sharedFiles];
  summary.notes.push(...handoverNotes(options.previous, placedFiles, new Set(placed.filter((record) => record.kind === 'release').map((record) => record.dir))), ...moves.notes);
  // A Cluster made for requests moves to another class only with its new addons (held-cluster-moves.ts).
  const requestFiles = options.clusterRequests ? holdWithheldClusterMoves(options.clusterRequests.files, withheld, options.previous) : undefined;
  if (requestFiles) summary.notes.push(...requestFiles.notes);
  const tree = assembleTree(placement.rendered, [...placed, ...providers.records], provenance, summary, options.readmeTemplate, requestFiles?.files, { files: new Map([...placement.sharedFiles, ...moves.files]), dirs: placement.sharedDirs });
  // Said once, for this run (not kept in the unit's notes): the hand edit is gone with this render,
  // or, when the unit is withheld, stays until it renders again.
  const recordOf = new Map(placed.map((record) => [record.dir, record]));
  const editWarnings = [...handEdited].flatMap(([dir, files]) => {
    const renderedAgain = recordOf.has(dir) && recordOf.get(dir)!.secrets !== before.get(dir)?.secrets;
    return files.map((file) => `${file} was changed since clusterstack encrypted it (edited by hand?); ${renderedAgain ? 'it was encrypted again from the render' : 'it is kept as it is while its unit is withheld'}`);
  });
  return { tree, provenance, summary, withheld, notes: [...summary.notes, ...moves.warnings, ...editWarnings], stats: { unitsRendered, unitsReused: placed.filter((record) => !renderedNow.has(record.dir)).length } };
}

/** Counts finished releases and clusters (a cluster when its last stage is done) for onProgress. */
function progressTracker(active: PendingUnit[], onProgress: RenderOptions['onProgress']): (unit: PendingUnit, rendered?: boolean) => void {
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
  for (const unit of active) if (unit.record.kind === 'cluster-stage') stagesLeft.set(ownerKey(unit), (stagesLeft.get(ownerKey(unit)) ?? 0) + 1);
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
