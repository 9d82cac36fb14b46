// How the publishers go through thousands of small files. Synchronous calls, a batch at a time
// with a yield to the event loop between batches (the controller keeps serving its watches and
// probes meanwhile), cost far less than promise calls: each of those is several thread-pool round
// trips. Measured over the 20,887 files of a 48-cluster tree, in one process: reads 0.26-0.37 s
// with readFileSync against 0.57-1.6 s with 32 promise reads in flight; writes 0.6-1.4 s of CPU
// against 2.7-3.0 s. Where calls must overlap (a check per file that may wait on a slow disk),
// p-limit bounds them to FILE_CONCURRENCY.

/** File operations in flight at most, per tree, where they run side by side. */
export const FILE_CONCURRENCY = 32;

/** Files handled between two yields to the event loop. */
export const FILE_BATCH = 256;

/** Runs `work` on each of `items` in order, synchronously, yielding to the event loop after every FILE_BATCH. */
export async function inFileBatches<T>(items: readonly T[], work: (item: T) => void): Promise<void> {
  for (let start = 0; start < items.length; start += FILE_BATCH) {
    for (const item of items.slice(start, start + FILE_BATCH)) work(item);
    await new Promise((resolve) => setImmediate(resolve));
  }
}
