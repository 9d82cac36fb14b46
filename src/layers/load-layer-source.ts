// Reads an AddonsLayer's source from the repository holding the inputs: a Helm chart directory
// (it has a Chart.yaml; rendered by helm like a stack's addon chart) or a directory of plain
// manifests (its *.yaml and *.yml files, in name order, as Kraan reads a layer's directory). The
// directory, and every link in it, must stay inside the repository.
import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { AddonsLayer } from '../api/addons-layer.js';
import { InputError } from '../core/problem.js';
import { sha256Digest, treeDigest } from '../release/content-digest.js';
import type { ChartSource } from '../release/load-release.js';
import { assertInsideRelease } from '../release/release-containment.js';
import { decodeYamlBytes, TextEncodingError } from '../yaml/text-encoding.js';

/** A layer's source, read: a chart for helm, or the manifests' text as written. */
export type LayerSource =
  | { kind: 'chart'; chart: ChartSource }
  | { kind: 'manifests'; digest: string; origin: string; documents: { file: string; text: string }[] };

const MAX_FILE = 4 * 1024 * 1024;
const MAX_TOTAL = 16 * 1024 * 1024;
/** Files in a manifest directory that are not objects to apply. */
const NOT_MANIFESTS = new Set(['kustomization.yaml', 'kustomization.yml', 'Kustomization']);

function refuse(layer: AddonsLayer, message: string): InputError {
  return new InputError([{ object: `AddonsLayer ${layer.metadata.name}`, path: 'spec.source.path', message }]);
}

/** Reads the source of `layer` below `root` (the inputs' repository); throws InputError naming the layer. */
export async function loadLayerSource(layer: AddonsLayer, root: string): Promise<LayerSource> {
  const relative = layer.spec.source.path;
  if (relative === undefined)
    throw new Error(
      `internal error: AddonsLayer ${layer.metadata.name} has no source.path (a chart source is fetched, not read)`,
    );
  const dir = path.resolve(root, relative);
  const realRoot = await realpath(root);
  let realDir: string;
  try {
    realDir = await realpath(dir);
  } catch {
    throw refuse(
      layer,
      `"${relative}" does not exist in ${root}; the path is relative to the repository holding the inputs (--layer-root)`,
    );
  }
  const inside = path.relative(realRoot, realDir);
  if (inside.startsWith('..') || path.isAbsolute(inside))
    throw refuse(
      layer,
      `"${relative}" leads to ${realDir}, outside the repository ${realRoot}; layer sources must be inside it`,
    );
  if (!(await stat(realDir)).isDirectory()) throw refuse(layer, `"${relative}" is not a directory`);
  const label = `AddonsLayer ${layer.metadata.name} ${relative}`;
  await assertInsideRelease(dir, root, label, 'repository');

  const origin = `${relative.replace(/\/+$/, '')} (AddonsLayer ${layer.metadata.name})`;
  if (await isFile(path.join(dir, 'Chart.yaml')))
    return { kind: 'chart', chart: { dir, digest: await treeDigest(dir), origin } };

  const documents: { file: string; text: string }[] = [];
  let total = 0;
  for (const name of (await readdir(dir)).sort()) {
    if (!/\.ya?ml$/.test(name) || NOT_MANIFESTS.has(name)) continue;
    const file = path.join(dir, name);
    const info = await stat(file);
    if (!info.isFile()) continue;
    if (info.size > MAX_FILE)
      throw refuse(layer, `${relative}/${name} is ${info.size} bytes; layer files may hold at most ${MAX_FILE}`);
    total += info.size;
    if (total > MAX_TOTAL) throw refuse(layer, `"${relative}" holds more than ${MAX_TOTAL} bytes of YAML`);
    let text: string;
    try {
      text = decodeYamlBytes(await readFile(file));
    } catch (error) {
      if (!(error instanceof TextEncodingError)) throw error;
      throw refuse(
        layer,
        `${relative}/${name}:${error.line} is not text Kubernetes reads: ${error.message}; save it as UTF-8`,
      );
    }
    documents.push({ file: `${relative.replace(/\/+$/, '')}/${name}`, text });
  }
  if (documents.length === 0)
    throw refuse(
      layer,
      `"${relative}" holds no YAML files and no Chart.yaml; a layer with nothing to apply would remove what it applied before`,
    );
  const digest = sha256Digest(JSON.stringify(documents.map((document) => [document.file, document.text])));
  return { kind: 'manifests', digest, origin, documents };
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await lstat(file)).isFile() || (await stat(file)).isFile();
  } catch {
    return false;
  }
}
