// The CEL syntax verdicts kept across runs (src/release/cel-syntax-memo.ts): a second run gives the
// same verdicts without checking again, and only for the library they were made with; a file that
// does not verify is ignored and replaced, never trusted.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { conditionSyntaxError } from '../src/core/addon-wait-conditions.js';
import { celLibraryIdentity } from '../src/cache/cel-library-identity.js';
import { CEL_SYNTAX_FILE, CelSyntaxMemo } from '../src/release/cel-syntax-memo.js';
import { tempDir } from './support/cli.js';

const VALID = 'kindnet.status.numberReady > 0';
const INVALID = 'kindnet.status.numberReady >';

/** The real check, counting its calls. */
function countingCheck(): { compute: (expression: string) => string | undefined; calls: string[] } {
  const calls: string[] = [];
  return { calls, compute: (expression) => (calls.push(expression), conditionSyntaxError(expression)) };
}

describe('CelSyntaxMemo', () => {
  it('remembers each verdict for the next run, which then checks nothing', async () => {
    const root = await tempDir('csk-cel-memo-');
    const first = countingCheck();
    const memo = await CelSyntaxMemo.open(root, { library: 'lib 1', compute: first.compute });
    expect(memo.check(VALID)).toBeUndefined();
    const error = memo.check(INVALID);
    expect(error).toBe(conditionSyntaxError(INVALID));
    expect(error).toBeTruthy();
    expect(memo.check(VALID)).toBeUndefined();
    expect(first.calls).toEqual([VALID, INVALID]);
    await memo.save();

    const second = countingCheck();
    const again = await CelSyntaxMemo.open(root, { library: 'lib 1', compute: second.compute });
    expect(again.check(VALID)).toBeUndefined();
    expect(again.check(INVALID)).toBe(error);
    expect(second.calls).toEqual([]);
  });

  it('checks again under another library, and writes nothing when nothing was checked', async () => {
    const root = await tempDir('csk-cel-memo-');
    const quiet = await CelSyntaxMemo.open(root, { library: 'lib 1' });
    await quiet.save();
    await expect(readFile(path.join(root, CEL_SYNTAX_FILE))).rejects.toMatchObject({ code: 'ENOENT' });

    const memo = await CelSyntaxMemo.open(root, { library: 'lib 1' });
    memo.check(VALID);
    await memo.save();
    const upgraded = countingCheck();
    const next = await CelSyntaxMemo.open(root, { library: 'lib 2', compute: upgraded.compute });
    expect(next.check(VALID)).toBeUndefined();
    expect(upgraded.calls).toEqual([VALID]);
  });

  it('ignores a file that does not verify (an edited verdict, torn JSON) and replaces it', async () => {
    const root = await tempDir('csk-cel-memo-');
    const memo = await CelSyntaxMemo.open(root, { library: 'lib 1' });
    memo.check(INVALID);
    await memo.save();
    const file = path.join(root, CEL_SYNTAX_FILE);
    // Someone marks the invalid expression valid without fixing the digest: not trusted.
    const entry = JSON.parse(await readFile(file, 'utf8')) as { verdicts: [string, string | null][] };
    entry.verdicts = [[INVALID, null]];
    await writeFile(file, JSON.stringify(entry));
    const edited = countingCheck();
    const reopened = await CelSyntaxMemo.open(root, { library: 'lib 1', compute: edited.compute });
    expect(reopened.check(INVALID)).toBe(conditionSyntaxError(INVALID));
    expect(edited.calls).toEqual([INVALID]);
    await reopened.save();
    expect((JSON.parse(await readFile(file, 'utf8')) as { verdicts: unknown }).verdicts).toEqual([
      [INVALID, conditionSyntaxError(INVALID)],
    ]);

    await writeFile(file, '{"schema": 1, "libr');
    const torn = countingCheck();
    expect((await CelSyntaxMemo.open(root, { library: 'lib 1', compute: torn.compute })).check(VALID)).toBeUndefined();
    expect(torn.calls).toEqual([VALID]);
  });

  it('stays bounded: past a thousand verdicts a save keeps only what this run checked', async () => {
    const root = await tempDir('csk-cel-memo-');
    const stub = { library: 'lib 1', compute: () => undefined };
    const many = await CelSyntaxMemo.open(root, stub);
    for (let index = 0; index < 1000; index += 1) many.check(`x == ${index}`);
    await many.save();
    const next = await CelSyntaxMemo.open(root, stub);
    next.check('x == 1');
    next.check('y == 1');
    await next.save();
    const entry = JSON.parse(await readFile(path.join(root, CEL_SYNTAX_FILE), 'utf8')) as { verdicts: unknown };
    expect(entry.verdicts).toEqual([
      ['x == 1', null],
      ['y == 1', null],
    ]);
  });

  it('names the library by the file node would load, without loading it', () => {
    const identity = celLibraryIdentity();
    expect(identity).toMatch(/@marcbachmann\/cel-js\/.+ \d+ [\d.]+ \d+$/);
    expect(identity).toBe(celLibraryIdentity());
  });
});
