// Validates objects the way Flux applies them, on a real API server: server-side apply of each
// document's own YAML text (so the server reads it with Kubernetes' YAML, never a JS round-trip),
// dry run, strict field validation. Every object gets a verdict: accepted, refused (with the
// server's message) or unchecked (the server has no CRD or built-in type for its kind here): an
// object of an unknown kind is never counted as accepted.
import { readFileSync } from 'node:fs';
import { decodeYamlDocuments } from '../../../src/yaml/kube-yaml.js';
import type { KubeClient } from './kube-client.js';

const FIELD_MANAGER = 'clusterstack-validation';

export interface ObjectVerdict {
  /** `file:line` of the document. */
  source: string;
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  outcome: 'accepted' | 'refused' | 'unchecked';
  /** The server's message (refused), or why it was not checked. */
  message?: string;
}

interface ServedResource {
  plural: string;
  namespaced: boolean;
}

/** The served kinds, keyed `apiVersion kind`, from the server's discovery documents. */
async function servedKinds(client: KubeClient): Promise<Map<string, ServedResource>> {
  const served = new Map<string, ServedResource>();
  const groupVersions = ['v1'];
  const groups = (await client.get('/apis')) as { groups: { versions: { groupVersion: string }[] }[] };
  for (const group of groups.groups) for (const version of group.versions) groupVersions.push(version.groupVersion);
  for (const groupVersion of groupVersions) {
    const list = (await client.get(groupVersion === 'v1' ? '/api/v1' : `/apis/${groupVersion}`)) as {
      resources: { name: string; kind: string; namespaced: boolean }[];
    };
    for (const resource of list.resources) {
      if (resource.name.includes('/')) continue; // subresources
      served.set(`${groupVersion} ${resource.kind}`, { plural: resource.name, namespaced: resource.namespaced });
    }
  }
  return served;
}

/** A document to validate: its YAML text and where it came from. */
export interface SourceDocument {
  source: string;
  text: string;
}

/** The documents of YAML files (empty documents dropped), each named `<label>:<line>`. */
export function documentsOfFiles(files: { file: string; label: string }[]): SourceDocument[] {
  return files.flatMap(({ file, label }) =>
    decodeYamlDocuments(readFileSync(file, 'utf8'))
      .filter((document) => document.value !== null)
      .map((document) => ({ source: `${label}:${document.startLine}`, text: document.text })),
  );
}

/** Dry-runs a server-side apply of every document with strict field validation; namespaces they name are created for real first. */
export async function validateOnServer(client: KubeClient, documents: SourceDocument[]): Promise<ObjectVerdict[]> {
  const served = await servedKinds(client);
  const namespaces = new Set<string>();
  const verdicts: ObjectVerdict[] = [];
  for (const document of documents) {
    const value = decodeYamlDocuments(document.text)[0]?.value as
      { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } } | undefined;
    const apiVersion = String(value?.apiVersion ?? '');
    const kind = String(value?.kind ?? '');
    const name = String(value?.metadata?.name ?? '');
    const base = { source: document.source, apiVersion, kind, name };
    if (apiVersion === '' || kind === '') {
      verdicts.push({ ...base, outcome: 'unchecked', message: 'not a Kubernetes object (no apiVersion or kind)' });
      continue;
    }
    const resource = served.get(`${apiVersion} ${kind}`);
    if (!resource) {
      verdicts.push({
        ...base,
        outcome: 'unchecked',
        message: `no CRD or built-in type for ${apiVersion} ${kind} on this server`,
      });
      continue;
    }
    const namespace = resource.namespaced ? (value?.metadata?.namespace ?? 'default') : undefined;
    if (namespace !== undefined && !namespaces.has(namespace)) {
      const created = await client.request('POST', '/api/v1/namespaces', {
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
      });
      if (created.status !== 201 && created.status !== 409)
        throw new Error(`creating namespace ${namespace}: ${created.status} ${created.text}`);
      namespaces.add(namespace);
    }
    const prefix = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
    const collection = `${prefix}${namespace !== undefined ? `/namespaces/${namespace}` : ''}/${resource.plural}`;
    const response = await client.request('PATCH', `${collection}/${encodeURIComponent(name)}`, {
      query: { dryRun: 'All', fieldValidation: 'Strict', fieldManager: FIELD_MANAGER, force: 'true' },
      contentType: 'application/apply-patch+yaml',
      body: document.text,
    });
    const verdict: ObjectVerdict = {
      ...base,
      ...(namespace !== undefined ? { namespace } : {}),
      outcome: response.status === 200 || response.status === 201 ? 'accepted' : 'refused',
    };
    if (verdict.outcome === 'refused')
      verdict.message = `${response.status} ${response.body?.message ?? response.text}`;
    verdicts.push(verdict);
  }
  return verdicts;
}

/** One line per verdict, for a test's output: `outcome kind/name (source): message`. */
export function describeVerdicts(verdicts: ObjectVerdict[]): string {
  return verdicts
    .map(
      (verdict) =>
        `${verdict.outcome.padEnd(9)} ${verdict.apiVersion} ${verdict.kind} ${verdict.namespace ? `${verdict.namespace}/` : ''}${verdict.name} (${verdict.source})${verdict.message ? `: ${verdict.message}` : ''}`,
    )
    .join('\n');
}
