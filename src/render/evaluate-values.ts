// The values step of rendering: every unit whose inputs changed gets its values template evaluated;
// a cluster whose template fails (a missing field to wait out, or a broken template) is withheld
// whole, and the same inputs fail again next time without helm.
//
// Evaluation is streamed, not a phase: the clusters are split into chunks (all stages of a cluster
// in one chunk, one Kubernetes version per chunk), the first one small, and the charts of a chunk
// render as soon as its values are in. Each chunk is eight times the one before: a values process
// costs about the same for 4 items as for 40 (helm's start; 10-30 ms of CPU each, measured on the
// real-weight bench), far less than the charts of the chunk before it, so doubling only added
// processes (five for 48 Clusters, three now) without starting a chart any sooner.
//
// As many chunks are asked at once as the renderer runs processes side by side (valuesInFlight,
// helm's slots); each next one is asked as soon as one of them is in. Asked one after another, the
// first chunk ran alone at the start of a render with nothing else to do for the other slots (a
// wave of changed Clusters has no release to render beside it), and each next chunk, asked only
// once the one before was in and its files written, lost the freed slots to that chunk's charts
// and then left them idle when those were done before it: in the sharding bench's timeline, a
// shard had all its values 2.6-3.5 s after its first helm call, a third of its slots idle until then.
import type { Provenance } from '../output/provenance.js';
import type { RenderDependencies, ValuesTemplateResult } from './render-dependencies.js';
import { ownerKey, type PendingUnit } from './render-units.js';
import { RankedSlots } from '../core/ranked-slots.js';
import { compareText } from '../core/compare-text.js';

export interface ValuesOutcome {
  /** Clusters (`namespace/name`) whose values failed, with the reason; complete once every `ready` promise settled. */
  failedClusters: Map<string, string>;
  /** Those of `failedClusters` whose template ran out of time: not remembered, a larger limit may pass. */
  timedOutClusters: Set<string>;
  /** Per unit evaluated: settles when its values are in `values` or its cluster failed. */
  ready: Map<PendingUnit, Promise<void>>;
  /** The evaluated values of each unit, once its `ready` settled (the units themselves stay as planned). */
  values: Map<PendingUnit, Record<string, unknown>[]>;
}

/** Clusters in the first chunk; each next chunk is CHUNK_GROWTH times larger, up to MAX_CHUNK_CLUSTERS. */
const FIRST_CHUNK_CLUSTERS = 2;
const CHUNK_GROWTH = 8;
const MAX_CHUNK_CLUSTERS = 64;

/**
 * Starts evaluating the values templates of `units` (those the plan renders); returns at once,
 * before helm answers. `knownFailures` (clusters and layers by ownerKey whose template failed
 * before with the same inputs) are failed from the start and not evaluated. Chunks are asked
 * `deps.valuesInFlight` at a time, in order. Once a chunk's evaluation rejects (helm could not
 * run), no chunk is asked any more: every chunk not yet asked rejects with the same error.
 */
export function evaluateUnitValues(
  units: readonly PendingUnit[],
  deps: RenderDependencies,
  knownFailures: ReadonlyMap<string, string> = new Map(),
): ValuesOutcome {
  const failedClusters = new Map(knownFailures);
  const timedOutClusters = new Set<string>();
  const ready = new Map<PendingUnit, Promise<void>>();
  const values = new Map<PendingUnit, Record<string, unknown>[]>();
  const toEvaluate = units.filter((unit) => unit.template !== undefined && !failedClusters.has(ownerKey(unit)));
  // The one bound on work in flight (core/ranked-slots.ts): equal ranks start in arrival order, so in chunk order.
  const slots = new RankedSlots(deps.valuesInFlight ?? 1);
  let rejected: { error: unknown } | undefined;
  for (const chunk of chunksOf(toEvaluate)) {
    const done = slots.run(0, async () => {
      if (rejected) throw rejected.error;
      try {
        await evaluateChunk(chunk, deps, values, failedClusters, timedOutClusters);
      } catch (error) {
        rejected ??= { error };
        throw error;
      }
    });
    // Nobody may await a chunk (its units all withheld already): that is no unhandled rejection.
    done.catch(() => undefined);
    for (const unit of chunk) ready.set(unit, done);
  }
  return { failedClusters, timedOutClusters, ready, values };
}

/**
 * The provenance record of the clusters whose values failed, sorted by directory: the same inputs
 * fail again without helm next time. A template that ran out of time is not recorded (`timedOut`):
 * a run with a larger limit evaluates it again.
 */
export function valuesFailureRecords(
  units: readonly PendingUnit[],
  failedClusters: Map<string, string>,
  timedOut: ReadonlySet<string> = new Set(),
): Provenance['valuesFailures'] {
  return units
    .filter(
      (unit) => unit.record.kind !== 'release' && failedClusters.has(ownerKey(unit)) && !timedOut.has(ownerKey(unit)),
    )
    .map((unit) => ({
      dir: unit.record.dir,
      inputDigest: unit.record.inputDigest,
      reason: failedClusters.get(ownerKey(unit))!,
    }))
    .sort((a, b) => compareText(a.dir, b.dir));
}

async function evaluateChunk(
  chunk: PendingUnit[],
  deps: RenderDependencies,
  values: Map<PendingUnit, Record<string, unknown>[]>,
  failedClusters: Map<string, string>,
  timedOutClusters: Set<string>,
): Promise<void> {
  const results = await deps.evaluateValues(
    chunk.map((unit) => ({
      id: unit.record.dir,
      origin: unit.template!.origin,
      template: unit.template!.text,
      context: unit.template!.context,
    })),
    chunk[0]!.kubeVersion,
  );
  const byId = new Map(results.map((result) => [result.id, result]));
  for (const unit of chunk) {
    const result = byId.get(unit.record.dir);
    if (result?.ok) values.set(unit, [result.values]);
    // A missing field is a state to wait out, a broken template the release's fault: either way
    // only this cluster is withheld, and the same inputs fail again without helm next time.
    else if (!failedClusters.has(ownerKey(unit))) {
      failedClusters.set(ownerKey(unit), result ? describeValuesFailure(result) : 'values template was not evaluated');
      if (result?.timedOut) timedOutClusters.add(ownerKey(unit));
    }
  }
}

/** Chunks of whole clusters, one Kubernetes version each, growing from FIRST_CHUNK_CLUSTERS by CHUNK_GROWTH. */
function chunksOf(units: readonly PendingUnit[]): PendingUnit[][] {
  const chunks: PendingUnit[][] = [];
  for (const sameVersion of groupBy(units, (unit) => unit.kubeVersion).values()) {
    const clusters = [...groupBy(sameVersion, ownerKey).values()];
    let size = FIRST_CHUNK_CLUSTERS;
    for (
      let start = 0;
      start < clusters.length;
      start += size, size = Math.min(MAX_CHUNK_CLUSTERS, size * CHUNK_GROWTH)
    ) {
      chunks.push(clusters.slice(start, start + size).flat());
    }
  }
  return chunks;
}

function describeValuesFailure(result: Extract<ValuesTemplateResult, { ok: false }>): string {
  if (result.missingField)
    return `addon values need ${result.missingField}, which the Cluster does not have yet (${result.message})`;
  return result.message;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}
