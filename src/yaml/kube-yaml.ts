// The one YAML module: reads and writes YAML with the meaning Kubernetes gives it (sigs.k8s.io/yaml
// over go-yaml v2, as kubectl, Argo CD, Flux and helm do), never js-yaml's YAML 1.2 defaults.
//
// - Scalars resolve as go-yaml v2 resolves them (go-yaml-scalars.ts): `0400` is 256, `on` is true.
// - Duplicate mapping keys: the last one wins, and each is reported (Kubernetes accepts them).
// - Unknown tags are ignored (`!foo 12` is the string "12"); `!!binary` decodes to its text.
// - Aliases are bounded like go-yaml bounds them, so an alias bomb is an error, not an OOM.
// - `.inf`/`.nan` values are refused: JSON cannot carry them, so Kubernetes refuses the document.
// Known difference, never seen in manifests: mapping keys that go-yaml reads as null, as a float or
// as an integer beyond int64 are stringified the JavaScript way (Kubernetes refuses null and uint64
// keys and formats float keys with 32-bit precision).
// - Writing quotes every string that go-yaml would otherwise read as something else.
import * as jsYaml from 'js-yaml';
import {
  formatPlainScalar,
  isTimestampLike,
  isYaml11Only,
  MERGE_KEY,
  resolvePlainScalar,
  type PlainScalar,
} from './go-yaml-scalars.js';
import { Failure } from '../core/failure.js';

const CORE = 'tag:yaml.org,2002:';

const isPlainValue = (value: unknown): value is Exclude<PlainScalar, string> =>
  value === null || typeof value === 'boolean' || typeof value === 'number' || typeof value === 'bigint';

/** What reading the current document noticed (loading is synchronous, so one record serves). */
const noticed = { ignoredTags: [] as string[], yaml11Only: false, nonFinite: false };

const noticeNonFinite = (value: PlainScalar): PlainScalar => {
  if (typeof value === 'number' && !Number.isFinite(value)) noticed.nonFinite = true;
  return value;
};

/**
 * js-yaml asks `resolve` and then, for the same text, `construct`: the resolution is kept in between
 * rather than done twice (every plain scalar of every document passes here).
 */
const lastResolved = { text: '', value: '' as PlainScalar };

/** Every untagged plain scalar, resolved as go-yaml v2 resolves it. */
const plainScalar = new jsYaml.Type('tag:clusterstack.x-k8s.io,2024:plain', {
  kind: 'scalar',
  resolve: (data: unknown) => {
    if (typeof data !== 'string' || data === MERGE_KEY) return false;
    const value = resolvePlainScalar(data);
    if (typeof value === 'string') return false;
    lastResolved.text = data;
    lastResolved.value = value;
    return true;
  },
  construct: (data: string) => {
    if (isYaml11Only(data)) noticed.yaml11Only = true;
    return noticeNonFinite(lastResolved.text === data ? lastResolved.value : resolvePlainScalar(data));
  },
  predicate: isPlainValue,
  represent: (value: object) => formatPlainScalar(value as unknown as Exclude<PlainScalar, string>),
});

/**
 * Plain scalars that stay strings for Kubernetes but that YAML 1.2 tools read as timestamps. Listed
 * as their own type so reading notices them and writing quotes them.
 */
const timestampLike = new jsYaml.Type('tag:clusterstack.x-k8s.io,2024:timestamp-like', {
  kind: 'scalar',
  // Only the timestamp shape stays a string among YAML 1.1-only scalars (the rest are booleans).
  resolve: (data: unknown) =>
    typeof data === 'string' && isTimestampLike(data) && typeof resolvePlainScalar(data) === 'string',
  construct: (data: string) => {
    noticed.yaml11Only = true;
    return data;
  },
});

/** `!!int`, `!!float`, `!!bool`, `!!null`: the scalar must resolve to that type (go-yaml fails otherwise). */
function explicitScalar(
  name: 'int' | 'float' | 'bool' | 'null',
  accepts: (value: PlainScalar) => boolean,
): jsYaml.Type {
  return new jsYaml.Type(`${CORE}${name}`, {
    kind: 'scalar',
    resolve: (data: unknown) => typeof data === 'string' && accepts(resolvePlainScalar(data)),
    construct: (data: string) => {
      const value = noticeNonFinite(resolvePlainScalar(data));
      return name === 'float' && typeof value === 'bigint' ? Number(value) : value;
    },
  });
}

