// What the runtime extension answers Cluster API on a lifecycle hook, as a pure function of what
// the controller observed: which release's addons it last rendered and published for the Cluster,
// what the GitOps engine reports for each stage directory (sync-state.ts), and the stages' CEL
// conditions (core/addon-wait-conditions.ts). The order GitOps alone cannot give, "the new addons
// first, then the control plane", is this decision: BeforeClusterUpgrade answers RetryAfterSeconds
// until every stage of the target release is applied and healthy at a revision that contains it.
// The wait is bounded (--hook-timeout): then it lets the upgrade go, naming what was never confirmed
// (or, with --hook-on-timeout hold, keeps holding), and never answers Failure for a timeout.
//
// Cluster API's hooks differ in what an answer can do (api/runtime/hooks/v1alpha1 and
// internal/controllers/topology/cluster/reconcile_state.go):
// - BeforeClusterUpgrade is blocking: `retryAfterSeconds` > 0 holds the upgrade and Cluster API asks
//   again; a Failure is an error (the topology reconcile stops and is retried with backoff).
// - AfterClusterUpgrade is blocking since Cluster API v1.12 (it holds the *next* upgrade; the
//   Cluster webhook refuses a version change while it is pending); before, its response had no
//   `retryAfterSeconds` and Cluster API (decoding JSON leniently) ignores the field, so the hook
//   counts as done on Success.
// - AfterControlPlaneInitialized is non-blocking: Cluster API calls it once and marks it done on
//   Success. A Failure is treated as an error that stops the whole topology reconcile of the Cluster
//   (workers included) and is retried with backoff, logging errors: not a way to wait.
// So no hook answers Failure for anything the addons do or a timeout: a Failure would stop scaling and
// rollouts too, and `failurePolicy: Ignore` does not cover a Failure the extension returns. A wait
// Cluster API does not hold on is followed by the controller itself and shown on the ClusterAddon
// (lifecycle-hooks.ts).
import type { ConditionVerdict } from '../../core/addon-wait-conditions.js';
import type { UnitSync } from './sync-state.js';

/** The hooks the extension serves (those the cluster-stack-operator registers). */
export const LIFECYCLE_HOOKS = ['BeforeClusterUpgrade', 'AfterControlPlaneInitialized', 'AfterClusterUpgrade'] as const;
export type LifecycleHook = (typeof LIFECYCLE_HOOKS)[number];

/** Whether the hook's response carries `retryAfterSeconds` (BeforeClusterUpgrade; AfterClusterUpgrade since Cluster API v1.12, ignored before). */
export function answersWithRetry(hook: LifecycleHook): boolean {
  return hook === 'BeforeClusterUpgrade' || hook === 'AfterClusterUpgrade';
}

/** Whether Cluster API may stop calling while the addons are still awaited, so the controller must follow the wait itself. */
export function followedByController(hook: LifecycleHook): boolean {
  return hook !== 'BeforeClusterUpgrade';
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
  /**
   * Why the engine's objects cannot be trusted now (their watch fails, or never listed): then no
   * stage counts as applied, whatever the cache last said.
   */
  engineUnreadable?: string;
  /** The CEL conditions of the hook's stages in the target release, evaluated now. */
  conditions: { stage: string; kind: 'precondition' | 'postcondition'; verdict: ConditionVerdict }[];
  /** When this wait started and now (ms since the epoch). */
  since: number;
  now: number;
  /** The bounded overall wait. */
  timeoutMs: number;
  /** How soon Cluster API asks again while waiting. */
  retryAfterSeconds: number;
  /** BeforeClusterUpgrade after the timeout; default `proceed`. */
  onTimeout?: HookTimeoutAction;
}

export type HookOutcome = 'ready' | 'waiting' | 'timed-out' | 'not-ours';

