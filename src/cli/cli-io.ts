// What a command may touch of the outside world; tests pass their own.
import { COMMAND_LINE_EXIT_CODE, Failure, FAILURE_REACTIONS } from '../core/failure.js';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Whether stderr is a terminal (progress lines are shown only then). */
  isTty: boolean;
  /**
   * Runs the same command line again on a thread with a deep stack (main.ts), for inputs nested
   * deeper than Node's default stack reads; absent where that cannot be done (tests in process).
   */
  rerunOnDeepStack?: () => Promise<number>;
}

// The codes come from the one table of reactions, so a command returning one directly (plan's
// report) agrees with a command that throws.
export const EXIT_OK = 0;
/** The inputs have problems the user must fix. */
export const EXIT_PROBLEMS = FAILURE_REACTIONS['fix-input'].exitCode;
/** The command line itself is wrong. */
export const EXIT_USAGE = COMMAND_LINE_EXIT_CODE;
/** Something outside failed (a remote, helm, git); retrying may help. */
export const EXIT_FAILURE = FAILURE_REACTIONS.retry.exitCode;

export class UsageError extends Failure {
  constructor(message: string) {
    super('fix-input', message);
    this.name = 'UsageError';
  }

  /** A wrong command line has its own exit code; to the controller it is an input to fix. */
  override get exitCode(): number {
    return COMMAND_LINE_EXIT_CODE;
  }
}

/** Something outside (a release source, a registry, a Git remote) failed; retrying later may help (exit 3). */
export class RemoteFailureError extends Failure {
  constructor(message: string) {
    super('retry', message);
    this.name = 'RemoteFailureError';
  }
}

/**
 * The working directory was removed (or moved away) while the shell was in it: node cannot say where
 * relative paths point. A person fixes it with a `cd` (exit 1), which the message says.
 */
export function workingDirectoryGone(): Failure {
  return new Failure(
    'fix-input',
    'the current working directory no longer exists (it was removed or moved away while the shell was in it), so relative paths mean nothing; cd into an existing directory and run the command again',
  );
}

/** Whether `error` is node failing to read the working directory (`uv_cwd`). */
export function isWorkingDirectoryGone(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.syscall === 'uv_cwd';
}
