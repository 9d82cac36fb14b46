// Failures are typed by what happens next, and one table says what each kind does everywhere: the
// controller's requeue, the condition reasons and event types it writes, the health Argo CD shows
// for our objects (the Lua scripts are generated from this table), and the CLI's exit code.
//
//   fix-input  a person must change an input, a chart or the configuration: stalled, no retry
//              until the inputs change (a refused Secret, a chart that fails, an invalid spec)
//   retry      something outside failed and may work later: backoff with jitter, bounded
//              (a registry down, a rate limit, a rejected push)
//   wait       a dependency is not ready yet: requeue when its signal comes (a provider release
//              not ready, a Cluster without its control-plane endpoint)
//   internal   a bug of ours: reported as such, retried with backoff

export type FailureKind = 'fix-input' | 'retry' | 'wait' | 'internal';

export interface FailureReaction {
  /** When the controller looks again. */
  requeue: 'when-inputs-change' | 'backoff' | 'on-signal';
  /** Kubernetes event type. */
  eventType: 'Warning' | 'Normal';
  /** What Argo CD shows for an object whose Ready condition is False with a reason of this kind. */
  argoHealth: 'Degraded' | 'Progressing';
  /** `clusterstack` exit code when a command ends with this kind of failure. */
  exitCode: number;
  /**
   * Condition reasons of this kind end with one of these: PascalCase words a reason is built from
   * (`PublishRetrying`, `ChartRenderFailed`), so anyone reading a reason, and the health scripts,
   * can tell the kind without our code.
   */
  reasonSuffixes: readonly string[];
}

export const FAILURE_REACTIONS: Readonly<Record<FailureKind, FailureReaction>> = {
  'fix-input': {
    requeue: 'when-inputs-change',
    eventType: 'Warning',
    argoHealth: 'Degraded',
    exitCode: 1,
    reasonSuffixes: ['Failed', 'Invalid', 'NotFound', 'Refused'],
  },
  retry: {
    requeue: 'backoff',
    eventType: 'Warning',
    argoHealth: 'Progressing',
    exitCode: 3,
    reasonSuffixes: ['Retrying', 'Unavailable'],
  },
  wait: {
    requeue: 'on-signal',
    eventType: 'Normal',
    argoHealth: 'Progressing',
    exitCode: 3,
    reasonSuffixes: ['Waiting', 'Pending', 'NotReady'],
  },
  internal: {
    requeue: 'backoff',
    eventType: 'Warning',
    argoHealth: 'Degraded',
    exitCode: 4,
    reasonSuffixes: ['InternalError'],
  },
};

/** A failure as decisions see it: what happens next, and what to tell a person. */
export interface TypedFailure {
  kind: FailureKind;
  message: string;
}

/** Any error as a TypedFailure (its kind by failureKindOf). */
export function typedFailure(error: unknown): TypedFailure {
  return { kind: failureKindOf(error), message: error instanceof Error ? error.message : String(error) };
}

/**
 * The condition reason for a failure of `kind` in the step `stem` names, built from the kind's
 * first suffix: `Render` gives RenderFailed, RenderRetrying, RenderWaiting, RenderInternalError.
 */
export function reasonFor(stem: string, kind: FailureKind): string {
  return `${stem}${FAILURE_REACTIONS[kind].reasonSuffixes[0]}`;
}

/** The Kubernetes event type for a False condition's reason: by its kind in the table, else Warning. */
export function eventTypeOfReason(reason: string): FailureReaction['eventType'] {
  const kind = failureKindOfReason(reason);
  return kind ? FAILURE_REACTIONS[kind].eventType : 'Warning';
}

/** The CLI's exit code for a wrong command line (a flag, an argument, a setting's value). */
export const COMMAND_LINE_EXIT_CODE = 2;

/** The CLI's exit codes, for help texts and the README. */
export const EXIT_CODES: readonly { code: number; meaning: string }[] = [
  { code: 0, meaning: 'done; units that must wait (e.g. for a provider) are withheld and listed, not failed' },
  { code: 1, meaning: 'an input, chart or setting needs a fix (the message says which); retrying alone will not help' },
  { code: COMMAND_LINE_EXIT_CODE, meaning: 'the command line is wrong' },
  {
    code: 3,
    meaning:
      'something outside failed or is not ready yet (a registry, GitHub, a Git remote, a lock another run holds); retrying later may help',
  },
  { code: 4, meaning: 'an internal error: a bug, please report it with the message' },
];

/**
 * An error that says what should happen next. Every error class of ours extends it and fixes its
 * kind (or derives it, like a release source's or a publisher's, from what failed); anything else
 * that is thrown is a failure we did not foresee.
 */
export class Failure extends Error {
  constructor(
    readonly failureKind: FailureKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'Failure';
  }

  /** The CLI's exit code when a command ends with this failure: the kind's, unless the class says otherwise (a wrong command line). */
  get exitCode(): number {
    return FAILURE_REACTIONS[this.failureKind].exitCode;
  }
}

/** The kind of any error: a Failure's own, else internal (nothing foresaw it). */
export function failureKindOf(error: unknown): FailureKind {
  return error instanceof Failure ? error.failureKind : 'internal';
}

/** The CLI's exit code for any error: a Failure's own, else the internal kind's. */
export function exitCodeOf(error: unknown): number {
  return error instanceof Failure ? error.exitCode : FAILURE_REACTIONS.internal.exitCode;
}

/** The kind a condition reason stands for, by its suffix; undefined for success reasons. */
export function failureKindOfReason(reason: string): FailureKind | undefined {
  for (const [kind, reaction] of Object.entries(FAILURE_REACTIONS) as [FailureKind, FailureReaction][]) {
    if (reaction.reasonSuffixes.some((suffix) => reason.endsWith(suffix))) return kind;
  }
  return undefined;
}
