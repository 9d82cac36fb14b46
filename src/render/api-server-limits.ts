// What the API server refuses in a rendered object whatever its chart meant: a name or namespace its
// kind does not allow (src/api/object-name-rules.ts), ConfigMap or Secret data over 1 MiB
// (pkg/apis/core/validation ValidateConfigMap / ValidateSecret: core.MaxSecretSize), and an object
// over etcd's default request limit (--max-request-bytes, 1.5 MiB), which the API server answers with
// "etcdserver: request is too large". Found before anything is written, so such a unit is withheld
// with its reason instead of published and failing to sync.
import type { KubeObject } from '../api/types.js';
import { nameProblem, nameRuleFor, namespaceProblem } from '../api/object-name-rules.js';
import type { ObjectScope } from '../api/object-scope.js';

/** core.MaxSecretSize: a ConfigMap's or Secret's data, summed over its keys. */
const MAX_DATA_BYTES = 1024 * 1024;
/** etcd's default --max-request-bytes: no stored object can be larger. */
const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;
/** Text below this many characters cannot reach MAX_OBJECT_BYTES as JSON (at most 6 bytes a character, `\u0000`) without aliases. */
const SMALL_TEXT = Math.floor(MAX_OBJECT_BYTES / 6);

const describe = (object: KubeObject): string =>
  `${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name}`;
const utf8Bytes = (value: unknown): number => (typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : 0);
// Base64 without decoding it: three bytes per four characters, less the padding.
const base64Bytes = (value: unknown): number =>
  typeof value === 'string' ? Math.floor((value.replace(/\s+/g, '').replace(/=+$/, '').length * 3) / 4) : 0;
const entries = (map: unknown): [string, unknown][] =>
  typeof map === 'object' && map !== null && !Array.isArray(map) ? Object.entries(map) : [];

/** The bytes of data a ConfigMap or Secret holds as the API server counts them, or undefined for other kinds. */
function dataBytes(object: KubeObject): number | undefined {
  if (object.apiVersion !== 'v1') return undefined;
  const record = object as unknown as Record<string, unknown>;
  if (object.kind === 'ConfigMap') {
    return (
      entries(record.data).reduce((sum, [, value]) => sum + utf8Bytes(value), 0) +
      entries(record.binaryData).reduce((sum, [, value]) => sum + base64Bytes(value), 0)
    );
  }
  if (object.kind === 'Secret') {
    // stringData is merged into data (its keys win) before the API server validates the Secret.
    const sizes = new Map<string, number>(entries(record.data).map(([key, value]) => [key, base64Bytes(value)]));
    for (const [key, value] of entries(record.stringData)) sizes.set(key, utf8Bytes(value));
    return [...sizes.values()].reduce((sum, size) => sum + size, 0);
  }
  return undefined;
}

/**
 * Why the API server would refuse this rendered object (its name, its data's or its own size), or
 * undefined. `text` is the document as written, when there is one: short texts skip the JSON size.
 */
export function apiServerProblem(object: KubeObject, text: string | undefined): string | undefined {
  const name = nameProblem(object.metadata.name, nameRuleFor(object.apiVersion, object.kind));
  if (name)
    return `${object.kind} name ${JSON.stringify(object.metadata.name)} ${name}; rename it in the chart (or the values that make it)`;
  // Without aliases a value's UTF-8 takes at most 3 bytes per character of the text it was read
  // from (`\L` is 2 characters for 3 bytes), so a short text cannot hold too much data.
  const aliased = text === undefined || (text.includes('&') && text.includes('*'));
  const data = !aliased && text.length * 3 <= MAX_DATA_BYTES ? undefined : dataBytes(object);
  if (data !== undefined && data > MAX_DATA_BYTES) {
    return `${describe(object)} holds ${data} bytes of data, over the ${MAX_DATA_BYTES} (1 MiB) Kubernetes allows in a ${object.kind}; split it or move the content elsewhere`;
  }
  // Only an anchor (`&`) with an alias (`*`) lets a short text expand; `"*"` alone is common in RBAC rules.
  if (aliased || text.length > SMALL_TEXT) {
    const size = Buffer.byteLength(
      JSON.stringify(object, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value)),
      'utf8',
    );
    if (size > MAX_OBJECT_BYTES)
      return `${describe(object)} is ${size} bytes as JSON, over the ${MAX_OBJECT_BYTES} (1.5 MiB) etcd stores in one object by default; make it smaller`;
  }
  return undefined;
}

/** Why the API server would refuse this object's namespace, for a kind that lives in one. */
export function namespaceLimitProblem(object: KubeObject, scope: ObjectScope): string | undefined {
  const { namespace } = object.metadata;
  // A cluster-scoped object's namespace is dropped, and one of unknown scope may be: neither is refused.
  if (scope !== 'Namespaced' || typeof namespace !== 'string' || namespace === '') return undefined;
  const problem = namespaceProblem(namespace);
  return problem
    ? `${describe(object)}: namespace ${JSON.stringify(namespace)} ${problem}; change it in the chart (or the values that set it)`
    : undefined;
}
