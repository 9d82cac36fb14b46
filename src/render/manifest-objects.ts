// Turns helm's output into the files we write: one object per file, keeping helm's own bytes for each
// document so that what lands in Git means exactly what helm rendered (Kubernetes' YAML, not a
// re-serialization). Our only additions are a namespace on namespaced objects that have none and,
// for Argo CD, a sync-wave annotation; they are inserted as lines and checked by decoding the result.
// A document Kubernetes would accept never fails the unit; one it would refuse is a problem.
import type { KubeObject } from '../api/types.js';
import {
  decodeYamlDocument,
  encodeScalar,
  encodeYaml,
  sameYamlValue,
  splitYamlDocuments,
  YamlDecodeError,
} from '../yaml/kube-yaml.js';
import { apiGroup, type ObjectScope, scopeResolver } from '../api/object-scope.js';
import { apiServerProblem, namespaceLimitProblem } from './api-server-limits.js';

/** One object as decoded (its Kubernetes meaning) and the YAML text that is written for it. */
export interface ManifestObject {
  object: KubeObject;
  text: string;
}

export interface ManifestReading {
  objects: ManifestObject[];
  /** Documents Kubernetes would refuse (or that cannot be applied from Git): the unit cannot be published. */
  problems: string[];
  /** Accepted, but worth a look (duplicate keys, ignored tags). */
  warnings: string[];
}

const SOURCE_COMMENT = /^# Source: (.+)$/m;

/**
 * Documents seen lately, by their text, and the decoded value of those seen more than once. A chart
 * renders most of its objects alike for every Cluster (a CNI's RBAC, CRDs, its large configuration
 * templates): those decode once per run, not once per Cluster. Decoding is pure and nothing
 * downstream writes into a decoded object (placing one copies it), so the value is shared. A value
 * is kept only from a document's second sighting on: keeping the decoded value of every document
 * (most of them unique where a chart puts the Cluster's name everywhere) cost more in garbage
 * collection than decoding them again. Small: repeats come from consecutive renders of one chart.
 */
const seenDocuments = new Set<string>();
const repeatedDocuments = new Map<string, ReturnType<typeof decodeYamlDocument>>();
const RECENT_DOCUMENTS = 512;

function decodeDocument(text: string): ReturnType<typeof decodeYamlDocument> {
  const known = repeatedDocuments.get(text);
  if (known) {
    // Most recently used last: the oldest goes first when the map is full.
    repeatedDocuments.delete(text);
    repeatedDocuments.set(text, known);
    return known;
  }
  const decoded = decodeYamlDocument(text);
  if (seenDocuments.has(text)) {
    if (repeatedDocuments.size >= RECENT_DOCUMENTS) repeatedDocuments.delete(repeatedDocuments.keys().next().value!);
    repeatedDocuments.set(text, decoded);
  } else {
    if (seenDocuments.size >= RECENT_DOCUMENTS) seenDocuments.delete(seenDocuments.values().next().value!);
    seenDocuments.add(text);
  }
  return decoded;
}

