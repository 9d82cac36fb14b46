// A directory made for a step that may fail (git init where git is missing): when it fails, what was
// made for it goes again, so a failed run leaves no empty repository directory behind.
import { mkdir, rm } from 'node:fs/promises';

/**
 * Runs `action` with `dir` created (and its missing parents); when `action` fails, removes the
 * directories this call created, with whatever `action` put in them, and rethrows.
 */
export async function inNewDirectory<T>(dir: string, action: () => Promise<T>): Promise<T> {
  const first = await mkdir(dir, { recursive: true });
  try {
    return await action();
  } catch (error) {
    if (first !== undefined) await rm(first, { recursive: true, force: true });
    throw error;
  }
}
