import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DirectoryPublisher } from '../gitops/directory-publisher.js';
import { PublishError } from '../gitops/publish-error.js';
import type { ChangeSummary, RenderedTree } from '../gitops/publisher.js';

const CHANGE: ChangeSummary = { title: 'Render', body: '', trailers: {} };

function tree(files: Record<string, string>): RenderedTree {
  return new Map(Object.entries(files));
}

/** Every file under `dir` with its content, to compare whole trees. */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files[path.relative(dir, path.join(entry.parentPath, entry.name))] = readFileSync(path.join(entry.parentPath, entry.name), 'utf8');
  }
  return files;
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
  it('writes the tree into a new directory and reads it back', async () => {
    const out = path.join(root, 'nested', 'out');
    const publisher = new DirectoryPublisher(out);
    expect(await publisher.readPrevious()).toEqual(new Map());
    const result = await publisher.publish(tree({ 'b/c.yaml': 'c\n', 'a.yaml': 'a\n' }), CHANGE);
    expect(result).toEqual({ changed: true, written: ['a.yaml', 'b/c.yaml'], removed: [], revision: null });
    expect(snapshot(out)).toEqual({ 'a.yaml': 'a\n', 'b/c.yaml': 'c\n' });
    expect(await publisher.readPrevious()).toEqual(tree({ 'a.yaml': 'a\n', 'b/c.yaml': 'c\n' }));
    expect(readdirSync(path.join(root, 'nested'))).toEqual(['out']);
  });

  it('writes nothing when the directory already holds the tree', async () => {
    const out = path.join(root, 'out');
    const publisher = new DirectoryPublisher(out);
    await publisher.publish(tree({ 'a.yaml': 'a\n', 'b/c.yaml': 'c\n' }), CHANGE);
    const before = { dir: statSync(out), file: statSync(path.join(out, 'b', 'c.yaml')) };

    const result = await publisher.publish(tree({ 'b/c.yaml': 'c\n', 'a.yaml': 'a\n' }), CHANGE);
    expect(result).toEqual({ changed: false, written: [], removed: [], revision: null });
    const after = { dir: statSync(out), file: statSync(path.join(out, 'b', 'c.yaml')) };
    expect(after.dir.ino).toBe(before.dir.ino);
    expect(after.file.ino).toBe(before.file.ino);
    expect(after.file.mtimeMs).toBe(before.file.mtimeMs);
  });

  it('removes stale files and empty directories, keeping the directory mode', async () => {
    const out = path.join(root, 'out');
    mkdirSync(path.join(out, 'old', 'empty'), { recursive: true });
    writeFileSync(path.join(out, 'old', 'stale.yaml'), 'stale\n');
    writeFileSync(path.join(out, 'keep.yaml'), 'keep\n');
    chmodSync(out, 0o750);
    const publisher = new DirectoryPublisher(out);
    const result = await publisher.publish(tree({ 'keep.yaml': 'keep\n', 'new/file.yaml': 'new\n' }), CHANGE);
    expect(result).toMatchObject({ changed: true, written: ['new/file.yaml'], removed: ['old/stale.yaml'] });
    expect(snapshot(out)).toEqual({ 'keep.yaml': 'keep\n', 'new/file.yaml': 'new\n' });
    expect(readdirSync(out).sort()).toEqual(['keep.yaml', 'new']);
    expect(statSync(out).mode & 0o777).toBe(0o750);
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
    expect(snapshot(out)).toEqual({ 'old.yaml': 'old\n' });
    expect(readdirSync(root)).toEqual(['out']);
  });

  it('keeps the previous tree and leaves no temporary directory when a write fails midway', async () => {
    const out = path.join(root, 'out');
    const publisher = new DirectoryPublisher(out);
    await publisher.publish(tree({ 'old.yaml': 'old\n', 'x/y.yaml': 'y\n' }), CHANGE);
    // Sorted last, so earlier files are already written when this name is refused by the file system.
    const error = await rejection(publisher.publish(tree({ 'a.yaml': 'a\n', [`z/${'n'.repeat(300)}.yaml`]: 'too long\n' }), CHANGE));
    expect(error.message).toMatch(/ENAMETOOLONG/);
    expect(error.message).toMatch(/the previous contents are unchanged/);
    expect(snapshot(out)).toEqual({ 'old.yaml': 'old\n', 'x/y.yaml': 'y\n' });
    expect(readdirSync(root)).toEqual(['out']);
  });

  it('says so when a parent of the output path is a file', async () => {
    writeFileSync(path.join(root, 'file'), 'x');
    const error = await rejection(new DirectoryPublisher(path.join(root, 'file', 'out')).publish(tree({ 'a.yaml': 'a\n' }), CHANGE));
    expect(error.message).toBe(`cannot write --output ${path.join(root, 'file', 'out')}: a parent of it is a file, not a directory`);
    expect(readdirSync(root)).toEqual(['file']);
  });
});
