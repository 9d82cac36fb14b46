// A changed render writes only the files that changed: unchanged ones are hard links into the tree
// it replaces, so readers see whole trees and a one-cluster change to a large fleet stays cheap. From
// the third publish on, the tree before the current one is reworked into the new one.
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DirectoryPublisher } from '../gitops/directory-publisher.js';
import { tempDir } from './support/cli.js';

describe('DirectoryPublisher', () => {
  it('links files unchanged since the replaced tree and writes the changed ones', async () => {
    const dir = path.join(await tempDir(), 'out');
    const first = new DirectoryPublisher(dir);
    await first.readPrevious();
    await first.publish(
      new Map([
        ['a/kept.yaml', 'kept: 1\n'],
        ['a/changed.yaml', 'value: 1\n'],
      ]),
    );
    const keptBefore = await stat(path.join(dir, 'current', 'a', 'kept.yaml'));
    const changedBefore = await stat(path.join(dir, 'current', 'a', 'changed.yaml'));

    const second = new DirectoryPublisher(dir);
    await second.readPrevious();
    const result = await second.publish(
      new Map([
        ['a/kept.yaml', 'kept: 1\n'],
        ['a/changed.yaml', 'value: 2\n'],
      ]),
    );

    expect(result.changed).toBe(true);
    const keptAfter = await stat(path.join(dir, 'current', 'a', 'kept.yaml'));
    const changedAfter = await stat(path.join(dir, 'current', 'a', 'changed.yaml'));
    expect(keptAfter.ino).toBe(keptBefore.ino);
    expect(changedAfter.ino).not.toBe(changedBefore.ino);
    expect(await readFile(path.join(dir, 'current', 'a', 'changed.yaml'), 'utf8')).toBe('value: 2\n');
    expect(await readFile(path.join(dir, 'current', 'a', 'kept.yaml'), 'utf8')).toBe('kept: 1\n');
  });

  it('reworks the tree before the current one into the next, never writing through a file the current tree shares', async () => {
    const dir = path.join(await tempDir(), 'out');
    const publish = async (files: Record<string, string>): Promise<string> => {
      const publisher = new DirectoryPublisher(dir);
      const lock = await publisher.lock({ timeoutMs: 0, command: 'test' });
      try {
        await publisher.readPrevious();
        await publisher.publish(new Map(Object.entries(files).sort(([a], [b]) => a.localeCompare(b))));
      } finally {
        await lock.release();
      }
      return path.join(dir, readlinkSync(path.join(dir, 'current')));
    };
    const listTree = (root: string): Record<string, string> => {
      const found: Record<string, string> = {};
      const walk = (relative: string): void => {
        for (const entry of readdirSync(path.join(root, relative), { withFileTypes: true })) {
          const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
          if (entry.isDirectory()) walk(child);
          else
            found[child] = entry.isSymbolicLink()
              ? `-> ${readlinkSync(path.join(root, child))}`
              : readFileSync(path.join(root, child), 'utf8');
        }
      };
      walk('');
      return found;
    };
    const first = { 'a/kept.yaml': 'kept\n', 'a/changed.yaml': 'v1\n', 'b/gone.yaml': 'gone\n', c: 'a file\n' };
    const firstTree = await publish(first);
    const second = { 'a/kept.yaml': 'kept\n', 'a/changed.yaml': 'v2\n', 'b/gone.yaml': 'gone\n', c: 'a file\n' };
    const secondTree = await publish(second);
    // Someone wrote into the spare tree (no reader should): what it holds is not trusted.
    writeFileSync(path.join(firstTree, 'stray.yaml'), 'stray\n');
    mkdirSync(path.join(firstTree, 'd', 'deep'), { recursive: true });
    writeFileSync(path.join(firstTree, 'd', 'deep', 'x.yaml'), 'x\n');
    symlinkSync('/etc/passwd', path.join(firstTree, 'e.yaml'));
    const secondBefore = listTree(secondTree);
    const third = {
      'a/kept.yaml': 'kept\n',
      'a/changed.yaml': 'v3\n',
      'c/now-a-directory.yaml': 'c\n',
      'e.yaml': 'e\n',
      'f/new.yaml': 'new\n',
    };
    const thirdTree = await publish(third);

    expect(listTree(thirdTree)).toEqual(third);
    // The current tree before this publish kept every byte, though the two share unchanged files.
    expect(listTree(secondTree)).toEqual(secondBefore);
    expect(lstatSync(path.join(thirdTree, 'a', 'kept.yaml')).ino).toBe(
      lstatSync(path.join(secondTree, 'a', 'kept.yaml')).ino,
    );
    // One spare besides the current tree: the one just replaced.
    expect(readdirSync(path.join(dir, '.clusterstack', 'trees')).sort()).toEqual(
      [path.basename(secondTree), path.basename(thirdTree)].sort(),
    );

    // And back to the first content: the spare (second tree) is reworked again, whole.
    const fourthTree = await publish(first);
    expect(listTree(fourthTree)).toEqual(first);
    expect(listTree(thirdTree)).toEqual(third);
  });
});
