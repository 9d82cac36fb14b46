// Withholding: a unit that cannot be published takes its release (alone) or its cluster (whole: half
// an addon set is worse than the old one) out of the new tree, and whatever was published before
// for it stays. Withholding never prunes.
import { compareText } from '../core/compare-text.js';
import type { KeepMarks } from '../core/engine-rules.js';
import { layerRef } from '../core/layer-version.js';
import type { UnitRecord, WithheldEntry } from '../output/provenance.js';
import type { PublishedState } from '../output/published-state.js';
import { clusterDir, isLayerPath, layerDir, releaseDir } from '../output/tree-layout.js';
import { previousFiles } from './previous-output.js';
import type { PendingUnit } from './render-units.js';
import type { ObjectConflict } from './shared-objects.js';

/**
 * Takes failed units out of the output and records them as withheld: a release alone, a cluster
 * whole (half an addon set is worse than the old one). Their previous output is kept later.
 */
export function withholdFailedUnits(
  failures: Map<PendingUnit, string>,
  rendered: Map<string, Map<string, string>>,
  records: UnitRecord[],
  withheld: WithheldEntry[],
): void {
  const reasons = new Map<
    string,
    { kind: WithheldEntry['kind']; namespace: string; name: string; layer?: string; reasons: string[] }
  >();
  for (const [unit, reason] of failures) {
    const layer = unit.record.layer?.name;
    const kind = unit.record.kind === 'release' ? 'release' : layer ? 'layer' : 'cluster';
    const key = `${kind}/${unit.record.namespace}/${unit.record.name}/${layer ?? ''}`;
    const entry = reasons.get(key) ?? {
      kind,
      namespace: unit.record.namespace,
      name: unit.record.name,
      ...(layer ? { layer } : {}),
      reasons: [],
    };
    entry.reasons.push(kind === 'cluster' ? `stage ${unit.record.stage}: ${reason}` : reason);
    reasons.set(key, entry);
  }
  const recordDirs = new SortedDirs(records.map((record) => record.dir));
  for (const entry of reasons.values()) {
    const dirs = new Set(ownDirs(entry, recordDirs));
    for (let index = records.length - 1; index >= 0; index -= 1) {
      const record = records[index]!;
      if (!dirs.has(record.dir)) continue;
      rendered.delete(record.dir);
      records.splice(index, 1);
    }
    withheld.push({
      kind: entry.kind,
      namespace: entry.namespace,
      name: entry.name,
      ...(entry.layer ? { layer: entry.layer } : {}),
      reason: entry.reasons.sort().join('; '),
      previousKept: false,
    });
  }
}

/** Records the clusters (whole) and layers (alone) whose values failed as withheld, with the reason. */
export function withholdValuesFailures(failedClusters: Map<string, string>, withheld: WithheldEntry[]): void {
  for (const [key, reason] of failedClusters) {
    const [namespace, name, , layer] = key.split('/') as [string, string, string?, string?];
    withheld.push(
      layer
        ? { kind: 'layer', namespace, name, layer, reason, previousKept: false }
        : { kind: 'cluster', namespace, name, reason, previousKept: false },
    );
  }
}

/** The unit directories a withheld entry stands for: a release's, a cluster's stages (not its layers), or one layer's. */
function ownDirs(
  entry: { kind: WithheldEntry['kind']; namespace: string; name: string; layer?: string },
  dirs: SortedDirs,
): string[] {
  if (entry.kind === 'release') return [releaseDir(entry.namespace, entry.name)];
  if (entry.kind === 'layer') return [layerDir(entry.namespace, entry.name, entry.layer ?? '')];
  if (entry.kind !== 'cluster') return [];
  return dirs.under(`${clusterDir(entry.namespace, entry.name)}/`).filter((dir) => !isLayerPath(dir));
}

/**
 * Unit directories sorted once, so that finding a cluster's costs a binary search: withheld
 * Clusters times every unit directory was seconds of each reconcile at a fleet of thousands.
 */
class SortedDirs {
  private readonly dirs: string[];

  constructor(dirs: Iterable<string>) {
    // Code-unit order: what `<` in the binary search below compares.
    this.dirs = [...dirs].sort(compareText);
  }

  /** The directories that start with `prefix`, in order. */
  under(prefix: string): string[] {
    let low = 0;
    let high = this.dirs.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.dirs[middle]! < prefix) low = middle + 1;
      else high = middle;
    }
    const found: string[] = [];
    for (let index = low; index < this.dirs.length && this.dirs[index]!.startsWith(prefix); index += 1)
      found.push(this.dirs[index]!);
    return found;
  }
}

/**
 * Withholds layers whose dependencies have nothing in the tree after rendering (a dependency that
 * failed, or the stack's addons withheld with no previous output): the engine would wait for them
 * forever. Returns whether it withheld any.
 */
