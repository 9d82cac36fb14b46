// Empties a real API server back to what it held at a moment taken before (a baseline of etcd's
// keys), through etcd itself: what the broker does between two files' leases of a server
// (test/support/real-kube-api-broker.ts). kube-apiserver keeps every object under one etcd prefix
// and sees every change there through its watches, so deleting keys in etcd is, to it and to every
// client, as if the objects were deleted by another API server of the same cluster: its watch
// cache, informers, discovery and admission follow. Asking the API instead took ~90 collection
// LISTs and the deletes per sweep, about 0.3 CPU-s of kube-apiserver's a lease; here it is one range
// read of the keys (keys only), one delete transaction and a LIST per kind that lost something;
// CRDs (and the API services kube-apiserver makes for their groups) still go through the API.
import type { KubeClient } from './kube-client.js';
import { waitUntil, type LocalProcess } from './local-process.js';
import type { RealKubeApi } from './real-kube-api.js';

/** kube-apiserver's default --etcd-prefix: every object it stores is under it. */
const PREFIX = '/registry/';
/**
 * Kinds deleted through the API (see emptyServer), by their keys' prefix: CRDs, and API services,
 * which kube-apiserver makes itself for each CRD's group and would make again while the CRD is there.
 */
const THROUGH_API: Readonly<Record<string, string>> = {
  '/registry/apiextensions.k8s.io/customresourcedefinitions/':
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
  '/registry/apiregistration.k8s.io/apiservices/': '/apis/apiregistration.k8s.io/v1/apiservices',
};
/** The API path of the object stored at `key` when it is deleted through the API, else undefined. */
function apiPathOf(key: string): string | undefined {
  const prefix = Object.keys(THROUGH_API).find((candidate) => key.startsWith(candidate));
  return prefix === undefined ? undefined : `${THROUGH_API[prefix]}/${key.slice(prefix.length)}`;
}
/** etcd's default --max-txn-ops: the most deletes one transaction may hold. */
const MAX_TXN_OPS = 128;
/** Rounds of deletes after which keys that keep coming back fail the emptying (something still writes). */
const MAX_ROUNDS = 5;
/**
 * Where kube-apiserver keeps built-in kinds whose keys are not `<prefix><plural>/`: the rest are
 * `<prefix><plural>/` (built-in groups) or `<prefix><group>/<plural>/` (CRDs, API services).
 */
const STORED_APART: Readonly<Record<string, string>> = {
  endpoints: 'services/endpoints/',
  services: 'services/specs/',
  nodes: 'minions/',
  ingresses: 'ingress/',
  replicationcontrollers: 'controllers/',
};

/** A kind the server lists: its collection's path across namespaces and the key prefixes it may be kept under. */
interface Listable {
  path: string;
  keyPrefixes: string[];
}

/** Every key under kube-apiserver's etcd prefix (keys only, one range read), and etcd's revision then. */
export async function serverKeys(api: Pick<RealKubeApi, 'etcd'>): Promise<{ keys: string[]; revision: string }> {
  const answer = (await etcdCall(api.etcd, 'kv/range', {
    key: base64(PREFIX),
    range_end: base64(prefixEnd(PREFIX)),
    keys_only: true,
  })) as { header: { revision: string }; kvs?: { key: string }[] };
  return {
    keys: (answer.kvs ?? []).map((kv) => Buffer.from(kv.key, 'base64').toString('utf8')),
    revision: answer.header.revision,
  };
}

/**
 * Deletes every object `api` holds that is not in `baseline` (keys of serverKeys), and resolves once
 * its LISTs show exactly that: namespaces with all they hold, objects left in kept namespaces (a
 * finalizer does not hold them), cluster-wide objects, custom resources and the CRDs themselves.
 * Objects of the baseline stay as they are now: what the server updates itself (its leases) changes
 * on its own. Custom resources go through etcd, then their CRDs through the API, which tears down
 * the CRDs' storage, discovery and OpenAPI as kube-apiserver does for a CRD. Fails naming the keys
 * when the file's objects keep coming back, or when the server does not settle within `timeoutMs`.
 */
