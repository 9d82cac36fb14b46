// Extracts tar and tar.gz archives from releases without trusting them: every entry is checked
// before anything is written, and the result appears atomically (a temp directory renamed).
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import * as tar from 'tar';

export interface ExtractLimits {
  /** Largest single file, in bytes. */
  maxFileBytes: number;
  /** Sum of all file sizes, in bytes. */
  maxTotalBytes: number;
  maxEntries: number;
}

export const DEFAULT_EXTRACT_LIMITS: ExtractLimits = {
  maxFileBytes: 64 * 1024 * 1024,
  maxTotalBytes: 512 * 1024 * 1024,
  maxEntries: 20_000,
};

/** An archive that must not be extracted; names the archive (and release) and the entry. */
export class UnsafeArchiveError extends Error {
  constructor(readonly archive: string, readonly entry: string | undefined, reason: string) {
    super(entry === undefined ? `archive ${archive}: ${reason}` : `archive ${archive}: entry "${entry}" ${reason}`);
    this.name = 'UnsafeArchiveError';
  }
}

const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink', 'Link']);
// pax and GNU long-name headers describe the next entry; node-tar applies them itself.
const METADATA_TYPES = new Set(['ExtendedHeader', 'GlobalExtendedHeader', 'NextFileHasLongPath', 'NextFileHasLongLinkpath', 'OldExtendedHeader']);

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
function resolvePhysical(parts: readonly string[], links: ReadonlyMap<string, string>, depth = 0): string[] | undefined {
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

/** Checks every entry of the archive against the limits and the escape rules, writing nothing. */
export async function inspectArchive(file: string, label: string, limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS): Promise<string[]> {
  const entries: string[] = [];
  // Symlinks declared so far, by normalized path, with their targets relative to the root.
  const links = new Map<string, string>();
  let total = 0;
  let failure: Error | undefined;
  try {
    await tar.t({
      file,
      strict: true,
      onReadEntry: (entry) => {
        if (failure) return;
        try {
          const type = String(entry.type);
          if (METADATA_TYPES.has(type)) return;
          if (!ALLOWED_TYPES.has(type)) throw new UnsafeArchiveError(label, entry.path, `is a ${type}; only files, directories and links inside the archive are allowed`);
          const parts = entryComponents(label, entry.path);
          const own = parts.length === 0 ? '.' : parts.join('/');
          // Writing through a symlinked directory lands wherever the link points; node-tar refuses it too.
          for (let i = 1; i < parts.length; i++) {
            if (links.has(parts.slice(0, i).join('/'))) throw new UnsafeArchiveError(label, entry.path, `lies inside the symlink ${parts.slice(0, i).join('/')}; entries may not be written through links`);
          }
          if (type === 'SymbolicLink' || type === 'Link') {
            const linkpath = String(entry.linkpath ?? '').replaceAll('\\', '/');
            const kind = type === 'Link' ? 'hard link' : 'symlink';
            if (linkpath === '' || linkpath.includes('\0')) throw new UnsafeArchiveError(label, entry.path, `is a ${kind} without a valid target`);
            if (linkpath.startsWith('/') || /^[a-zA-Z]:/.test(linkpath)) throw new UnsafeArchiveError(label, entry.path, `is a ${kind} to the absolute path ${linkpath}`);
            // A symlink's target is relative to its directory, a hard link's to the archive root.
            const base = type === 'SymbolicLink' ? parts.slice(0, -1) : [];
            const target = resolvePhysical([...base, ...linkpath.split('/')], links);
            if (target === undefined) throw new UnsafeArchiveError(label, entry.path, `is a ${kind} to ${linkpath}, outside the archive directory`);
            if (type === 'Link' && target.length === 0) throw new UnsafeArchiveError(label, entry.path, `is a hard link to the archive directory itself`);
            // Linux hard-links a symlink itself; its relative target would then resolve from elsewhere.
            if (type === 'Link') {
              const parent = resolvePhysical([...linkpath.split('/')].slice(0, -1), links);
              const last = linkpath.split('/').filter((part) => part !== '' && part !== '.').at(-1);
              if (parent && last && links.has([...parent, last].join('/'))) throw new UnsafeArchiveError(label, entry.path, `is a hard link to the symlink ${linkpath}`);
            }
            if (type === 'SymbolicLink') links.set(own, target.join('/'));
          } else {
            links.delete(own);
          }
          const size = entry.size ?? 0;
          if (size > limits.maxFileBytes) throw new UnsafeArchiveError(label, entry.path, `is ${size} bytes, over the per-file limit of ${limits.maxFileBytes}`);
          total += size;
          if (total > limits.maxTotalBytes) throw new UnsafeArchiveError(label, entry.path, `takes the archive over its total size limit of ${limits.maxTotalBytes} bytes`);
          entries.push(own);
          if (entries.length > limits.maxEntries) throw new UnsafeArchiveError(label, entry.path, `is one entry too many (limit ${limits.maxEntries})`);
        } catch (error) {
          failure = error as Error;
        }
      },
    });
  } catch (error) {
    if (failure) throw failure;
    throw new UnsafeArchiveError(label, undefined, `cannot be read as a tar archive (${(error as Error).message}); the file is truncated or not a .tgz`);
  }
  if (failure) throw failure;
  if (entries.length === 0) throw new UnsafeArchiveError(label, undefined, 'is empty or not a tar archive');
  return entries;
}

/**
 * Extracts `file` into `destination`, which must not exist yet (or, when a concurrent extraction of
 * the same content-addressed destination wins the race, is kept as it is). Checks the whole archive
 * first; extracts into a sibling temp directory and renames it, so `destination` either is complete
 * or does not exist.
 */
export async function extractArchive(file: string, destination: string, label: string, limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS): Promise<void> {
  await inspectArchive(file, label, limits);
  // Random, not a timestamp: two extractions in the same millisecond must not share a directory.
  const temp = `${destination}.partial-${process.pid}-${randomBytes(6).toString('hex')}`;
  await mkdir(temp, { recursive: true });
  try {
    await tar.x({
      file,
      cwd: temp,
      strict: true,
      preservePaths: false,
      preserveOwner: false,
      // Modes from the archive are not trusted (setuid, world-writable, unreadable): files become
      // 0644 or 0755, directories 0755.
      filter: (_path, entry) => {
        if ('type' in entry && typeof entry.mode === 'number') {
          entry.mode = entry.type === 'Directory' || entry.mode & 0o111 ? 0o755 : 0o644;
        }
        return true;
      },
    });
    await mkdir(path.dirname(destination), { recursive: true });
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
