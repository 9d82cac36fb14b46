// Publishing from the controller: the target's tree is read once at start and kept in memory; a
// render equal to it publishes nothing; otherwise one publish (one commit) carries the whole change.
// It also knows in which revision each unit directory last changed, for status and sync checks:
// read from Git at start (so a restarted controller or a new leader names the same commits as the
// one before it) and whenever the branch moved without us, then kept up to date in memory.
// In pull-request mode (`proposes`) what the engine applies is the base branch, not our commits:
// the history is the base branch's, read again whenever its head moves, and a unit directory whose
// rendered files the base does not hold yet is pending on the pull request. Merged by squash,
// rebase or merge commit alike, the directory counts once the base holds its files, in the base
// commit that brought them.
import type { PublishedHistory, UnitDirOf } from '../../../gitops/git-history.js';
import type { Publisher } from '../../../gitops/publisher.js';
import { diffTrees, type RenderedTree } from '../../output/rendered-tree.js';
import type { ChangeSummary } from '../../output/tree-changes.js';
import { PROVIDERS_DIR, unitDirOf } from '../../output/tree-layout.js';
import type { PublishState } from '../desired-state/status-inputs.js';
import { failureKindOf } from '../../core/failure.js';

const HISTORY_LIMIT = 1000;

/** Unit directories whose files differ between two trees. */
export function dirtyUnitDirs(before: RenderedTree, after: RenderedTree): Set<string> {
  return dirtyDirsOf(diffTrees(before, after));
}

/** Unit directories of the files a diff (diffTrees) names. */
function dirtyDirsOf(diff: { written: readonly string[]; removed: readonly string[] }): Set<string> {
  const dirs = new Set<string>();
  for (const file of [...diff.written, ...diff.removed]) {
    if (file.endsWith('/kustomization.yaml')) continue;
    const dir = unitDirOf(file);
    if (dir) dirs.add(dir);
  }
  return dirs;
}

/** Files per unit directory, kept in step with the trees `record` sees: which directories a tree has. */
class UnitDirCounts {
  private counts = new Map<string, number>();
  private tree: RenderedTree | undefined;

  /**
   * Moves the counts to `tree`; when `from` is the tree counted last, only the files `diff` (from
   * `from` to `tree`) names are looked at.
   */
  update(
    tree: RenderedTree,
    from: RenderedTree,
    diff: { written: readonly string[]; removed: readonly string[] },
  ): void {
    if (from !== this.tree) {
      this.counts = new Map();
      for (const file of tree.keys()) this.change(file, 1);
    } else {
      for (const file of diff.written) if (!from.has(file)) this.change(file, 1);
      for (const file of diff.removed) this.change(file, -1);
    }
    this.tree = tree;
  }

  has(dir: string): boolean {
    return this.counts.has(dir);
  }

  dirs(): IterableIterator<string> {
    return this.counts.keys();
  }

  private change(file: string, by: number): void {
    const dir = unitDirOf(file);
    if (!dir) return;
    const count = (this.counts.get(dir) ?? 0) + by;
    if (count > 0) this.counts.set(dir, count);
    else this.counts.delete(dir);
  }
}

export interface PublishAttempt {
  state: PublishState;
  /** Set when the publish failed in a way retrying may fix. */
  retryable?: boolean;
  durationSeconds?: number;
}

/** The controller's view of its publish target across reconciles. */
export class PublishTracker {
  private previous: RenderedTree | undefined;
  private revision: string | null = null;
  private published = false;
  private lastFailed = false;
  private lastCall = 0;
  private readonly history: string[] = [];
  private readonly unitRevisions = new Map<string, string>();
  /** Pull-request mode: the base branch's tree and head as last read, and what it lacks. */
  private base: { head: string | null; tree: RenderedTree } | undefined;
  private readonly pending = new Map<string, string>();
  private baseMoved = false;
  private readonly unitDirs = new UnitDirCounts();

  constructor(
    private readonly publisher: Publisher,
    private readonly options: {
      revisionKind: PublishState['revisionKind'];
      resyncMs: number;
      now?: () => number;
      /** Where the per-directory revisions come from after a restart (Git targets). */
      history?: { read(unitDirOf: UnitDirOf): Promise<PublishedHistory>; head?(): Promise<string | null> };
      onHistoryError?: (error: unknown) => void;
      /** The publisher proposes pull requests; `history` reads their base branch. */
      proposes?: boolean;
    },
  ) {}

  get target(): string {
    return this.publisher.target;
  }

  /** The tree the target holds, read on first use (throws when the target cannot be read). */
  async previousTree(): Promise<RenderedTree> {
    if (!this.previous) {
      this.previous = await this.publisher.readPrevious();
      await this.loadHistory();
    }
    return this.previous;
  }

  /** Replaces what is known about revisions with what Git says; a failure keeps the memory. */
  private async loadHistory(): Promise<void> {
    if (!this.options.history) return;
    try {
      const read = await this.options.history.read(unitDirOf);
      this.history.splice(0, this.history.length, ...read.history.slice(-HISTORY_LIMIT));
      this.unitRevisions.clear();
      for (const [dir, revision] of read.unitRevisions) this.unitRevisions.set(dir, revision);
      this.revision = read.head;
      // The tree was just read at that head: until the resync, an equal render needs no publish.
      if (read.head !== null) {
        this.published = true;
        this.lastCall = (this.options.now ?? Date.now)();
      }
    } catch (error) {
      this.options.onHistoryError?.(error);
    }
  }

