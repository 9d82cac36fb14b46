// The observe step of a reconcile: everything it reads comes from the informer caches, with our
// own recent writes overlaid. Provider template and release kinds (named by ClusterStacks) and the
// kinds Clusters reference are discovered and watched as they appear; until a newly watched kind
// has listed, the observation is not complete and the reconcile looks again shortly.
import type { CapiCluster, ClusterAddon, ClusterStack, ClusterStackRelease, KubeObject } from '../../api/types.js';
import { withSpecDefaults } from '../../api/types.js';
import { providerReleaseKind } from '../desired-state/provider-release-state.js';
import type { LiveObjects } from '../desired-state/status-inputs.js';
import {
  CAPI_CLUSTERS,
  CAPI_PROVIDER_KINDS,
  CLUSTER_ADDONS,
  CLUSTER_STACK_RELEASES,
  CLUSTER_STACKS,
} from '../desired-state/watched-kinds.js';
import type { KindCache } from '../runtime/informer-cache.js';
import { kindRefKey, type KindRef } from '../runtime/kind-discovery.js';
import type { ResourceKind } from '../runtime/kube-client.js';
import type { WatchedKind } from '../runtime/runtime-contract.js';
import { isReferenced, referencedObjectKeys } from './live-inputs.js';

export interface Observation {
  live: LiveObjects;
  /** Objects Clusters reference (infrastructure, control plane), as the plan reads them. */
  referenced: KubeObject[];
  /** Kinds named but not served by the API server, with the reason. */
  unservedKinds: Map<string, string>;
  /** The REST kind of a served `apiVersion`/`kind`, for writing provider release objects. */
  restKind: (apiVersion: string, kind: string) => ResourceKind | undefined;
}

export interface ObservedLists {
  /** Live objects of a kind, in the controller's scope. */
  live(kind: WatchedKind): KubeObject[];
  /** The same, with our own writes the cache has not caught up with. */
  own(kind: WatchedKind): KubeObject[];
}

/** Provider template and release kinds the stacks name, and the kinds Clusters reference. */
function kindRefs(
  stacks: ClusterStack[],
  clusters: CapiCluster[],
  groupVersions: Map<string, string>,
): { templates: KindRef[]; releases: KindRef[]; referenced: KindRef[] } {
  const templates = new Map<string, KindRef>();
  const releases = new Map<string, KindRef>();
  for (const stack of stacks) {
    const spec = withSpecDefaults(stack.spec ?? ({} as ClusterStack['spec']));
    const ref = spec.providerRef;
    if (spec.noProvider || !ref?.apiVersion || !ref.kind) continue;
    const template = { apiVersion: ref.apiVersion, kind: ref.kind };
    const release = { apiVersion: ref.apiVersion, kind: providerReleaseKind(ref.kind) };
    templates.set(kindRefKey(template), template);
    releases.set(kindRefKey(release), release);
  }
  const referenced = new Map<string, KindRef>();
  for (const cluster of clusters) {
    for (const ref of referencedObjectKeys(cluster)) {
      const apiVersion =
        ref.apiVersion ?? (groupVersions.has(ref.group) ? `${ref.group}/${groupVersions.get(ref.group)}` : undefined);
      if (apiVersion !== undefined)
        referenced.set(kindRefKey({ apiVersion, kind: ref.kind }), { apiVersion, kind: ref.kind });
    }
  }
  return { templates: [...templates.values()], releases: [...releases.values()], referenced: [...referenced.values()] };
}

/** Observes the live objects; `undefined` while newly watched kinds have not listed yet. */
export async function observeLive(cache: KindCache, lists: ObservedLists): Promise<Observation | undefined> {
  const stacks = lists.own(CLUSTER_STACKS) as unknown as ClusterStack[];
  const clusters = lists.live(CAPI_CLUSTERS) as CapiCluster[];
  // v1beta2 references name a group only: the object is watched in the version the API server prefers.
  const groupsOnly = [
    ...new Set(
      clusters
        .flatMap(referencedObjectKeys)
        .filter((ref) => ref.apiVersion === undefined)
        .map((ref) => ref.group),
    ),
  ];
  const refs = kindRefs(
    stacks,
    clusters,
    groupsOnly.length > 0 ? await cache.preferredVersions(groupsOnly) : new Map(),
  );
  const lookups = await cache.resolveKinds([...refs.templates, ...refs.releases, ...refs.referenced]);
  const served = (list: KindRef[]): WatchedKind[] =>
    list.flatMap((ref) => {
      const lookup = lookups.get(kindRefKey(ref));
      return lookup?.served ? [lookup.kind] : [];
    });
  const unservedKinds = new Map<string, string>();
  for (const [key, lookup] of lookups) if (!lookup.served) unservedKinds.set(key, lookup.reason);
  const dynamic = {
    templates: served(refs.templates),
    releases: served(refs.releases),
    referenced: served(refs.referenced),
  };
  if (!cache.ensureWatched([...dynamic.templates, ...dynamic.releases, ...dynamic.referenced])) return undefined;
  const referencedKeys = clusters.flatMap(referencedObjectKeys);
  return {
    live: {
      stacks,
      clusters,
      releases: lists.own(CLUSTER_STACK_RELEASES) as unknown as ClusterStackRelease[],
      addons: lists.own(CLUSTER_ADDONS) as unknown as ClusterAddon[],
      providerReleases: dynamic.releases.flatMap((kind) => lists.own(kind)),
      providerTemplates: dynamic.templates.flatMap((kind) => lists.live(kind)),
      capiProviders: CAPI_PROVIDER_KINDS.flatMap((kind) => lists.live(kind)),
    },
    referenced: dynamic.referenced
      .flatMap((kind) => lists.live(kind))
      .filter((object) => isReferenced(object, referencedKeys)),
    unservedKinds,
    restKind: (apiVersion, kind) => {
      const lookup = lookups.get(kindRefKey({ apiVersion, kind }));
      return lookup?.served ? lookup.kind : undefined;
    },
  };
}
