// The cache directory holds what plan and render read and produced: releases, extracted charts,
// helm's work files (values built from Clusters), plan's chart renders. Some of it is not for other
// users of the machine, and nothing in it needs to be: every directory this project creates there
// is 0700 and every file it writes 0600 (issue 28). The modes are asked for at creation (the umask
// can only take more away); an existing directory, which may be a shared one the user named with
// --cache-dir, is left as it is.
import { mkdir, writeFile } from 'node:fs/promises';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` and its missing parents readable by this user alone; an existing directory keeps its mode. */
export async function makePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/** Writes `data` to the new file `file`, readable by this user alone (a file that exists keeps its mode: write new names). */
export async function writePrivateFile(file: string, data: string | Uint8Array): Promise<void> {
  await writeFile(file, data, { mode: PRIVATE_FILE_MODE });
}
