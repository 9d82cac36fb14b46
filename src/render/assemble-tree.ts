// The tree from the rendered units: their files, a kustomization per directory (so Argo CD, Flux and
// `kubectl apply -k` all read it), provenance.json and the README.
import { OUTPUT_README_PRECOMPILED } from '../output/output-readme-precompiled.js';
import type { Provenance, UnitRecord } from '../output/provenance.js';
import type { RenderSummary } from '../output/render-summary.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import {
  aggregatingDirs,
  KUSTOMIZATION_FILE,
  MANAGEMENT_DIR,
  CLUSTERS_DIR,
  PROVENANCE_FILE,
  README_FILE,
} from '../output/tree-layout.js';
import { kustomizationEncoder } from './kustomization-yaml.js';
import { compileTemplate, precompiledTemplate } from './sandboxed-template.js';
import { compareText } from '../core/compare-text.js';

/** A kustomization per directory: each object directory, and the directories that aggregate it (tree-layout.ts). */
function kustomizations(tree: Map<string, string>, emptyDirs: readonly string[]): Map<string, string> {
  const children = new Map<string, Set<string>>();
  const add = (dir: string, entry: string): void => {
    if (!children.has(dir)) children.set(dir, new Set());
    children.get(dir)!.add(entry);
  };
  const dirsSeen = new Set<string>();
  for (const file of tree.keys()) {
    const slash = file.lastIndexOf('/');
    const top = file.slice(0, file.indexOf('/'));
    if (slash < 0 || (top !== MANAGEMENT_DIR && top !== CLUSTERS_DIR)) continue;
    const dir = file.slice(0, slash);
    add(dir, file.slice(slash + 1));
    // The directories above depend on the directory alone: once per directory, not per file.
    if (dirsSeen.has(dir)) continue;
    dirsSeen.add(dir);
    for (const parent of aggregatingDirs(dir)) add(parent, dir.slice(parent.length + 1).split('/')[0]!);
  }
  // A directory that must exist even when it holds nothing (a shared directory: its Flux
  // Kustomization / Argo CD Application exists always, so releases can depend on it from the start).
  for (const dir of emptyDirs) {
    if (!children.has(dir)) children.set(dir, new Set());
    for (const parent of aggregatingDirs(dir)) add(parent, dir.slice(parent.length + 1).split('/')[0]!);
  }
  const out = new Map<string, string>();
  const encode = kustomizationEncoder();
  for (const [dir, entries] of children) out.set(`${dir}/${KUSTOMIZATION_FILE}`, encode([...entries].sort()));
  return out;
}

/**
 * A unit's files under its directory, with the kustomization the tree will give that directory (its
 * files listed) when none of them sits in a sub-directory: for writing ahead while the render runs
 * (Publisher.prestage). The tree decides in the end; publishing rewrites what differs.
 */
export function unitFilesAhead(
  dir: string,
  files: ReadonlyMap<string, string>,
  encode: (resources: readonly string[]) => string,
): [string, string][] {
  const ahead = [...files].map(([file, content]): [string, string] => [`${dir}/${file}`, content]);
  const names = [...files.keys()];
  if (names.length > 0 && names.every((name) => !name.includes('/')))
    ahead.push([`${dir}/${KUSTOMIZATION_FILE}`, encode(names.sort())]);
  return ahead;
}

/**
 * The README's template: the default one compiled ahead (output-readme-precompiled.ts: compiling it
 * cost 60-90 ms of CPU in every render), a --readme-template compiled on first use.
 */
function readmeRenderer(readmeTemplate: string | undefined): (data: object) => string {
  return readmeTemplate === undefined
    ? precompiledTemplate(OUTPUT_README_PRECOMPILED, 'default README template')
    : compileTemplate(readmeTemplate, 'readme template');
}

/**
 * Prepares the README template now: Handlebars compiles a template on its first use (tens of
 * milliseconds), which would otherwise fall after the last helm process. Called while the render
 * waits for helm; an error is left for the real rendering to report.
 */
export function warmReadmeTemplate(readmeTemplate?: string): void {
  try {
    readmeRenderer(readmeTemplate)({});
  } catch {
    // Reported, with the template's name, when the README is rendered.
  }
}

/**
 * The whole tree of a render, sorted by path. `extraFiles` are files that are no unit's
 * (ClusterProfiles, generated Clusters); `shared` adds the shared directories (placeSharedObjects).
 */
export function assembleTree(
  rendered: Map<string, Map<string, string>>,
  records: Pick<UnitRecord, 'dir'>[],
  provenance: Provenance,
  summary: RenderSummary,
  readmeTemplate?: string,
  extraFiles?: Map<string, string>,
  shared: { files: Map<string, string>; dirs: readonly string[] } = { files: new Map(), dirs: [] },
): RenderedTree {
  // Files that are no unit's first: kustomizations list them too.
  const files = new Map<string, string>(extraFiles ?? []);
  for (const record of records) {
    for (const [file, content] of rendered.get(record.dir) ?? []) files.set(`${record.dir}/${file}`, content);
  }
  for (const [file, content] of shared.files) files.set(file, content);
  for (const [file, content] of kustomizations(files, shared.dirs)) files.set(file, content);
  files.set(PROVENANCE_FILE, `${JSON.stringify(provenance, null, 2)}\n`);
  files.set(README_FILE, readmeRenderer(readmeTemplate)(summary));
  return new Map([...files.entries()].sort(([a], [b]) => compareText(a, b)));
}
