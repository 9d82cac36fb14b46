// The values step of rendering: every unit whose inputs changed gets its values template evaluated,
// in one batch per Kubernetes version; a cluster whose template fails (a missing field to wait out,
// or a broken template) is withheld whole, and the same inputs fail again next time without helm.
import type { Provenance, UnitRecord } from '../output/provenance.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { previousFiles } from './previous-output.js';
import type { RenderDependencies, ValuesTemplateResult } from './render-dependencies.js';
import { ownerKey, type PendingUnit } from './render-units.js';

export interface ValuesOutcome {
  /** Units reused whole by input digest: directory -> files. */
  reused: Map<string, Map<string, string>>;
  /** Clusters (`namespace/name`) whose values failed, with the reason. */
  failedClusters: Map<string, string>;
  /** The record for provenance, sorted by directory. */
  valuesFailures: Provenance['valuesFailures'];
}

/** Evaluates the values of every unit that needs it (all but those reused; `notReusable` never are); sets `unit.values` on success. */
export async function evaluateUnitValues(units: PendingUnit[], before: Map<string, UnitRecord>, failedBefore: Map<string, string>, previous: RenderedTree, deps: RenderDependencies, notReusable: ReadonlySet<string> = new Set()): Promise<ValuesOutcome> {
  const reused = new Map<string, Map<string, string>>();
  const needValues = units.filter((unit) => {
    const old = before.get(unit.record.dir);
    if (old && old.inputDigest === unit.record.inputDigest && !notReusable.has(unit.record.dir)) {
      const files = previousFiles(old, previous);
      if (files) {
        reused.set(unit.record.dir, files);
        return false;
      }
    }
    return unit.template !== undefined;
  });
  const failedClusters = new Map<string, string>();
  for (const unit of units) {
    const known = failedBefore.get(`${unit.record.dir} ${unit.record.inputDigest}`);
    if (known !== undefined && !failedClusters.has(ownerKey(unit))) failedClusters.set(ownerKey(unit), known);
  }
  const toEvaluate = needValues.filter((unit) => !failedClusters.has(ownerKey(unit)));
  for (const [kubeVersion, batch] of groupBy(toEvaluate, (unit) => unit.kubeVersion)) {
    const results = await deps.evaluateValues(
      batch.map((unit) => ({ id: unit.record.dir, origin: unit.template!.origin, template: unit.template!.text, context: unit.template!.context })),
      kubeVersion,
    );
    const byId = new Map(results.map((result) => [result.id, result]));
    for (const unit of batch) {
      const result = byId.get(unit.record.dir);
      if (result?.ok) unit.values = [result.values];
      // A missing field is a state to wait out, a broken template the release's fault: either way
      // only this cluster is withheld, and the same inputs fail again without helm next time.
      else if (!failedClusters.has(ownerKey(unit))) failedClusters.set(ownerKey(unit), result ? describeValuesFailure(result) : 'values template was not evaluated');
    }
  }
  const valuesFailures: Provenance['valuesFailures'] = units
    .filter((unit) => unit.record.kind === 'cluster-stage' && failedClusters.has(ownerKey(unit)))
    .map((unit) => ({ dir: unit.record.dir, inputDigest: unit.record.inputDigest, reason: failedClusters.get(ownerKey(unit))! }))
    .sort((a, b) => a.dir.localeCompare(b.dir));
  return { reused, failedClusters, valuesFailures };
}

function describeValuesFailure(result: Extract<ValuesTemplateResult, { ok: false }>): string {
  if (result.missingField) return `addon values need ${result.missingField}, which the Cluster does not have yet (${result.message})`;
  return result.message;
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

