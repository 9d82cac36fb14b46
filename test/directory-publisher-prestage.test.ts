// Writing ahead: while a render runs, the units it has rendered are written into the next tree's
// staging directory, so publishing has little left to do at the end. Publish still decides: a file
// written ahead is kept only when the tree holds it with that content, what the tree does not hold
// goes, and a run that never publishes leaves nothing behind.
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DirectoryPublisher } from '../gitops/directory-publisher.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { tempDir } from './support/cli.js';

const STATE = '.clusterstack';

function listTree(root: string): Record<string, string> {
  const found: Record<string, string> = {};
  const walk = (relative: string): void => {
    for (const entry of readdirSync(path.join(root, relative), { withFileTypes: true })) {
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else found[child] = readFileSync(path.join(root, child), 'utf8');
    }
  };
  walk('');
  return found;
}

const tree = (files: Record<string, string>): RenderedTree =>
  new Map(Object.entries(files).sort(([a], [b]) => a.localeCompare(b)));

/** The staging directories of `dir` (a run in progress). */
const stagings = (dir: string): string[] =>
  existsSync(path.join(dir, STATE))
    ? readdirSync(path.join(dir, STATE)).filter((entry) => entry.startsWith('staging-'))
    : [];

/**
 * Waits until `file` exists in the one staging directory, and returns when it was written (ns). A
 * file written again later has a later time: the inode number says nothing, as it is reused at once.
 */
async function writtenAhead(dir: string, file: string): Promise<bigint> {
  // A limit that only stops a stuck test: the writes run in the background, seconds late under load.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const [staging] = stagings(dir);
    const info = staging
      ? lstatSync(path.join(dir, STATE, staging, file), { throwIfNoEntry: false, bigint: true })
      : undefined;
    if (info) return info.mtimeNs;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`${file} was not written ahead`);
}

/** One run: lock, read, `during` (the render), publish `files` (or not), release. */
async function run(
  dir: string,
  during: (publisher: DirectoryPublisher) => Promise<void>,
  files?: Record<string, string>,
): Promise<string | undefined> {
  const publisher = new DirectoryPublisher(dir);
  const lock = await publisher.lock({ timeoutMs: 0, command: 'test' });
  try {
    await publisher.readPrevious();
    await during(publisher);
    if (files) await publisher.publish(tree(files));
  } finally {
    await lock.release();
  }
  return existsSync(path.join(dir, 'current')) ? path.join(dir, readlinkSync(path.join(dir, 'current'))) : undefined;
}

