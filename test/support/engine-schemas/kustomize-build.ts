// Real kustomize over generated files: writes them to a temporary directory and runs
// `kubectl kustomize` (kustomize is built into kubectl). Tests using it skip when kubectl is absent.
//
// The prune-rule walks (engine-prune-rules.ts) and the layer tests build the same directories of
// the same trees again and again (each transition builds both trees' owners and inventories, and
// consecutive transitions share a tree): kustomize's output is a function of the files and the
// directory, so each tree is written once and each directory of it built once per worker. A
// directory whose kustomizations name nothing outside it builds from its own files alone, so it
// is built once per content: consecutive trees of a walk mostly differ in one directory, and the
// others are not built again (the layer files and shared-objects: 34 kubectl runs instead of 85).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as yaml from 'js-yaml';

const KUBECTL = process.env.KUBECTL ?? 'kubectl';

/** Trees written so far, by the digest of their files: the directory holding each. */
const written = new Map<string, string>();
/** What `kubectl kustomize` printed, by tree digest and directory. */
const built = new Map<string, string>();
process.once('exit', () => {
  for (const root of written.values()) rmSync(root, { recursive: true, force: true });
});

/** A digest of every path and its text, independent of the order the map holds them in. */
function treeDigest(files: Map<string, string>): string {
  const hash = createHash('sha256');
  for (const file of [...files.keys()].sort()) hash.update(`${file}\0${files.get(file)!}\0`);
  return hash.digest('hex');
}

/** The directory holding `files`, written on first use of that tree. */
function writtenTree(digest: string, files: Map<string, string>): string {
  const known = written.get(digest);
  if (known) return known;
  const root = mkdtempSync(path.join(tmpdir(), 'kustomize-'));
  for (const [file, text] of files) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  written.set(digest, root);
  return root;
}

const KUSTOMIZATION_FILES = new Set(['kustomization.yaml', 'kustomization.yml', 'Kustomization']);
// A kustomization naming a path outside its directory (`../x`) or an absolute one.
const OUTSIDE = /\.\.|^\s*-\s*\/|:\s*\//m;

/** The files kustomize can read building `dir`: the directory's own when its kustomizations name nothing outside it, else all of them. */
function buildInputs(files: Map<string, string>, dir: string): Map<string, string> {
  if (dir === '' || dir === '.') return files;
  const own = new Map([...files].filter(([file]) => file.startsWith(`${dir}/`)));
  const reachesOut = [...own].some(
    ([file, text]) => KUSTOMIZATION_FILES.has(path.posix.basename(file)) && OUTSIDE.test(text),
  );
  return reachesOut ? files : own;
}

/** The objects `kubectl kustomize <dir>` builds from `files` (paths relative to one root); fresh objects on every call. */
export function kustomizeBuild(tree: Map<string, string>, dir: string): Record<string, any>[] {
  const files = buildInputs(tree, dir);
  const digest = treeDigest(files);
  const key = `${digest}\0${dir}`;
  let output = built.get(key);
  if (output === undefined) {
    const root = writtenTree(digest, files);
    const run = spawnSync(KUBECTL, ['kustomize', path.join(root, dir)], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${run.stderr}`);
    output = run.stdout;
    built.set(key, output);
  }
  return yaml.loadAll(output).filter((d) => d !== null && d !== undefined) as Record<string, any>[];
}
