// Extracts tar and tar.gz archives from releases without trusting them: every entry is checked
// before anything is written, and the result appears atomically (a temp directory renamed).
import { mkdir, rename, rm } from 'node:fs/promises';
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

/** Returns the entry's path relative to the root, or throws if it would land outside it. */
function insideRoot(archive: string, entry: string, target: string): string {
  if (target.includes('\0')) throw new UnsafeArchiveError(archive, entry, 'contains a NUL byte');
  if (path.posix.isAbsolute(target) || /^[a-zA-Z]:[\\/]/.test(target) || target.startsWith('\\')) {
    throw new UnsafeArchiveError(archive, entry, 'has an absolute path; archives may only contain relative paths');
  }
  const normalized = path.posix.normalize(target.replaceAll('\\', '/'));
  if (normalized === '..' || normalized.startsWith('../')) {
    throw new UnsafeArchiveError(archive, entry, 'points outside the archive directory ("..")');
  }
  return normalized;
}

/** Checks every entry of the archive against the limits and the escape rules, writing nothing. */
export async function inspectArchive(file: string, label: string, limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS): Promise<string[]> {
  const entries: string[] = [];
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
          const own = insideRoot(label, entry.path, entry.path);
          if (type === 'SymbolicLink') {
            const linkpath = String(entry.linkpath ?? '');
            if (path.posix.isAbsolute(linkpath)) throw new UnsafeArchiveError(label, entry.path, `is a symlink to the absolute path ${linkpath}`);
            insideRoot(label, entry.path, path.posix.join(path.posix.dirname(own), linkpath));
          }
          if (type === 'Link') insideRoot(label, entry.path, String(entry.linkpath ?? ''));
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
 * Extracts `file` into `destination`, which must not exist yet. Checks the whole archive first;
 * extracts into a sibling temp directory and renames it, so `destination` either is complete or
 * does not exist.
 */
export async function extractArchive(file: string, destination: string, label: string, limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS): Promise<void> {
  await inspectArchive(file, label, limits);
  const temp = `${destination}.partial-${process.pid}-${Date.now()}`;
  await mkdir(temp, { recursive: true });
  try {
    await tar.x({ file, cwd: temp, strict: true, preservePaths: false, preserveOwner: false, noChmod: false });
    await mkdir(path.dirname(destination), { recursive: true });
    await rename(temp, destination);
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    if (error instanceof UnsafeArchiveError) throw error;
    throw new UnsafeArchiveError(label, undefined, `could not be extracted: ${(error as Error).message}`);
  }
}
