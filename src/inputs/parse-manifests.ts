// Splits multi-document YAML into Kubernetes objects, remembering the file and line of each, and
// reports every document that is not one. Reads with Kubernetes' meaning (src/yaml/kube-yaml.ts),
// so a Cluster's `port: 6443` is an integer and `0400` is 256, as the API server would store them.
import type { KubeObject, TypedObject } from '../api/types.js';
import type { Problem } from '../core/problem.js';
import { nameProblem, nameRuleFor, namespaceProblem } from '../api/object-name-rules.js';
import { scopeResolver } from '../api/object-scope.js';
import { fieldLine } from '../yaml/field-line.js';
import { DeepNestingError, decodeYamlDocument, splitYamlDocuments, YamlDecodeError } from '../yaml/kube-yaml.js';

export interface SourcedObject<T extends TypedObject = KubeObject> {
  object: T;
  /** `file:line` of the document's first line. */
  source: string;
}

export interface ParsedManifests {
  objects: SourcedObject[];
  problems: Problem[];
  /** Accepted as Kubernetes accepts them, but worth fixing (duplicate keys). */
  warnings?: Problem[];
}

/** The text each parsed object was read from, to name a field's line when a problem is reported. */
const documentOf = new WeakMap<object, { text: string; file: string; firstLine: number }>();

/**
 * `file:line` of the field `path` of an object parsed here (of its deepest ancestor written in the
 * text when the field is not), else `fallback` (the document's line, or a live object's source).
 */
export function fieldSource(object: object, fallback: string, path: string | undefined): string {
  const document = path ? documentOf.get(object) : undefined;
  const line = document && path ? fieldLine(document.text, path) : undefined;
  return document && line !== undefined ? `${document.file}:${document.firstLine + line - 1}` : fallback;
}

/** Parses every document in `text`; `file` names it in sources and messages. */
export function parseManifests(text: string, file: string): ParsedManifests {
  const parsed: ParsedManifests = { objects: [], problems: [], warnings: [] };
  for (const document of splitYamlDocuments(text)) parseDocument(document.text, file, document.startLine, parsed);
  return parsed;
}

function parseDocument(chunk: string, file: string, firstLine: number, parsed: ParsedManifests): void {
  const { objects, problems } = parsed;
  let document: unknown;
  try {
    const decoded = decodeYamlDocument(chunk);
    document = decoded.value;
    for (const duplicate of decoded.duplicateKeys) {
      parsed.warnings!.push({
        source: `${file}:${firstLine + duplicate.line - 1}`,
        message: `key "${duplicate.key}" appears more than once; Kubernetes keeps the last value, and so do we`,
      });
    }
  } catch (error) {
    if (error instanceof DeepNestingError) throw new DeepNestingError(firstLine + (error.line ?? 1) - 1, file);
    if (!(error instanceof YamlDecodeError)) throw error;
    const line = error.line !== undefined ? firstLine + error.line - 1 : firstLine;
    problems.push({
      source: `${file}:${line}`,
      message: `is not valid YAML: ${error.reason}${error.column !== undefined ? ` (column ${error.column})` : ''}`,
    });
    return;
  }
  if (document === null || document === undefined) return;
  const source = `${file}:${firstLine}`;
  if (typeof document !== 'object' || Array.isArray(document)) {
    problems.push({
      source,
      message: 'is not a Kubernetes object (expected a mapping with apiVersion, kind and metadata)',
    });
    return;
  }
  const record = document as Record<string, unknown>;
  const missing = ['apiVersion', 'kind'].filter((key) => typeof record[key] !== 'string' || record[key] === '');
  if (missing.length > 0) {
    problems.push({ source, message: `has no ${missing.join(' and ')}; every document must be a Kubernetes object` });
    return;
  }
  const metadata = record.metadata;
  if (
    typeof metadata !== 'object' ||
    metadata === null ||
    typeof (metadata as Record<string, unknown>).name !== 'string'
  ) {
    problems.push({ source, object: String(record.kind), message: 'has no metadata.name' });
    return;
  }
  const object = record as KubeObject;
  const invalid = invalidNames(object);
  if (invalid.length > 0) {
    // Caught here, with the file and line, not later as an output path (a Cluster named `../../x`)
    // or a file name the system refuses (a 300-character name).
    for (const { field, message } of invalid) {
      problems.push({
        source: `${file}:${firstLine + (fieldLine(chunk, `metadata.${field}`) ?? 1) - 1}`,
        object: object.kind,
        path: `metadata.${field}`,
        message: `${message}. Rename it`,
      });
    }
    return;
  }
  documentOf.set(object, { text: chunk, file, firstLine });
  objects.push({ object, source });
}

/** Input kinds are read without their CRDs: the known scopes decide which namespaces Kubernetes keeps. */
const scopeOf = scopeResolver([]);

/** The names and namespace of an input object that the API server would refuse. */
function invalidNames(object: KubeObject): { field: 'name' | 'namespace'; message: string }[] {
  const invalid: { field: 'name' | 'namespace'; message: string }[] = [];
  const name = nameProblem(object.metadata.name, nameRuleFor(object.apiVersion, object.kind));
  if (name)
    invalid.push({
      field: 'name',
      message: `${JSON.stringify(object.metadata.name)} is not a valid ${object.kind} name: it ${name}`,
    });
  const { namespace } = object.metadata as { namespace?: unknown };
  // A cluster-scoped object's namespace is dropped by the API server, never validated.
  if (namespace !== undefined && namespace !== null && scopeOf(object) !== 'Cluster') {
    const problem = typeof namespace === 'string' ? namespaceProblem(namespace) : 'must be a string';
    if (problem)
      invalid.push({
        field: 'namespace',
        message: `${JSON.stringify(namespace)} is not a valid namespace: it ${problem}`,
      });
  }
  return invalid;
}
