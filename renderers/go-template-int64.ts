// Carries the integers of a template context into helm as Go int64, the way the
// cluster-stack-operator sees them (it evaluates over unstructured objects, whose integers are
// int64 and whose other numbers are float64).
//
// Why: the context can only reach helm as JSON (a `fromJson` literal, or values.yaml), and Go's
// JSON decoder turns every number into float64 (still so in helm 3.22.0 and 4.3.1, whose values and
// fromJson decode the same way; values-template.test.ts checks the result on each supported helm): `printf "%d"` of a port prints
// `%!d(float64=6443)`, a generation of 12345678 prints `1.2345678e+07`, `eq .port 6443` is an
// error, and integers above 2^53 lose digits.
//
// How: on the JS side every integer leaf is written as its exact decimal string and its position
// recorded (a tree of the same shape: `true` at an integer leaf, a subtree per map key or list index
// above it; branches without integers are left out). From the positions, restoreInt64s writes the
// Go template actions that, run before the user's template, replace each such string by
// `int64 <decimal string>` (sprig's int64 parses it with strconv.ParseInt: exact over the whole
// int64 range). A map is changed in place with `set`; a list cannot be (Go templates cannot assign
// to an element), so a list holding an integer directly is rebuilt with `list` and set into its
// parent; maps inside lists are still changed in place. Because the positions travel beside the
// context instead of inside its strings, no string needs escaping: "6443", "0400" and "1e3" stay
// strings, whatever they look like.
//
// Why generated actions and not a sentinel prefix on the strings walked by one recursive partial
// (helm allows recursive `include`): measured against helm 3.10.1 (not measured again on 3.22 and
// 4.3, whose template package parses and runs actions the same way) on 400 Cluster contexts, the
// partial cost about 20 µs per include, 150 ms per batch, and every genuine string starting with
// the sentinel would need escaping; straight-line actions touch only the integers, one `set` each.
// Parsing is their cost (Go 1.18's template lexer, about 20 µs an action), so the caller defines
// them once per distinct set of positions, which a fleet of Clusters shares, and includes that:
// about 40 ms of helm CPU per 400 contexts of 7 integers each, against 150 ms for the partial.
//
// Which numbers are integers: a JS safe integer, or a bigint within int64 (the input reader decodes
// integers beyond 2^53 as bigint). Everything else is a float64, as apimachinery decodes an integer
// that overflows int64. A JS number cannot tell `1.0` from `1`: an integral float arrives as int64.

/** Where a context holds integers: `true` at an integer leaf, else a subtree per map key or list index. */
export type Int64Positions = true | { [keyOrIndex: string]: Int64Positions };

/**
 * Go template actions (one line, so that they can precede a user template without shifting its line
 * numbers) that turn the integer strings at `positions` into int64 in place, where the Go expression
 * `root` evaluates to the map `encoded` (encodeInt64s's value) in helm; '' without positions.
 */
export function restoreInt64s(
  root: string,
  encoded: Record<string, unknown>,
  positions: Int64Positions | undefined,
): string {
  if (positions === undefined || positions === true) return '';
  const actions: string[] = [];
  restoreInMap(root, [], encoded, positions, actions);
  return actions.join('');
}

type Step = string | number;

/** `(index root "a" 0 "b")`: one lookup however deep, and any key, whatever characters it holds. */
function at(root: string, path: Step[]): string {
  return path.length === 0
    ? root
    : `(index ${root} ${path.map((step) => (typeof step === 'number' ? String(step) : JSON.stringify(step))).join(' ')})`;
}

function restoreInMap(
  root: string,
  path: Step[],
  map: Record<string, unknown>,
  positions: { [key: string]: Int64Positions },
  actions: string[],
): void {
  for (const key of Object.keys(positions)) {
    const inner = positions[key]!;
    const value = map[key];
    const child = [...path, key];
    if (inner === true)
      actions.push(`{{- $_ := set ${at(root, path)} ${JSON.stringify(key)} (int64 ${at(root, child)}) }}`);
    else if (!Array.isArray(value)) restoreInMap(root, child, value as Record<string, unknown>, inner, actions);
    else if (holdsIntegersDirectly(value, inner))
      actions.push(
        `{{- $_ := set ${at(root, path)} ${JSON.stringify(key)} ${rebuiltList(root, child, value, inner, actions)} }}`,
      );
    // A list whose integers all sit in maps (machineDeployments) stays: its maps change in place.
    else {
      for (const [index, element] of value.entries()) {
        const elementPositions = inner[String(index)];
        if (elementPositions !== undefined)
          restoreInMap(
            root,
            [...child, index],
            element as Record<string, unknown>,
            elementPositions as { [key: string]: Int64Positions },
            actions,
          );
      }
    }
  }
}

/** Whether an integer is an element of the list itself, or of a list in it: only then must it be rebuilt. */
function holdsIntegersDirectly(list: unknown[], positions: { [index: string]: Int64Positions }): boolean {
  return list.some((element, index) => {
    const inner = positions[String(index)];
    return inner === true || (inner !== undefined && Array.isArray(element));
  });
}

/** The expression of a copy of the list at `path` with its integers converted; maps in it are converted in place first. */
function rebuiltList(
  root: string,
  path: Step[],
  list: unknown[],
  positions: { [index: string]: Int64Positions },
  actions: string[],
): string {
  const elements = list.map((element, index) => {
    const inner = positions[String(index)];
    const child = [...path, index];
    if (inner === undefined) return at(root, child);
    if (inner === true) return `(int64 ${at(root, child)})`;
    if (Array.isArray(element)) return rebuiltList(root, child, element, inner, actions);
    restoreInMap(root, child, element as Record<string, unknown>, inner, actions);
    return at(root, child);
  });
  return `(list ${elements.join(' ')})`;
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
  if (typeof value === 'number')
    return Number.isSafeInteger(value) ? { value: String(value), positions: true } : { value };
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
