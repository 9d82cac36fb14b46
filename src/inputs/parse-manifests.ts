// Splits multi-document YAML into Kubernetes objects, remembering the file and line of each, and
// reports every document that is not one.
import * as yaml from 'js-yaml';
import type { KubeObject, TypedObject } from '../api/types.js';
import type { Problem } from '../core/problem.js';

export interface SourcedObject<T extends TypedObject = KubeObject> {
  object: T;
  /** `file:line` of the document's first line. */
  source: string;
}

export interface ParsedManifests {
  objects: SourcedObject[];
  problems: Problem[];
}

const SEPARATOR = /^---(?:\s.*)?$/;

/** Parses every document in `text`; `file` names it in sources and messages. */
export function parseManifests(text: string, file: string): ParsedManifests {
  const objects: SourcedObject[] = [];
  const problems: Problem[] = [];
  const lines = text.split('\n');
  let start = 0;
  const flush = (end: number): void => {
    const chunk = lines.slice(start, end).join('\n');
    const firstLine = start + 1;
    if (chunk.trim() !== '') parseDocument(chunk, file, firstLine, objects, problems);
  };
  lines.forEach((line, index) => {
    if (SEPARATOR.test(line)) {
      flush(index);
      start = index + 1;
    }
  });
  flush(lines.length);
  return { objects, problems };
}

function parseDocument(chunk: string, file: string, firstLine: number, objects: SourcedObject[], problems: Problem[]): void {
  let document: unknown;
  try {
    document = yaml.load(chunk, { filename: file });
  } catch (error) {
    const mark = (error as { mark?: { line: number; column: number } }).mark;
    const line = mark ? firstLine + mark.line : firstLine;
    const reason = (error as { reason?: string }).reason ?? (error as Error).message;
    problems.push({ source: `${file}:${line}`, message: `is not valid YAML: ${reason}${mark ? ` (column ${mark.column + 1})` : ''}` });
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
