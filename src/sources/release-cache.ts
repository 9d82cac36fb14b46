// A content-addressed, verified on-disk cache of downloaded releases, shared by the remote sources
// (GitHub, OCI). An entry appears only by an atomic rename of a complete directory, so a crash or a
// failed download never leaves anything that looks complete; every read re-hashes the files.
//
// Layout:
//   <root>/releases/<sha256 hex of "<sourceKey>\n<tag>">/manifest.json   written last
//   <root>/releases/<...>/files/<release files>                        FetchedRelease.dir
//   <root>/tmp/<...>                                                   puts in progress, removals
import { randomBytes } from 'node:crypto';
import { lstat, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileDigest, sha256Digest, sha256Hex } from '../release/content-digest.js';
import type { FetchedRelease } from '../release/release-source.js';
import { makePrivateDir, writePrivateFile } from '../cache/private-cache-file.js';
import { compareText } from '../core/compare-text.js';
import { Failure } from '../core/failure.js';

export interface CacheEntryInfo {
  sourceKey: string;
  tag: string;
  /** Digest over the entry's files, `sha256:<hex>`; equals `treeDigest(dir)`. */
  digest: string;
  /** Sum of the file sizes. */
  bytes: number;
  /** The directory holding the release's files. */
  dir: string;
  /** When the entry was stored (ISO 8601). */
  storedAt: string;
}

interface CachedFile {
  /** POSIX path relative to the entry's files directory. */
  path: string;
  /** `sha256:<hex>` of the content. */
  sha256: string;
  size: number;
}

interface CacheManifest {
  schema: 1;
  sourceKey: string;
  tag: string;
  storedAt: string;
  digest: string;
  files: CachedFile[];
}

export interface ReleaseCacheOptions {
  clock?: () => Date;
}

/** The cache could not store an entry: the write callback failed or wrote something unusable. */
class ReleaseCacheError extends Failure {
  constructor(message: string, options?: { cause?: unknown }) {
    super('internal', message, options);
    this.name = 'ReleaseCacheError';
  }
}

const MANIFEST = 'manifest.json';
const FILES = 'files';
// Temp directories older than this belong to a crashed process and are removed by prune().
const STALE_TEMP_MS = 60 * 60 * 1000;

/** The digest `treeDigest` computes for a tree of regular files, from their recorded hashes. */
function digestOfFiles(files: readonly CachedFile[]): string {
  const sorted = [...files].sort((a, b) => compareText(a.path, b.path));
  return sha256Digest(sorted.map((file) => `${file.path}\0${file.sha256}\n`).join(''));
}

export class ReleaseCache {
  private readonly clock: () => Date;
  private readonly releasesDir: string;
  private readonly tempDir: string;

  constructor(
    readonly root: string,
    options: ReleaseCacheOptions = {},
  ) {
    this.clock = options.clock ?? (() => new Date());
    this.releasesDir = path.join(root, 'releases');
    this.tempDir = path.join(root, 'tmp');
  }

  /** The directory an entry lives in (whether or not it exists). */
  entryDir(sourceKey: string, tag: string): string {
    return path.join(this.releasesDir, sha256Hex(`${sourceKey}\n${tag}`));
  }

  /** A verified entry (files re-hashed against the recorded manifest) or undefined; a corrupt entry is removed and undefined returned. */
  async get(sourceKey: string, tag: string): Promise<FetchedRelease | undefined> {
    const dir = this.entryDir(sourceKey, tag);
    const manifest = await readManifest(dir);
    if (manifest === 'missing') {
      // A directory without a manifest never comes from put(); clear it so put() can rename.
      if (await exists(dir)) await this.remove(dir);
      return undefined;
    }
    if (
      manifest === 'corrupt' ||
      manifest.sourceKey !== sourceKey ||
      manifest.tag !== tag ||
      !(await verifyFiles(path.join(dir, FILES), manifest))
    ) {
      await this.remove(dir);
      return undefined;
    }
    return { tag, dir: path.join(dir, FILES), digest: manifest.digest };
  }