const isInteger = (value: PlainScalar): boolean =>
  typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value));
const explicitTypes = [
  explicitScalar('int', (value) => isInteger(value)),
  explicitScalar('float', (value) => typeof value === 'number' || typeof value === 'bigint'),
  explicitScalar('bool', (value) => typeof value === 'boolean'),
  explicitScalar('null', (value) => value === null),
  new jsYaml.Type(`${CORE}binary`, {
    kind: 'scalar',
    resolve: (data: unknown) => typeof data === 'string' && /^[A-Za-z0-9+/=\s]*$/.test(data),
    // go-yaml gives the raw bytes as a Go string; JSON encoding then replaces invalid UTF-8.
    construct: (data: string) => Buffer.from(data.replace(/\s+/g, ''), 'base64').toString('utf8'),
  }),
  new jsYaml.Type(`${CORE}timestamp`, { kind: 'scalar', construct: (data: string) => data }),
  // Any other tag (local `!foo`, `!!set`, `!!omap`, ...) is ignored: the node keeps its plain meaning
  // as a string, list or map, as go-yaml does for tags it cannot resolve.
  ignoredTag('scalar', (data) => (data as string | null) ?? ''),
  ignoredTag('sequence', (data) => (data as unknown[] | null) ?? []),
  ignoredTag('mapping', (data) => (data as Record<string, unknown> | null) ?? {}),
];

function ignoredTag(kind: 'scalar' | 'sequence' | 'mapping', construct: (data: unknown) => unknown): jsYaml.Type {
  return new jsYaml.Type('', {
    kind,
    multi: true,
    construct: (data: unknown, tag?: string) => {
      noticed.ignoredTags.push(tag ?? '');
      return construct(data);
    },
  });
}

const mergeType = (jsYaml as unknown as { types: Record<string, jsYaml.Type> }).types['merge']!;

/** go-yaml v2 semantics for reading and writing; the only schema any Kubernetes YAML goes through. */
const KUBE_YAML_SCHEMA = jsYaml.FAILSAFE_SCHEMA.extend({
  implicit: [mergeType, timestampLike, plainScalar],
  explicit: explicitTypes,
});

/** A YAML text that cannot be read; `line` is 1-based within the text given. */
export class YamlDecodeError extends Failure {
  constructor(
    readonly reason: string,
    readonly line?: number,
    readonly column?: number,
  ) {
    super(
      'fix-input',
      `${reason}${line !== undefined ? ` (line ${line}${column !== undefined ? `, column ${column}` : ''})` : ''}`,
    );
    this.name = 'YamlDecodeError';
  }
}

export interface DecodedDocument {
  value: unknown;
  /** Duplicate keys, each with its 1-based line: Kubernetes keeps the last value, so do we. */
  duplicateKeys: { key: string; line: number }[];
  /** Tags Kubernetes ignores (`!foo`, `!!set`): their nodes were read as plain strings, lists or maps. */
  ignoredTags: string[];
  /**
   * The text holds plain scalars that YAML 1.2 tools read differently (`yes`, `on`, `2001-12-14`):
   * kustomize would change their meaning, so such a document is written re-encoded (encodeYaml).
   */
  yaml11Only: boolean;
}

/**
 * Deepest nesting read, in levels of nodes (the document's mapping is one, a value inside it two):
 * Kubernetes' own limit, go-yaml's max depth and encoding/json's when the API server decodes.
 */
export const MAX_NESTING_DEPTH = 10_000;
/**
 * What a thread with Node's default stack (about 1 MB) reads: js-yaml recurses a few frames per
 * level, and every later walk of a document (JSON, structuredClone, digests, helm values) recurses
 * too; near 1,600 levels the stack ends. Real manifests (the deepest CRD schemas) stay far below it,
 * so documents this deep are read, and everything after, on a thread with a deep stack
 * (src/cli/deep-stack.ts): a reader there calls useDeepStack().
 */
export const DEFAULT_STACK_NESTING_DEPTH = 1000;
/** The depth this thread reads; raised by useDeepStack. */
let nestingLimit = DEFAULT_STACK_NESTING_DEPTH;
/** js-yaml stops before the level it names: one more lets `limit` levels of nodes through, a scalar counting as one. */
const loadOptions = (limit: number) => ({ schema: KUBE_YAML_SCHEMA, maxDepth: limit + 1 });
let LOAD_OPTIONS = loadOptions(nestingLimit);
const TOO_DEEP = `nests collections more than ${MAX_NESTING_DEPTH} levels deep, which Kubernetes refuses too ("exceeded max depth of ${MAX_NESTING_DEPTH}"): flatten the document`;

