// Makes a directory of a Git work tree hold exactly a rendered tree, shared by the Git and
// pull-request publishers.
import { rmSync, writeFileSync } from 'node:fs';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { inFileBatches, textFileReader } from './file-concurrency.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { crashPoint } from './crash-point.js';
import { PublishError } from './publish-error.js';

/**
 * Makes `<dir>/<subdir>` hold exactly `tree`, touching only files that differ: rewriting unchanged
 * files would change their mtimes and make git hash every one of them again (seconds for thousands
 * of files). Files outside `subdir` and `.git` are never touched; symbolic links inside are replaced,
 * never written through, and one on the way to `subdir` is refused. `known`, when given, is what the
 * directory is known to hold (the tree last committed there): then nothing is read back from disk.
 * `owned`, when given, lists the only files under `subdir` that may be removed (those git tracks
 * there); anything else that is not part of the tree is left alone.
 */
export async function syncWorkTree(
  dir: string,
  subdir: string,
  tree: RenderedTree,
  known?: RenderedTree,
  owned?: ReadonlySet<string>,
): Promise<void> {
  const segments = subdir === '' ? [] : subdir.split('/');
  for (let end = 1; end <= segments.length; end++) {
    const info = await lstat(path.join(dir, ...segments.slice(0, end))).catch(() => undefined);
    if (info === undefined) break;
    if (info.isSymbolicLink()) {
      throw new PublishError(
        'invalid-target',
        `--path ${subdir}: ${segments.slice(0, end).join('/')} is a symbolic link in the repository; give a real directory`,
      );
    }
  }
  const root = path.join(dir, ...segments);
  if (known) {
    const stale = [...known.keys()].filter((file) => !tree.has(file));
    await inFileBatches(stale, (file) => rmSync(`${root}/${file}`, { force: true }));
    const changed = [...tree.keys()].filter((file) => known.get(file) !== tree.get(file)).sort();
    for (const directory of new Set(changed.map((file) => path.dirname(path.join(root, ...file.split('/'))))))
      await mkdir(directory, { recursive: true });
    await inFileBatches(changed, (file) => {
      writeFileSync(`${root}/${file}`, tree.get(file) ?? '', 'utf8');
      crashPoint('work-tree:write-file');
    });
    return;
  }
  const existing = new Map<string, 'file' | 'other'>();
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(path.join(root, relative), { withFileTypes: true }).catch(() => []);
    await Promise.all(
      entries.map(async (entry) => {
        if (relative === '' && segments.length === 0 && entry.name === '.git') return;
        const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
        if (entry.isDirectory()) await walk(child);
        else existing.set(child, entry.isFile() ? 'file' : 'other');
      }),
    );
  };
  await walk('');
  const stale = [...existing]
    .filter(
      ([file, kind]) =>
        (kind !== 'file' && tree.has(file)) || (!tree.has(file) && (owned === undefined || owned.has(file))),
    )
    .map(([file]) => file);
  await inFileBatches(stale, (file) => rmSync(`${root}/${file}`, { force: true }));
  const files = [...tree.keys()].sort();
  for (const directory of new Set(files.map((file) => path.dirname(path.join(root, ...file.split('/'))))))
    await mkdir(directory, { recursive: true });
  const read = textFileReader();
  await inFileBatches(files, (file) => {
    const target = `${root}/${file}`;
    const content = tree.get(file) ?? '';
    if (existing.get(file) === 'file' && readOrUndefined(read, target) === content) return;
    writeFileSync(target, content, 'utf8');
    crashPoint('work-tree:write-file');
  });
}

function readOrUndefined(read: (file: string) => string, file: string): string | undefined {
  try {
    return read(file);
  } catch {
    return undefined;
  }
}
