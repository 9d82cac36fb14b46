// lint/cached-build.js, the per-machine cache of `npm run build`: a clean clone of sources this machine
// already built gets the same dist/ without building, anything else builds as before, and a failed
// build keeps nothing. A stand-in build (a node script that counts its runs) keeps it fast.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const SCRIPT = path.resolve('lint/cached-build.js');
const root = mkdtempSync(path.join(os.tmpdir(), 'csk-cached-build-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Writes dist/<name>.js for each src/<name>.ts (its text upper-cased) and counts its runs in
// ../runs; exits 3 when a source says FAIL, as a type error would.
const STAND_IN_BUILD = `
import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
appendFileSync('../runs', 'x');
mkdirSync('dist/src', { recursive: true });
for (const file of readdirSync('src')) {
  const text = readFileSync('src/' + file, 'utf8');
  if (text.includes('FAIL')) { console.error('src/' + file + ': error'); process.exit(3); }
  writeFileSync('dist/src/' + file.replace(/\\.ts$/, '.js'), text.toUpperCase());
}
`;

let clones = 0;
/** A new clone of a project with these sources, in its own directory beside the others of a case. */
function clone(caseDir: string, sources: Record<string, string>): string {
  const dir = path.join(caseDir, `clone-${(clones += 1)}`);
  mkdirSync(path.join(dir, 'src'), { recursive: true });
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ include: ['src/**/*.ts'] }));
  writeFileSync(path.join(dir, 'package-lock.json'), '{"lockfileVersion": 3}');
  writeFileSync(path.join(dir, 'build.mjs'), STAND_IN_BUILD);
  for (const [name, text] of Object.entries(sources)) writeFileSync(path.join(dir, 'src', name), text);
  return dir;
}

function newCase(): { dir: string; cache: string; runs: () => number } {
  const dir = mkdtempSync(path.join(root, 'case-'));
  return {
    dir,
    cache: path.join(dir, 'machine-cache'),
    runs: () => (existsSync(path.join(dir, 'runs')) ? readFileSync(path.join(dir, 'runs'), 'utf8').length : 0),
  };
}

function build(cloneDir: string, cache: string) {
  const result = spawnSync(process.execPath, [SCRIPT, '--', process.execPath, 'build.mjs'], {
    cwd: cloneDir,
    env: { ...process.env, CLUSTERSTACK_BUILD_CACHE: cache },
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const distOf = (dir: string): Record<string, string> =>
  Object.fromEntries(
    readdirSync(path.join(dir, 'dist/src')).map((file) => [
      file,
      readFileSync(path.join(dir, 'dist/src', file), 'utf8'),
    ]),
  );

describe('the build kept per machine', () => {
  it("gives a second clone of the same sources the first one's dist/ without building, and builds again when a source changes", () => {
    const { dir, cache, runs } = newCase();
    const first = clone(dir, { 'a.ts': 'export const a = 1;\n', 'b.ts': 'export const b = 2;\n' });
    expect(build(first, cache).status).toBe(0);
    expect(runs()).toBe(1);

    const second = clone(dir, { 'a.ts': 'export const a = 1;\n', 'b.ts': 'export const b = 2;\n' });
    const kept = build(second, cache);
    expect(kept.status).toBe(0);
    expect(kept.stdout).toContain('not built again');
    expect(runs()).toBe(1);
    expect(distOf(second)).toEqual(distOf(first));

    const changed = clone(dir, { 'a.ts': 'export const a = 10;\n', 'b.ts': 'export const b = 2;\n' });
    expect(build(changed, cache).status).toBe(0);
    expect(runs()).toBe(2);
    expect(distOf(changed)['a.js']).toBe('EXPORT CONST A = 10;\n');

    // A source file renamed is a change too, though the contents are the same.
    const renamed = clone(dir, { 'a2.ts': 'export const a = 1;\n', 'b.ts': 'export const b = 2;\n' });
    expect(build(renamed, cache).status).toBe(0);
    expect(runs()).toBe(3);
  });

  it('replaces the whole dist/ with the kept one: no file of an older build stays beside it', () => {
    const { dir, cache } = newCase();
    const sources = { 'a.ts': 'export const a = 1;\n' };
    expect(build(clone(dir, sources), cache).status).toBe(0);
    const second = clone(dir, sources);
    mkdirSync(path.join(second, 'dist/src'), { recursive: true });
    writeFileSync(path.join(second, 'dist/src/removed-module.js'), 'stale');
    expect(build(second, cache).status).toBe(0);
    expect(Object.keys(distOf(second))).toEqual(['a.js']);
  });

  it("passes a failed build's exit code on and keeps nothing of it", () => {
    const { dir, cache, runs } = newCase();
    const sources = { 'a.ts': 'FAIL\n' };
    const failed = build(clone(dir, sources), cache);
    expect(failed.status).toBe(3);
    expect(failed.stderr).toContain('src/a.ts: error');
    expect(existsSync(cache) ? readdirSync(cache) : []).toEqual([]);
    expect(build(clone(dir, sources), cache).status).toBe(3);
    expect(runs()).toBe(2);
  });

  it('still builds, with a warning that says what to set, when the cache cannot be written', () => {
    const { dir, cache, runs } = newCase();
    // A file where the cache's directory would be: no directory can be made under it, root or not.
    writeFileSync(cache, '');
    const project = clone(dir, { 'a.ts': 'export const a = 1;\n' });
    const result = build(project, path.join(cache, 'build'));
    expect(result.status).toBe(0);
    expect(runs()).toBe(1);
    expect(distOf(project)).toEqual({ 'a.js': 'EXPORT CONST A = 1;\n' });
    expect(result.stderr).toContain('could not keep the build');
    expect(result.stderr).toContain('set CLUSTERSTACK_BUILD_CACHE');
  });
});
