// A failure to publish a rendered tree, classified so callers can decide: fix input, or retry later.
import { Failure } from '../src/core/failure.js';

export type PublishErrorKind =
  /** The target cannot be used as given (a file where a directory belongs, not a repository, ...). */
  | 'invalid-target'
  /** The rendered tree or the commit message template is unusable. */
  | 'invalid-input'
  /** The remote refused the credentials, or none were given. */
  | 'auth'
  /** The remote declined the push for good (a hook, a protected branch, no permission). */
  | 'rejected'
  /** Others kept pushing to the branch; every attempt was overtaken. */
  | 'conflict'
  /** The remote or the file system could not be reached or written; trying again may work. */
  | 'unavailable'
  /** A program the publisher runs (git) is not installed or not on PATH: a setting of the machine. */
  | 'missing-tool';

export class PublishError extends Failure {
  constructor(
    readonly kind: PublishErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(kind === 'conflict' || kind === 'unavailable' ? 'retry' : 'fix-input', message, options);
    this.name = 'PublishError';
  }

  /** True when the same publish may succeed later without anyone changing anything. */
  get retryable(): boolean {
    return this.failureKind === 'retry';
  }
}
