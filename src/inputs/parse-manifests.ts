// Splits multi-document YAML into Kubernetes objects, remembering the file and line of each, and
// reports every document that is not one. Reads with Kubernetes' meaning (src/yaml/kube-yaml.ts),
// so a Cluster's `port: 6443` is an integer and `0400` is 256, as the API server would store them.
import type { KubeObject, TypedObject } from '../api/types.js';
import type { Problem } from '../core/problem.js';
import { decodeYamlDocument, splitYamlDocuments, YamlDecodeError } from '../yaml/kube-yaml.js';

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
      parsed.warnings!.push({ source: `${file}:${firstLine + duplicate.line - 1}`, message: `key "${duplicate.key}" appears more than once; Kubernetes keeps the last value, and so do we` });
    }
  } catch (error) {
    if (!(error instanceof YamlDecodeError)) throw error;
    const line = error.line !== undefined ? firstLine + error.line - 1 : firstLine;
    problems.push({ source: `${file}:${line}`, message: `is not valid YAML: ${error.reason}${error.column !== undefined ? ` (column ${error.column})` : ''}` });
    return;
  }
  if (document === null || document === undefined) return;
  const source = `${file}:${firstLine}`;
  if (typeof document !== 'object' || Array.isArray(document)) {
    problems.push({ source, message: 'is not a Kubernetes object (expected a mapping with apiVersion, kind and metadata)' });
    return;
  }
  const record = document as Record<string, unknown>;
  const missing = ['apiVersion', 'kind'].filter((key) => typeof record[key] !== 'string' || record[key] === '');
  if (missing.length > 0) {
    problems.push({ source, message: `has no ${missing.join(' and ')}; every document must be a Kubernetes object` });
    return;
  }
  const metadata = record.metadata;
  if (typeof metadata !== 'object' || metadata === null || typeof (metadata as Record<string, unknown>).name !== 'string') {
    problems.push({ source, object: String(record.kind), message: 'has no metadata.name' });
    return;
  }
  objects.push({ object: record as KubeObject, source });
}
