// The plan's part about units, decided before anything renders and frozen: every unit of the plan
// (each kept release's ClusterClass side, each Cluster's addon stages, each layer) with its input
// digest and its decision — reuse (its files come from the target as they are), render (with why),
// or withhold (with why) — from the plan and the target's published state alone. Pure.
//
// What only helm's output can show stays for render to decide, and is reported there: a unit with a
// values template is reused after all when its evaluated values give the render digest the target
// records; a chart that fails, renders nothing or a document the API server refuses, and two units
// rendering one object differently, withhold at render.
import type { EngineRules, KeepMarks } from '../core/engine-rules.js';
import type { UnitRecord, WithheldEntry } from '../output/provenance.js';
import type { PublishedState } from '../output/published-state.js';
import type { Plan } from '../plan/build-plan.js';
import { type SecretEncryption, secretsDigestPart } from '../secrets/secrets-digest.js';
import { handEditedSecrets } from './encrypted-secrets.js';
import { layerUnits } from './layer-units.js';
import { unitsWithMisplacedHooks } from './previous-hook-layout.js';
import { hookPlacementOf } from './helm-hooks.js';
import { previousFiles } from './previous-output.js';
import { chartValues, ownerKey, type PendingUnit, planUnits, renderDigestOf } from './render-units.js';
import type { SecretPolicy } from './secret-policy.js';
import type { AnnotationsFor } from './unit-files.js';

/** What every unit's digests depend on beyond its own inputs, and how its files are laid out. */
export interface UnitPlanSettings {
  readonly secrets: SecretPolicy;
  /** With `secrets: 'encrypt'`: who the Secrets are encrypted for (part of every digest). */
  readonly encryption?: SecretEncryption;
  /**
   * Annotations on management-side objects where the chart set none (Argo CD sync waves); `id`
   * names them in every digest, so a tree rendered with other annotations is rendered again.
   */
  readonly managementAnnotations?: { readonly id: string; readonly annotationsFor: AnnotationsFor };
  /** The chosen engine's rules (gitops/wiring/engine-rules.ts): its keep marks, and its hook phases if it maps helm hooks itself. */
  readonly engine: EngineRules;
}

/** One unit's decision. */
export type UnitDecision =
  | {
      readonly kind: 'reuse';
      readonly reason: string;
      readonly previous: UnitRecord;
      readonly files: ReadonlyMap<string, string>;
    }
  | { readonly kind: 'render'; readonly reason: string }
  | { readonly kind: 'withhold'; readonly reason: string };

/** A unit of the plan and what is decided for it. */
interface DecidedUnit {
  readonly unit: Readonly<PendingUnit>;
  readonly decision: UnitDecision;
}

/** The units of a plan, decided (see the header). */
export interface UnitPlan {
  readonly plan: Plan;
  readonly settings: UnitPlanSettings;
  /** The secret policy's part of every digest (with encrypt, the recipients too). */
  readonly secretsPart: unknown;
  readonly units: readonly DecidedUnit[];
  /** A Cluster's addon stage units, by `namespace/name`. */
  readonly clusterUnits: ReadonlyMap<string, readonly PendingUnit[]>;
  /** Releases, Clusters and layers withheld before rendering, with the reason. */
  readonly withheld: readonly WithheldEntry[];
  /** Clusters and layers (ownerKey) whose values template failed before with the same inputs: withheld again without helm. */
  readonly knownValuesFailures: ReadonlyMap<string, string>;
  /** Encrypted files edited by hand since they were written, by unit directory: encrypted again from the render. */
  readonly handEdited: ReadonlyMap<string, readonly string[]>;
  /** Units whose previous files must not be reused (edited Secrets, hooks laid out for another engine). */
  readonly notReusable: ReadonlySet<string>;
}

/** Decides every unit of `plan` against what the target holds; pure, and the result is frozen. */
export function decideUnits(plan: Plan, published: PublishedState, settings: UnitPlanSettings): UnitPlan {
  const secretsPart = secretsDigestPart(settings.secrets, settings.encryption);
  const { units, clusterUnits, withheld } = planUnits(plan, {
    secrets: settings.secrets,
    ...(settings.encryption ? { encryption: settings.encryption } : {}),
    ...(settings.managementAnnotations ? { managementAnnotations: settings.managementAnnotations.id } : {}),
  });
  const layers = layerUnits(plan, secretsPart);
  units.push(...layers.units);
  withheld.push(...layers.withheld);
  const handEdited = new Map(
    units
      .map(
        (unit) => [unit.record.dir, handEditedSecrets(published.units.get(unit.record.dir), published.tree)] as const,
      )
      .filter(([, files]) => files.length > 0),
  );
  const notReusable = new Set([
    ...handEdited.keys(),
    ...unitsWithMisplacedHooks(published, hookPlacementOf(settings.engine.hookPhases)),
  ]);
  const knownValuesFailures = new Map<string, string>();
  for (const unit of units) {
    const known = published.valuesFailures.get(`${unit.record.dir} ${unit.record.inputDigest}`);
    if (known !== undefined && !knownValuesFailures.has(ownerKey(unit))) knownValuesFailures.set(ownerKey(unit), known);
  }
  const decided = units.map((unit): DecidedUnit => {
    Object.freeze(unit.record);
    return Object.freeze({
      unit: Object.freeze(unit),
      decision: Object.freeze(
        decideUnit(
          unit,
          published,
          notReusable,
          knownValuesFailures,
          secretsPart,
          settings.managementAnnotations?.id,
          settings.engine.keepMarks,
        ),
      ),
    });
  });
  for (const entry of withheld) Object.freeze(entry);
  return Object.freeze({
    plan,
    settings,
    secretsPart,
    units: Object.freeze(decided),
    clusterUnits,
    withheld: Object.freeze(withheld),
    knownValuesFailures,
    handEdited,
    notReusable,
  });
}

/** One unit's decision, in render's order: a known values failure, the input digest, then the render digest when the values are known now. */
function decideUnit(
  unit: PendingUnit,
  published: PublishedState,
  notReusable: ReadonlySet<string>,
  knownFailures: ReadonlyMap<string, string>,
  secretsPart: unknown,
  annotationsId: string | undefined,
  marks: KeepMarks,
): UnitDecision {
  const known = unit.record.kind === 'release' ? undefined : knownFailures.get(ownerKey(unit));
  if (known !== undefined)
    return { kind: 'withhold', reason: `its values template failed before with the same inputs: ${known}` };
  const old = published.units.get(unit.record.dir);
  if (!old) return { kind: 'render', reason: 'not published yet' };
  if (notReusable.has(unit.record.dir))
    return {
      kind: 'render',
      reason:
        'its published files cannot be reused (encrypted Secrets edited by hand, or helm hooks laid out for another engine)',
    };
  const files = previousFiles(old, published, marks);
  if (!files) return { kind: 'render', reason: 'the target no longer holds all its published files' };
  if (old.inputDigest === unit.record.inputDigest)
    return { kind: 'reuse', reason: 'its inputs are unchanged', previous: old, files };
  if (unit.template !== undefined)
    return {
      kind: 'render',
      reason:
        'its inputs changed; its values template is evaluated at render, and the published files are reused if helm would be given the same',
    };
  if (old.renderDigest === renderDigestOf(unit, chartValues(unit), secretsPart, annotationsId))
    return { kind: 'reuse', reason: 'helm would be given the same chart and values', previous: old, files };
  return { kind: 'render', reason: 'its inputs changed' };
}
