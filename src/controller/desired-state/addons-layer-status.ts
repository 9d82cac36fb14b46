// The status of each AddonsLayer, in Kraan's shape so Kraan's printer columns and tools read it:
// `state` (Pending, ApplyPending, Deployed, Hold, K8sVersion, Failed), `version`, `revision`,
// `observedGeneration`, and `conditions` whose type is a state, one per state some Cluster is in,
// the message naming each Cluster and why. Per Cluster the state comes from the plan (gate,
// dependencies), the render (withheld) and the engine (Flux Kustomization Ready / Argo CD
// Application sync and health of the layer's directory). Pure.
import { layerRef } from '../../core/layer-version.js';
import type { AddonsLayer } from '../../api/addons-layer.js';
import type { KubeObject } from '../../api/types.js';
import { formatProblem } from '../../core/problem.js';
import { layerDir } from '../../output/tree-layout.js';
import type { Plan } from '../../plan/build-plan.js';
import type { RenderOutcome } from '../../render/render-output.js';
import type { EventIntent } from '../runtime/runtime-contract.js';
import { regarding } from './event-intents.js';
import type { UnitSync } from './sync-state.js';
import { compareText } from '../../core/compare-text.js';

type LayerState = 'Pending' | 'ApplyPending' | 'Deployed' | 'Hold' | 'K8sVersion' | 'Failed';

/** Kraan's reasons, so its users see the sentences they know. */
const REASONS: Record<LayerState, string> = {
  Pending: 'AddonsLayer is being applied',
  ApplyPending: 'Deployment of the AddonsLayer is pending because layers it is depends on are not deployed',
  Deployed: 'AddonsLayer is Deployed',
  Hold: 'AddonsLayer is on hold, preventing execution',
  K8sVersion: 'AddonsLayer is waiting for the required K8sVersion',
  Failed: 'AddonsLayer processsing has failed',
};

/** Which state a layer as a whole is in when its Clusters differ: the one needing attention first. */
const PRIORITY: LayerState[] = ['Failed', 'ApplyPending', 'K8sVersion', 'Pending', 'Deployed'];

interface LayerStatus {
  state: LayerState;
  version: string;
  revision: string;
  observedGeneration?: number;
  conditions: {
    type: LayerState;
    status: 'True';
    version: string;
    reason: string;
    message: string;
    lastTransitionTime: string;
  }[];
}

export interface DesiredLayerStatus {
  live: KubeObject;
  status: LayerStatus;
}

export interface LayerStatusInputs {
  now: string;
  layers: KubeObject[];
  plan?: Plan;
  render?: RenderOutcome;
  /** Engine feedback per unit directory (empty for `--gitops none`). */
  sync: Map<string, UnitSync>;
  engine: 'none' | 'flux' | 'argocd';
}

interface ClusterState {
  cluster: string;
  state: LayerState;
  message: string;
  revision?: string;
}

