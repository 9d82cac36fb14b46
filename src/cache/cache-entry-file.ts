// One entry file of a verified on-disk cache (listing validators, plan's chart renders). Reading:
// no file is a miss; a file that does not parse is an entry that fails verification (the caller
// removes it), never an error. Writing: whole or not at all, through a temporary file renamed over it.
import { randomBytes } from 'node:crypto';
import { readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { makePrivateDir, writePrivateFile } from './private-cache-file.js';

/** The parsed JSON of `file`: undefined when there is no such file, null when it does not parse. */
export async function readCacheEntryJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/**
 * Writes `entry` as JSON to `file` (in `dir`) in one rename: written first under `tempDir` (the
 * cache's own, on the same file system), named after `kind`, this process and a random part.
 */
export async function writeCacheEntryJson(
  dir: string,
  file: string,
  tempDir: string,
  kind: string,
  entry: unknown,
): Promise<void> {
  await makePrivateDir(dir);
  await makePrivateDir(tempDir);
  const temp = path.join(tempDir, `${kind}-${process.pid}-${randomBytes(6).toString('hex')}.json`);
  try {
    await writePrivateFile(temp, `${JSON.stringify(entry)}\n`);
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