/** Lets this thread read documents up to Kubernetes' depth: call it only on a thread whose stack holds them (a worker with a deep stack). */
export function useDeepStack(): void {
  nestingLimit = MAX_NESTING_DEPTH;
  LOAD_OPTIONS = loadOptions(nestingLimit);
}

/** Whether this thread reads documents up to Kubernetes' depth. */
export function usesDeepStack(): boolean {
  return nestingLimit === MAX_NESTING_DEPTH;
}

/**
 * A document nested deeper than this thread's stack reads (DEFAULT_STACK_NESTING_DEPTH), an input or
 * helm's output alike: the command is run again on a thread with a deep stack (src/cli/deep-stack.ts),
 * which reads it up to Kubernetes' limit. Nothing may turn it into a unit's withhold or a warning
 * (plan's render check passes it on too). Where nothing can rerun (a library caller), its message
 * says what happened and what to do.
 */
export class DeepNestingError extends Failure {
  /** Read by the CLI (src/cli/run-cli.ts) without loading this module. */
  readonly needsDeepStack = true;
  constructor(
    readonly line?: number,
    file?: string,
  ) {
    const where = file !== undefined ? `${file}${line !== undefined ? `:${line}` : ''}: ` : '';
    super(
      'fix-input',
      `${where}nests collections more than ${DEFAULT_STACK_NESTING_DEPTH} levels deep${file === undefined && line !== undefined ? ` (line ${line})` : ''}; Kubernetes reads up to ${MAX_NESTING_DEPTH}, and reading it needs a thread with a deep stack, which this run does not have: run it through the clusterstack command, which runs itself again on such a thread when it meets such a document`,
    );
    this.name = 'DeepNestingError';
  }
}

/** At most this many duplicate keys are listed per document (each costs a parse). */
const DUPLICATES_LISTED = 20;
const DUPLICATE_KEY = 'duplicated mapping key';

/** Reads one YAML document (an empty text is null); throws YamlDecodeError. */
export function decodeYamlDocument(text: string): DecodedDocument {
  let value: unknown;
  let duplicateKeys: DecodedDocument['duplicateKeys'] = [];
  noticed.ignoredTags = [];
  noticed.yaml11Only = false;
  noticed.nonFinite = false;
  try {
    value = jsYaml.load(text, LOAD_OPTIONS);
  } catch (error) {
    if (!(error instanceof jsYaml.YAMLException) || error.reason !== DUPLICATE_KEY) throw toDecodeError(error);
    // Rare: list the duplicates, then read with last-wins semantics (json mode).
    duplicateKeys = findDuplicateKeys(text);
    try {
      value = jsYaml.load(text, { ...LOAD_OPTIONS, json: true });
    } catch (inner) {
      throw toDecodeError(inner);
    }
  }
  // Without an alias indicator nothing is shared, and only a scalar read as .inf/.nan needs the walk.
  if (noticed.nonFinite || text.includes('*')) checkAliasExpansion(value);
  return {
    value: value === undefined ? null : value,
    duplicateKeys,
    ignoredTags: [...new Set(noticed.ignoredTags)],
    yaml11Only: noticed.yaml11Only,
  };
}

function toDecodeError(error: unknown): YamlDecodeError | DeepNestingError {
  if (error instanceof jsYaml.YAMLException) {
    const mark = error.mark as { line?: number; column?: number } | undefined;
    const line = mark?.line !== undefined ? mark.line + 1 : undefined;
    const tooDeep = error.reason.startsWith('nesting exceeded maxDepth');
    // Past this thread's stack: read again where the stack holds Kubernetes' depth (and is refused there beyond it).
    if (tooDeep && nestingLimit < MAX_NESTING_DEPTH) return new DeepNestingError(line);
    return new YamlDecodeError(
      tooDeep ? TOO_DEEP : error.reason,
      line,
      mark?.column !== undefined ? mark.column + 1 : undefined,
    );
  }
  if (error instanceof RangeError)
    return nestingLimit < MAX_NESTING_DEPTH ? new DeepNestingError() : new YamlDecodeError(TOO_DEEP);
  return new YamlDecodeError(error instanceof Error ? error.message : String(error));
}

