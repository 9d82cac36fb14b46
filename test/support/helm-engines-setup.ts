// vitest global setup: every pinned helm must be built before any suite runs on it; a missing one
// fails the run with what to run (test/install-test-deps.sh), never a silent fallback to another helm.
import { requireMatrixHelms } from './helm-matrix.js';

export default function setup(): void {
  requireMatrixHelms();
}
