import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DirectoryPublisher } from '../gitops/directory-publisher.js';
import { PublishError } from '../gitops/publish-error.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';

const CHANGE: ChangeSummary = { title: 'Render', body: '', trailers: {} };
const LOCK = { timeoutMs: 0, command: 'test' };

function tree(files: Record<string, string>): RenderedTree {
  return new Map(Object.entries(files));
}

/** Every file under `dir` with its content, to compare whole trees (following a top-level link). */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (relative: string): void => {
    for (const entry of readdirSync(path.join(dir, relative), { withFileTypes: true })) {
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) files[child] = readFileSync(path.join(dir, child), 'utf8');
    }
  };
  walk('');
  return files;
}

/** What a reader of the output sees: the tree behind `<out>/current`. */
function current(out: string): Record<string, string> {
  return snapshot(path.join(out, 'current'));
}

async function rejection(promise: Promise<unknown>): Promise<PublishError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(PublishError);
  return error as PublishError;
}

let root: string;

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'clusterstack-dir-'));
});

afterEach(() => {
  chmodSync(root, 0o755);
  rmSync(root, { recursive: true, force: true });
});

describe('DirectoryPublisher', () => {
  it('writes the tree behind <dir>/current and reads it back', async () => {
    const out = path.join(root, 'nested', 'out');
    const publisher = new DirectoryPublisher(out);
    expect(await publisher.readPrevious()).toEqual(new Map());
    const result = await publisher.publish(tree({ 'b/c.yaml': 'c\n', 'a.yaml': 'a\n' }), CHANGE);
    expect(result).toEqual({ changed: true, written: ['a.yaml', 'b/c.yaml'], removed: [], revision: null });
    expect(current(out)).toEqual({ 'a.yaml': 'a\n', 'b/c.yaml': 'c\n' });
    expect(readdirSync(out).sort()).toEqual(['.clusterstack', 'current']);
    expect(readlinkSync(path.join(out, 'current'))).toMatch(/^\.clusterstack\/trees\/[0-9a-f]{16}$/);
    expect(await publisher.readPrevious()).toEqual(tree({ 'a.yaml': 'a\n', 'b/c.yaml': 'c\n' }));
    expect(readdirSync(path.join(root, 'nested'))).toEqual(['out']);
  });

  it('reads back files of any size exactly, also multi-byte characters across its read chunks', async () => {
    const out = path.join(root, 'out');
    // 256 KiB chunks: a two-byte character at every odd offset straddles each chunk boundary.
    const large = `${'é'.repeat(300_000)}x\n`;
    const files = tree({
      'empty.yaml': '',
      'exact.yaml': 'a'.repeat(256 * 1024),
      'large.yaml': large,
      'small.yaml': 'ünï\n',
    });
    await new DirectoryPublisher(out).publish(files, CHANGE);
    expect(await new DirectoryPublisher(out).readPrevious()).toEqual(files);
  });

  it('writes nothing when the directory already holds the tree', async () => {
    const out = path.join(root, 'out');
    const publisher = new DirectoryPublisher(out);
    await publisher.publish(tree({ 'a.yaml': 'a\n', 'b/c.yaml': 'c\n' }), CHANGE);
    const before = {
      link: lstatSync(path.join(out, 'current')),
      file: statSync(path.join(out, 'current', 'b', 'c.yaml')),
    };

    const result = await publisher.publish(tree({ 'b/c.yaml': 'c\n', 'a.yaml': 'a\n' }), CHANGE);
    expect(result).toEqual({ changed: false, written: [], removed: [], revision: null });
    const after = {
      link: lstatSync(path.join(out, 'current')),
      file: statSync(path.join(out, 'current', 'b', 'c.yaml')),
    };
    expect(after.link.ino).toBe(before.link.ino);
    expect(after.file.ino).toBe(before.file.ino);
    expect(after.file.mtimeMs).toBe(before.file.mtimeMs);
  });

  it('swaps inside the directory, never renaming it (it may be a mount point), and keeps its mode', async () => {
    const out = path.join(root, 'out');
    mkdirSync(out, { mode: 0o750 });
    chmodSync(out, 0o750);
    const inode = statSync(out).ino;
    const publisher = new DirectoryPublisher(out);
    await publisher.publish(tree({ 'keep.yaml': 'keep\n', 'old/stale.yaml': 'stale\n' }), CHANGE);
    const first = readlinkSync(path.join(out, 'current'));
    await publisher.readPrevious();
    const result = await publisher.publish(tree({ 'keep.yaml': 'keep\n', 'new/file.yaml': 'new\n' }), CHANGE);
    expect(result).toMatchObject({ changed: true, written: ['new/file.yaml'], removed: ['old/stale.yaml'] });
    expect(current(out)).toEqual({ 'keep.yaml': 'keep\n', 'new/file.yaml': 'new\n' });
    expect(statSync(out).ino).toBe(inode);
    expect(statSync(out).mode & 0o777).toBe(0o750);
    // The replaced tree stays for readers that resolved `current` before the swap, until the next run.
    expect(snapshot(path.join(out, first))).toEqual({ 'keep.yaml': 'keep\n', 'old/stale.yaml': 'stale\n' });
    expect(readdirSync(root)).toEqual(['out']);
  });

  it('refuses an output path that is a file and leaves it alone', async () => {
    const file = path.join(root, 'out');
    writeFileSync(file, 'not a directory\n');
    const publisher = new DirectoryPublisher(file);
    const error = await rejection(publisher.publish(tree({ 'a.yaml': 'a\n' }), CHANGE));
    expect(error.kind).toBe('invalid-target');
    expect(error.message).toBe(`--output ${file} is a file; give a directory`);
    expect(readFileSync(file, 'utf8')).toBe('not a directory\n');
    await expect(publisher.readPrevious()).rejects.toThrow(/is a file; give a directory/);
    expect(readdirSync(root)).toEqual(['out']);
  });

  it('refuses a tree where a file is also a directory, before writing anything', async () => {
    const out = path.join(root, 'out');
    const publisher = new DirectoryPublisher(out);
    await publisher.publish(tree({ 'old.yaml': 'old\n' }), CHANGE);
    const error = await rejection(publisher.publish(tree({ a: 'file\n', 'a/b': 'nested\n' }), CHANGE));
    expect(error.kind).toBe('invalid-input');
    expect(error.message).toMatch(/"a\/b" needs "a" to be a directory/);
    expect(current(out)).toEqual({ 'old.yaml': 'old\n' });
    expect(readdirSync(root)).toEqual(['out']);
  });

  it('keeps the previous tree and leaves no temporary directory when a write fails midway', async () => {
    const out = path.join(root, 'out');
    const publisher = new DirectoryPublisher(out);
    await publisher.publish(tree({ 'old.yaml': 'old\n', 'x/y.yaml': 'y\n' }), CHANGE);
    // Sorted last, so earlier files are already written when this name is refused by the file system.
    const error = await rejection(
      publisher.publish(tree({ 'a.yaml': 'a\n', [`z/${'n'.repeat(300)}.yaml`]: 'too long\n' }), CHANGE),
    );
    expect(error.message).toMatch(/ENAMETOOLONG/);
    expect(error.message).toMatch(/the previous contents are unchanged/);
    expect(current(out)).toEqual({ 'old.yaml': 'old\n', 'x/y.yaml': 'y\n' });
    expect(readdirSync(path.join(out, '.clusterstack')).sort()).toEqual(['output.json', 'trees']);
    expect(readdirSync(root)).toEqual(['out']);
  });

  it('says so when a parent of the output path is a file', async () => {
    writeFileSync(path.join(root, 'file'), 'x');
    const error = await rejection(
      new DirectoryPublisher(path.join(root, 'file', 'out')).publish(tree({ 'a.yaml': 'a\n' }), CHANGE),
    );
    expect(error.message).toBe(
      `cannot write --output ${path.join(root, 'file', 'out')}: a parent of it is a file, not a directory`,
    );
    expect(readdirSync(root)).toEqual(['file']);
  });
});

