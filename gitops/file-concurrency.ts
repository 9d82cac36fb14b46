// How many file reads and writes the publishers run side by side: many small files go much faster
// side by side than one after another, without opening thousands at once. The limiter itself is
// p-limit (`pLimit(FILE_CONCURRENCY).map(files, work)`), the same one that bounds helm processes.

/** File operations in flight at most, per tree read or written. */
export const FILE_CONCURRENCY = 32;