/** Reads every document of helm's output; `origin` names the chart and unit in messages. */
export function readManifests(output: string, origin: string): ManifestReading {
  const reading: ManifestReading = { objects: [], problems: [], warnings: [] };
  const labels = new Map<KubeObject, string>();
  for (const document of splitYamlDocuments(output)) {
    const template = SOURCE_COMMENT.exec(document.text)?.[1]?.trim();
    const where = template ? `${origin}, template ${template}` : `${origin}, document at line ${document.startLine}`;
    let decoded;
    try {
      decoded = decodeDocument(document.text);
    } catch (error) {
      if (!(error instanceof YamlDecodeError)) throw error;
      reading.problems.push(
        `${where}: is not valid YAML: ${error.reason}${error.line !== undefined ? ` (line ${error.line} of that document)` : ''}`,
      );
      continue;
    }
    const { value, duplicateKeys, ignoredTags, yaml11Only } = decoded;
    if (value === null) continue; // an empty document, or comments only
    for (const duplicate of duplicateKeys) {
      reading.warnings.push(
        `${where}: key "${duplicate.key}" appears more than once (line ${duplicate.line} of that document); Kubernetes keeps the last value, and so does the output`,
      );
    }
    // Kustomize (which Flux and Argo CD run over the output) is a YAML 1.2 tool: it refuses duplicate
    // keys, reads `yes`/`on` as strings and `2001-12-14` as a timestamp, and tags other than the
    // standard ones are not its to interpret. Those documents are written as they decode, in a form
    // both read alike; every other document keeps helm's bytes.
    const rewrite = duplicateKeys.length > 0 || ignoredTags.length > 0 || yaml11Only;
    const header = template ? `# Source: ${template}\n` : '';
    const add = (item: unknown, text: string | undefined, label: string): void => {
      const problem = objectProblem(item) ?? apiServerProblem(item as KubeObject, text);
      if (problem) {
        reading.problems.push(`${label}: ${problem}`);
        return;
      }
      reading.objects.push({ object: item as KubeObject, text: text ?? `${header}${encodeYaml(item)}` });
      labels.set(item as KubeObject, label);
    };
    const record = value as Record<string, unknown>;
    if (
      typeof value === 'object' &&
      !Array.isArray(value) &&
      typeof record.kind === 'string' &&
      record.kind.endsWith('List') &&
      Array.isArray(record.items)
    ) {
      // kubectl and Argo CD apply the items of a List, never the List itself.
      record.items.forEach((item, index) => add(item, undefined, `${where}: ${record.kind} item ${index + 1}`));
      continue;
    }
    add(value, rewrite ? undefined : `${document.text.trimEnd()}\n`, where);
  }
  // Namespaces once every object is read: a CustomResourceDefinition anywhere in the output decides its kind's scope.
  const scopeOf = scopeResolver(reading.objects.map((entry) => entry.object));
  for (const { object } of reading.objects) {
    const problem = namespaceLimitProblem(object, scopeOf(object));
    if (problem) reading.problems.push(`${labels.get(object)}: ${problem}`);
  }
  return reading;
}

/** Why a decoded document cannot be applied from Git, or undefined when it can. */
function objectProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `is not a Kubernetes object (it is ${Array.isArray(value) ? 'a list' : `a ${typeof value}`}, not a mapping with apiVersion, kind and metadata)`;
  }
  const record = value as Record<string, unknown>;
  const missing = ['apiVersion', 'kind'].filter((key) => typeof record[key] !== 'string' || record[key] === '');
  if (missing.length > 0) return `has no ${missing.join(' and ')}; every document must be a Kubernetes object`;
  const metadata = record.metadata as Record<string, unknown> | undefined;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
    return `${record.kind} has no metadata`;
  if (typeof metadata.name !== 'string' || metadata.name === '') {
    if (typeof metadata.generateName === 'string') {
      return `${record.kind} has only metadata.generateName "${metadata.generateName}": Kubernetes makes up its name at creation, so Argo CD and Flux could never find it again to update or prune it; give it a fixed name in the chart values`;
    }
    return `${record.kind} has no metadata.name`;
  }
  return undefined;
}

export interface Placement {
  /** Namespace for namespaced objects that have none (helm's `--namespace`, as CSO applies them). */
  defaultNamespace: string;
  /** Annotations to add where the chart did not set them, per object (e.g. Argo CD sync waves). */
  annotationsFor?: (object: KubeObject) => Record<string, string> | undefined;
}

/**
 * Adds the namespace to namespaced objects that have none, and the requested annotations where
 * the chart did not set them. Never touches what the chart wrote. Returns the placed objects and,
 * per kind of unknown scope left without a namespace, a note for the report.
 */
export function placeObjects(
  objects: ManifestObject[],
  placement: Placement,
): { objects: ManifestObject[]; notes: string[] } {
  const scopeOf = scopeResolver(objects.map((entry) => entry.object));
  const unknownKinds = new Set<string>();
  const placed = objects.map((entry) => {
    const { object } = entry;
    const namespace = object.metadata.namespace;
    const scope: ObjectScope = scopeOf(object);
    const needsNamespace = scope === 'Namespaced' && (typeof namespace !== 'string' || namespace === '');
    if (scope === 'Unknown' && !namespace)
      unknownKinds.add(`${object.kind} (${apiGroup(object.apiVersion) || 'core'})`);
    const wanted = placement.annotationsFor?.(object) ?? {};
    const existing = object.metadata.annotations ?? {};
    const annotations = Object.fromEntries(Object.entries(wanted).filter(([key]) => !Object.hasOwn(existing, key)));
    if (!needsNamespace && Object.keys(annotations).length === 0) return entry;
    return withMetadata(entry, needsNamespace ? placement.defaultNamespace : undefined, annotations);
  });
  const notes = [...unknownKinds]
    .sort()
    .map(
      (kind) =>
        `${kind}: scope unknown (no CustomResourceDefinition in this render), left without a namespace as the chart wrote it`,
    );
  return { objects: placed, notes };
}

