// What the runtime extension answers Cluster API on a lifecycle hook, as a pure function of what
// the controller observed: which release's addons it last rendered and published for the Cluster,
// what the GitOps engine reports for each stage directory (sync-state.ts), and the stages' CEL
// conditions (core/addon-wait-conditions.ts). The order GitOps alone cannot give, "the new addons
// first, then the control plane", is this decision: BeforeClusterUpgrade answers RetryAfterSeconds
// until every stage of the target release is applied and healthy at a revision that contains it,
// and a bounded wait ends in a Failure that names what never became ready.
import type { ConditionVerdict } from '../../core/addon-wait-conditions.js';
import type { UnitSync } from './sync-state.js';

/** The hooks the extension serves (those the cluster-stack-operator registers). */
export const LIFECYCLE_HOOKS = ['BeforeClusterUpgrade', 'AfterControlPlaneInitialized', 'AfterClusterUpgrade'] as const;
export type LifecycleHook = (typeof LIFECYCLE_HOOKS)[number];

/** Blocking hooks carry retryAfterSeconds; the others only Success or Failure (Cluster API retries a Failure). */
export function isBlockingHook(hook: LifecycleHook): boolean {
  return hook === 'BeforeClusterUpgrade';
}

/** What the controller last rendered and published for one Cluster. */
export interface RenderedAddons {
  /** The release the Cluster's class resolved to in the last reconcile. */
  release?: string;
  /** The Cluster's stage directories in the published tree, in stage order. */
  stages: { dir: string; stage: string; release: string }[];
  /** Why the Cluster's addons are withheld, when they are. */
  withheld?: string;
  /** Stage directories changed by the last render but not (yet) in the target. */
  unpublished: string[];
}

export interface HookDecisionInput {
  hook: LifecycleHook;
  cluster: { namespace: string; name: string };
  /** The release the Cluster moves to (its spec.topology.class, dots as dashes); undefined: not a cluster stack class. */
  targetRelease?: string;
  engine: 'flux' | 'argocd' | 'none';
  rendered?: RenderedAddons;
  /** The engine's verdict per stage directory. */
  sync: ReadonlyMap<string, UnitSync>;
  /** The CEL conditions of the hook's stages in the target release, evaluated now. */
  conditions: { stage: string; kind: 'precondition' | 'postcondition'; verdict: ConditionVerdict }[];
  /** When this wait started and now (ms since the epoch). */
  since: number;
  now: number;
  /** The bounded overall wait. */
  timeoutMs: number;
  /** How soon Cluster API asks again while waiting. */
  retryAfterSeconds: number;
}

export type HookOutcome = 'ready' | 'waiting' | 'timed-out' | 'not-ours';

/** Where a hook stands for one Cluster, for its ClusterAddon's status. */
export interface HookProgress {
  hook: LifecycleHook;
  targetRelease: string;
  outcome: HookOutcome;
  message: string;
  /** ISO time the wait started. */
  since: string;
}

export interface HookDecision {
  status: 'Success' | 'Failure';
  message: string;
  /** Only for blocking hooks, 0 unless waiting. */
  retryAfterSeconds: number;
  outcome: HookOutcome;
  /** Each thing still awaited, one sentence each (empty when ready). */
  waitingFor: string[];
}

function minutes(ms: number): string {
  const total = Math.round(ms / 1000);
  return total < 120 ? `${total}s` : `${Math.round(total / 60)}m`;
}

/** What is still awaited before the Cluster's addons for the target release count as applied. */
export function awaitedFor(input: HookDecisionInput): string[] {
  const subject = `Cluster ${input.cluster.namespace}/${input.cluster.name}`;
  const target = input.targetRelease!;
  const rendered = input.rendered;
  if (!rendered || rendered.release !== target) {
    return [`the controller to render and publish the addons of release ${target} for ${subject}${rendered?.release ? ` (it last rendered release ${rendered.release})` : ''}`];
  }
  if (rendered.withheld) return [`the addons of release ${target} for ${subject}, which are withheld: ${rendered.withheld}`];
  if (rendered.stages.length === 0) return [`the addons of release ${target} for ${subject} to be rendered`];
  const waiting: string[] = [];
  const unpublished = new Set(rendered.unpublished);
  for (const stage of rendered.stages) {
    if (unpublished.has(stage.dir)) {
      waiting.push(`stage ${stage.stage}: its manifests (${stage.dir}) to be published`);
      continue;
    }
    if (input.engine === 'none') continue;
    const verdict = input.sync.get(stage.dir);
    if (!verdict) {
      waiting.push(`stage ${stage.stage}: a ${input.engine === 'flux' ? 'Flux Kustomization' : 'Argo CD Application'} applying ${stage.dir} (none covers it)`);
      continue;
    }
    if (verdict.state !== 'synced') waiting.push(`stage ${stage.stage}: ${verdict.message}`);
  }
  for (const condition of input.conditions) {
    if (!condition.verdict.holds) waiting.push(`stage ${condition.stage} ${condition.kind}: ${condition.verdict.message}`);
  }
  return waiting;
}

/** The hook's answer: Success once the target release's addons are applied (or after a non-blocking hook's wait), RetryAfterSeconds while waiting, Failure once the bounded wait is over. */
export function decideLifecycleHook(input: HookDecisionInput): HookDecision {
  const subject = `Cluster ${input.cluster.namespace}/${input.cluster.name}`;
  if (!input.targetRelease) {
    return { status: 'Success', message: `${subject} uses no cluster stack class; nothing to wait for`, retryAfterSeconds: 0, outcome: 'not-ours', waitingFor: [] };
  }
  const waitingFor = awaitedFor(input);
  const blocking = isBlockingHook(input.hook);
  if (waitingFor.length === 0) {
    const stages = input.rendered?.stages.map((stage) => stage.stage) ?? [];
    const how = input.engine === 'none' ? 'published (no GitOps engine is watched, so application is not checked)' : `applied and healthy${revisionNote(input)}`;
    return { status: 'Success', message: `addons of release ${input.targetRelease} for ${subject} are ${how}: stages ${stages.join(', ')}`, retryAfterSeconds: 0, outcome: 'ready', waitingFor };
  }
  const elapsed = Math.max(0, input.now - input.since);
  const list = waitingFor.join('; ');
  if (elapsed >= input.timeoutMs) {
    return {
      status: 'Failure',
      message: `gave up after ${minutes(elapsed)} (the hook timeout is ${minutes(input.timeoutMs)}) waiting for ${list}. Fix the addons or their conditions, or raise --hook-timeout`,
      retryAfterSeconds: 0,
      outcome: 'timed-out',
      waitingFor,
    };
  }
  const message = `waiting ${minutes(elapsed)} of ${minutes(input.timeoutMs)} for ${list}`;
  // Cluster API calls a non-blocking hook again after a Failure; that is how it is held.
  if (!blocking) return { status: 'Failure', message, retryAfterSeconds: 0, outcome: 'waiting', waitingFor };
  return { status: 'Success', message, retryAfterSeconds: Math.max(1, Math.round(input.retryAfterSeconds)), outcome: 'waiting', waitingFor };
}

function revisionNote(input: HookDecisionInput): string {
  const revisions = [...new Set((input.rendered?.stages ?? []).map((stage) => input.sync.get(stage.dir)?.revision).filter((revision): revision is string => revision !== undefined))];
  return revisions.length === 1 ? ` at ${revisions[0]}` : '';
}
