// The kustomization.yaml of one output directory. A fleet's tree has one per directory, tens of
// thousands of them, whose entries repeat (every cluster's stage holds the same file names): each
// entry is encoded once per render and the files are put together from those lines, which gives
// exactly the bytes the generic encoder gives for the whole object (serializeObject).
import type { KubeObject } from '../api/types.js';
import { encodeYaml } from '../yaml/kube-yaml.js';
import { serializeObject } from './manifest-objects.js';

const HEADER = 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n';
const PLAIN_FILE_NAME = /^[a-z][a-z0-9.-]*\.yaml$/;

/** Encodes kustomizations; keep one per render so its entry cache lives as long as the render. */
export function kustomizationEncoder(): (resources: readonly string[]) => string {
  const lines = new Map<string, string | null>();
  const line = (entry: string): string | null => {
    // The file names we write (`configmap-cni-config.yaml`): a letter, then letters, digits, `.`
    // and `-`, ending in `.yaml`, which no YAML reader takes for anything but that string (not a
    // number, boolean, null or timestamp, no indicator): plain, as the encoder writes it. Most
    // entries are such names, unique per cluster, so the cache alone would encode each once.
    if (PLAIN_FILE_NAME.test(entry)) return `  - ${entry}\n`;
    let encoded = lines.get(entry);
    if (encoded === undefined) {
      const item = encodeYaml([entry]);
      // Only a one-line item can be indented into place as it is; anything else (never seen for a
      // file name) goes through the generic encoder.
      encoded = /^- [^\n]*\n$/.test(item) ? `  ${item}` : null;
      lines.set(entry, encoded);
    }
    return encoded;
  };
  return (resources) => {
    const encoded = resources.map(line);
    if (resources.length === 0 || encoded.includes(null))
      return serializeObject({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: [...resources],
      } as unknown as KubeObject);
    return HEADER + encoded.join('');
  };
}
