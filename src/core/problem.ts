// A problem a person can act on: where it is (file, field path) and what to do about it.
import { Failure } from './failure.js';

export interface Problem {
  /** The field path inside the object, e.g. `spec.versions[1]`. */
  path?: string;
  /** The file (and line) the object came from, when known. */
  source?: string;
  /** The object, as `Kind namespace/name`, when known. */
  object?: string;
  message: string;
  /** Set when the cause is outside (a remote that did not answer): retrying later may help. */
  retryable?: boolean;
}

export function formatProblem(problem: Problem): string {
  const where = [problem.source, problem.object, problem.path].filter(Boolean).join(' ');
  return where ? `${where}: ${problem.message}` : problem.message;
}

/** Raised when input is wrong; carries every problem found so the user can fix them in one go. */
export class InputError extends Failure {
  constructor(
    readonly problems: Problem[],
    summary?: string,
  ) {
    super('fix-input', summary ?? problems.map(formatProblem).join('\n'));
    this.name = 'InputError';
  }
}
