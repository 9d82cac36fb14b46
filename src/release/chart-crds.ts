// The CustomResourceDefinitions a release's charts ship in helm's `crds/` folders (the chart's and
// its unpacked subcharts'), as the API versions a render tells helm the target serves
// (src/core/kube-api-versions.ts). Helm installs those files as they are, untemplated, so they can
// be read before anything renders; CRDs that templates produce are only known after a render and
// are not included.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { crdApiVersions } from '../core/kube-api-versions.js';
import { decodeYamlDocuments } from '../yaml/kube-yaml.js';

/** The group/version and group/version/Kind forms of the CRDs in the charts' `crds/` folders, sorted. */
export async function chartCrdApiVersions(chartDirs: readonly string[]): Promise<string[]> {
  const crds: unknown[] = [];
  for (const dir of chartDirs) crds.push(...(await crdsOf(dir)));
  return crdApiVersions(crds);
}

async function crdsOf(chartDir: string): Promise<unknown[]> {
  const found: unknown[] = [];
  for (const file of await filesUnder(path.join(chartDir, 'crds'))) {
    if (!/\.(ya?ml|json)$/.test(file)) continue;
    try {
      for (const document of decodeYamlDocuments(await readFile(file, 'utf8'))) found.push(document.value);
    } catch {
      // A file helm cannot read either: its render reports it.
    }
  }
  for (const subchart of await directoriesIn(path.join(chartDir, 'charts'))) found.push(...(await crdsOf(subchart)));
  return found;
}

async function filesUnder(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true, recursive: true });
    return entries
      .filter((entry) => entry.isFile())
      .map((entry) => path.join(entry.parentPath, entry.name))
      .sort();
  } catch {
    return [];
  }
}

async function directoriesIn(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => path.join(dir, entry.name))
      .sort();
  } catch {
    return [];
  }
}