/**
 * Duplicate keys of a document. js-yaml stops at the first one in strict mode; each found key is
 * renamed in a scratch copy so the next parse finds the next. Only documents that have duplicates
 * pay for more than one parse.
 */
function findDuplicateKeys(text: string): { key: string; line: number }[] {
  const found: { key: string; line: number }[] = [];
  let scratch = text;
  let shift = 0; // characters inserted before later positions of the original text
  for (let round = 0; round < DUPLICATES_LISTED; round += 1) {
    try {
      jsYaml.load(scratch, LOAD_OPTIONS);
      break;
    } catch (error) {
      if (!(error instanceof jsYaml.YAMLException) || error.reason !== DUPLICATE_KEY) break;
      const position = (error.mark as { position: number }).position;
      const key =
        /^(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^:\n]*?)(?=\s*:(?:\s|$))/.exec(scratch.slice(position))?.[0] ?? '';
      const original = position - shift;
      found.push({
        key: key.replace(/^["']|["']$/g, ''),
        line: text.slice(0, Math.max(0, original)).split('\n').length,
      });
      const marker = `cs-duplicate-${round}-`;
      scratch = `${scratch.slice(0, position)}${marker}${scratch.slice(position)}`;
      shift += marker.length;
    }
  }
  return found;
}

// go-yaml v2's bounds on aliasing (decode.go): beyond them a document is "excessive aliasing".
const ALIAS_RATIO_LOW = 400_000;
const ALIAS_RATIO_HIGH = 4_000_000;
/** Expanded scalar text a document may reach through aliases, whatever its size on disk. */
const EXPANDED_TEXT_LIMIT = 64 * 1024 * 1024;

function allowedAliasRatio(decoded: number): number {
  if (decoded <= ALIAS_RATIO_LOW) return 0.99;
  if (decoded >= ALIAS_RATIO_HIGH) return 0.1;
  return 0.99 - 0.89 * ((decoded - ALIAS_RATIO_LOW) / (ALIAS_RATIO_HIGH - ALIAS_RATIO_LOW));
}

/**
 * js-yaml shares one object for every alias of an anchor, so reading a "billion laughs" document is
 * cheap, but anything walking it later (digests, JSON, helm values) would expand it. Counts the
 * expanded size with memoization (linear in distinct nodes) and refuses what go-yaml would refuse.
 */
function checkAliasExpansion(root: unknown): void {
  const sizes = new Map<object, { nodes: number; text: number }>();
  const visiting = new Set<object>();
  let distinct = 0;
  const measure = (value: unknown): { nodes: number; text: number } => {
    if (value === null || typeof value !== 'object') {
      if (typeof value === 'number' && !Number.isFinite(value))
        throw new YamlDecodeError('holds .inf or .nan, which JSON (and so Kubernetes) cannot carry');
      distinct += 1; // a scalar is never shared: js-yaml aliases share containers only
      return { nodes: 1, text: typeof value === 'string' ? value.length : 8 };
    }
    const known = sizes.get(value);
    if (known) return known;
    if (visiting.has(value)) throw new YamlDecodeError('an anchor contains an alias of itself');
    visiting.add(value);
    distinct += 1;
    const total = { nodes: 1, text: 0 };
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      const size = measure(child);
      total.nodes += size.nodes;
      total.text += size.text;
    }
    visiting.delete(value);
    sizes.set(value, total);
    return total;
  };
  const { nodes, text } = measure(root);
  const aliased = nodes - distinct;
  if ((aliased > 100 && nodes > 1000 && aliased / nodes > allowedAliasRatio(nodes)) || text > EXPANDED_TEXT_LIMIT) {
    throw new YamlDecodeError(
      `contains excessive aliasing (its anchors expand to ${nodes} nodes); Kubernetes refuses such documents too`,
    );
  }
}

export interface SplitDocument {
  text: string;
  /** 1-based line of the document's first line in the whole stream. */
  startLine: number;
}

/**
 * Splits a YAML stream where apimachinery's YAMLReader does (kubectl, Argo CD and Flux read helm
 * output this way): at a line that starts with `---` followed by nothing but spaces or a comment.
 * Documents that hold only whitespace are dropped.
 */
