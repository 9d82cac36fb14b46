// Reads the YAML files and directories a user names on the command line.
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { InputError, type Problem } from '../core/problem.js';
import { type ParsedManifests, parseManifests } from './parse-manifests.js';
import { compareText } from '../core/compare-text.js';
import { decodeYamlBytes, TextEncodingError } from '../yaml/text-encoding.js';

const YAML_FILE = /\.ya?ml$/;

/** Largest input file read: far above any real manifest file, far below what exhausts memory. */
const MAX_INPUT_FILE_BYTES = 8 * 1024 * 1024;
/** Largest sum of all input files. */
const MAX_INPUT_TOTAL_BYTES = 16 * 1024 * 1024;

interface FoundInputFile {
  /** The path as found (through any symbolic links), for messages. */
  file: string;
  /** The input paths (as given) it was found under: overlapping inputs share files. */
  inputs: string[];
  size: number;
}

/**
 * Every YAML file under the given paths, sorted, with the input paths it was found under. Directories
 * are walked, but Helm charts (a Chart.yaml) and release directories (a metadata.yaml) are skipped:
 * they are not input objects. Symbolic links are followed (a Kubernetes ConfigMap volume links each
 * `file.yaml` to `..data/file.yaml`, and `..data` to a timestamped directory); entries starting
 * with "." are not walked, and a file or directory reached twice is read once.
 */
async function findInputFiles(paths: string[], exclude: string[] = []): Promise<FoundInputFile[]> {
  const excluded = new Set(
    await Promise.all(exclude.map((entry) => realpath(path.resolve(entry)).catch(() => path.resolve(entry)))),
  );
  const found = new Map<string, FoundInputFile>();
  const problems: Problem[] = [];
  const missing: string[] = [];
  // Per input: inputs may overlap (a directory and a file in it), and each must be seen whole.
  let visitedDirs = new Set<string>();
  async function walk(dir: string, input: string): Promise<void> {
    const real = await realpath(dir);
    // A directory reached again (a link back up the tree, or the same mount twice) is read once.
    // An excluded directory given as the input itself is still read: the caller refuses that case.
    if ((excluded.has(real) && dir !== input) || visitedDirs.has(real)) return;
    visitedDirs.add(real);
    const names = (await readdir(dir)).sort();
    if (names.includes('Chart.yaml') || names.includes('metadata.yaml')) return;
    for (const name of names) {
      if (name.startsWith('.') || name === 'node_modules') continue;
      const full = path.join(dir, name);
      // stat, not lstat: a link counts as what it points to; a dangling link is skipped.
      const info = await stat(full).catch(() => undefined);
      if (info === undefined) continue;
      if (info.isDirectory()) await walk(full, input);
      else if (YAML_FILE.test(name)) await add(full, input, info);
    }
  }
  async function add(file: string, input: string, info: Awaited<ReturnType<typeof stat>>): Promise<void> {
    if (!info.isFile()) {
      problems.push({ source: file, message: 'is not a regular file (a device, pipe or socket); give YAML files' });
      return;
    }
    const real = await realpath(file);
    if (excluded.has(real)) return;
    const known = found.get(real);
    if (known) {
      if (!known.inputs.includes(input)) known.inputs.push(input);
      return;
    }
    if (info.size > MAX_INPUT_FILE_BYTES) {
      problems.push({
        source: file,
        message: `is ${info.size} bytes; input files may hold at most ${MAX_INPUT_FILE_BYTES} bytes (split it, or leave non-manifest files out of the inputs)`,
      });
      return;
    }
    found.set(real, { file, inputs: [input], size: Number(info.size) });
  }
  for (const input of paths) {
    visitedDirs = new Set();
    const info = await stat(input).catch(() => undefined);
    if (info === undefined) {
      missing.push(input);
      continue;
    }
    if (info.isDirectory()) await walk(input, input);
    else await add(input, input, info);
  }
  if (missing.length > 0) {
    throw new InputError(
      missing.map((file) => ({
        source: file,
        message: 'does not exist; give YAML files or directories with ClusterStacks and Clusters',
      })),
    );
  }
  const total = [...found.values()].reduce((sum, entry) => sum + entry.size, 0);
  if (total > MAX_INPUT_TOTAL_BYTES) {
    problems.push({
      message: `the input files hold ${total} bytes together; at most ${MAX_INPUT_TOTAL_BYTES} are read (give only the directories with your manifests)`,
    });
  }
  if (problems.length > 0) throw new InputError(problems);
  return [...found.values()].sort((a, b) => compareText(a.file, b.file));
}

/** A file's text as Kubernetes decodes it (a BOM selects UTF-16), or why Kubernetes would refuse it. */
async function readText(file: string, name: string): Promise<string | Problem> {
  try {
    return decodeYamlBytes(await readFile(file));
  } catch (error) {
    if (!(error instanceof TextEncodingError)) throw error;
    return {
      source: `${name}:${error.line}`,
      message: `is not text Kubernetes reads: ${error.message}; Kubernetes refuses such a file. Save it as UTF-8 (or UTF-16 with a byte order mark)`,
    };
  }
}

/**
 * Parses every document of every input file; problems carry file and line. An input path that
 * yields no object at all (an empty directory, only empty files, a wrong path, a ConfigMap mount
 * that is not there yet) is an error: read as an empty fleet, it would remove every release and
 * cluster from the output.
 */
export async function readInputFiles(paths: string[], exclude: string[] = []): Promise<ParsedManifests> {
  const result: ParsedManifests = { objects: [], problems: [] };
  const entries = await findInputFiles(paths, exclude);
  const yielded = new Map<string, number>(paths.map((input) => [input, 0]));
  for (const { file, inputs } of entries) {
    const name = path.relative(process.cwd(), file) || file;
    const text = await readText(file, name);
    const parsed: ParsedManifests =
      typeof text === 'string' ? parseManifests(text, name) : { objects: [], problems: [text] };
    result.objects.push(...parsed.objects);
    result.problems.push(...parsed.problems);
    for (const input of inputs)
      yielded.set(input, (yielded.get(input) ?? 0) + parsed.objects.length + parsed.problems.length);
  }
  const empty = paths.filter((input) => yielded.get(input) === 0);
  if (empty.length > 0) {
    throw new InputError(
      empty.map((input) => {
        const files = entries.filter((entry) => entry.inputs.includes(input)).length;
        const found =
          files === 0
            ? 'holds no YAML files'
            : `holds ${files} YAML file${files === 1 ? '' : 's'} but no Kubernetes object`;
        return {
          source: input,
          message: `${found}; nothing was rendered or written. An empty input would remove every release and cluster from the output: check the path (or that the volume is mounted)`,
        };
      }),
    );
  }
  return result;
}