function clusterStates(layer: AddonsLayer, input: LayerStatusInputs): ClusterState[] | string {
  const plan = input.plan;
  const name = layer.metadata.name;
  const problems = (plan?.problems ?? []).filter((problem) => problem.object === `AddonsLayer ${name}`);
  if (problems.length > 0) return problems.map(formatProblem).join('; ');
  if (!plan?.layers?.layers.some((known) => known.metadata.name === name)) return 'not part of the last plan';
  const out: ClusterState[] = [];
  for (const cluster of plan.layers.resolution.clusters) {
    const decision = cluster.layers.find((entry) => entry.layer === name);
    if (!decision) continue;
    const id = `${cluster.namespace}/${cluster.name}`;
    if (decision.withheld) {
      out.push({ cluster: id, state: decision.withheld.state, message: decision.withheld.reason });
      continue;
    }
    const withheld = input.render?.withheld.find(
      (entry) =>
        entry.kind === 'layer' &&
        entry.namespace === cluster.namespace &&
        entry.name === cluster.name &&
        entry.layer === name,
    );
    if (withheld) {
      out.push({
        cluster: id,
        state: withheld.reason.includes(' waits: ') ? 'ApplyPending' : 'Failed',
        message: withheld.reason,
      });
      continue;
    }
    if (decision.hold) {
      out.push({ cluster: id, state: 'Hold', message: 'on hold (spec.hold); its wiring is suspended' });
      continue;
    }
    const sync = input.sync.get(layerDir(cluster.namespace, cluster.name, name));
    if (input.engine === 'none')
      out.push({ cluster: id, state: 'Deployed', message: 'published (no GitOps engine to read back)' });
    else if (!sync)
      out.push({
        cluster: id,
        state: 'Pending',
        message: `published; waiting for the ${input.engine === 'flux' ? 'Flux Kustomization' : 'Argo CD Application'}`,
      });
    else if (sync.state === 'synced')
      out.push({
        cluster: id,
        state: 'Deployed',
        message: `${sync.source}: ${sync.message}`,
        ...(sync.revision ? { revision: sync.revision } : {}),
      });
    else if (sync.state === 'failed')
      out.push({ cluster: id, state: 'Failed', message: `${sync.source}: ${sync.message}` });
    else out.push({ cluster: id, state: 'Pending', message: `${sync.source}: ${sync.message}` });
  }
  return out;
}

/** The status every live AddonsLayer should have, and events for those whose state changes. */
export function desiredLayerStatuses(input: LayerStatusInputs): {
  layers: DesiredLayerStatus[];
  events: EventIntent[];
} {
  const layers: DesiredLayerStatus[] = [];
  const events: EventIntent[] = [];
  for (const live of input.layers) {
    const layer = live as unknown as AddonsLayer;
    const version = typeof layer.spec?.version === 'string' ? layer.spec.version : '';
    const before = (live as { status?: Partial<LayerStatus> }).status;
    const states = clusterStates(layer, input);
    let state: LayerState;
    const byState = new Map<LayerState, string[]>();
    if (typeof states === 'string') {
      state = 'Failed';
      byState.set('Failed', [states]);
    } else {
      for (const entry of states)
        byState.set(entry.state, [...(byState.get(entry.state) ?? []), `${entry.cluster}: ${entry.message}`]);
      if (layer.spec.hold === true) state = 'Hold';
      else if (states.length === 0) {
        state = 'Pending';
        byState.set('Pending', ['selects no Cluster (spec.clusterSelector)']);
      } else state = PRIORITY.find((candidate) => byState.has(candidate)) ?? 'Pending';
      if (state === 'Hold' && !byState.has('Hold')) byState.set('Hold', ['on hold (spec.hold)']);
    }
    const deployed = typeof states === 'string' ? [] : states.filter((entry) => entry.revision);
    const revisions = new Set(deployed.map((entry) => entry.revision));
    const conditions = [...byState.entries()]
      .sort(([a], [b]) => (a === state ? -1 : b === state ? 1 : compareText(a, b)))
      .map(([type, messages]) => {
        const previous = before?.conditions?.find((condition) => condition.type === type);
        const message = messages.join('; ');
        const changed = !previous || previous.message !== message || previous.version !== version;
        return {
          type,
          status: 'True' as const,
          version,
          reason: REASONS[type],
          message,
          lastTransitionTime: changed ? input.now : previous.lastTransitionTime,
        };
      });
    const status: LayerStatus = {
      state,
      version,
      revision: state === 'Deployed' && revisions.size === 1 ? [...revisions][0]! : (before?.revision ?? ''),
      conditions,
    };
    if (live.metadata.generation !== undefined) status.observedGeneration = live.metadata.generation;
    layers.push({ live, status });
    if (before?.state !== state) {
      const message = conditions[0]?.message ?? '';
      events.push({
        regarding: regarding(live),
        type: state === 'Failed' ? 'Warning' : 'Normal',
        reason: `Layer${state}`,
        message: `AddonsLayer ${layerRef(layer.metadata.name, version)} is ${state}: ${message}`,
      });
    }
  }
  return { layers, events };
}
