// Schema facts about the Flux and Argo CD kinds our wiring writes: which fields exist at each path,
// which are required, their types, enums and patterns. Written down by us from the published CRDs
// and API types (see each kind's `source`), not copied: just what the tests check objects against.
// A field we never write but that exists is `{ type: 'any' }`: allowed, contents unchecked.

export type Fact =
  | { type: 'string'; enum?: readonly string[]; pattern?: RegExp }
  | { type: 'boolean' }
  | { type: 'integer' }
  | { type: 'object'; properties: Record<string, Fact>; required?: readonly string[] }
  | { type: 'map'; values: Fact }
  | { type: 'array'; items: Fact }
  | { type: 'any' };

export interface KindFacts {
  apiVersion: string;
  kind: string;
  /** Where the facts were read. */
  source: string;
  /** The whole object: apiVersion, kind, metadata, spec. */
  schema: Fact & { type: 'object' };
}

export const str = (options: { enum?: readonly string[]; pattern?: RegExp } = {}): Fact => ({
  type: 'string',
  ...options,
});
export const bool: Fact = { type: 'boolean' };
export const int: Fact = { type: 'integer' };
export const any: Fact = { type: 'any' };
export const obj = (properties: Record<string, Fact>, required: readonly string[] = []): Fact & { type: 'object' } => ({
  type: 'object',
  properties,
  required,
});
export const arr = (items: Fact): Fact => ({ type: 'array', items });
export const map = (values: Fact): Fact => ({ type: 'map', values });

/** The ObjectMeta fields a manifest may set (the rest is written by the API server). */
const objectMeta = obj(
  {
    name: str(),
    generateName: str(),
    namespace: str(),
    labels: map(str()),
    annotations: map(str()),
    finalizers: arr(str()),
    ownerReferences: any,
  },
  ['name'],
);

/** A top-level kind: apiVersion and kind fixed, metadata, and the given spec. */
export function kindFacts(
  apiVersion: string,
  kind: string,
  source: string,
  body: Record<string, Fact>,
  required: readonly string[],
): KindFacts {
  return {
    apiVersion,
    kind,
    source,
    schema: obj(
      { apiVersion: str({ enum: [apiVersion] }), kind: str({ enum: [kind] }), metadata: objectMeta, ...body },
      ['apiVersion', 'kind', 'metadata', ...required],
    ),
  };
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Problems of `value` against `fact`, each `<path>: <what is wrong>`; empty when it conforms. */
function checkFact(value: unknown, fact: Fact, at: string): string[] {
  const actual = typeOf(value);
  switch (fact.type) {
    case 'any':
      return [];
    case 'string': {
      if (actual !== 'string') return [`${at}: expected a string, found ${actual}`];
      const problems: string[] = [];
      if (fact.enum && !fact.enum.includes(value as string))
        problems.push(`${at}: "${String(value)}" is not one of ${fact.enum.join(', ')}`);
      if (fact.pattern && !fact.pattern.test(value as string))
        problems.push(`${at}: "${String(value)}" does not match ${String(fact.pattern)}`);
      return problems;
    }
    case 'boolean':
    case 'integer':
      return actual === fact.type
        ? []
        : [`${at}: expected ${fact.type === 'integer' ? 'an integer' : 'a boolean'}, found ${actual}`];
    case 'array':
      if (actual !== 'array') return [`${at}: expected an array, found ${actual}`];
      return (value as unknown[]).flatMap((item, index) => checkFact(item, fact.items, `${at}[${index}]`));
    case 'map':
      if (actual !== 'object') return [`${at}: expected a map, found ${actual}`];
      return Object.entries(value as Record<string, unknown>).flatMap(([key, item]) =>
        checkFact(item, fact.values, `${at}.${key}`),
      );
    case 'object': {
      if (actual !== 'object') return [`${at}: expected an object, found ${actual}`];
      const record = value as Record<string, unknown>;
      const problems: string[] = [];
      for (const key of fact.required ?? [])
        if (record[key] === undefined) problems.push(`${at}.${key}: required but missing`);
      for (const [key, item] of Object.entries(record)) {
        const child = fact.properties[key];
        if (!child) problems.push(`${at}.${key}: unknown field`);
        else problems.push(...checkFact(item, child, `${at}.${key}`));
      }
      return problems;
    }
  }
}

/** Problems of a whole object against the facts for its apiVersion and kind (unknown kinds are a problem too). */
export function checkObject(object: unknown, facts: readonly KindFacts[], where = ''): string[] {
  const record = (object ?? {}) as { apiVersion?: unknown; kind?: unknown };
  const known = facts.find((f) => f.apiVersion === record.apiVersion && f.kind === record.kind);
  const prefix = where ? `${where} ` : '';
  if (!known) return [`${prefix}${String(record.apiVersion)} ${String(record.kind)}: no schema facts for this kind`];
  return checkFact(object, known.schema, `${prefix}${known.kind}`);
}
