// Reading one entry file of a verified on-disk cache (listing validators, plan's chart renders):
// no file is a miss; a file that does not parse is an entry that fails verification (the caller
// removes it), never an error.
import { readFile } from 'node:fs/promises';

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
