// Which addon layers each workload cluster gets, decided purely from the inputs: a layer goes to
// the Clusters its selector picks, is withheld for a Cluster below its Kubernetes gate, and is
// withheld where a layer it depends on is missing, at another version, not selected or itself
// withheld. Cycles and names that clash with a stack's stages are input problems.
import { type AddonsLayer, CLUSTER_STACK_LAYER, dependenciesOf } from '../api/addons-layer.js';
import type { CapiCluster } from '../api/types.js';
import type { Problem } from '../core/problem.js';
import { matchesLabelSelector } from '../core/label-selector.js';
import { layerRef, meetsKubernetesGate, normalizeVersion, sameVersion } from '../core/layer-version.js';
import { compareText } from '../core/compare-text.js';

export interface LayerClusterInput {
  namespace: string;
  name: string;
  cluster: CapiCluster;
  /** The addon stages of the Cluster's release (a layer may not share a name with one). */
  stages: string[];
  /** Why the stack's own addons are withheld for this Cluster, if they are. */
  stackWithheld?: string;
  /**
   * The Kubernetes version the workload cluster's API server reports (`/version`), when the caller
   * could read it: the gate uses it before the Cluster's spec.topology.version, which during an
   * upgrade names the version being rolled out, not the one running.
   */
  liveVersion?: string;
}

/** Where the version a Kubernetes gate was checked against came from. */
type KubernetesVersionOrigin = 'workload API server' | 'spec.topology.version';

/** Why a layer is not rendered for a Cluster, in Kraan's state names. */
type LayerWithheldState = 'K8sVersion' | 'ApplyPending';

export interface ClusterLayerDecision {
  layer: string;
  /** The layer's spec.version; empty when it has none. */
  version: string;
  hold: boolean;
  /** The layers it comes after on this Cluster (all rendered when it is). */
  dependsOn: { layer: string; version: string }[];
  /** Whether it comes after the stack's own addon stages. */
  afterStack: boolean;
  /** Longest chain of layers before it (0 for a layer depending on none): Argo CD sync waves. */
  depth: number;
  /** Absent when the layer is rendered for the Cluster. */
  withheld?: { state: LayerWithheldState; reason: string };
  /** What the engine will wait for before applying it (dependencies on hold). */
  waitingOn: string[];
  /** For a layer with a Kubernetes gate: the version it was checked against and where that came from. */
  kubernetesVersion?: { version: string; origin: KubernetesVersionOrigin };
}

interface ClusterLayers {
  namespace: string;
  name: string;
  layers: ClusterLayerDecision[];
}

export interface LayerResolution {
  /** Input problems: cycles, a layer named like a stack stage. */
  problems: Problem[];
  /** Worth knowing, not wrong: a layer without clusterSelector goes to every Cluster, one without a version is unversioned. */
  notes: string[];
  /** Per Cluster (sorted), its selected layers in dependency order. */
  clusters: ClusterLayers[];
}

function layerObject(layer: AddonsLayer): string {
  return `AddonsLayer ${layer.metadata.name}`;
}

/** The layers in some dependency cycle, with each cycle named once (`a -> b -> a`). */
function findCycles(layers: Map<string, AddonsLayer>): { inCycle: Set<string>; cycles: string[][] } {
  const state = new Map<string, 'open' | 'done'>();
  const inCycle = new Set<string>();
  const cycles: string[][] = [];
  const stack: string[] = [];
  const visit = (name: string): void => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'open') {
      const cycle = stack.slice(stack.indexOf(name));
      cycles.push([...cycle, name]);
      for (const member of cycle) inCycle.add(member);
      return;
    }
    state.set(name, 'open');
    stack.push(name);
    for (const dependency of dependenciesOf(layers.get(name)!))
      if (layers.has(dependency.layer)) visit(dependency.layer);
    stack.pop();
    state.set(name, 'done');
  };
  for (const name of [...layers.keys()].sort()) visit(name);
  return { inCycle, cycles };
}

/** Layers ordered so that each comes after the layers it depends on (ties by name). */
function dependencyOrder(layers: Map<string, AddonsLayer>): string[] {
  const order: string[] = [];
  const done = new Set<string>();
  const visit = (name: string): void => {
    if (done.has(name)) return;
    done.add(name);
    for (const dependency of dependenciesOf(layers.get(name)!))
      if (layers.has(dependency.layer)) visit(dependency.layer);
    order.push(name);
  };
  for (const name of [...layers.keys()].sort()) visit(name);
  return order;
}

