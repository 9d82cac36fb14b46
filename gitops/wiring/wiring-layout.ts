// What the wiring is generated from (the rendered units, grouped per release and per cluster) and
// how its files are laid out: one object per file, a kustomization.yaml in every directory that
// holds files, listing exactly its files and the subdirectories that are kustomizations themselves.
import { LABEL_MANAGED_BY, LABEL_PART_OF, MANAGED_BY_VALUE, type KubeObject } from '../../src/api/types.js';
import { serializeObject } from '../../src/render/manifest-objects.js';
import type { LayerRecord, UnitRecord } from '../../src/output/provenance.js';
import { assertUniqueNames, LABEL_WIRING, labelValue, type WiringRole } from './wiring-names.js';
import { compareText } from '../../src/core/compare-text.js';

/** The name kustomize reads (render-output's KUSTOMIZATION_FILE; kept here so wiring imports no render code). */
const WIRING_KUSTOMIZATION_FILE = 'kustomization.yaml';

export interface ReleaseUnit {
  namespace: string;
  release: string;
  /** The unit's directory in the rendered tree, e.g. `management/<ns>/<release>`. */
  dir: string;
}

interface StageUnit {
  stage: string;
  order: number;
  dir: string;
}

/** An addon layer of a cluster, with what it comes after. */
export interface LayerUnit {
  layer: LayerRecord;
  dir: string;
}

export interface ClusterUnits {
  namespace: string;
  name: string;
  /** The cluster's addon layers, in dependency order (by depth, then name). */
  layers: LayerUnit[];
  /**
   * The stages in apply order, grouped by their `order`: stages of one group are independent of each
   * other, and each group waits for the whole group before it.
   */
  groups: StageUnit[][];
}

export interface WiringUnits {
  releases: ReleaseUnit[];
  clusters: ClusterUnits[];
}

/** The units sorted and grouped: releases by namespace and name, clusters likewise, stages by order then name. */
export function groupUnits(units: UnitRecord[]): WiringUnits {
  const releases: ReleaseUnit[] = [];
  const clusters = new Map<string, { namespace: string; name: string; stages: StageUnit[]; layers: LayerUnit[] }>();
  const dirs = new Set<string>();
  for (const unit of units) {
    if (dirs.has(unit.dir)) throw new Error(`internal error: two rendered units share the directory ${unit.dir}`);
    dirs.add(unit.dir);
    if (unit.kind === 'release') {
      releases.push({ namespace: unit.namespace, release: unit.name, dir: unit.dir });
      continue;
    }
    const key = `${unit.namespace}/${unit.name}`;
    if (!clusters.has(key)) clusters.set(key, { namespace: unit.namespace, name: unit.name, stages: [], layers: [] });
    if (unit.layer) {
      clusters.get(key)!.layers.push({ layer: unit.layer, dir: unit.dir });
      continue;
    }
    if (unit.stage === undefined) throw new Error(`internal error: addon unit ${unit.dir} has no stage`);
    clusters.get(key)!.stages.push({ stage: unit.stage, order: unit.order ?? 0, dir: unit.dir });
  }
  releases.sort((a, b) => compareText(a.namespace, b.namespace) || compareText(a.release, b.release));
  const grouped = [...clusters.values()]
    .sort((a, b) => compareText(a.namespace, b.namespace) || compareText(a.name, b.name))
    .map(({ namespace, name, stages, layers }) => {
      const orders = [...new Set(stages.map((s) => s.order))].sort((a, b) => a - b);
      const groups = orders.map((order) =>
        stages.filter((s) => s.order === order).sort((a, b) => compareText(a.stage, b.stage)),
      );
      layers.sort((a, b) => a.layer.depth - b.layer.depth || compareText(a.layer.name, b.layer.name));
      return { namespace, name, groups, layers };
    });
  return { releases, clusters: grouped };
}

/** The labels every wiring object carries; `extra` values are made valid label values. */
export function wiringLabels(
  partOf: string,
  role: WiringRole,
  extra: Record<string, string> = {},
): Record<string, string> {
  const labels: Record<string, string> = {
    [LABEL_MANAGED_BY]: MANAGED_BY_VALUE,
    [LABEL_PART_OF]: labelValue(partOf),
    [LABEL_WIRING]: role,
  };
  for (const [key, value] of Object.entries(extra)) labels[key] = labelValue(value);
  return labels;
}

/**
 * The files of one engine's wiring: each object serialized at its path, plus the kustomizations.
 * A directory with files gets a kustomization.yaml; its parent lists it, and so on up to the
 * engine's root, unless `aggregates(parent)` is false: then neither that parent nor anything above
 * it lists the directory (it is read on its own, by path).
 */
function wiringFiles(objects: Map<string, KubeObject>, aggregates: (dir: string) => boolean): Map<string, string> {
  const files = new Map<string, string>();
  const entries = new Map<string, Set<string>>();
  const add = (dir: string, entry: string): void => {
    if (!entries.has(dir)) entries.set(dir, new Set());
    entries.get(dir)!.add(entry);
  };
  for (const [path, object] of objects) {
    files.set(path, serializeObject(object));
    const segments = path.split('/');
    add(segments.slice(0, -1).join('/'), segments.at(-1)!);
    for (let depth = segments.length - 2; depth >= 1; depth -= 1) {
      const parent = segments.slice(0, depth).join('/');
      if (!aggregates(parent)) break;
      add(parent, segments[depth]!);
    }
  }
  for (const [dir, listed] of entries) {
    const resources = [...listed].sort(compareText);
    files.set(
      `${dir}/${WIRING_KUSTOMIZATION_FILE}`,
      serializeObject({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources,
      } as unknown as KubeObject),
    );
  }
  return new Map([...files.entries()].sort(([a], [b]) => compareText(a, b)));
}

/** One engine's wiring as it is built: its objects by file, and every name taken with what it stands for. */
export class WiringObjects {
  readonly objects = new Map<string, KubeObject>();
  private readonly names: { namespace: string; name: string; what: string }[] = [];

  /** Takes `namespace/name` for `what`; two different things taking one name are refused by `files`. */
  claim(namespace: string, name: string, what: string): void {
    this.names.push({ namespace, name, what });
  }

  /** `object` at `file`, its name taken for `what`. */
  add(file: string, object: KubeObject, what: string): void {
    this.claim(object.metadata.namespace!, object.metadata.name, what);
    this.objects.set(file, object);
  }

  /** The wiring's files (see wiringFiles); an InputError naming both sides when two `kind` objects share a name. */
  files(kind: string, aggregates: (dir: string) => boolean): Map<string, string> {
    assertUniqueNames(kind, this.names);
    return wiringFiles(this.objects, aggregates);
  }
}
