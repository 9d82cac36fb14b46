// Content digests of files and directory trees: what caches and provenance records key on.
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, readlinkSync, type Stats, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { compareText } from '../core/compare-text.js';

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

export function sha256Digest(data: string | Uint8Array): string {
  return `sha256:${sha256Hex(data)}`;
}

export async function fileDigest(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest('hex')}`;
}

/** Every regular file and symlink under `root`, as sorted POSIX paths relative to it, with whether it is a link. */
async function listTree(root: string): Promise<{ relative: string; link: boolean }[]> {
  const out: { relative: string; link: boolean }[] = [];
  async function walk(dir: string, prefix: string): Promise<void> {
    const entries = await readdir(dir, { withFileTypes: true });
    for (const entry of entries) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(path.join(dir, entry.name), relative);
      else if (entry.isFile() || entry.isSymbolicLink()) out.push({ relative, link: entry.isSymbolicLink() });
    }
  }
  await walk(root, '');
  return out.sort((a, b) => compareText(a.relative, b.relative));
}

/** Files up to this size are read whole and synchronously; larger ones are streamed. */
const SMALL_FILE = 1024 * 1024;
/** Files digested between two yields to the event loop. */
const DIGEST_BATCH = 128;

/**
 * Content digests of small files this process has read, by path, with the stat they had. A local
 * release is digested whole and then per addon entry and per stage, so each chart file would
 * otherwise be read and hashed three times per plan. An entry is used only while the file stats
 * exactly the same (inode, size, modification and change times); like Git's "racily clean" rule,
 * a file changed within the last seconds before it was hashed is not remembered, since a second
 * write in the same clock tick could leave its stat unchanged.
 */
const fileDigests = new Map<string, { stamp: string; digest: string }>();
const FILE_DIGESTS_KEPT = 50_000;
const RACY_MS = 3_000;
/** Digests computed (files read and hashed) by this process: whether its memo holds anything new. */
let fileDigestsComputed = 0;

/** The remembered digests as [absolute path, stat stamp, digest], oldest first (to keep across runs: file-digest-memo.ts). */
export function rememberedFileDigests(): [string, string, string][] {
  return [...fileDigests].map(([file, { stamp, digest }]) => [file, stamp, digest]);
}

/** Takes digests kept by an earlier run; each is used only while its file stats exactly as it did then. */
export function rememberFileDigests(entries: readonly (readonly [string, string, string])[]): void {
  for (const [file, stamp, digest] of entries) {
    if (fileDigests.size >= FILE_DIGESTS_KEPT) return;
    if (!fileDigests.has(file)) fileDigests.set(file, { stamp, digest });
  }
}

/** How many file digests this process has computed so far. */
export function computedFileDigests(): number {
  return fileDigestsComputed;
}

function smallFileDigest(full: string, info: Stats): string {
  const stamp = `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
  const key = path.resolve(full);
  const known = fileDigests.get(key);
  if (known?.stamp === stamp) return known.digest;
  const digest = `sha256:${createHash('sha256').update(readFileSync(full)).digest('hex')}`;
  fileDigestsComputed += 1;
  if (Date.now() - Math.max(info.mtimeMs, info.ctimeMs) > RACY_MS) {
    if (fileDigests.size >= FILE_DIGESTS_KEPT) fileDigests.clear();
    fileDigests.set(key, { stamp, digest });
  }
  return digest;
}

/**
 * A digest over a directory tree: paths and contents, independent of timestamps and order. Charts
 * are hundreds of small files, and every plan digests its releases: a stream per file (four
 * thread-pool round trips each) made that most of a no-op run's plan, so small files are read in
 * synchronous batches (the digest is the same), and not again while their stat is unchanged.
 */
export async function treeDigest(root: string): Promise<string> {
  const summary = createHash('sha256');
  const files = await listTree(root);
  for (let start = 0; start < files.length; start += DIGEST_BATCH) {
    for (const { relative, link } of files.slice(start, start + DIGEST_BATCH)) {
      const full = path.join(root, relative);
      let content: string;
      if (link) content = `link:${readlinkSync(full)}`;
      else {
        const info = statSync(full);
        content = info.size <= SMALL_FILE ? smallFileDigest(full, info) : await fileDigest(full);
      }
      summary.update(`${relative}\0${content}\n`);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  return `sha256:${summary.digest('hex')}`;
}
