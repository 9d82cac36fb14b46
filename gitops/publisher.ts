// The seam every output implements: a directory, a Git repository (commit or pull request), an OCI
// artifact. A publisher receives the whole rendered tree and makes the target hold exactly that.
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import type { PublishLock } from './publish-lock.js';

export interface PublishResult {
  /** False when the target already held exactly this tree: nothing was written, committed or pushed. */
  changed: boolean;
  written: string[];
  removed: string[];
  /** The commit sha (Git) or manifest digest (OCI) now holding the tree; the old one when unchanged. */
  revision: string | null;
  /** Pull request URL, in pull-request mode. */
  pullRequest?: string;
}

/** How a run takes its turn on a target that other runs may publish to at the same time. */
export interface LockRequest {
  /** How long to wait for another run holding the target; 0 fails at once. */
  timeoutMs: number;
  /** What this run is, recorded in the lock for whoever finds it. */
  command: string;
}

/** How a tree differs from one the publisher was given before (diffTrees: sorted file lists). */
export interface KnownChange {
  previous: RenderedTree;
  written: readonly string[];
  removed: readonly string[];
}

export interface Publisher {
  /** Printable target (no credentials). */
  readonly target: string;
  /**
   * Takes the target's lock, for targets on this machine (a directory, a work tree, a clone): hold
   * it from readPrevious() to publish(), so what was read is what is replaced. Absent where the
   * target itself arbitrates (a registry).
   */
  lock?(request: LockRequest): Promise<PublishLock>;
  /** The tree the target holds now (empty when new): previous output is reused for unchanged units. */
  readPrevious(): Promise<RenderedTree>;
  /**
   * Makes the target hold exactly `tree`. Writes nothing when it already does. `known`, when given,
   * is how `tree` differs from `known.previous` (the tree readPrevious or the last publish left), so
   * a publisher that still holds that tree need not compare the two whole trees again.
   */
  publish(tree: RenderedTree, change: ChangeSummary, known?: KnownChange): Promise<PublishResult>;
  /**
   * Files the tree about to be published will probably hold, handed over while the render still
   * runs, for a target that can write them ahead (a directory); publish still decides what the
   * target holds. Optional; never throws.
   */
  prestage?(files: Iterable<readonly [string, string]>): void;
}