export function splitYamlDocuments(stream: string): SplitDocument[] {
  // Walked with indexOf and cut with slice: every rendered unit's output passes here, and splitting
  // it into lines to join them again made a string per line for the collector.
  const documents: SplitDocument[] = [];
  const flush = (from: number, to: number, startLine: number): void => {
    const text = stream.slice(from, to);
    if (text.trim() !== '') documents.push({ text, startLine });
  };
  let start = 0; // where the current document starts
  let startLine = 1;
  let line = 1;
  for (let at = 0; at <= stream.length; line += 1) {
    const newline = stream.indexOf('\n', at);
    const end = newline < 0 ? stream.length : newline;
    if (stream.startsWith('---', at)) {
      const rest = stream.slice(at + 3, end).trim();
      if (rest === '' || rest.startsWith('#')) {
        // The document is every line before this one, each with its newline.
        flush(start, at, startLine);
        start = end + 1;
        startLine = line + 1;
      }
    }
    if (newline < 0) break;
    at = newline + 1;
  }
  if (start <= stream.length) flush(start, stream.length, startLine);
  return documents;
}

/** Every document of a stream, decoded; throws YamlDecodeError with the line in the whole stream. */
export function decodeYamlDocuments(stream: string): (DecodedDocument & SplitDocument)[] {
  return splitYamlDocuments(stream).map((document) => {
    try {
      const decoded = decodeYamlDocument(document.text);
      return {
        ...document,
        ...decoded,
        duplicateKeys: decoded.duplicateKeys.map((d) => ({ ...d, line: d.line + document.startLine - 1 })),
      };
    } catch (error) {
      if (error instanceof YamlDecodeError)
        throw new YamlDecodeError(
          error.reason,
          error.line !== undefined ? error.line + document.startLine - 1 : document.startLine,
          error.column,
        );
      if (error instanceof DeepNestingError)
        throw new DeepNestingError(error.line !== undefined ? error.line + document.startLine - 1 : document.startLine);
      throw error;
    }
  });
}

export interface EncodeOptions {
  /** Sort mapping keys (for objects we generate); helm-derived objects keep their order. */
  sortKeys?: boolean;
}

/**
 * YAML that go-yaml v2 reads back as exactly `value`, and that YAML 1.2 tools (kustomize) read the
 * same way: strings either would read as anything else are quoted (`"on"`, `"0400"`, `"2001-12-14"`),
 * booleans are `true`/`false`, integers beyond 2^53 (bigint) are written in full, no anchors.
 */
export function encodeYaml(value: unknown, options: EncodeOptions = {}): string {
  // Collections nested deeper than the default stack reads are written in flow style: in block
  // style each level indents further, and 10,000 levels would take 100 MB of spaces. No document
  // that shallower readers accept changes.
  return jsYaml.dump(value, {
    schema: KUBE_YAML_SCHEMA,
    lineWidth: -1,
    noRefs: true,
    sortKeys: options.sortKeys ?? false,
    quotingType: '"',
    flowLevel: DEFAULT_STACK_NESTING_DEPTH,
  });
}

/** Strings encodeScalar wrote lately: the same namespace and annotations go into every object of a render. */
const encodedStrings = new Map<string, string>();
const ENCODED_STRINGS_KEPT = 256;

/** One scalar as go-yaml v2 reads it back (for text inserted into a document). */
export function encodeScalar(value: string | number | boolean): string {
  if (typeof value !== 'string') return encodeYaml(value).trimEnd();
  let text = encodedStrings.get(value);
  if (text === undefined) {
    text = encodeYaml(value).trimEnd();
    if (encodedStrings.size >= ENCODED_STRINGS_KEPT) encodedStrings.clear();
    encodedStrings.set(value, text);
  }
  return text;
}

/** Deep equality of decoded values (bigint, NaN and key order handled as Kubernetes sees them). */
export function sameYamlValue(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a === b || (Number.isNaN(a) && Number.isNaN(b));
  if (typeof a === 'bigint' || typeof b === 'bigint') {
    const integer = (v: unknown): v is bigint | number =>
      typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v));
    return integer(a) && integer(b) && BigInt(a) === BigInt(b);
  }
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a))
    return (
      a.length === (b as unknown[]).length && a.every((item, index) => sameYamlValue(item, (b as unknown[])[index]))
    );
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  return (
    keysA.length === keysB.length &&
    keysA.every(
      (key) =>
        Object.hasOwn(b, key) &&
        sameYamlValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
    )
  );
}
