// The publishers' clones gain objects from fast-import (loose objects or one pack per commit) and
// from fetches that run without `git maintenance` (one process fewer on every fetch). Git packs
// them when asked: `git gc --auto` looks at its thresholds (thousands of loose objects, 50 packs)
// and packs in the background when one is passed. Asking after every step would cost each step a
// process for a check that almost never acts; asking after the first and then every GC_EVERY-th is enough.
import type { GitCommand } from './git-command.js';

/** After how many steps that add objects `git gc --auto` looks at the clone again (the first one always looks). */
const GC_EVERY = 10;

/** Asks `git gc --auto` after the first and every GC_EVERY-th step that added objects to one clone. */
export class CloneHousekeeping {
  private steps = 0;

  /** `warn` hears a gc that failed: the step itself is done, so it is not an error. */
  constructor(private readonly warn: (message: string) => void) {}

  /** Counts a step that added objects to the clone `git` runs in, and asks gc when it is due. */
  async afterObjectsAdded(git: GitCommand): Promise<void> {
    this.steps += 1;
    if (this.steps % GC_EVERY !== 1) return;
    await git.run(['gc', '--auto', '--quiet'], 'git gc').catch((error: unknown) => {
      this.warn(error instanceof Error ? error.message : String(error));
    });
  }
}