/** What BeforeClusterUpgrade does once --hook-timeout passed: let the upgrade go (default) or keep holding. */
export type HookTimeoutAction = 'proceed' | 'hold';

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
  /** Never Failure: a Failure stops the Cluster's whole topology reconcile in Cluster API. */
  status: 'Success';
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
function awaitedFor(input: HookDecisionInput): string[] {
  const subject = `Cluster ${input.cluster.namespace}/${input.cluster.name}`;
  const target = input.targetRelease!;
  const rendered = input.rendered;
  if (!rendered || rendered.release !== target) {
    return [
      `the controller to render and publish the addons of release ${target} for ${subject}${rendered?.release ? ` (it last rendered release ${rendered.release})` : ''}`,
    ];
  }
  if (rendered.withheld)
    return [`the addons of release ${target} for ${subject}, which are withheld: ${rendered.withheld}`];
  if (rendered.stages.length === 0) return [`the addons of release ${target} for ${subject} to be rendered`];
  const waiting: string[] = [];
  const unpublished = new Set(rendered.unpublished);
  if (input.engine !== 'none' && input.engineUnreadable) waiting.push(input.engineUnreadable);
  for (const stage of rendered.stages) {
    // Never count another release's files as the target's, whatever the engine says about them.
    if (stage.release !== target) {
      waiting.push(
        `stage ${stage.stage}: ${stage.dir} still holds release ${stage.release}'s addons, not release ${target}'s`,
      );
      continue;
    }
    if (unpublished.has(stage.dir)) {
      waiting.push(`stage ${stage.stage}: its manifests (${stage.dir}) to be published`);
      continue;
    }
    if (input.engine === 'none' || input.engineUnreadable) continue;
    const verdict = input.sync.get(stage.dir);
    if (!verdict) {
      waiting.push(
        `stage ${stage.stage}: a ${input.engine === 'flux' ? 'Flux Kustomization' : 'Argo CD Application'} applying ${stage.dir} (none covers it)`,
      );
      continue;
    }
    if (verdict.state !== 'synced') waiting.push(`stage ${stage.stage}: ${verdict.message}`);
  }
  for (const condition of input.conditions) {
    if (!condition.verdict.holds)
      waiting.push(`stage ${condition.stage} ${condition.kind}: ${condition.verdict.message}`);
  }
  return waiting;
}

/**
 * The hook's answer, always Success. BeforeClusterUpgrade: retryAfterSeconds while waiting; once the
 * bounded wait is over it lets the upgrade go, naming what was not confirmed (or keeps holding with
 * `onTimeout: 'hold'`). AfterClusterUpgrade: the same while waiting (it holds the next upgrade on
 * Cluster API >= 1.12), no hold once the wait is over. AfterControlPlaneInitialized: never holds
 * (non-blocking), the message saying what is still awaited.
 */
export function decideLifecycleHook(input: HookDecisionInput): HookDecision {
  const subject = `Cluster ${input.cluster.namespace}/${input.cluster.name}`;
  if (!input.targetRelease) {
    return {
      status: 'Success',
      message: `${subject} uses no cluster stack class; nothing to wait for`,
      retryAfterSeconds: 0,
      outcome: 'not-ours',
      waitingFor: [],
    };
  }
  const waitingFor = awaitedFor(input);
  if (waitingFor.length === 0) {
    const stages = input.rendered?.stages.map((stage) => stage.stage) ?? [];
    const how =
      input.engine === 'none'
        ? 'published (no GitOps engine is watched, so application is not checked)'
        : `applied and healthy${revisionNote(input)}`;
    return {
      status: 'Success',
      message: `addons of release ${input.targetRelease} for ${subject} are ${how}: stages ${stages.join(', ')}`,
      retryAfterSeconds: 0,
      outcome: 'ready',
      waitingFor,
    };
  }
  const elapsed = Math.max(0, input.now - input.since);
  const list = waitingFor.join('; ');
  const retryAfterSeconds = Math.max(1, Math.round(input.retryAfterSeconds));
  if (elapsed >= input.timeoutMs) {
    const after = `after ${minutes(elapsed)} (the hook timeout is ${minutes(input.timeoutMs)})`;
    if (input.hook === 'BeforeClusterUpgrade' && input.onTimeout === 'hold') {
      return {
        status: 'Success',
        message: `still holding the upgrade ${after} (--hook-on-timeout hold), not confirmed: ${list}. Fix the addons or their conditions, or raise --hook-timeout`,
        retryAfterSeconds,
        outcome: 'timed-out',
        waitingFor,
      };
    }
    const what =
      input.hook === 'BeforeClusterUpgrade' ? 'letting the upgrade go' : 'not holding the Cluster any longer';
    return {
      status: 'Success',
      message: `${what} ${after} without confirming: ${list}. Fix the addons or their conditions, or raise --hook-timeout`,
      retryAfterSeconds: 0,
      outcome: 'timed-out',
      waitingFor,
    };
  }
  const message = `waiting ${minutes(elapsed)} of ${minutes(input.timeoutMs)} for ${list}`;
  if (input.hook === 'AfterControlPlaneInitialized') {
    // Non-blocking: Cluster API goes on either way; the controller follows the wait on the ClusterAddon.
    return {
      status: 'Success',
      message: `not holding (${input.hook} is non-blocking); the ClusterAddon follows the wait: ${message}`,
      retryAfterSeconds: 0,
      outcome: 'waiting',
      waitingFor,
    };
  }
  return { status: 'Success', message, retryAfterSeconds, outcome: 'waiting', waitingFor };
}

function revisionNote(input: HookDecisionInput): string {
  const revisions = [
    ...new Set(
      (input.rendered?.stages ?? [])
        .map((stage) => input.sync.get(stage.dir)?.revision)
        .filter((revision): revision is string => revision !== undefined),
    ),
  ];
  return revisions.length === 1 ? ` at ${revisions[0]}` : '';
}
