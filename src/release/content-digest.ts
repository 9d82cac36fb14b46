// Content digests of files and directory trees: what caches and provenance records key on.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';

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

/** Every regular file and symlink under `root`, as sorted POSIX paths relative to it. */
async function listTree(root: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(dir: string, prefix: string): Promise<void> {
    const entries = await readdir(dir, { withFileTypes: true });
    for (const entry of entries) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(path.join(dir, entry.name), relative);
      else if (entry.isFile() || entry.isSymbolicLink()) out.push(relative);
    }
  }
  await walk(root, '');
  return out.sort();
}

/** A digest over a directory tree: paths and contents, independent of timestamps and order. */
export async function treeDigest(root: string): Promise<string> {
  const summary = createHash('sha256');
  for (const relative of await listTree(root)) {
    const full = path.join(root, relative);
    const stats = await lstat(full);
    const content = stats.isSymbolicLink() ? `link:${await readlink(full)}` : await fileDigest(full);
    summary.update(`${relative}\0${content}\n`);
  }
  return `sha256:${summary.digest('hex')}`;
}