describe('DirectoryPublisher.prestage', () => {
  it('keeps what was written ahead with the published content, rewrites what changed since, and removes what the tree does not hold', async () => {
    const dir = path.join(await tempDir(), 'out');
    let keptWritten = 0n;
    const final = {
      'clusters/a/cni/kept.yaml': 'kept\n',
      'clusters/a/cni/changed.yaml': 'v2\n',
      'README.md': 'readme\n',
    };
    const current = await run(
      dir,
      async (publisher) => {
        publisher.prestage([
          ['clusters/a/cni/kept.yaml', 'kept\n'],
          ['clusters/a/cni/changed.yaml', 'v1\n'],
          ['clusters/b/cni/withheld.yaml', 'withheld\n'],
        ]);
        keptWritten = await writtenAhead(dir, 'clusters/a/cni/kept.yaml');
        await writtenAhead(dir, 'clusters/a/cni/changed.yaml');
        // Nothing is visible before publish.
        expect(existsSync(path.join(dir, 'current'))).toBe(false);
        await new Promise((resolve) => setTimeout(resolve, 20));
      },
      final,
    );

    expect(listTree(current!)).toEqual(final);
    // Kept as written ahead, not written again.
    expect(lstatSync(path.join(current!, 'clusters/a/cni/kept.yaml'), { bigint: true }).mtimeNs).toBe(keptWritten);
    expect(stagings(dir)).toEqual([]);
  });

  it('writes ahead only what differs from the current tree, and never writes through a file the current tree shares with the spare one', async () => {
    const dir = path.join(await tempDir(), 'out');
    const first = { 'a/kept.yaml': 'kept\n', 'a/changed.yaml': 'v1\n' };
    await run(dir, async () => undefined, first);
    const second = await run(dir, async () => undefined, { 'a/kept.yaml': 'kept\n', 'a/changed.yaml': 'v2\n' });
    const secondBefore = listTree(second!);

    const third = { 'a/kept.yaml': 'kept\n', 'a/changed.yaml': 'v3\n', 'b/new.yaml': 'new\n' };
    const thirdTree = await run(
      dir,
      async (publisher) => {
        // The spare (first) tree becomes the staging directory; its kept.yaml is the current tree's file.
        publisher.prestage(Object.entries(third));
        await writtenAhead(dir, 'b/new.yaml');
        await writtenAhead(dir, 'a/changed.yaml');
        expect(listTree(second!)).toEqual(secondBefore);
        const [staging] = stagings(dir);
        expect(lstatSync(path.join(dir, STATE, staging!, 'a/kept.yaml')).ino).toBe(
          lstatSync(path.join(second!, 'a/kept.yaml')).ino,
        );
      },
      third,
    );

    expect(listTree(thirdTree!)).toEqual(third);
    expect(listTree(second!)).toEqual(secondBefore);
    expect(lstatSync(path.join(thirdTree!, 'a/kept.yaml')).ino).toBe(lstatSync(path.join(second!, 'a/kept.yaml')).ino);
  });

  it("leaves nothing behind when the run does not publish: not the staging directory, not a first run's directory", async () => {
    const dir = path.join(await tempDir(), 'out');
    await run(dir, async (publisher) => {
      publisher.prestage([['clusters/a/cni/x.yaml', 'x\n']]);
      await writtenAhead(dir, 'clusters/a/cni/x.yaml');
    });
    expect(existsSync(dir)).toBe(false);

    // A directory that holds a tree keeps exactly that tree, and its spare.
    await run(dir, async () => undefined, { 'a.yaml': 'a\n' });
    const current = await run(dir, async () => undefined, { 'a.yaml': 'b\n' });
    const trees = readdirSync(path.join(dir, STATE, 'trees')).sort();
    await run(dir, async (publisher) => {
      publisher.prestage([['a.yaml', 'c\n']]);
      await writtenAhead(dir, 'a.yaml');
    });
    expect(stagings(dir)).toEqual([]);
    expect(listTree(current!)).toEqual({ 'a.yaml': 'b\n' });
    // The spare tree was taken for staging and is gone with it; the next publish starts a new one.
    expect(readdirSync(path.join(dir, STATE, 'trees')).length).toBeLessThanOrEqual(trees.length);
    expect(listTree((await run(dir, async () => undefined, { 'a.yaml': 'd\n' }))!)).toEqual({ 'a.yaml': 'd\n' });
  });

  it('writes nothing without the lock, and nothing outside the staging directory for a path the tree would refuse', async () => {
    const root = await tempDir();
    const dir = path.join(root, 'out');
    const unlocked = new DirectoryPublisher(dir);
    await unlocked.readPrevious();
    unlocked.prestage([['a.yaml', 'a\n']]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(existsSync(dir)).toBe(false);

    await mkdir(path.join(root, 'outside'));
    const current = await run(
      dir,
      async (publisher) => {
        publisher.prestage([
          ['../outside/escape.yaml', 'escaped\n'],
          ['ok.yaml', 'ok\n'],
        ]);
        publisher.prestage([['later.yaml', 'later\n']]);
        await new Promise((resolve) => setTimeout(resolve, 50));
      },
      { 'ok.yaml': 'ok\n', 'later.yaml': 'later\n' },
    );
    expect(readdirSync(path.join(root, 'outside'))).toEqual([]);
    expect(listTree(current!)).toEqual({ 'ok.yaml': 'ok\n', 'later.yaml': 'later\n' });
  });

  it('publishes the same tree when the staging directory was tampered with during the render', async () => {
    const dir = path.join(await tempDir(), 'out');
    const final = { 'a/x.yaml': 'x\n', 'a/y.yaml': 'y\n' };
    const current = await run(
      dir,
      async (publisher) => {
        publisher.prestage(Object.entries(final));
        await writtenAhead(dir, 'a/y.yaml');
        const [staging] = stagings(dir);
        // Not ours to do, but publish must not trust what it did not write: a replaced file, a stray one.
        await writeFile(path.join(dir, STATE, staging!, 'a/stray.yaml'), 'stray\n');
      },
      final,
    );
    expect(listTree(current!)).toEqual(final);
  });
});
