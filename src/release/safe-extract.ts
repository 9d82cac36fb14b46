// Extracts tar and tar.gz archives from releases without trusting them: every entry is checked
// before anything is written, and the result appears atomically (a temp directory renamed).
//
// Reading is bounded, not just the output: the archive file's size, the bytes decompressed, and the
// bytes after the tar archive's end are all limited, and decompression is ours (node-tar is fed
// plain tar). A gzip stream that goes on with gigabytes of zeros after the end of the tar archive
// is refused after the first MiB of them, instead of being inflated (and buffered) in full.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { createGunzip } from 'node:zlib';
import type * as tar from 'tar';
import { makePrivateDir, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../cache/private-cache-file.js';
import { Failure } from '../core/failure.js';

// node-tar is loaded when an archive is first opened: plans over unpacked releases never pay for it.
const loadTar = (): Promise<typeof tar> => import('tar');

export interface ExtractLimits {
  /** Largest single file, in bytes. */
  maxFileBytes: number;
  /** Sum of all file sizes, in bytes. */
  maxTotalBytes: number;
  maxEntries: number;
  /** Largest archive file (compressed bytes read). */
  maxArchiveBytes: number;
  /** Bytes after the tar archive's end: tar pads its last record with up to 10 KiB of zeros; more is not a chart. */
  maxTrailingBytes: number;
}

export const DEFAULT_EXTRACT_LIMITS: ExtractLimits = {
  maxFileBytes: 64 * 1024 * 1024,
  maxTotalBytes: 512 * 1024 * 1024,
  maxEntries: 20_000,
  maxArchiveBytes: 512 * 1024 * 1024,
  maxTrailingBytes: 1024 * 1024,
};

const GZIP_MAGIC = [0x1f, 0x8b];
const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];
const CHUNK_BYTES = 64 * 1024;
// Headers, pax records and padding around each entry's data.
const ENTRY_OVERHEAD_BYTES = 3 * 512;

/** An archive that must not be extracted; names the archive (and release) and the entry. */
export class UnsafeArchiveError extends Failure {
  constructor(
    readonly archive: string,
    readonly entry: string | undefined,
    reason: string,
  ) {
    super(
      'fix-input',
      entry === undefined ? `archive ${archive}: ${reason}` : `archive ${archive}: entry "${entry}" ${reason}`,
    );
    this.name = 'UnsafeArchiveError';
  }
}

const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink', 'Link']);
// pax and GNU long-name headers describe the next entry; node-tar applies them itself.
const METADATA_TYPES = new Set([
  'ExtendedHeader',
  'GlobalExtendedHeader',
  'NextFileHasLongPath',
  'NextFileHasLongLinkpath',
  'OldExtendedHeader',
]);

/** Returns the entry's own path as normalized components, refusing absolute paths and any "..". */
function entryComponents(archive: string, entry: string): string[] {
  if (entry.includes('\0')) throw new UnsafeArchiveError(archive, entry, 'contains a NUL byte');
  const slashed = entry.replaceAll('\\', '/');
  if (slashed.startsWith('/') || /^[a-zA-Z]:/.test(slashed)) {
    throw new UnsafeArchiveError(archive, entry, 'has an absolute path; archives may only contain relative paths');
  }
  const parts = slashed.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) throw new UnsafeArchiveError(archive, entry, 'points outside the archive directory ("..")');
  return parts;
}

/**
 * Resolves `parts` the way the file system will once the earlier entries exist: components that are
 * symlinks declared earlier in the archive are followed (textual normalization alone misses
 * `a -> .` followed by `b -> a/..`). Returns undefined when the path leaves the root.
 */
function resolvePhysical(
  parts: readonly string[],
  links: ReadonlyMap<string, string>,
  depth = 0,
): string[] | undefined {
  if (depth > 40) return undefined; // A symlink loop: the file system would refuse it too.
  const out: string[] = [];
  for (const part of parts) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length === 0) return undefined;
      out.pop();
      continue;
    }
    out.push(part);
    const target = links.get(out.join('/'));
    if (target !== undefined) {
      const resolved = resolvePhysical([...out.slice(0, -1), ...target.split('/')], links, depth + 1);
      if (resolved === undefined) return undefined;
      out.splice(0, out.length, ...resolved);
    }
  }
  return out;
}

