// For `clusterstack plan`: what a render of the plan would withhold, decided by the render's own
// steps (render-units, layer-units, evaluate-values, unit-files, withhold-units, shared-objects)
// over what plan can see without rendering any addon chart: releases not ready or not loaded,
// Clusters whose release is missing, layers the plan holds back, values templates that fail (a
// field the Cluster does not have yet), ClusterClass charts and layer manifests that fail, render
// no object or a document Kubernetes would refuse, and releases rendering an object an older kept
// release renders differently. What only the addon charts' output shows (a stage rendering
// nothing, a refused document, two stages disagreeing on an object) is decided at render: those
// units are named as such. Nothing is written; the render's previous output is not looked at.
import { failureKindOf } from '../core/failure.js';
import { DeepNestingError } from '../yaml/kube-yaml.js';
import type { UnitRecord, WithheldEntry } from '../output/provenance.js';
import type { Plan } from '../plan/build-plan.js';
import { secretsDigestPart } from '../secrets/secrets-digest.js';
import { evaluateUnitValues } from './evaluate-values.js';
import { layerUnits } from './layer-units.js';
import type { RenderDependencies } from './render-dependencies.js';
import { ownerKey, type PendingUnit, planUnits } from './render-units.js';
import { findReleaseConflicts } from './shared-objects.js';
import { unitFiles } from './unit-files.js';
import { withholdConflicts, withholdFailedUnits, withholdValuesFailures } from './withhold-units.js';
import { compareText } from '../core/compare-text.js';

/** A unit as plan names it: a release alone, a Cluster whole, or one layer of a Cluster. */
interface ForeseenUnit {
  kind: WithheldEntry['kind'];
  namespace: string;
  name: string;
  layer?: string;
  /** Why render withholds it, or (decided at render) what only its render shows. */
  reason: string;
}

export interface Foresight {
  /** What render withholds, with render's reason. */
  withheld: ForeseenUnit[];
  /** Clusters and layers plan sees no reason to withhold, whose charts render only in render. */
  decidedAtRender: ForeseenUnit[];
  /** The kept releases withheld for an object an older kept release renders differently. */
  conflicts: { namespace: string; release: string; reason: string }[];
}

/**
 * What a render of `plan` would withhold, as far as plan can see; `deps` renders the ClusterClass
 * charts and evaluates the values templates (a chart or template that fails is a withhold, as in
 * render). Rejects only when helm itself cannot run. The secret policy is render's to apply: every
 * object is let through here.
 */
export async function foreseeWithholds(plan: Plan, deps: RenderDependencies): Promise<Foresight> {
  const { units, withheld } = planUnits(plan, { secrets: 'allow' });
  const layers = layerUnits(plan, secretsDigestPart('allow', undefined));
  units.push(...layers.units);
  withheld.push(...layers.withheld);
  // Nothing is reused: plan asks what the inputs give, not what a target holds.
  const { failedClusters, ready } = evaluateUnitValues(units, deps);
  await Promise.all(ready.values());

  const rendered = new Map<string, Map<string, string>>();
  const records: UnitRecord[] = [];
  const failures = new Map<PendingUnit, string>();
  // What plan sees: the ClusterClass charts and a layer's manifests (a layer's values never fail: it has none).
  const visible = units.filter(
    (unit) => unit.record.kind === 'release' || (unit.manifests !== undefined && !failedClusters.has(ownerKey(unit))),
  );
  await Promise.all(
    visible.map(async (unit) => {
      let output: string;
      try {
        output =
          unit.manifests ??
          (await deps.renderChart({
            releaseName: unit.releaseName,
            chart: unit.chart,
            namespace: unit.renderNamespace,
            kubeVersion: unit.kubeVersion,
            apiVersions: unit.apiVersions,
            values: unit.values,
            includeCrds: unit.includeCrds,
          }));
      } catch (error) {
        // Output nested deeper than this thread reads is no chart's failure: the command reruns on a deep stack.
        if (failureKindOf(error) !== 'fix-input' || error instanceof DeepNestingError) throw error;
        failures.set(unit, (error as Error).message);
        return;
      }
      const result = unitFiles(output, unit, 'allow');
      if (result.problems.length > 0) {
        failures.set(unit, result.problems.join('; '));
        return;
      }
      rendered.set(unit.record.dir, result.files);
      records.push({ ...unit.record, renderDigest: '', files: [...result.files.keys()] });
    }),
  );
  withholdValuesFailures(failedClusters, withheld);
  withholdFailedUnits(failures, rendered, records, withheld);
  const conflicts = findReleaseConflicts(records, rendered);
  withholdConflicts(conflicts, rendered, records, withheld);

  const decidedAtRender = decidedAtRenderOf(units, withheld);
  const order = (entry: ForeseenUnit): string => `${entry.kind}/${entry.namespace}/${entry.name}/${entry.layer ?? ''}`;
  return {
    withheld: withheld
      .map(({ previousKept: _previousKept, ...entry }) => entry)
      .sort((a, b) => compareText(order(a), order(b))),
    decidedAtRender: decidedAtRender.sort((a, b) => compareText(order(a), order(b))),
    conflicts: conflicts
      .map(({ record, reason }) => ({ namespace: record.namespace, release: record.release, reason }))
      .sort((a, b) => compareText(`${a.namespace}/${a.release}`, `${b.namespace}/${b.release}`)),
  };
}

/** The Clusters and layers not withheld whose charts only render reveals, each with what render may still withhold it for. */
function decidedAtRenderOf(units: PendingUnit[], withheld: WithheldEntry[]): ForeseenUnit[] {
  const isWithheld = (kind: WithheldEntry['kind'], namespace: string, name: string, layer?: string): boolean =>
    withheld.some(
      (entry) => entry.kind === kind && entry.namespace === namespace && entry.name === name && entry.layer === layer,
    );
  const decidedAtRender: ForeseenUnit[] = [];
  const stages = new Map<string, { namespace: string; name: string; stages: string[] }>();
  for (const unit of units.filter((candidate) => candidate.record.kind === 'cluster-stage')) {
    const key = ownerKey(unit);
    const entry = stages.get(key) ?? { namespace: unit.record.namespace, name: unit.record.name, stages: [] };
    entry.stages.push(unit.record.stage!);
    stages.set(key, entry);
  }
  for (const { namespace, name, stages: names } of stages.values()) {
    if (isWithheld('cluster', namespace, name)) continue;
    decidedAtRender.push({
      kind: 'cluster',
      namespace,
      name,
      reason: `the addon charts (${names.join(', ')}) render only in render: a stage that renders no object or a document Kubernetes would refuse, or two stages rendering one object differently, withholds the Cluster there (and a Secret the --secrets policy refuses stops the render)`,
    });
  }
  for (const unit of units.filter((candidate) => candidate.record.layer && candidate.manifests === undefined)) {
    const layer = unit.record.layer!.name;
    if (isWithheld('layer', unit.record.namespace, unit.record.name, layer)) continue;
    decidedAtRender.push({
      kind: 'layer',
      namespace: unit.record.namespace,
      name: unit.record.name,
      layer,
      reason: `the chart of layer ${layer} renders only in render: no object or a document Kubernetes would refuse withholds the layer there (and a Secret the --secrets policy refuses stops the render)`,
    });
  }
  return decidedAtRender;
}
