// How the publishers go through thousands of small files. Synchronous calls, a batch at a time
// with a yield to the event loop between batches (the controller keeps serving its watches and
// probes meanwhile), cost far less than promise calls: each of those is several thread-pool round
// trips. Measured over the 20,887 files of a 48-cluster tree, in one process: reads 0.26-0.37 s
// with readFileSync against 0.57-1.6 s with 32 promise reads in flight; writes 0.6-1.4 s of CPU
// against 2.7-3.0 s. Where calls must overlap (a check per file that may wait on a slow disk),
// p-limit bounds them to FILE_CONCURRENCY.
import { closeSync, openSync, readSync } from 'node:fs';

/** File operations in flight at most, per tree, where they run side by side. */
export const FILE_CONCURRENCY = 32;

/** Files handled between two yields to the event loop. */
const FILE_BATCH = 256;

/** Runs `work` on each of `items` in order, synchronously, yielding to the event loop after every FILE_BATCH. */
export async function inFileBatches<T>(items: readonly T[], work: (item: T) => void): Promise<void> {
  for (let start = 0; start < items.length; start += FILE_BATCH) {
    for (const item of items.slice(start, start + FILE_BATCH)) work(item);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const READ_BUFFER_BYTES = 256 * 1024;

/**
 * readFileSync(file, 'utf8') without its stat and its buffer per file: open, read into one reused
 * buffer (further chunks for a larger file), close. 15-25% less time over 20,000 small files.
 */
export function textFileReader(): (file: string) => string {
  const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  return (file) => readTextFile(file, buffer);
}

function readTextFile(file: string, buffer: Buffer): string {
  const fd = openSync(file, 'r');
  try {
    const chunks: Buffer[] = [];
    let filled = 0;
    for (;;) {
      const read = readSync(fd, buffer, filled, buffer.length - filled, null);
      if (read === 0) break;
      filled += read;
      if (filled === buffer.length) {
        chunks.push(Buffer.from(buffer));
        filled = 0;
      }
    }
    if (chunks.length === 0) return buffer.toString('utf8', 0, filled);
    chunks.push(Buffer.from(buffer.subarray(0, filled)));
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
