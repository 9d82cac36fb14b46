// Reads the YAML files and directories a user names on the command line.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { InputError } from '../core/problem.js';
import { type ParsedManifests, parseManifests } from './parse-manifests.js';

const YAML_FILE = /\.ya?ml$/;

/**
 * Every YAML file under the given paths, sorted. Directories are walked, but Helm charts (a
 * Chart.yaml) and release directories (a metadata.yaml) are skipped: they are not input objects.
 */
export async function findInputFiles(paths: string[], exclude: string[] = []): Promise<string[]> {
  const excluded = exclude.map((entry) => path.resolve(entry));
  const files: string[] = [];
  const missing: string[] = [];
  async function walk(dir: string): Promise<void> {
    if (excluded.includes(path.resolve(dir))) return;
    const entries = await readdir(dir, { withFileTypes: true });
    const names = entries.map((entry) => entry.name);
    if (names.includes('Chart.yaml') || names.includes('metadata.yaml')) return;
    for (const entry of entries) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile() && YAML_FILE.test(entry.name)) files.push(full);
    }
  }
  for (const input of paths) {
    let stats;
    try {
      stats = await stat(input);
    } catch {
      missing.push(input);
      continue;
    }
    if (stats.isDirectory()) await walk(input);
    else files.push(input);
  }
  if (missing.length > 0) {
    throw new InputError(missing.map((file) => ({ source: file, message: 'does not exist; give YAML files or directories with ClusterStacks and Clusters' })));
  }
  return [...new Set(files)].sort();
}

/** Parses every document of every input file; problems carry file and line. */
export async function readInputFiles(paths: string[], exclude: string[] = []): Promise<ParsedManifests> {
  const result: ParsedManifests = { objects: [], problems: [] };
  for (const file of await findInputFiles(paths, exclude)) {
    const parsed = parseManifests(await readFile(file, 'utf8'), path.relative(process.cwd(), file) || file);
    result.objects.push(...parsed.objects);
    result.problems.push(...parsed.problems);
  }
  return result;
}
