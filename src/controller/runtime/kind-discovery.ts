// Which REST resource serves a kind, from the API server's discovery documents
// (`/apis/<group>/<version>`), cached: provider kinds have irregular plurals often enough that a
// guess ("lowercase kind + s") would watch or write the wrong path. A kind that is not served is
// looked up again after a while, so installing its CRD later is noticed.
import { ApisApi, KubernetesObjectApi, type KubeConfig } from '@kubernetes/client-node';
import { describeKubeError, httpStatusOf } from './informer-set.js';
import type { WatchedKind } from './runtime-contract.js';

/** A kind a reference names: apiVersion and kind. */
export interface KindRef {
  apiVersion: string;
  kind: string;
}

export type KindLookup = { served: true; kind: WatchedKind } | { served: false; reason: string };

/** `group/version` and kind, the identity of a reference. */
export function kindRefKey(ref: KindRef): string {
  return `${ref.apiVersion}/${ref.kind}`;
}

/** Looks up the REST resource of a kind. */
export type DiscoverKind = (ref: KindRef) => Promise<KindLookup>;

/** client-node's discovery lookup (`resource()`) is protected; this exposes it. */
class DiscoveryApi extends KubernetesObjectApi {
  lookupResource(apiVersion: string, kind: string) {
    return this.resource(apiVersion, kind);
  }
}

/** Discovery through client-node's KubernetesObjectApi (which reads the APIResourceList of the group version). */
export function discoverWithClient(kubeConfig: KubeConfig): DiscoverKind {
  const api = kubeConfig.makeApiClient(DiscoveryApi);
  return async (ref) => {
    const slash = ref.apiVersion.indexOf('/');
    const group = slash < 0 ? '' : ref.apiVersion.slice(0, slash);
    const version = slash < 0 ? ref.apiVersion : ref.apiVersion.slice(slash + 1);
    try {
      const resource = await api.lookupResource(ref.apiVersion, ref.kind);
      if (!resource)
        return { served: false, reason: `the API server serves ${ref.apiVersion} but no kind ${ref.kind} in it` };
      return {
        served: true,
        kind: {
          group,
          version,
          kind: ref.kind,
          plural: resource.name,
          namespaced: resource.namespaced,
          optional: true,
        },
      };
    } catch (error) {
      if (httpStatusOf(error) === 404 || /404/.test(String((error as Error).message)))
        return { served: false, reason: `the API server does not serve ${ref.apiVersion}` };
      throw error;
    }
  };
}

/** Cached discovery: positive answers are kept; negative ones and failures are asked again after `recheckMs`. */
export class KindDiscovery {
  private readonly known = new Map<string, { lookup: KindLookup; at: number }>();
  private readonly recheckMs: number;
  private readonly now: () => number;

  constructor(
    private readonly discover: DiscoverKind,
    options: { recheckMs?: number; now?: () => number } = {},
  ) {
    this.recheckMs = options.recheckMs ?? 30_000;
    this.now = options.now ?? Date.now;
  }

  /** The served kind, or why it is not served (a failed lookup says so too, and is retried later). */
  async lookup(ref: KindRef): Promise<KindLookup> {
    const key = kindRefKey(ref);
    const cached = this.known.get(key);
    if (cached && (cached.lookup.served || this.now() - cached.at < this.recheckMs)) return cached.lookup;
    let lookup: KindLookup;
    try {
      lookup = await this.discover(ref);
    } catch (error) {
      // A positive answer from before stays good; plurals do not change.
      lookup = {
        served: false,
        reason: `discovery of ${ref.apiVersion} failed: ${String(describeKubeError(error)['message'])}`,
      };
    }
    this.known.set(key, { lookup, at: this.now() });
    return lookup;
  }
}

/** The version the API server prefers for each named group it serves (groups it does not serve are left out). */
export type DiscoverPreferredVersions = (groups: string[]) => Promise<Map<string, string>>;

/** Preferred versions from the API server's group list (`/apis`), as kubectl picks a kind's default version. */
export function preferredVersionsWithClient(kubeConfig: KubeConfig): DiscoverPreferredVersions {
  const api = kubeConfig.makeApiClient(ApisApi);
  return async (groups) => {
    const list = await api.getAPIVersions();
    const versions = new Map<string, string>();
    for (const group of list.groups ?? []) {
      const version = group.preferredVersion?.version;
      if (groups.includes(group.name) && version) versions.set(group.name, version);
    }
    return versions;
  };
}