function startsWith(bytes: Uint8Array, magic: number[]): boolean {
  return magic.every((byte, index) => bytes[index] === byte);
}

/** Refuses an archive over the size limit or zstd-compressed; true when it is gzipped. */
async function checkArchiveHead(file: string, label: string, limits: ExtractLimits): Promise<boolean> {
  const handle = await open(file, 'r');
  let head: Uint8Array;
  let size: number;
  try {
    size = (await handle.stat()).size;
    head = new Uint8Array(4);
    await handle.read(head, 0, 4, 0);
  } finally {
    await handle.close();
  }
  if (size > limits.maxArchiveBytes)
    throw new UnsafeArchiveError(
      label,
      undefined,
      `is ${size} bytes, over the archive size limit of ${limits.maxArchiveBytes}`,
    );
  if (startsWith(head, ZSTD_MAGIC))
    throw new UnsafeArchiveError(
      label,
      undefined,
      'is zstd-compressed; release archives must be tar or tar.gz (helm package writes tar.gz)',
    );
  return startsWith(head, GZIP_MAGIC);
}

/**
 * Feeds the archive's plain tar bytes to `parser`, bounded: the file's size, the bytes decompressed
 * and the bytes after the tar end (`parser` emitting 'eof') are limited, and feeding stops at the
 * tar end. With `stopAfter`, feeding stops after that many tar bytes (what a first pass found).
 * Returns how many tar bytes were fed up to and including the chunk holding the tar end.
 */
async function feedTar(
  file: string,
  label: string,
  limits: ExtractLimits,
  parser: tar.Parser,
  stopAfter?: number,
  failed: () => boolean = () => false,
): Promise<number> {
  const gzipped = await checkArchiveHead(file, label, limits);
  const maxTarBytes = limits.maxTotalBytes + (limits.maxEntries + 2) * ENTRY_OVERHEAD_BYTES;
  const raw = createReadStream(file, { highWaterMark: CHUNK_BYTES });
  const stream = gzipped ? raw.pipe(createGunzip({ chunkSize: CHUNK_BYTES })) : raw;
  raw.on('error', (error) => stream.destroy(error));
  let ended = false;
  let broken = false;
  const onEof = (): void => {
    ended = true;
  };
  const onError = (): void => {
    broken = true;
  };
  parser.on('eof', onEof);
  parser.on('error', onError);
  let fed = 0;
  let endOffset = -1;
  let trailing = 0;
  let first = true;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (first && gzipped && (startsWith(chunk, GZIP_MAGIC) || startsWith(chunk, ZSTD_MAGIC))) {
        // node-tar would inflate an inner layer itself, past every limit here.
        throw new UnsafeArchiveError(label, undefined, 'is compressed twice; release archives must be tar or tar.gz');
      }
      first = false;
      // The archive is refused already: reading on would only cost time.
      if (broken || failed()) break;
      if (ended || (stopAfter !== undefined && fed >= stopAfter)) {
        if (endOffset < 0) endOffset = fed;
        trailing += chunk.length;
        if (trailing > limits.maxTrailingBytes) {
          throw new UnsafeArchiveError(
            label,
            undefined,
            `goes on with more than ${limits.maxTrailingBytes} bytes after the end of its tar archive; it is damaged or a decompression bomb, so it was not read further`,
          );
        }
        if (stopAfter !== undefined) break;
        continue;
      }
      fed += chunk.length;
      if (fed > maxTarBytes)
        throw new UnsafeArchiveError(
          label,
          undefined,
          `decompresses to more than ${maxTarBytes} bytes, over the total size limit of ${limits.maxTotalBytes} bytes of files`,
        );
      if (!parser.write(chunk)) await new Promise<void>((resolve) => parser.once('drain', resolve));
    }
  } finally {
    parser.off('eof', onEof);
    parser.off('error', onError);
    raw.destroy();
    stream.destroy();
  }
  return endOffset < 0 ? fed : endOffset;
}