/** Decides, per Cluster, which layers are rendered and why the others are withheld. */
export function resolveLayers(layers: AddonsLayer[], clusters: LayerClusterInput[]): LayerResolution {
  const problems: Problem[] = [];
  const notes: string[] = [];
  const byName = new Map(layers.map((layer) => [layer.metadata.name, layer]));
  const { inCycle, cycles } = findCycles(byName);
  for (const cycle of cycles) {
    problems.push({
      object: layerObject(byName.get(cycle[0]!)!),
      path: 'spec.prereqs.dependsOn',
      message: `layers depend on each other in a cycle: ${cycle.join(' -> ')}; remove one of these dependencies`,
    });
  }
  const usable = new Map([...byName].filter(([name]) => !inCycle.has(name)));
  for (const layer of usable.values()) {
    // Kraan applies a layer to the cluster it runs in; every workload cluster rendered here is such
    // a cluster, so a layer without a selector goes to all of them, and the plan says so.
    if (layer.spec.clusterSelector === undefined || layer.spec.clusterSelector === null) {
      notes.push(
        `AddonsLayer ${layer.metadata.name} has no spec.clusterSelector: it goes to every Cluster (${clusters.length}), as Kraan applies a layer to the cluster it runs in; set clusterSelector to choose Clusters`,
      );
    }
    if (layer.spec.version === undefined) {
      notes.push(
        `AddonsLayer ${layer.metadata.name} has no spec.version (Kraan's CRD requires one): it is rendered unversioned, and only a bare "${layer.metadata.name}" in dependsOn matches it`,
      );
    }
  }
  const order = dependencyOrder(usable);

  const result: ClusterLayers[] = [];
  const clashes = new Map<string, Set<string>>();
  for (const cluster of [...clusters].sort((a, b) =>
    compareText(`${a.namespace}/${a.name}`, `${b.namespace}/${b.name}`),
  )) {
    const decisions = new Map<string, ClusterLayerDecision>();
    const selected = (layer: AddonsLayer): boolean =>
      layer.spec.clusterSelector === undefined ||
      layer.spec.clusterSelector === null ||
      matchesLabelSelector(layer.spec.clusterSelector, cluster.cluster.metadata.labels);
    for (const name of order) {
      const layer = usable.get(name)!;
      if (!selected(layer)) continue;
      if (cluster.stages.includes(name)) {
        if (!clashes.has(name)) clashes.set(name, new Set());
        clashes.get(name)!.add(`${cluster.namespace}/${cluster.name}`);
        continue;
      }
      decisions.set(name, decide(layer, cluster, decisions, usable, selected));
    }
    result.push({ namespace: cluster.namespace, name: cluster.name, layers: [...decisions.values()] });
  }
  for (const [name, where] of [...clashes].sort(([a], [b]) => compareText(a, b))) {
    problems.push({
      object: layerObject(byName.get(name)!),
      path: 'metadata.name',
      message: `is also the name of an addon stage of the cluster stack used by ${[...where].sort().join(', ')}; rename the layer`,
    });
  }
  return { problems, notes, clusters: result };
}

function decide(
  layer: AddonsLayer,
  cluster: LayerClusterInput,
  decided: Map<string, ClusterLayerDecision>,
  layers: Map<string, AddonsLayer>,
  selected: (layer: AddonsLayer) => boolean,
): ClusterLayerDecision {
  const name = layer.metadata.name;
  const decision: ClusterLayerDecision = {
    layer: name,
    version: layer.spec.version ?? '',
    hold: layer.spec.hold === true,
    dependsOn: [],
    afterStack: false,
    depth: 0,
    waitingOn: [],
  };
  const pending: string[] = [];
  for (const dependency of dependenciesOf(layer)) {
    if (dependency.layer === CLUSTER_STACK_LAYER) {
      decision.afterStack = true;
      if (cluster.stackWithheld) pending.push(`the cluster stack's addons are withheld (${cluster.stackWithheld})`);
      continue;
    }
    const wanted = layerRef(dependency.layer, dependency.version);
    const other = layers.get(dependency.layer);
    if (!other) {
      pending.push(`${name} needs ${wanted}, and there is no AddonsLayer ${dependency.layer}`);
      continue;
    }
    // A bare name (Kraan) is the dependency at whatever version it is now.
    if (
      dependency.version !== undefined &&
      (other.spec.version === undefined || !sameVersion(other.spec.version, dependency.version))
    ) {
      pending.push(
        `${dependency.layer} is ${other.spec.version === undefined ? 'unversioned' : `at ${other.spec.version}`}, ${name} needs ${wanted}`,
      );
      continue;
    }
    if (!selected(other)) {
      pending.push(`${name} needs ${wanted}, which does not select this Cluster`);
      continue;
    }
    const before = decided.get(dependency.layer);
    if (!before) {
      pending.push(`${name} needs ${wanted}, which is not rendered for this Cluster`);
      continue;
    }
    if (before.withheld) {
      pending.push(`${name} needs ${wanted}, which is withheld here (${before.withheld.reason})`);
      continue;
    }
    decision.dependsOn.push({ layer: dependency.layer, version: other.spec.version ?? '' });
    decision.depth = Math.max(decision.depth, before.depth + 1);
    if (before.hold) decision.waitingOn.push(`${wanted} (on hold)`);
    decision.waitingOn.push(...before.waitingOn.filter((entry) => !decision.waitingOn.includes(entry)));
  }
  // The gate comes first, as in Kraan: a layer below its Kubernetes version waits for the upgrade.
  // Kraan reads the version its API server reports; the workload cluster's is used when the caller
  // could read it, the Cluster's spec.topology.version otherwise, and the decision says which.
  const gate = layer.spec.prereqs?.k8sVersion;
  const topology = cluster.cluster.spec?.topology?.version;
  const origin: KubernetesVersionOrigin =
    cluster.liveVersion !== undefined ? 'workload API server' : 'spec.topology.version';
  const version = cluster.liveVersion ?? (typeof topology === 'string' ? topology : undefined);
  if (gate && version !== undefined) decision.kubernetesVersion = { version, origin };
  const met = gate ? (version !== undefined ? meetsKubernetesGate(version, gate) : undefined) : true;
  if (gate && met !== true) {
    const from = origin === 'workload API server' ? 'its workload API server reports' : 'spec.topology.version';
    const at =
      version === undefined
        ? 'the Cluster has no spec.topology.version'
        : met === undefined
          ? `the Cluster's ${from} "${version}" is not a version`
          : `the Cluster is at ${version} (${from})`;
    decision.withheld = {
      state: 'K8sVersion',
      reason: `${layerRef(name, layer.spec.version)} needs Kubernetes ${normalizeVersion(gate)} or newer; ${at}`,
    };
  } else if (pending.length > 0) decision.withheld = { state: 'ApplyPending', reason: pending.join('; ') };
  decision.dependsOn.sort((a, b) => compareText(a.layer, b.layer));
  return decision;
}
