// Registry and OCI layout failures, classified like every release source failure so callers decide
// the same way: fix the input (not-found, auth, invalid-release) or retry later (unavailable).
import { ReleaseSourceError, type ReleaseSourceErrorKind } from '../release/release-source.js';

/** A classified OCI failure; its message names the registry and repository, never a credential. */
export class OciError extends ReleaseSourceError {
  constructor(kind: ReleaseSourceErrorKind, message: string, options?: { cause?: unknown }) {
    super(kind, message, options);
    this.name = 'OciError';
  }
}
