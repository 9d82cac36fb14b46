// A real CRD from the engine cache as an object, for a test that installs it on a leased server
// itself (RealControllerFixture.install), when the broker does not install it on every server: e.g.
// openMCP's ClusterRequest, which only the scheduler tests need.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { decodeYamlDocuments } from '../../src/yaml/kube-yaml.js';
import { engineCrdFiles } from './real-kube-api/index.js';

/** The CustomResourceDefinition `name` (`<plural>.<group>`) that engine `engine` ships, as versions.json pins it. */
export function engineCrd(engine: string, name: string): Record<string, unknown> & { metadata: { name: string } } {
  for (const file of engineCrdFiles(engine)) {
    for (const document of decodeYamlDocuments(readFileSync(file, 'utf8'))) {
      const crd = document.value as { kind?: string; metadata?: { name?: string } } | null;
      if (crd?.kind === 'CustomResourceDefinition' && crd.metadata?.name === name)
        return crd as Record<string, unknown> & { metadata: { name: string } };
    }
  }
  const files = engineCrdFiles(engine).map((file) => path.basename(file));
  throw new Error(`engine ${engine} ships no CRD named ${name} (its files: ${files.join(', ')})`);
}