export function withholdStrandedLayers(
  rendered: Map<string, Map<string, string>>,
  records: UnitRecord[],
  withheld: WithheldEntry[],
): boolean {
  let changed = false;
  const layers = records.filter((record) => record.layer).sort((a, b) => a.layer!.depth - b.layer!.depth);
  for (const record of layers) {
    const { layer } = record;
    const missing: string[] = [];
    for (const dependency of layer!.dependsOn) {
      if (!rendered.has(layerDir(record.namespace, record.name, dependency.layer)))
        missing.push(`${layerRef(dependency.layer, dependency.version)} is withheld on this Cluster`);
    }
    const stackPrefix = `${clusterDir(record.namespace, record.name)}/`;
    if (layer!.afterStack && ![...rendered.keys()].some((dir) => dir.startsWith(stackPrefix) && !isLayerPath(dir)))
      missing.push("the cluster stack's addons are withheld on this Cluster");
    if (missing.length === 0) continue;
    rendered.delete(record.dir);
    records.splice(records.indexOf(record), 1);
    withheld.push({
      kind: 'layer',
      namespace: record.namespace,
      name: record.name,
      layer: layer!.name,
      reason: `${layer!.name} waits: ${missing.join('; ')}`,
      previousKept: false,
    });
    changed = true;
  }
  return changed;
}

/** Puts back the previous output of withheld units that were published before, marking them so (`marks`: how handed-over copies were marked). */
export function keepPreviousOutput(
  withheld: WithheldEntry[],
  published: PublishedState,
  rendered: Map<string, Map<string, string>>,
  records: UnitRecord[],
  marks: KeepMarks,
): void {
  const beforeDirs = new SortedDirs(published.units.keys());
  for (const entry of withheld) {
    const dirs = ownDirs(entry, beforeDirs);
    for (const dir of dirs) {
      const old = published.units.get(dir);
      const files = previousFiles(old, published, marks);
      if (!old || !files || rendered.has(dir)) continue;
      rendered.set(dir, files);
      records.push(old);
      entry.previousKept = true;
    }
  }
}

/**
 * Withholds (so keepPreviousOutput keeps it) the release of every withheld cluster whose previous
 * addons are kept, when this render does not publish that release: the kept addons belong to a
 * Cluster that still uses its ClusterClass, which must not be pruned under it. The release's
 * record is the previous tree's in the cluster's namespace, else every one of that tag (a class in
 * another namespace). Returns whether it withheld any.
 */
export function holdReleasesOfKeptClusters(
  withheld: WithheldEntry[],
  before: ReadonlyMap<string, UnitRecord>,
  records: UnitRecord[],
): boolean {
  const users = new Map<string, { namespace: string; clusters: string[] }>();
  const kept = new Set(
    withheld
      .filter((entry) => entry.kind === 'cluster' && entry.previousKept)
      .map((entry) => `${entry.namespace}/${entry.name}`),
  );
  for (const record of before.values()) {
    const key = `${record.namespace}/${record.name}`;
    if (record.kind !== 'cluster-stage' || !kept.has(key)) continue;
    const entry = users.get(record.release) ?? { namespace: record.namespace, clusters: [] };
    if (!entry.clusters.includes(key)) entry.clusters.push(key);
    users.set(record.release, entry);
  }
  let added = false;
  for (const [release, { namespace, clusters }] of users) {
    if (records.some((record) => record.kind === 'release' && record.name === release)) continue;
    const candidates = [...before.values()].filter((record) => record.kind === 'release' && record.name === release);
    const own = candidates.filter((record) => record.namespace === namespace);
    for (const record of own.length > 0 ? own : candidates) {
      if (
        withheld.some(
          (entry) => entry.kind === 'release' && entry.namespace === record.namespace && entry.name === release,
        )
      )
        continue;
      withheld.push({
        kind: 'release',
        namespace: record.namespace,
        name: release,
        reason: `kept for Cluster${clusters.length === 1 ? '' : 's'} ${clusters.sort().join(', ')}, whose withheld addons are kept and use it`,
        previousKept: false,
      });
      added = true;
    }
  }
  return added;
}

/**
 * Takes the units of conflicts out of the output: a release alone, a cluster whole. A unit already
 * withheld (its previous output put back, and that output conflicts too) loses the previous output.
 */
export function withholdConflicts(
  conflicts: ObjectConflict[],
  rendered: Map<string, Map<string, string>>,
  records: UnitRecord[],
  withheld: WithheldEntry[],
): void {
  for (const { record, reason } of conflicts) {
    const kind = record.kind === 'release' ? 'release' : 'cluster';
    const prefix = `${clusterDir(record.namespace, record.name)}/`;
    for (let index = records.length - 1; index >= 0; index -= 1) {
      const candidate = records[index]!;
      const matches =
        kind === 'release'
          ? candidate.dir === record.dir
          : candidate.kind === 'cluster-stage' && candidate.dir.startsWith(prefix);
      if (!matches) continue;
      rendered.delete(candidate.dir);
      records.splice(index, 1);
    }
    const entry = withheld.find(
      (item) => item.kind === kind && item.namespace === record.namespace && item.name === record.name,
    );
    if (!entry) withheld.push({ kind, namespace: record.namespace, name: record.name, reason, previousKept: false });
    else {
      entry.previousKept = false;
      if (!entry.reason.includes(reason)) entry.reason = `${entry.reason}; ${reason}`;
    }
  }
}
