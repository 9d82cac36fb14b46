// What a command may touch of the outside world; tests pass their own.
import { FAILURE_REACTIONS } from '../core/failure.js';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Whether stderr is a terminal (progress lines are shown only then). */
  isTty: boolean;
}

// The codes come from the one table of reactions, so a command returning one directly (plan's
// report) agrees with a command that throws.
export const EXIT_OK = 0;
/** The inputs have problems the user must fix. */
export const EXIT_PROBLEMS = FAILURE_REACTIONS['fix-input'].exitCode;
/** The command line itself is wrong. */
export const EXIT_USAGE = 2;
/** Something outside failed (a remote, helm, git); retrying may help. */
export const EXIT_FAILURE = FAILURE_REACTIONS.retry.exitCode;

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Something outside (a release source, a registry, a Git remote) failed; retrying later may help (exit 3). */
export class RemoteFailureError extends Error {
  readonly failureKind = 'retry' as const;
  readonly retryable = true;

  constructor(message: string) {
    super(message);
    this.name = 'RemoteFailureError';
  }
}
