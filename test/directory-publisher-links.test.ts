// A changed render writes only the files that changed: unchanged ones are hard links into the tree
// it replaces, so readers see whole trees and a one-cluster change to a large fleet stays cheap.
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
    await first.publish(new Map([['a/kept.yaml', 'kept: 1\n'], ['a/changed.yaml', 'value: 1\n']]));
    const keptBefore = await stat(path.join(dir, 'current', 'a', 'kept.yaml'));
    const changedBefore = await stat(path.join(dir, 'current', 'a', 'changed.yaml'));

    const second = new DirectoryPublisher(dir);
    await second.readPrevious();
    const result = await second.publish(new Map([['a/kept.yaml', 'kept: 1\n'], ['a/changed.yaml', 'value: 2\n']]));

    expect(result.changed).toBe(true);
    const keptAfter = await stat(path.join(dir, 'current', 'a', 'kept.yaml'));
    const changedAfter = await stat(path.join(dir, 'current', 'a', 'changed.yaml'));
    expect(keptAfter.ino).toBe(keptBefore.ino);
    expect(changedAfter.ino).not.toBe(changedBefore.ino);
    expect(await readFile(path.join(dir, 'current', 'a', 'changed.yaml'), 'utf8')).toBe('value: 2\n');
    expect(await readFile(path.join(dir, 'current', 'a', 'kept.yaml'), 'utf8')).toBe('kept: 1\n');
  });
});
