// What a plain (unquoted, untagged) YAML scalar means to Kubernetes: go-yaml v2's `resolve`, which
// sigs.k8s.io/yaml runs under kubectl, Argo CD, Flux and helm. It is YAML 1.1-flavoured and differs
// from YAML 1.2 (js-yaml's default) in ways that change meaning: `0400` is octal 256, `on`/`y`/`no`
// are booleans, `1_000` is 1000, `+.5` and `1e3` are floats, `0X1F` is 31, and `1e400` (out of
// range) stays a string. Integers outside JavaScript's safe range come back as bigint, exactly.

export type PlainScalar = null | boolean | number | bigint | string;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

const FIXED = new Map<string, PlainScalar>();
for (const text of ['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']) FIXED.set(text, true);
for (const text of ['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']) FIXED.set(text, false);
for (const text of ['', '~', 'null', 'Null', 'NULL']) FIXED.set(text, null);
for (const text of ['.nan', '.NaN', '.NAN']) FIXED.set(text, Number.NaN);
for (const text of ['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF']) FIXED.set(text, Number.POSITIVE_INFINITY);
for (const text of ['-.inf', '-.Inf', '-.INF']) FIXED.set(text, Number.NEGATIVE_INFINITY);

/** Booleans only in YAML 1.1: go-yaml v2 (Kubernetes) reads them as booleans, YAML 1.2 tools as strings. */
const YAML11_BOOLEANS = new Set([
  'y',
  'Y',
  'yes',
  'Yes',
  'YES',
  'on',
  'On',
  'ON',
  'n',
  'N',
  'no',
  'No',
  'NO',
  'off',
  'Off',
  'OFF',
]);
/** Plain scalars go-yaml v3 (kustomize) reads as timestamps and rewrites; v2 keeps them as strings. */
const TIMESTAMP_LIKE = /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ]|$)/;

/** First characters of every plain scalar that resolves to something other than a string. */
const NON_STRING_START = new Set('0123456789-+.~yYnNtTfFoO');

/**
 * False when `text` certainly resolves to a string (a cheap test on its first character, run for
 * every scalar of every document before the full resolution).
 */
function mayResolveToNonString(text: string): boolean {
  return text === '' || NON_STRING_START.has(text[0]!);
}

/**
 * True when a YAML 1.2 tool reads this plain scalar differently from Kubernetes: kustomize (which
 * Flux and Argo CD run over the output) turns `yes` into "yes" and `2001-12-14` into a timestamp.
 */
export function isYaml11Only(text: string): boolean {
  if (!mayResolveToNonString(text)) return false;
  return YAML11_BOOLEANS.has(text) || TIMESTAMP_LIKE.test(text);
}

/** `2001-12-14` and the like: a string to go-yaml v2, a timestamp to YAML 1.2 tools. */
export function isTimestampLike(text: string): boolean {
  const first = text.charCodeAt(0);
  return first >= 48 && first <= 57 && TIMESTAMP_LIKE.test(text);
}

/** go-yaml v2's float syntax, applied after its integer attempts fail. */
const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;

/** The merge key is resolved by the mapping, not as a value. */
export const MERGE_KEY = '<<';

/**
 * The value go-yaml v2 gives a plain scalar (a string when it resolves to nothing else; timestamps
 * stay strings because sigs.k8s.io/yaml decodes into interface{}).
 */
export function resolvePlainScalar(text: string): PlainScalar {
  if (!mayResolveToNonString(text)) return text;
  const fixed = FIXED.get(text);
  if (fixed !== undefined || FIXED.has(text)) return fixed ?? null;
  const first = text[0];
  if (first === '.') return parseGoFloat(text) ?? text;
  if (first === undefined || !/[-+0-9]/.test(first)) return text;
  const plain = text.replaceAll('_', '');
  const integer = parseGoInt(plain);
  if (integer !== undefined) return integer;
  if (YAML_STYLE_FLOAT.test(plain)) {
    const value = Number(plain);
    if (Number.isFinite(value)) return value; // Go's ParseFloat refuses out-of-range values
  }
  return text;
}

/** strconv.ParseInt(s, 0, 64), then strconv.ParseUint(s, 0, 64); undefined when both fail. */
function parseGoInt(text: string): number | bigint | undefined {
  const match = /^([-+]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)$/.exec(text);
  if (!match) return undefined;
  const [, sign, digits] = match as unknown as [string, string, string];
  let magnitude: bigint;
  const prefix = digits.slice(0, 2).toLowerCase();
  if (prefix === '0x' || prefix === '0b' || prefix === '0o') magnitude = BigInt(`0${prefix[1]}${digits.slice(2)}`);
  else if (digits.length > 1 && digits.startsWith('0'))
    magnitude = BigInt(`0o${digits.slice(1)}`); // a leading 0 means octal
  else magnitude = BigInt(digits);
  const value = sign === '-' ? -magnitude : magnitude;
  // ParseUint takes no sign at all, so a signed value must fit int64.
  if (value < INT64_MIN || value > (sign === '' ? UINT64_MAX : INT64_MAX)) return undefined;
  return Number.isSafeInteger(Number(value)) ? Number(value) : value;
}

/** strconv.ParseFloat for scalars starting with '.' (Go allows `_` between digits). */
function parseGoFloat(text: string): number | undefined {
  if (text.includes('_') && !/^\.[0-9]+(_[0-9]+)*([eE][-+]?[0-9]+(_[0-9]+)*)?$/.test(text)) return undefined;
  const plain = text.replaceAll('_', '');
  if (!/^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(plain)) return undefined;
  const value = Number(plain);
  return Number.isFinite(value) ? value : undefined;
}

/** Text that go-yaml v2 reads back as exactly `value` (a number, bigint, boolean or null). */
export function formatPlainScalar(value: Exclude<PlainScalar, string>): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (Number.isNaN(value)) return '.nan';
  if (value === Number.POSITIVE_INFINITY) return '.inf';
  if (value === Number.NEGATIVE_INFINITY) return '-.inf';
  // JavaScript's shortest round-trip form ("0.5", "1e+21", "-1.5e-7") is go-yaml float syntax.
  return String(value);
}