describe('DirectoryPublisher ownership', () => {
  it('refuses a directory holding files it did not write, naming the directory and --adopt-output, and touches nothing', async () => {
    const out = path.join(root, 'project');
    mkdirSync(path.join(out, 'src'), { recursive: true });
    writeFileSync(path.join(out, 'package.json'), '{}\n');
    const publisher = new DirectoryPublisher(out);
    const error = await rejection(publisher.lock(LOCK));
    expect(error.kind).toBe('invalid-target');
    expect(error.message).toBe(
      `--output ${out} holds files clusterstack did not write (package.json, src); nothing was written. Give an empty or new directory, or pass --adopt-output to publish into it anyway (its files stay untouched; the render goes to ${out}/current)`,
    );
    await expect(publisher.readPrevious()).rejects.toThrow(/--adopt-output/);
    await expect(publisher.publish(tree({ 'a.yaml': 'a\n' }), CHANGE)).rejects.toThrow(/--adopt-output/);
    expect(readdirSync(out).sort()).toEqual(['package.json', 'src']);
  });

  it('adopts such a directory when asked, leaving its files where they are', async () => {
    const out = path.join(root, 'volume');
    mkdirSync(out);
    writeFileSync(path.join(out, 'lost+found.txt'), 'theirs\n');
    const publisher = new DirectoryPublisher(out, { adopt: true });
    const lock = await publisher.lock(LOCK);
    await publisher.readPrevious();
    await publisher.publish(tree({ 'a.yaml': 'a\n' }), CHANGE);
    await lock.release();
    expect(readFileSync(path.join(out, 'lost+found.txt'), 'utf8')).toBe('theirs\n');
    expect(current(out)).toEqual({ 'a.yaml': 'a\n' });
    // From now on it is ours, without the flag.
    expect(await new DirectoryPublisher(out).readPrevious()).toEqual(tree({ 'a.yaml': 'a\n' }));
  });

  it('refuses a "current" that is not its own link, even when adopting', async () => {
    const out = path.join(root, 'out');
    mkdirSync(path.join(out, 'current'), { recursive: true });
    const error = await rejection(new DirectoryPublisher(out, { adopt: true }).lock(LOCK));
    expect(error.message).toMatch(/holds a "current" that is not clusterstack's link/);
  });

  it('takes over a tree an earlier version wrote at the top, and removes it once the new one is current', async () => {
    const out = path.join(root, 'out');
    mkdirSync(path.join(out, 'management'), { recursive: true });
    writeFileSync(path.join(out, 'provenance.json'), '{"generator": "clusterstack-gitops", "units": []}\n');
    writeFileSync(path.join(out, 'management', 'a.yaml'), 'a\n');
    const publisher = new DirectoryPublisher(out);
    expect(await publisher.readPrevious()).toEqual(
      tree({ 'management/a.yaml': 'a\n', 'provenance.json': '{"generator": "clusterstack-gitops", "units": []}\n' }),
    );
    await publisher.publish(tree({ 'management/a.yaml': 'a\n', 'provenance.json': '{}\n' }), CHANGE);
    expect(readdirSync(out).sort()).toEqual(['.clusterstack', 'current']);
    expect(current(out)).toEqual({ 'management/a.yaml': 'a\n', 'provenance.json': '{}\n' });
  });

  it('removes what it created for the lock when the run publishes nothing', async () => {
    const out = path.join(root, 'new');
    const lock = await new DirectoryPublisher(out).lock(LOCK);
    expect(existsSync(path.join(out, '.clusterstack', 'lock'))).toBe(true);
    await lock.release();
    expect(existsSync(out)).toBe(false);
    const empty = path.join(root, 'empty');
    mkdirSync(empty);
    await (await new DirectoryPublisher(empty).lock(LOCK)).release();
    expect(readdirSync(empty)).toEqual([]);
  });

  it('clears a crashed run’s leftovers (staging, links, trees) under the lock, keeping the current tree and one spare', async () => {
    const out = path.join(root, 'out');
    await new DirectoryPublisher(out).publish(tree({ 'a.yaml': 'a\n' }), CHANGE);
    const state = path.join(out, '.clusterstack');
    mkdirSync(path.join(state, 'staging-dead', 'x'), { recursive: true });
    mkdirSync(path.join(state, 'trees', 'ffffffffffffffff'), { recursive: true });
    mkdirSync(path.join(state, 'trees', '0000000000000000'), { recursive: true });
    symlinkSync('.clusterstack/trees/ffffffffffffffff', path.join(state, 'current-dead'));
    const publisher = new DirectoryPublisher(out);
    const lock = await publisher.lock(LOCK);
    expect(await publisher.readPrevious()).toEqual(tree({ 'a.yaml': 'a\n' }));
    await lock.release();
    expect(readdirSync(state).sort()).toEqual(['output.json', 'trees']);
    // The first other tree in name order stays, for the next publish to rework.
    expect(readdirSync(path.join(state, 'trees')).sort()).toEqual(
      ['0000000000000000', path.basename(readlinkSync(path.join(out, 'current')))].sort(),
    );
  });

  it('removes the .new/.old directories an earlier version’s interrupted swap left beside it', async () => {
    const out = path.join(root, 'out');
    await new DirectoryPublisher(out).publish(tree({ 'a.yaml': 'a\n' }), CHANGE);
    for (const leftover of ['.out.new-0123456789ab', '.out.old-ba9876543210', '.other.new-0123456789ab'])
      mkdirSync(path.join(root, leftover, 'x'), { recursive: true });
    const publisher = new DirectoryPublisher(out);
    const lock = await publisher.lock(LOCK);
    await publisher.readPrevious();
    await lock.release();
    expect(readdirSync(root).sort()).toEqual(['.other.new-0123456789ab', 'out']);
  });

  it('refuses to be an input directory or hold one', async () => {
    const inputs = path.join(root, 'fleet', 'manifests');
    mkdirSync(inputs, { recursive: true });
    const guarded = (dir: string): DirectoryPublisher =>
      new DirectoryPublisher(dir, { adopt: true, protectedPaths: [{ label: 'input', path: inputs }] });
    expect((await rejection(guarded(inputs).lock(LOCK))).message).toBe(
      `--output ${inputs} is the input ${inputs}; publishing there would replace or delete it, so nothing was written. Give an output directory outside your inputs and release source`,
    );
    expect((await rejection(guarded(path.join(root, 'fleet')).lock(LOCK))).message).toMatch(/contains the input/);
    expect(readdirSync(path.join(root, 'fleet'))).toEqual(['manifests']);
  });
});