/** Ends `parser` and waits until it has processed everything; strict-mode warnings reject. */
function finish(parser: tar.Parser, done: Promise<void>): Promise<void> {
  parser.end();
  return done;
}

/** Resolves when `parser` is done; rejects on its first error. */
function parserDone(parser: tar.Parser, event: 'end' | 'close'): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    parser.on('error', reject);
    parser.on(event, () => resolve());
  });
}

/**
 * Refuses a link entry whose target is empty, absolute, outside the archive, the archive directory
 * (hard link) or a symlink (hard link); records a symlink in `links`.
 */
function checkLink(
  label: string,
  entryPath: string,
  type: 'SymbolicLink' | 'Link',
  rawLinkpath: string,
  parts: string[],
  own: string,
  links: Map<string, string>,
): void {
  const linkpath = rawLinkpath.replaceAll('\\', '/');
  const kind = type === 'Link' ? 'hard link' : 'symlink';
  if (linkpath === '' || linkpath.includes('\0'))
    throw new UnsafeArchiveError(label, entryPath, `is a ${kind} without a valid target`);
  if (linkpath.startsWith('/') || /^[a-zA-Z]:/.test(linkpath))
    throw new UnsafeArchiveError(label, entryPath, `is a ${kind} to the absolute path ${linkpath}`);
  // A symlink's target is relative to its directory, a hard link's to the archive root.
  const base = type === 'SymbolicLink' ? parts.slice(0, -1) : [];
  const target = resolvePhysical([...base, ...linkpath.split('/')], links);
  if (target === undefined)
    throw new UnsafeArchiveError(label, entryPath, `is a ${kind} to ${linkpath}, outside the archive directory`);
  if (type === 'Link' && target.length === 0)
    throw new UnsafeArchiveError(label, entryPath, `is a hard link to the archive directory itself`);
  // Linux hard-links a symlink itself; its relative target would then resolve from elsewhere.
  if (type === 'Link') {
    const parent = resolvePhysical([...linkpath.split('/')].slice(0, -1), links);
    const last = linkpath
      .split('/')
      .filter((part) => part !== '' && part !== '.')
      .at(-1);
    if (parent && last && links.has([...parent, last].join('/')))
      throw new UnsafeArchiveError(label, entryPath, `is a hard link to the symlink ${linkpath}`);
  }
  if (type === 'SymbolicLink') links.set(own, target.join('/'));
}

