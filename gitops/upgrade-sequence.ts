// The order a Cluster's move to a release with other addons takes, step by step, as `plan` and the
// pull request body show it: the target release's addons are published first (they are what the
// runtime extension's BeforeClusterUpgrade hook waits for), the hook waits for the GitOps engine's
// object of each stage to apply the commit holding them, then the control plane and the workers
// move, then AfterClusterUpgrade checks its stages. Names the engine objects as the wiring makes
// them. Pure.
import { argoStageApplicationName, fluxStageKustomizationName } from './wiring/wiring-names.js';

/** One Cluster moving from one release to another whose cluster addon version differs. */
export interface ClusterMove {
  namespace: string;
  cluster: string;
  from: string;
  to: string;
  addonsFrom: string;
  addonsTo: string;
  /** The target release's stages, in order. */
  stages: string[];
  /** spec.topology.version the control plane moves to, when known. */
  kubernetesVersion?: string;
  /** The target release's stages listed under AfterClusterUpgrade in its clusteraddon.yaml. */
  afterUpgradeStages?: string[];
  /** Why the target release's addons are not published (values missing, chart failing), when they are not. */
  withheld?: string;
}

/** The engine the wiring is for; its objects are named in step 2. */
export interface SequenceEngine {
  engine: 'flux' | 'argocd' | 'none';
  /** Argo CD's namespace (Applications live there). */
  argocdNamespace?: string;
}

function list(items: string[]): string {
  return items.length > 0 ? items.join(', ') : 'none';
}

/** The steps of one move, numbered, in the order they happen. */
export function upgradeSequence(move: ClusterMove, engine: SequenceEngine = { engine: 'none' }): string[] {
  const published = move.withheld
    ? `addons ${move.addonsTo} withheld (${move.withheld}): nothing of release ${move.to} is published for this Cluster, and the BeforeClusterUpgrade hook holds the upgrade saying so until they render (or its timeout ends the wait)`
    : `addons ${move.addonsTo} published (stages ${list(move.stages)})`;
  let waits: string;
  if (engine.engine === 'flux') {
    const objects = move.stages.map((stage) => `${move.namespace}/${fluxStageKustomizationName(move.cluster, stage)}`);
    waits = `hook BeforeClusterUpgrade waits for Flux Kustomization${objects.length === 1 ? '' : 's'} ${list(objects)} Ready at a revision ≥ the commit publishing them, and the BeforeClusterUpgrade CEL conditions`;
  } else if (engine.engine === 'argocd') {
    const namespace = engine.argocdNamespace ?? 'argocd';
    const objects = move.stages.map(
      (stage) => `${namespace}/${argoStageApplicationName(move.namespace, move.cluster, stage)}`,
    );
    waits = `hook BeforeClusterUpgrade waits for Argo CD Application${objects.length === 1 ? '' : 's'} ${list(objects)} Synced and Healthy at a revision ≥ the commit publishing them, and the BeforeClusterUpgrade CEL conditions`;
  } else {
    waits =
      'hook BeforeClusterUpgrade waits for them to be published (no GitOps engine wired: their application is not checked)';
  }
  const upgrade = `control plane upgrades to ${move.kubernetesVersion ?? 'the new Kubernetes version'}, then the workers`;
  const after =
    move.afterUpgradeStages && move.afterUpgradeStages.length > 0
      ? `hook AfterClusterUpgrade waits for stages ${list(move.afterUpgradeStages)} (their CEL conditions; Cluster API ≥ 1.12 holds the next upgrade until then)`
      : 'hook AfterClusterUpgrade: no stages of its own';
  return [published, waits, upgrade, after].map((step, index) => `${index + 1}. ${step}`);
}
