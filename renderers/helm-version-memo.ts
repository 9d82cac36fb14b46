// `helm version`'s answer kept across processes, beside helm's work files in the cache directory: every
// clusterstack process that renders asked it once (about 25-55 ms of CPU each, the suite's CLI and
// controller processes about 90 runs). An answer is used only for the same file: the path, device,
// inode, size, modification and change times all as they were when helm answered (a write changes the
// change time, which no one can set back), and only for an executable binary, never a script: a shim's
// answer (asdf, mise) depends on what it runs, which its own file does not show. A file changed within
// the last seconds before helm answered is never remembered (a write in the same clock tick would
// keep its times). The file is rewritten whole by a rename; one that does not parse is ignored.
//
// Layout: <helm work dir>/helm-versions.json
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { readCacheEntryJson, writeCacheEntryJson } from '../src/cache/cache-entry-file.js';

export const HELM_VERSIONS_FILE = 'helm-versions.json';
/** Binaries remembered at most (the newest): a machine has a handful of helms. */
const KEPT_ENTRIES = 16;
/** A binary changed more recently than this is not remembered. */
const SETTLED_MS = 3_000;
const VERSION = /^v[34]\.\d+\.\d+\S*$/;

type Entry = [stamp: string, version: string];

/** The stamp of the binary at `file` (through links) when it is an ELF executable, else undefined. */
export async function helmBinaryStamp(file: string): Promise<string | undefined> {
  const info = await stat(file, { bigint: true }).catch(() => undefined);
  if (info === undefined || !info.isFile()) return undefined;
  const magic = Buffer.alloc(4);
  const handle = await open(file, 'r').catch(() => undefined);
  if (handle === undefined) return undefined;
  try {
    await handle.read(magic, 0, 4, 0);
  } finally {
    await handle.close();
  }
  if (!magic.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) return undefined;
  return `${path.resolve(file)} dev=${info.dev} ino=${info.ino} size=${info.size} mtime=${info.mtimeNs} ctime=${info.ctimeNs}`;
}

async function entriesIn(memoDir: string): Promise<Entry[]> {
  const file = (await readCacheEntryJson(path.join(memoDir, HELM_VERSIONS_FILE)).catch(() => undefined)) as
    { schema?: unknown; entries?: unknown } | null | undefined;
  if (file?.schema !== 1 || !Array.isArray(file.entries)) return [];
  return file.entries.filter(
    (entry): entry is Entry =>
      Array.isArray(entry) &&
      entry.length === 2 &&
      typeof entry[0] === 'string' &&
      typeof entry[1] === 'string' &&
      VERSION.test(entry[1]),
  );
}

/** The version helm answered for the binary stamped `stamp`, as remembered under `memoDir`; undefined when not remembered. */
export async function rememberedHelmVersion(memoDir: string, stamp: string): Promise<string | undefined> {
  return (await entriesIn(memoDir)).find(([known]) => known === stamp)?.[1];
}

/**
 * Remembers `version` for the binary `stamp` names, unless the binary at `file` changed within the
 * last seconds or stats differently now; a failure to write only costs the next process a `helm version`.
 */
export async function rememberHelmVersion(
  memoDir: string,
  file: string,
  stamp: string,
  version: string,
): Promise<void> {
  if (!VERSION.test(version)) return;
  const info = await stat(file, { bigint: true }).catch(() => undefined);
  if (info === undefined || Date.now() - Number(info.ctimeMs) < SETTLED_MS) return;
  if ((await helmBinaryStamp(file)) !== stamp) return;
  const entries = [[stamp, version] as Entry, ...(await entriesIn(memoDir)).filter(([known]) => known !== stamp)];
  await writeCacheEntryJson(memoDir, path.join(memoDir, HELM_VERSIONS_FILE), memoDir, 'helm-versions', {
    schema: 1,
    entries: entries.slice(0, KEPT_ENTRIES),
  }).catch(() => undefined);
}
