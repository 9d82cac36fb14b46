// Installs CustomResourceDefinitions into a real API server by server-side apply, as Flux and
// `kubectl apply --server-side` do (large CRDs such as Argo CD's exceed client-side apply's
// annotation limit), and waits until the server serves each (Established).
import { readFileSync } from 'node:fs';
import { decodeYamlDocuments, encodeYaml } from '../../../src/yaml/kube-yaml.js';
import type { KubeClient } from './kube-client.js';
import { waitUntil, type LocalProcess } from './local-process.js';

const FIELD_MANAGER = 'clusterstack-test';
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

interface CrdDocument {
  kind?: string;
  metadata?: { name?: string; labels?: Record<string, string> };
}

/** The CRDs in `files`, in order, each with its document's text; throws naming the file and line of anything else. */
export function readCrds(files: string[]): { file: string; name: string; crd: CrdDocument; text: string }[] {
  const crds: { file: string; name: string; crd: CrdDocument; text: string }[] = [];
  for (const file of files)
    for (const document of decodeYamlDocuments(readFileSync(file, 'utf8'))) {
      const crd = document.value as CrdDocument | null;
      if (crd === null) continue;
      const name = crd.metadata?.name;
      if (crd.kind !== 'CustomResourceDefinition' || !name)
        throw new Error(`${file}:${document.startLine}: not a CustomResourceDefinition (kind ${String(crd.kind)})`);
      crds.push({ file, name, crd, text: document.text });
    }
  return crds;
}

/**
 * Applies every CRD in `files` and waits until all are Established; returns their names. `labels`
 * go onto each CRD in the same apply (a leased server's broker deletes a file's CRDs by label).
 */
export async function installCrds(
  api: { admin: { client: KubeClient }; processes: LocalProcess[] },
  files: string[],
  options: { labels?: Record<string, string> } = {},
): Promise<string[]> {
  const client = api.admin.client;
  const crds = readCrds(files);
  for (const { file, name, crd, text } of crds) {
    const response = await client.request('PATCH', `${CRDS}/${name}`, {
      query: { fieldManager: FIELD_MANAGER, force: 'true' },
      contentType: 'application/apply-patch+yaml',
      // Labelled: re-encoded by kube-yaml, so the server reads the same object plus the labels.
      body: options.labels
        ? encodeYaml({
            ...crd,
            metadata: { ...crd.metadata, labels: { ...crd.metadata?.labels, ...options.labels } },
          })
        : text,
    });
    if (response.status !== 200 && response.status !== 201)
      throw new Error(
        `${file}: installing CRD ${name} failed: ${response.status} ${response.body?.message ?? response.text}`,
      );
  }
  const names = crds.map((crd) => crd.name);
  await waitUntilEstablished(client, new Set(names), api.processes);
  return names;
}

/**
 * Waits for the event: each round LISTs the CRDs once, then watches them from that list until every
 * one of `pending` is Established (or the server ends the watch after a few seconds: another round,
 * with a check that the server is still running between). A GET per CRD every 250 ms had the server
 * serialise every pending CRD four times a second while it was busy establishing them.
 */
async function waitUntilEstablished(
  client: KubeClient,
  pending: Set<string>,
  processes: LocalProcess[],
): Promise<void> {
  const count = pending.size;
  const seen = (crd: {
    metadata?: { name?: string };
    status?: { conditions?: { type: string; status: string }[] };
  }) => {
    if (crd.status?.conditions?.some((condition) => condition.type === 'Established' && condition.status === 'True'))
      pending.delete(crd.metadata?.name ?? '');
    return pending.size === 0;
  };
  await waitUntil(
    `CRDs to be established (${count})`,
    async () => {
      const list = await client.get(CRDS);
      for (const crd of list.items ?? []) seen(crd);
      if (pending.size === 0) return true;
      return client
        .watch(
          CRDS,
          { resourceVersion: String(list.metadata?.resourceVersion ?? ''), timeoutSeconds: '5' },
          // An ERROR (the list's version expired) ends this round; the next one lists again.
          (event) =>
            event.type === 'ERROR' || ((event.type === 'ADDED' || event.type === 'MODIFIED') && seen(event.object)),
        )
        .then((done) => done && pending.size === 0);
    },
    processes,
    120_000,
  );
}

/** `group/Kind` of every object in `files` (`/Kind` for the core group): the kinds a server must serve for them. */
export function kindsOfFiles(files: string[]): Set<string> {
  const kinds = new Set<string>();
  for (const file of files)
    for (const document of decodeYamlDocuments(readFileSync(file, 'utf8'))) {
      const object = document.value as { apiVersion?: unknown; kind?: unknown } | null;
      if (typeof object?.apiVersion !== 'string' || typeof object.kind !== 'string') continue;
      const group = object.apiVersion.includes('/') ? object.apiVersion.split('/')[0] : '';
      kinds.add(`${group}/${object.kind}`);
    }
  return kinds;
}

/**
 * The CRD files among `crdFiles` that serve one of `kinds` (`group/Kind`, any version): a server
 * needs no others to validate those objects, and each CRD costs it seconds of CPU to establish.
 */
export function crdFilesServing(crdFiles: string[], kinds: Set<string>): string[] {
  return crdFiles.filter((file) =>
    decodeYamlDocuments(readFileSync(file, 'utf8')).some((document) => {
      const crd = document.value as { spec?: { group?: string; names?: { kind?: string } } } | null;
      return kinds.has(`${crd?.spec?.group ?? ''}/${crd?.spec?.names?.kind ?? ''}`);
    }),
  );
}
