// What a CLI run reads of its target before it decides anything: one read, in two stages. First the
// settled-run record (gitops/settled-run-record.ts): when it holds this run's fingerprint and the
// target proves it still holds what that run left, the run is settled and ends there, without
// reading the tree or starting helm. Otherwise, the tree and what it records about itself, as the
// one PublishedState the run decides and renders with. The type says which: a settled target has
// no tree read; an unsettled one has its state.
import type { Publisher } from '../../gitops/publisher.js';
import { isSettledRunStore, type SettledRun } from '../../gitops/settled-run-record.js';
import { type PublishedState, readPublishedState } from '../output/published-state.js';

/** The target as the run read it: settled (its tree never read), or its published state. */
export type PublishedTarget =
  | { readonly settled: SettledRun; readonly state?: undefined }
  | { readonly settled?: undefined; readonly state: PublishedState };

/**
 * Reads `publisher`'s target in two stages (see the header). Without a `fingerprint` (a full render
 * is asked for, or the run has none) the first stage is skipped. `beforeTree` runs once the run is
 * known to render, before the tree is read (the CLI loads the pipeline there).
 */
export async function readPublishedTarget(
  publisher: Publisher,
  fingerprint: string | undefined,
  beforeTree?: () => Promise<void>,
): Promise<PublishedTarget> {
  if (fingerprint !== undefined && isSettledRunStore(publisher)) {
    const settled = await publisher.readSettledRun(fingerprint);
    if (settled) return Object.freeze({ settled });
  }
  await beforeTree?.();
  return Object.freeze({ state: readPublishedState(await publisher.readPrevious()) });
}
