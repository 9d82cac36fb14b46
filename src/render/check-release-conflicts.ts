// For `clusterstack plan`: which kept releases a render would withhold because they render an object
// an older kept release renders differently (see shared-objects.ts). It renders the ClusterClass side
// only (one helm process per kept release, nothing written) and never fails on a chart: a chart that
// does not render is the render's to report.
import { failureKindOf } from '../core/failure.js';
import type { UnitRecord } from '../output/provenance.js';
import type { Plan } from '../plan/build-plan.js';
import type { RenderDependencies } from './render-dependencies.js';
import { planUnits } from './render-units.js';
import { findReleaseConflicts } from './shared-objects.js';
import { unitFiles } from './unit-files.js';

/** The kept releases a render would withhold for an object conflict, with the reason. */
export async function checkReleaseConflicts(plan: Plan, deps: Pick<RenderDependencies, 'renderChart'>): Promise<{ namespace: string; release: string; reason: string }[]> {
  const releases = planUnits(plan, { secrets: 'allow' }).units.filter((unit) => unit.record.kind === 'release');
  const rendered = new Map<string, Map<string, string>>();
  const records: UnitRecord[] = [];
  await Promise.all(
    releases.map(async (unit) => {
      let output: string;
      try {
        output = await deps.renderChart({ releaseName: unit.releaseName, chart: unit.chart, namespace: unit.renderNamespace, kubeVersion: unit.kubeVersion, apiVersions: unit.apiVersions, values: unit.values, includeCrds: unit.includeCrds });
      } catch (error) {
        if (failureKindOf(error) === 'fix-input') return;
        throw error;
      }
      const files = unitFiles(output, unit, 'allow');
      if (files.problems.length > 0) return;
      rendered.set(unit.record.dir, files.files);
      records.push({ ...unit.record, renderDigest: '', files: [...files.files.keys()] });
    }),
  );
  return findReleaseConflicts(records, rendered)
    .map(({ record, reason }) => ({ namespace: record.namespace, release: record.release, reason }))
    .sort((a, b) => `${a.namespace}/${a.release}`.localeCompare(`${b.namespace}/${b.release}`));
}
