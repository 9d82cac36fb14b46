// What plan's chart-render cache keeps of helm's output: the output with every object the secret
// policy treats as secret (a Secret, anything holding a private key) reduced to its identity and a
// digest of its content. Plan reads the cached output only to compare objects between releases,
// count them and find documents Kubernetes would refuse: a digest compares as the content did, and
// no Secret value ever rests in the cache (issue 28). Pure.
import type { KubeObject } from '../api/types.js';
import { sha256Digest } from '../release/content-digest.js';
import { secretReason } from './secret-policy.js';
import { decodeYamlDocument, encodeYaml, splitYamlDocuments, YamlDecodeError } from '../yaml/kube-yaml.js';

const SOURCE_LINE = /^# Source: .+$/m;

/**
 * `output` with each secret object replaced by `{apiVersion, kind, metadata: {name, generateName,
 * namespace}, contentDigest}`; the other documents keep their bytes, and an output holding no
 * secret object is returned as it is. Undefined when a document does not decode: nothing can be
 * said of what it holds, so such an output is not to be kept.
 */
export function withSecretValueDigests(output: string): string | undefined {
  const documents: string[] = [];
  let replaced = false;
  for (const document of splitYamlDocuments(output)) {
    let value: unknown;
    try {
      value = decodeYamlDocument(document.text).value;
    } catch (error) {
      if (error instanceof YamlDecodeError) return undefined;
      throw error;
    }
    const header = SOURCE_LINE.exec(document.text)?.[0];
    const written = (object: unknown): string => `${header ? `${header}\n` : ''}${encodeYaml(object)}`;
    const record = value as Record<string, unknown> | null;
    if (
      isObject(record) &&
      typeof record.kind === 'string' &&
      record.kind.endsWith('List') &&
      Array.isArray(record.items)
    ) {
      // kubectl applies the items of a List: each item is looked at on its own, as plan reads them.
      const items = record.items.map((item) =>
        isObject(item) && secretReason(item as unknown as KubeObject) ? withDigest(item, encodeYaml(item)) : item,
      );
      if (items.some((item, index) => item !== (record.items as unknown[])[index])) {
        replaced = true;
        documents.push(written({ ...record, items }));
        continue;
      }
    } else if (isObject(record) && secretReason(record as unknown as KubeObject)) {
      replaced = true;
      documents.push(written(withDigest(record, document.text)));
      continue;
    }
    documents.push(document.text);
  }
  return replaced ? documents.map((text) => `---\n${text.replace(/\n?$/, '\n')}`).join('') : output;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The object's identity (what plan compares and names) and a digest of everything it held. */
function withDigest(object: Record<string, unknown>, text: string): Record<string, unknown> {
  const metadata = isObject(object.metadata) ? object.metadata : {};
  const identity = Object.fromEntries(
    ['name', 'generateName', 'namespace']
      .filter((key) => typeof metadata[key] === 'string')
      .map((key) => [key, metadata[key]]),
  );
  const kept = Object.fromEntries(
    ['apiVersion', 'kind'].filter((key) => object[key] !== undefined).map((key) => [key, object[key]]),
  );
  return { ...kept, metadata: identity, contentDigest: sha256Digest(text) };
}