  private baseState(outcome: PublishState['outcome'], dirty: Set<string>, message?: string): PublishState {
    const state: PublishState = {
      target: this.publisher.target,
      revisionKind: this.options.revisionKind,
      revision: this.revision,
      outcome,
      dirtyDirs: dirty,
      order: {
        history: [...this.history],
        unitRevisions: new Map([...this.unitRevisions].filter(([dir]) => !this.pending.has(dir))),
        ...(this.options.proposes ? { pending: new Map(this.pending) } : {}),
      },
    };
    if (message !== undefined) state.message = message;
    return state;
  }

  /** The state when nothing could be rendered or publishing is held back. */
  skipped(message: string, tree?: RenderedTree): PublishState {
    const dirty = tree && this.previous ? dirtyUnitDirs(this.previous, tree) : new Set<string>();
    return this.baseState('skipped', dirty, message);
  }

  /** Publishes `tree` unless the target already holds it; never throws. */
  async publish(tree: RenderedTree, change: ChangeSummary): Promise<PublishAttempt> {
    const now = this.options.now ?? Date.now;
    let previous: RenderedTree;
    try {
      previous = await this.previousTree();
    } catch (error) {
      return { state: this.baseState('failed', new Set(), errorText(error)), retryable: true };
    }
    if (this.options.proposes) {
      await this.followBase();
      previous = this.previous ?? previous;
    }
    // One comparison of the two (fleet-sized) trees serves the dirty directories, the equality check,
    // the publisher's commit and the per-directory revisions.
    const diff = diffTrees(previous, tree);
    const dirty = dirtyDirsOf(diff);
    // Nothing rendered yet and nothing there: a README-only first commit would be noise.
    if (
      previous.size === 0 &&
      ![...tree.keys()].some((file) => unitDirOf(file) !== undefined || file.startsWith(`${PROVIDERS_DIR}/`))
    )
      return { state: this.baseState('unchanged', dirty) };
    const resyncDue = now() - this.lastCall >= this.options.resyncMs;
    const same = diff.written.length === 0 && diff.removed.length === 0;
    if (this.published && !this.lastFailed && !this.baseMoved && !resyncDue && same)
      return { state: this.baseState('unchanged', dirty) };
    const started = now();
    try {
      const result = await this.publisher.publish(tree, change, { previous, ...diff });
      this.lastCall = now();
      this.previous = tree;
      this.published = true;
      this.lastFailed = false;
      this.baseMoved = false;
      if (this.options.proposes) {
        this.revision = result.revision;
        this.markPending(tree, result.pullRequest);
      } else {
        // The branch moved without us (a person's commit, another writer): learn its history again.
        const movedWithoutUs =
          !result.changed && result.revision !== null && this.revision !== null && result.revision !== this.revision;
        this.revision = result.revision;
        if (movedWithoutUs) await this.loadHistory();
        if (result.revision) this.record(result.revision, tree, dirty, previous, diff);
      }
      return {
        state: this.baseState(result.changed ? 'published' : 'unchanged', dirty),
        durationSeconds: (now() - started) / 1000,
      };
    } catch (error) {
      this.lastFailed = true;
      this.lastCall = now();
      // Only a failure that needs someone to change something waits; anything else is tried again.
      return {
        state: this.baseState('failed', dirty, errorText(error)),
        retryable: failureKindOf(error) !== 'fix-input',
        durationSeconds: (now() - started) / 1000,
      };
    }
  }

  /**
   * Pull-request mode: when the base branch moved (a merge, a person's commit), reads its tree and
   * history again. A failure keeps what was known (the next publish tries again).
   */
  private async followBase(): Promise<void> {
    const history = this.options.history;
    if (!history?.head) return;
    try {
      const head = await history.head();
      if (this.base && this.base.head === head) return;
      const tree = await this.publisher.readPrevious();
      await this.loadHistory();
      const moved = this.base !== undefined;
      this.base = { head, tree };
      // What the base holds now may be what was pending.
      const stillDirty = dirtyUnitDirs(tree, this.previous ?? tree);
      for (const dir of [...this.pending.keys()]) if (!stillDirty.has(dir)) this.pending.delete(dir);
      // Compared with the base again, and the publisher asked even when the base holds the tree, so
      // it looks at the pull request (merged: closed as unnecessary; the base changed by someone
      // else: proposed again on top of it).
      if (moved) {
        this.previous = tree;
        this.baseMoved = true;
      }
    } catch (error) {
      this.options.onHistoryError?.(error);
    }
  }

  /** Pull-request mode: the unit directories whose files the base branch does not hold are pending on the pull request. */
  private markPending(tree: RenderedTree, pullRequest: string | undefined): void {
    this.pending.clear();
    if (!this.base) return;
    for (const dir of dirtyUnitDirs(this.base.tree, tree))
      this.pending.set(dir, pullRequest ? `pull request ${pullRequest}` : 'a pull request');
  }

  private record(
    revision: string,
    tree: RenderedTree,
    dirty: Set<string>,
    previous: RenderedTree,
    diff: { written: readonly string[]; removed: readonly string[] },
  ): void {
    if (this.history.at(-1) !== revision) this.history.push(revision);
    if (this.history.length > HISTORY_LIMIT) this.history.splice(0, this.history.length - HISTORY_LIMIT);
    const present = this.unitDirs;
    present.update(tree, previous, diff);
    for (const dir of present.dirs())
      if (dirty.has(dir) || !this.unitRevisions.has(dir)) this.unitRevisions.set(dir, revision);
    for (const dir of [...this.unitRevisions.keys()]) if (!present.has(dir)) this.unitRevisions.delete(dir);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