/** Checks every entry of the archive against the limits and the escape rules, writing nothing; returns the entries. */
async function inspect(
  file: string,
  label: string,
  limits: ExtractLimits,
): Promise<{ entries: string[]; tarBytes: number }> {
  const entries: string[] = [];
  // Symlinks declared so far, by normalized path, with their targets relative to the root.
  const links = new Map<string, string>();
  let total = 0;
  let failure: Error | undefined;
  let tarBytes: number;
  const { Parser } = await loadTar();
  try {
    const parser = new Parser({
      strict: true,
      onReadEntry: (entry) => {
        // The data of an entry is never needed here: drop it as it streams past.
        entry.resume();
        if (failure) return;
        try {
          const type = String(entry.type);
          if (METADATA_TYPES.has(type)) return;
          if (!ALLOWED_TYPES.has(type))
            throw new UnsafeArchiveError(
              label,
              entry.path,
              `is a ${type}; only files, directories and links inside the archive are allowed`,
            );
          const parts = entryComponents(label, entry.path);
          const own = parts.length === 0 ? '.' : parts.join('/');
          // Writing through a symlinked directory lands wherever the link points; node-tar refuses it too.
          for (let i = 1; i < parts.length; i++) {
            if (links.has(parts.slice(0, i).join('/')))
              throw new UnsafeArchiveError(
                label,
                entry.path,
                `lies inside the symlink ${parts.slice(0, i).join('/')}; entries may not be written through links`,
              );
          }
          if (type === 'SymbolicLink' || type === 'Link')
            checkLink(label, entry.path, type, String(entry.linkpath ?? ''), parts, own, links);
          else links.delete(own);
          const size = entry.size ?? 0;
          if (size > limits.maxFileBytes)
            throw new UnsafeArchiveError(
              label,
              entry.path,
              `is ${size} bytes, over the per-file limit of ${limits.maxFileBytes}`,
            );
          total += size;
          if (total > limits.maxTotalBytes)
            throw new UnsafeArchiveError(
              label,
              entry.path,
              `takes the archive over its total size limit of ${limits.maxTotalBytes} bytes`,
            );
          entries.push(own);
          if (entries.length > limits.maxEntries)
            throw new UnsafeArchiveError(label, entry.path, `is one entry too many (limit ${limits.maxEntries})`);
        } catch (error) {
          failure = error as Error;
        }
      },
    });
    const done = parserDone(parser, 'end');
    // A failure in feeding must not leave `done` rejecting unobserved.
    done.catch(() => {});
    tarBytes = await feedTar(file, label, limits, parser, undefined, () => failure !== undefined);
    await finish(parser, done);
  } catch (error) {
    if (failure) throw failure;
    if (error instanceof UnsafeArchiveError) throw error;
    throw new UnsafeArchiveError(
      label,
      undefined,
      `cannot be read as a tar archive (${(error as Error).message}); the file is truncated or not a .tgz`,
    );
  }
  if (failure) throw failure;
  if (entries.length === 0) throw new UnsafeArchiveError(label, undefined, 'is empty or not a tar archive');
  return { entries, tarBytes };
}

/**
 * Extracts `file` into `destination`, which must not exist yet (or, when a concurrent extraction of
 * the same content-addressed destination wins the race, is kept as it is). Checks the whole archive
 * first; extracts into a sibling temp directory and renames it, so `destination` either is complete
 * or does not exist.
 */
export async function extractArchive(
  file: string,
  destination: string,
  label: string,
  partialLimits: Partial<ExtractLimits> = {},
): Promise<void> {
  const limits = { ...DEFAULT_EXTRACT_LIMITS, ...partialLimits };
  const { tarBytes } = await inspect(file, label, limits);
  // Random, not a timestamp: two extractions in the same millisecond must not share a directory.
  const temp = `${destination}.partial-${process.pid}-${randomBytes(6).toString('hex')}`;
  await makePrivateDir(temp);
  try {
    const { Unpack } = await loadTar();
    const unpack = new Unpack({
      cwd: temp,
      strict: true,
      preservePaths: false,
      preserveOwner: false,
      // Modes from the archive are not trusted (setuid, world-writable, unreadable), and what lands
      // in the cache is this user's alone (private-cache-file.ts): directories 0700, files 0600.
      filter: (_path, entry) => {
        if ('type' in entry && typeof entry.mode === 'number') {
          entry.mode = entry.type === 'Directory' ? PRIVATE_DIR_MODE : PRIVATE_FILE_MODE;
        }
        return true;
      },
    });
    const done = parserDone(unpack, 'close');
    done.catch(() => {});
    // The same bounded reading as the inspection, and no further than the tar end it found.
    await feedTar(file, label, limits, unpack, tarBytes);
    await finish(unpack, done);
    await makePrivateDir(path.dirname(destination));
    try {
      await rename(temp, destination);
    } catch (error) {
      // Destinations are content-addressed: a concurrent extraction of the same archive that
      // finished first is as good as ours.
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !(await isDirectory(destination))) throw error;
      await rm(temp, { recursive: true, force: true });
    }
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    if (error instanceof UnsafeArchiveError) throw error;
    throw new UnsafeArchiveError(label, undefined, `could not be extracted: ${(error as Error).message}`);
  }
}

async function isDirectory(file: string): Promise<boolean> {
  try {
    return (await lstat(file)).isDirectory();
  } catch {
    return false;
  }
}
