// A worker with a deep stack (as src/cli/deep-stack.ts starts one) that reads a YAML text as the
// CLI reads it there, and answers with the value as Go's JSON and as our writer writes it again.
import { parentPort, workerData } from 'node:worker_threads';
import { decodeYamlDocument, encodeYaml, useDeepStack } from '../../src/yaml/kube-yaml.js';
import { goJson } from './kube-yaml-oracle.js';

useDeepStack();
try {
  const value = decodeYamlDocument(workerData as string).value;
  // structuredClone and JSON are steps every document takes in a render: they must hold too.
  const copy = structuredClone(value);
  parentPort!.postMessage({
    json: goJson(copy),
    encoded: encodeYaml(copy, { sortKeys: true }),
    jsonLength: JSON.stringify(value).length,
  });
} catch (error) {
  parentPort!.postMessage({ error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
}