/**
 * The object with the additions, written by inserting lines into its text when that provably keeps
 * the rest; re-encoded otherwise. The proof decodes only the new `metadata:` block: every other line
 * is kept byte for byte, a block ends at the next line with content in column 0, and the block must
 * decode to the whole of the new metadata (so it cannot have lost anything that went on below it).
 */
function withMetadata(
  entry: ManifestObject,
  namespace: string | undefined,
  annotations: Record<string, string>,
): ManifestObject {
  const metadata = { ...entry.object.metadata };
  if (namespace !== undefined) metadata.namespace = namespace;
  if (Object.keys(annotations).length > 0) metadata.annotations = { ...metadata.annotations, ...annotations };
  const object = { ...entry.object, metadata };
  const inserted = insertMetadataLines(entry.text, namespace, annotations);
  if (inserted !== undefined && decodesTo(inserted.block, { metadata })) return { object, text: inserted.text };
  const header = SOURCE_COMMENT.exec(entry.text)?.[0];
  return { object, text: `${header ? `${header}\n` : ''}${encodeYaml(object)}` };
}

function decodesTo(text: string, expected: unknown): boolean {
  try {
    const decoded = decodeYamlDocument(text);
    return decoded.duplicateKeys.length === 0 && sameYamlValue(decoded.value, expected);
  } catch {
    return false;
  }
}

/**
 * A written object's text with the annotations `wantedFor` its current ones set: added as lines when the chart set none of
 * them (checked by decoding, as placeObjects does), re-encoded when it set one to another value.
 * Undefined when the text does not decode to an object.
 */
export function withAnnotations(
  text: string,
  wantedFor: (existing: Record<string, string>) => Record<string, string>,
): string | undefined {
  let object: KubeObject | null;
  try {
    object = decodeYamlDocument(text).value as KubeObject | null;
  } catch {
    return undefined;
  }
  if (!object || typeof object !== 'object' || typeof object.metadata !== 'object' || object.metadata === null)
    return undefined;
  const existing = object.metadata.annotations ?? {};
  const wanted = wantedFor(existing);
  const missing = Object.fromEntries(Object.entries(wanted).filter(([key]) => !Object.hasOwn(existing, key)));
  const differing = Object.entries(wanted).some(
    ([key, value]) => Object.hasOwn(existing, key) && existing[key] !== value,
  );
  if (!differing)
    return Object.keys(missing).length === 0 ? text : withMetadata({ object, text }, undefined, missing).text;
  const changed = structuredClone(object);
  changed.metadata.annotations = { ...existing, ...wanted };
  const header = SOURCE_COMMENT.exec(text)?.[0];
  return `${header ? `${header}\n` : ''}${encodeYaml(changed)}`;
}