  /** Runs `write(tempDir)` to download files into a temp dir, records per-file sha256 + sizes, then renames into place atomically. A failed/interrupted write leaves nothing that looks complete. Concurrent puts of the same key are safe. */
  async put(sourceKey: string, tag: string, write: (tempDir: string) => Promise<void>): Promise<FetchedRelease> {
    const target = this.entryDir(sourceKey, tag);
    const temp = path.join(this.tempDir, `${path.basename(target)}-${process.pid}-${randomBytes(6).toString('hex')}`);
    const filesDir = path.join(temp, FILES);
    await makePrivateDir(filesDir);
    try {
      await write(filesDir);
      const files = await hashTree(filesDir);
      const manifest: CacheManifest = {
        schema: 1,
        sourceKey,
        tag,
        storedAt: this.clock().toISOString(),
        digest: digestOfFiles(files),
        files,
      };
      // Written last: a directory with a manifest is complete.
      await writePrivateFile(path.join(temp, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
      await makePrivateDir(this.releasesDir);
      for (let attempt = 0; ; attempt++) {
        try {
          await rename(temp, target);
          return { tag, dir: path.join(target, FILES), digest: manifest.digest };
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || attempt >= 3) throw error;
          // Another put of the same key won the race: use its entry when it is sound, else replace it.
          const existing = await this.get(sourceKey, tag);
          if (existing) {
            await rm(temp, { recursive: true, force: true });
            return existing;
          }
        }
      }
    } catch (error) {
      await rm(temp, { recursive: true, force: true });
      throw error;
    }
  }

  /** Every complete entry (not re-verified), sorted by source and tag. */
  async entries(): Promise<CacheEntryInfo[]> {
    let names: string[];
    try {
      names = await readdir(this.releasesDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const out: CacheEntryInfo[] = [];
    for (const name of names) {
      const dir = path.join(this.releasesDir, name);
      const manifest = await readManifest(dir);
      if (typeof manifest === 'string') continue;
      out.push({
        sourceKey: manifest.sourceKey,
        tag: manifest.tag,
        digest: manifest.digest,
        bytes: manifest.files.reduce((sum, file) => sum + file.size, 0),
        dir: path.join(dir, FILES),
        storedAt: manifest.storedAt,
      });
    }
    return out.sort((a, b) => compareText(a.sourceKey, b.sourceKey) || compareText(a.tag, b.tag));
  }

  async size(): Promise<{ entries: number; bytes: number }> {
    const all = await this.entries();
    return { entries: all.length, bytes: all.reduce((sum, entry) => sum + entry.bytes, 0) };
  }

  /** Removes entries for which `keep` returns false (and stale leftovers of crashed puts); returns what was removed. */
  async prune(keep: (entry: CacheEntryInfo) => boolean): Promise<CacheEntryInfo[]> {
    const removed: CacheEntryInfo[] = [];
    for (const entry of await this.entries()) {
      if (keep(entry)) continue;
      await this.remove(path.dirname(entry.dir));
      removed.push(entry);
    }
    await this.removeStaleTemps();
    return removed;
  }

  /** Moves an entry out of `releases/` in one rename, then deletes it: readers never see half of it. */
  private async remove(dir: string): Promise<void> {
    const trash = path.join(this.tempDir, `removed-${path.basename(dir)}-${randomBytes(6).toString('hex')}`);
    await makePrivateDir(this.tempDir);
    try {
      await rename(dir, trash);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    await rm(trash, { recursive: true, force: true });
  }

  private async removeStaleTemps(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.tempDir);
    } catch {
      return;
    }
    const now = this.clock().getTime();
    for (const name of names) {
      const full = path.join(this.tempDir, name);
      try {
        if (now - (await stat(full)).mtimeMs > STALE_TEMP_MS) await rm(full, { recursive: true, force: true });
      } catch {
        // Gone already, or another process is using it: leave it.
      }
    }
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch {
    return false;
  }
}

async function readManifest(dir: string): Promise<CacheManifest | 'missing' | 'corrupt'> {
  let text: string;
  try {
    text = await readFile(path.join(dir, MANIFEST), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR')
      return 'missing';
    return 'corrupt';
  }
  try {
    const parsed = JSON.parse(text) as CacheManifest;
    if (
      typeof parsed.sourceKey !== 'string' ||
      typeof parsed.tag !== 'string' ||
      typeof parsed.digest !== 'string' ||
      !Array.isArray(parsed.files)
    )
      return 'corrupt';
    for (const file of parsed.files) {
      if (typeof file?.path !== 'string' || typeof file.sha256 !== 'string' || typeof file.size !== 'number')
        return 'corrupt';
    }
    if (digestOfFiles(parsed.files) !== parsed.digest) return 'corrupt';
    return parsed;
  } catch {
    return 'corrupt';
  }
}

/** Hashes every file under `root`; anything but regular files and directories is refused. */
async function hashTree(root: string): Promise<CachedFile[]> {
  const files: CachedFile[] = [];
  async function walk(dir: string, prefix: string): Promise<void> {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full, relative);
      else if (entry.isFile())
        files.push({ path: relative, sha256: await fileDigest(full), size: (await lstat(full)).size });
      else
        throw new ReleaseCacheError(
          `cache entry file ${relative} is not a regular file; release caches hold regular files only`,
        );
    }
  }
  await walk(root, '');
  return files.sort((a, b) => compareText(a.path, b.path));
}

/** True when the files on disk are exactly the manifest's, byte for byte. */
async function verifyFiles(filesDir: string, manifest: CacheManifest): Promise<boolean> {
  let actual: CachedFile[];
  try {
    actual = await hashTree(filesDir);
  } catch {
    return false;
  }
  if (actual.length !== manifest.files.length) return false;
  const expected = [...manifest.files].sort((a, b) => compareText(a.path, b.path));
  return actual.every((file, i) => {
    const want = expected[i];
    return want !== undefined && want.path === file.path && want.size === file.size && want.sha256 === file.sha256;
  });
}
