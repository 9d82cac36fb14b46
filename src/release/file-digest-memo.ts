// The content digests of release and chart files, kept across runs under the cache directory. Every
// plan digests the releases it loads (a local release is read whole and hashed); a CronJob or CI
// pipeline running `render` every few minutes re-read the same hundreds of files each time, the
// largest part of a run that changes nothing. An entry names a file by its absolute path and its
// stat (device, inode, size, modification and change times) and is used only while the file stats
// exactly the same: any write changes the change time, which no one can set back. A file changed
// within the last seconds before it was hashed is never remembered (content-digest.ts). Verified like
// the other cache entries: the file records a digest over its entries and is rewritten whole by a
// rename; one that does not verify is ignored and replaced.
//
// Layout: <cache root>/file-digests.json
import path from 'node:path';
import { readCacheEntryJson, writeCacheEntryJson } from '../cache/cache-entry-file.js';
import { computedFileDigests, rememberedFileDigests, rememberFileDigests, sha256Digest } from './content-digest.js';

export const FILE_DIGESTS_FILE = 'file-digests.json';
/** Entries written at most: the newest (a large fleet's releases are a few thousand files). */
const KEPT_ENTRIES = 20_000;

type Entry = [file: string, stamp: string, digest: string];

interface MemoFile {
  schema: 1;
  entries: Entry[];
  /** sha256 over the JSON of schema and entries. */
  digest: string;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const entryDigest = (entries: Entry[]): string => sha256Digest(JSON.stringify({ schema: 1, entries }));

/** Per cache root: what this process has computed as of its last load or save. */
const state = new Map<string, Promise<{ computedAtSave: number }>>();

/** Loads the digests kept under `cacheRoot` into this process's memo, once per process; a file that does not verify is ignored. */
export function loadFileDigestMemo(cacheRoot: string): Promise<void> {
  const key = path.resolve(cacheRoot);
  let loaded = state.get(key);
  if (!loaded) {
    loaded = (async () => {
      const file = (await readCacheEntryJson(path.join(key, FILE_DIGESTS_FILE)).catch(() => undefined)) as
        Partial<MemoFile> | null | undefined;
      const valid =
        file?.schema === 1 &&
        Array.isArray(file.entries) &&
        file.entries.every(
          (entry) =>
            Array.isArray(entry) &&
            entry.length === 3 &&
            entry.every((part) => typeof part === 'string') &&
            path.isAbsolute(entry[0]) &&
            DIGEST.test(entry[2]),
        ) &&
        file.digest === entryDigest(file.entries);
      if (valid) rememberFileDigests(file.entries!);
      return { computedAtSave: computedFileDigests() };
    })();
    state.set(key, loaded);
  }
  return loaded.then(() => undefined);
}

/** Writes the memo under `cacheRoot` when this process computed digests since it loaded or last saved it. */
export async function saveFileDigestMemo(cacheRoot: string): Promise<void> {
  const key = path.resolve(cacheRoot);
  const known = await state.get(key);
  if (!known || computedFileDigests() === known.computedAtSave) return;
  const entries = rememberedFileDigests().slice(-KEPT_ENTRIES);
  const memo: MemoFile = { schema: 1, entries, digest: entryDigest(entries) };
  await writeCacheEntryJson(key, path.join(key, FILE_DIGESTS_FILE), path.join(key, 'tmp'), 'file-digests', memo);
  known.computedAtSave = computedFileDigests();
}