const BLANK_OR_COMMENT = /^\s*(#.*)?$/;
const METADATA_REST = /^[ \t]*(#.*)?$/;
const isLineBreak = (code: number): boolean => code === 10 || code === 13 || code === 0x2028 || code === 0x2029;

/**
 * Where the first line that is `metadata:` alone (a comment may follow) starts, or -1: what
 * /^metadata:[ \t]*(#.*)?$/m finds (JavaScript's line breaks: \n, \r, U+2028, U+2029), searched
 * with indexOf, since a multiline regular expression tries every position of the document.
 */
function metadataLine(text: string): number {
  for (let at = text.indexOf('metadata:'); at >= 0; at = text.indexOf('metadata:', at + 1)) {
    if (at > 0 && !isLineBreak(text.charCodeAt(at - 1))) continue;
    let end = at + 'metadata:'.length;
    while (end < text.length && !isLineBreak(text.charCodeAt(end))) end += 1;
    if (METADATA_REST.test(text.slice(at + 'metadata:'.length, end))) return at;
  }
  return -1;
}
const BLOCK_ANNOTATIONS = /^\s*annotations:[ \t]*(#.*)?$/;
const indentOf = (line: string): number => line.length - line.trimStart().length;

/**
 * Inserts `namespace:` and annotation lines into a block-style `metadata:` mapping; undefined when
 * the document is not laid out that way (flow style, JSON, empty annotations), so the caller
 * re-encodes it instead. Returns the new text and the new block alone, as a document of its own.
 */
function insertMetadataLines(
  text: string,
  namespace: string | undefined,
  annotations: Record<string, string>,
): { text: string; block: string } | undefined {
  const blockStart = metadataLine(text);
  if (blockStart < 0) return undefined;
  // The block: from `metadata:` to the next line with content in column 0 (or the end).
  const block: string[] = [];
  let blockEnd = text.length;
  for (let position = blockStart; position < text.length;) {
    const newline = text.indexOf('\n', position);
    const lineEnd = newline < 0 ? text.length : newline;
    const line = text.slice(position, lineEnd);
    if (block.length > 0 && !BLANK_OR_COMMENT.test(line) && indentOf(line) === 0) {
      blockEnd = position;
      break;
    }
    block.push(line);
    position = lineEnd + 1;
  }
  if (blockEnd === text.length && !text.endsWith('\n')) return undefined; // keep it simple: documents end with a newline
  const firstChild = block.findIndex((line, index) => index > 0 && !BLANK_OR_COMMENT.test(line));
  if (firstChild < 0) return undefined;
  const indent = indentOf(block[firstChild]!);
  const pad = ' '.repeat(indent);
  const entries = Object.entries(annotations).map(([key, value]) => `${encodeScalar(key)}: ${encodeScalar(value)}`);
  const after = new Map<number, string[]>(); // index in block → lines to insert after it
  const insertAfter = (index: number, added: string[]): void =>
    void after.set(index, [...(after.get(index) ?? []), ...added]);
  if (namespace !== undefined) insertAfter(0, [`${pad}namespace: ${encodeScalar(namespace)}`]);
  if (entries.length > 0) {
    const annotationsLine = block.findIndex(
      (line) => line.startsWith(`${pad}annotations:`) && indentOf(line) === indent,
    );
    if (annotationsLine < 0) {
      insertAfter(0, [`${pad}annotations:`, ...entries.map((entry) => `${pad}${pad}${entry}`)]);
    } else {
      if (!BLOCK_ANNOTATIONS.test(block[annotationsLine]!)) return undefined; // flow style or null
      const child = block.findIndex((line, index) => index > annotationsLine && !BLANK_OR_COMMENT.test(line));
      const childIndent = child < 0 ? 0 : indentOf(block[child]!);
      if (childIndent <= indent) return undefined; // empty annotations
      insertAfter(
        annotationsLine,
        entries.map((entry) => `${' '.repeat(childIndent)}${entry}`),
      );
    }
  }
  // Every line of the block ended with a newline (checked above for a block that ends the text).
  const blockText = `${block.flatMap((line, index) => [line, ...(after.get(index) ?? [])]).join('\n')}\n`;
  return { text: `${text.slice(0, blockStart)}${blockText}${text.slice(blockEnd)}`, block: blockText };
}

function slug(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9.-]+/g, '-');
}

/**
 * Stable, unique file names: `<kind>-<name>.yaml`, with the namespace when it is not the directory's
 * default and the API group when two kinds share a name.
 */
export function fileNamesFor(objects: KubeObject[], defaultNamespace: string): string[] {
  const base = objects.map((object) => {
    const namespace =
      object.metadata.namespace && object.metadata.namespace !== defaultNamespace
        ? `.${object.metadata.namespace}`
        : '';
    return `${slug(object.kind)}-${slug(object.metadata.name)}${namespace}`;
  });
  const counts = new Map<string, number>();
  for (const name of base) counts.set(name, (counts.get(name) ?? 0) + 1);
  const withGroup = base.map((name, index) => {
    if ((counts.get(name) ?? 0) < 2) return name;
    return `${name}.${slug(apiGroup(objects[index]!.apiVersion) || 'core')}`;
  });
  const seen = new Map<string, number>();
  return withGroup.map((name) => {
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    return `${count > 1 ? `${name}-${count}` : name}.yaml`;
  });
}

/** YAML for an object we generate ourselves (kustomizations, wiring): sorted keys, Kubernetes-safe quoting. */
export function serializeObject(object: object): string {
  return encodeYaml(object, { sortKeys: true });
}
