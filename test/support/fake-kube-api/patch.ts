/** JSON merge patch (RFC 7386) and JSON patch (RFC 6902), as the API server applies them. */
import { clone, isPlainObject, jsonEqual } from './kube-object.js';

/** Thrown when a patch cannot be applied; the server answers 422 like the real one. */
export class PatchError extends Error {}

/** Thrown when the patch document itself is malformed; the server answers 400. */
export class PatchFormatError extends Error {}

/** Applies an RFC 7386 merge patch: objects merge, null deletes, everything else (arrays too) replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return clone(patch);
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

interface Operation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: unknown;
}

const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);

function parseOperations(patch: unknown): Operation[] {
  if (!Array.isArray(patch)) {
    // The real message comes from Go's JSON decoder; controllers see it when they send a merge-style body as JSON patch.
    throw new PatchFormatError('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  }
  return patch.map((raw, i) => {
    if (!isPlainObject(raw) || typeof raw['op'] !== 'string' || !OPS.has(raw['op'])) {
      throw new PatchFormatError(`Unexpected kind: ${JSON.stringify(raw)} at operation ${i}`);
    }
    if (typeof raw['path'] !== 'string') throw new PatchFormatError(`operation ${i} (${raw['op']}) is missing path`);
    if ((raw['op'] === 'move' || raw['op'] === 'copy') && typeof raw['from'] !== 'string') {
      throw new PatchFormatError(`operation ${i} (${raw['op']}) is missing from`);
    }
    if (['add', 'replace', 'test'].includes(raw['op']) && !('value' in raw)) {
      throw new PatchFormatError(`operation ${i} (${raw['op']}) is missing value`);
    }
    return raw as unknown as Operation;
  });
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchError(`invalid JSON pointer: ${JSON.stringify(pointer)}`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function arrayIndex(token: string, length: number, allowEnd: boolean, pointer: string): number {
  if (allowEnd && token === '-') return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token))
    throw new PatchError(`invalid array index ${JSON.stringify(token)} in ${pointer}`);
  const index = Number(token);
  if (index > length || (!allowEnd && index === length)) throw new PatchError(`array index out of bounds: ${pointer}`);
  return index;
}

/** Resolves all but the last token, so the caller can act on the parent container. */
function parentOf(doc: unknown, tokens: string[], pointer: string): { parent: unknown; key: string } {
  let current = doc;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(current)) current = current[arrayIndex(token, current.length, false, pointer)];
    else if (isPlainObject(current) && token in current) current = current[token];
    else throw new PatchError(`doc is missing path: "${pointer}"`);
  }
  return { parent: current, key: tokens[tokens.length - 1] ?? '' };
}

function getAt(doc: unknown, pointer: string): unknown {
  let current = doc;
  for (const token of parsePointer(pointer)) {
    if (Array.isArray(current)) current = current[arrayIndex(token, current.length, false, pointer)];
    else if (isPlainObject(current) && token in current) current = current[token];
    else throw new PatchError(`doc is missing path: "${pointer}"`);
  }
  return current;
}

function addAt(doc: unknown, pointer: string, value: unknown): unknown {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return value;
  const { parent, key } = parentOf(doc, tokens, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(key, parent.length, true, pointer), 0, value);
  else if (isPlainObject(parent)) parent[key] = value;
  else throw new PatchError(`doc is missing path: "${pointer}"`);
  return doc;
}

function removeAt(doc: unknown, pointer: string): unknown {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) throw new PatchError('cannot remove the whole document');
  const { parent, key } = parentOf(doc, tokens, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(key, parent.length, false, pointer), 1);
  else if (isPlainObject(parent) && key in parent) delete parent[key];
  else throw new PatchError(`Unable to remove nonexistent key: ${key}: missing value`);
  return doc;
}

/** Applies an RFC 6902 patch atomically: any failing operation (including `test`) leaves the input untouched. */
export function applyJsonPatch(target: unknown, patch: unknown): unknown {
  const operations = parseOperations(patch);
  let doc = clone(target);
  for (const op of operations) {
    switch (op.op) {
      case 'add':
        doc = addAt(doc, op.path, clone(op.value));
        break;
      case 'remove':
        doc = removeAt(doc, op.path);
        break;
      case 'replace':
        getAt(doc, op.path);
        doc = op.path === '' ? clone(op.value) : addAt(removeAt(doc, op.path), op.path, clone(op.value));
        break;
      case 'move': {
        const value = getAt(doc, op.from ?? '');
        doc = addAt(removeAt(doc, op.from ?? ''), op.path, value);
        break;
      }
      case 'copy':
        doc = addAt(doc, op.path, clone(getAt(doc, op.from ?? '')));
        break;
      case 'test':
        if (!jsonEqual(getAt(doc, op.path), op.value))
          throw new PatchError(`testing value ${op.path} failed: test failed`);
        break;
    }
  }
  return doc;
}
