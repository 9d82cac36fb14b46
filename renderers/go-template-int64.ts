// Carries the integers of a template context into helm as Go int64, the way the
// cluster-stack-operator sees them (it evaluates over unstructured objects, whose integers are
// int64 and whose other numbers are float64).
//
// Why: the context can only reach helm as JSON (a `fromJson` literal, or values.yaml), and Go's
// JSON decoder turns every number into float64: `printf "%d"` of a port prints
// `%!d(float64=6443)`, a generation of 12345678 prints `1.2345678e+07`, `eq .port 6443` is an
// error, and integers above 2^53 lose digits.
//
// How: on the JS side every integer leaf is written as its exact decimal string and its position
// recorded in a side tree of the same shape (`true` at an integer leaf, a map from key, or from
// list index, to subtree above it; branches without integers are left out). In helm, the recursive
// partial below walks that tree alongside the context before the user's template runs and replaces
// each marked leaf by `int64 <decimal string>` (sprig's int64 parses it with strconv.ParseInt: exact
// over the whole int64 range). Maps are changed in place with `set`; a list cannot be, so a list
// holding a marked leaf is rebuilt and set into its parent. Because the positions travel beside the
// context instead of inside its strings, no string needs escaping: "6443", "0400" and "1e3" stay
// strings, whatever they look like. Only the integer branches are walked, so the cost is a few
// includes per context. (Helm limits include recursion by depth, not by count; verified against
// helm 3.10.1 with thousands of includes in one render.)
//
// Which numbers are integers: a JS safe integer, or a bigint within int64 (the input reader decodes
// integers beyond 2^53 as bigint). Everything else is a float64, as apimachinery decodes an integer
// that overflows int64. A JS number cannot tell `1.0` from `1`: an integral float arrives as int64.

/** Where a context holds integers: `true` at an integer leaf, else a subtree per map key or list index. */
export type Int64Positions = true | { [keyOrIndex: string]: Int64Positions };

/** The name of the partial that turns the marked leaves of a context into int64. */
export const INT64_TEMPLATE = 'cs-int64';

/**
 * Defines INT64_TEMPLATE: called with `(dict "p" parent "k" key "t" positions)`, converts the value
 * at parent[key] in place. One line, so that it can precede a user template without shifting its
 * line numbers.
 */
export const INT64_DEFINITION = [
  `{{- define "${INT64_TEMPLATE}" -}}`,
  '{{- $v := index .p .k -}}',
  '{{- if kindIs "bool" .t -}}{{- $_ := set .p .k (int64 $v) -}}',
  `{{- else if kindIs "map" $v -}}{{- range $k, $t := .t -}}{{- include "${INT64_TEMPLATE}" (dict "p" $v "k" $k "t" $t) -}}{{- end -}}`,
  // A list: rebuilt, as Go templates cannot assign to a list element. An element is boxed in a map
  // so that the same partial can convert it.
  '{{- else -}}{{- $out := list -}}{{- range $i, $e := $v -}}{{- $n := toString $i -}}',
  `{{- if hasKey $.t $n -}}{{- $box := dict "e" $e -}}{{- include "${INT64_TEMPLATE}" (dict "p" $box "k" "e" "t" (index $.t $n)) -}}{{- $e = $box.e -}}{{- end -}}`,
  '{{- $out = append $out $e -}}{{- end -}}{{- $_ := set .p .k $out -}}',
  '{{- end -}}{{- end -}}',
].join('');

/** The action converting the context held by the Go expression `context` in place (a map), or '' without integers. */
export function restoreInt64s(context: string, positions: string | undefined): string {
  return positions === undefined ? '' : `{{- include "${INT64_TEMPLATE}" (dict "p" (dict "v" ${context}) "k" "v" "t" ${positions}) }}`;
}

export interface EncodedInt64s {
  /** The value with every integer as its decimal string: plain JSON (no bigint), safe for JSON.stringify. */
  value: unknown;
  /** Where the integers were; undefined when there are none. */
  positions?: Int64Positions;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Splits `value` into JSON-safe data and the positions of its integers; see the file comment. */
export function encodeInt64s(value: unknown): EncodedInt64s {
  if (typeof value === 'bigint') {
    if (value >= INT64_MIN && value <= INT64_MAX) return { value: value.toString(), positions: true };
    return { value: Number(value) };
  }
  if (typeof value === 'number') return Number.isSafeInteger(value) ? { value: String(value), positions: true } : { value };
  if (Array.isArray(value)) {
    const positions: Record<string, Int64Positions> = Object.create(null);
    const encoded = value.map((element, index) => {
      const inner = encodeInt64s(element);
      if (inner.positions !== undefined) positions[String(index)] = inner.positions;
      return inner.value;
    });
    return Object.keys(positions).length > 0 ? { value: encoded, positions } : { value: encoded };
  }
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    // No prototype: a key such as `__proto__` is data here, not a setter.
    const positions: Record<string, Int64Positions> = Object.create(null);
    const encoded: Record<string, unknown> = Object.create(null);
    for (const [key, element] of Object.entries(value)) {
      const inner = encodeInt64s(element);
      if (inner.positions !== undefined) positions[key] = inner.positions;
      encoded[key] = inner.value;
    }
    return Object.keys(positions).length > 0 ? { value: encoded, positions } : { value: encoded };
  }
  return { value };
}
