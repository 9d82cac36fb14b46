// The layer part of a render's summary: per cluster, each layer its selector picks, whether it was
// rendered, is on hold, or is withheld and why (gate, dependency, failure), and what it waits for.
import { layerRef } from '../core/layer-version.js';
import { CLUSTER_STACK_LAYER } from '../api/addons-layer.js';
import type { UnitRecord, WithheldEntry } from '../output/provenance.js';
import type { LayerSummary } from '../output/render-summary.js';
import type { Plan } from '../plan/build-plan.js';

/** The layers of every cluster, sorted by cluster then dependency order; undefined without AddonsLayers. */
export function summarizeLayers(
  plan: Plan,
  records: UnitRecord[],
  withheld: WithheldEntry[],
): LayerSummary[] | undefined {
  if (!plan.layers) return undefined;
  const out: LayerSummary[] = [];
  for (const cluster of plan.layers.resolution.clusters) {
    for (const decision of cluster.layers) {
      const entry = withheld.find(
        (w) =>
          w.kind === 'layer' &&
          w.namespace === cluster.namespace &&
          w.name === cluster.name &&
          w.layer === decision.layer,
      );
      const record = records.find(
        (r) => r.layer?.name === decision.layer && r.namespace === cluster.namespace && r.name === cluster.name,
      );
      const status = entry
        ? entry.previousKept
          ? 'withheld, previous output kept'
          : 'withheld'
        : !record
          ? 'withheld'
          : decision.hold
            ? 'on hold'
            : 'rendered';
      const summary: LayerSummary = {
        namespace: cluster.namespace,
        cluster: cluster.name,
        layer: decision.layer,
        version: decision.version,
        status,
        after: [
          ...(decision.afterStack ? [CLUSTER_STACK_LAYER] : []),
          ...decision.dependsOn.map((d) => layerRef(d.layer, d.version)),
        ],
        waitingOn: decision.waitingOn,
      };
      if (entry) summary.reason = entry.reason;
      out.push(summary);
    }
  }
  return out;
}