export async function emptyServer(
  api: Pick<RealKubeApi, 'etcd' | 'admin'>,
  baseline: ReadonlySet<string>,
  watched: LocalProcess[],
  timeoutMs = 120_000,
): Promise<void> {
  const client = api.admin.client;
  const extra = async (): Promise<{ keys: string[]; revision: string }> => {
    const { keys, revision } = await serverKeys(api);
    return { keys: keys.filter((key) => !baseline.has(key)), revision };
  };
  let found = await extra();
  let listables: Listable[] | undefined;
  const touched = new Set<Listable>();
  // Deleted until a look finds none: a write the file's last request made meanwhile is deleted too.
  for (let round = 1; ; round++) {
    const objects = found.keys.filter((key) => apiPathOf(key) === undefined);
    if (objects.length === 0) break;
    if (round > MAX_ROUNDS)
      throw new Error(
        `the server's objects keep coming back after ${MAX_ROUNDS} rounds of deletes: ${objects.slice(0, 10).join(', ')}`,
      );
    // The kinds as the server serves them now, the file's CRDs' too: listed below once their keys are gone.
    listables ??= await listableKinds(client);
    for (const key of objects) {
      const kinds = listables.filter((kind) => kind.keyPrefixes.some((prefix) => key.startsWith(prefix)));
      // A key of no kind it lists: every kind is listed below, as the slower sweep did.
      for (const kind of kinds.length > 0 ? kinds : listables) touched.add(kind);
    }
    await deleteKeys(api.etcd, objects);
    found = await extra();
  }
  // A LIST at etcd's revision after the deletes is answered once the watch cache has seen them: the
  // next file's first LIST (an informer's, at resourceVersion 0, from that cache) sees none of them.
  for (const kind of touched)
    await waitUntil(
      `kube-apiserver's watch cache of ${kind.path} to reach etcd's revision ${found.revision}`,
      async () =>
        (
          await client.request('GET', kind.path, {
            query: { resourceVersion: found.revision, resourceVersionMatch: 'NotOlderThan' },
          })
        ).status === 200,
      watched,
      timeoutMs,
    );
  const paths = found.keys.map((key) => apiPathOf(key)!);
  if (paths.length === 0) return;
  // CRDs first: an API service of a CRD's group goes with the CRD (and would come back before).
  for (const path of paths.sort((a, b) => Number(a.includes('/apiservices/')) - Number(b.includes('/apiservices/')))) {
    const deleted = await client.request('DELETE', path);
    if (deleted.status !== 200 && deleted.status !== 202 && deleted.status !== 404)
      throw new Error(`deleting ${path}: ${deleted.status} ${deleted.body?.message ?? deleted.text}`);
  }
  // A CRD of the same name created by the next file would meet this one still terminating.
  await waitUntil(
    `${paths.join(', ')} to be deleted`,
    async () => (await extra()).keys.length === 0,
    watched,
    timeoutMs,
  );
}

/** Every kind the server lists (aggregated discovery of /api and /apis), at its preferred version. */
async function listableKinds(client: KubeClient): Promise<Listable[]> {
  const kinds: Listable[] = [];
  for (const root of ['/api', '/apis']) {
    const response = await client.request('GET', root, {
      accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    });
    if (response.status !== 200) throw new Error(`discovery ${root}: ${response.status} ${response.text}`);
    for (const group of response.body.items as {
      metadata: { name?: string };
      versions: { version: string; resources: { resource: string; verbs: string[] }[] }[];
    }[]) {
      const preferred = group.versions[0];
      if (!preferred) continue;
      const name = group.metadata.name ?? '';
      for (const { resource, verbs } of preferred.resources) {
        if (!verbs.includes('list')) continue;
        kinds.push({
          path: `${name === '' ? `/api/${preferred.version}` : `/apis/${name}/${preferred.version}`}/${resource}`,
          keyPrefixes: [
            `${PREFIX}${STORED_APART[resource] ?? `${resource}/`}`,
            ...(name === '' ? [] : [`${PREFIX}${name}/${resource}/`]),
          ],
        });
      }
    }
  }
  return kinds;
}

/** Deletes `keys` in etcd, MAX_TXN_OPS to a transaction. */
async function deleteKeys(etcd: string, keys: string[]): Promise<void> {
  for (let start = 0; start < keys.length; start += MAX_TXN_OPS)
    await etcdCall(etcd, 'kv/txn', {
      success: keys.slice(start, start + MAX_TXN_OPS).map((key) => ({ request_delete_range: { key: base64(key) } })),
    });
}

/** POSTs `body` to etcd's v3 JSON gateway at `/v3/<path>`; its answer, or a thrown error naming the call. */
async function etcdCall(etcd: string, path: string, body: unknown): Promise<unknown> {
  const response = await fetch(`${etcd}/v3/${path}`, { method: 'POST', body: JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`etcd ${etcd}/v3/${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/** The end of the range of keys that start with `prefix`: its last byte plus one. */
function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}
