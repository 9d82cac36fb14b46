// What the target holds, read once before a run decides anything: the tree itself and what it
// records about itself (provenance.json), parsed into the parts planning and rendering consult —
// unit records and their digests, values failures, shared objects, addon handovers, provider locks,
// ClusterRequest assignments, the helm hook layout and the user's .sops.yaml. Everything downstream
// reads these fields: this is the one place provenance.json is parsed (no memo elsewhere: a driver
// keeps the value while its tree stays). A damaged record reads as nothing published: it only costs
// a full render.
import type { ClusterRequestsRecord } from './cluster-requests-record.js';
import type { HookPlacement } from './helm-hooks-record.js';
import {
  type AddonHandoverRecord,
  type Provenance,
  type ProviderRecord,
  type SharedObjectRecord,
  type UnitRecord,
} from './provenance.js';
import type { RenderedTree } from './rendered-tree.js';
import { PROVENANCE_FILE, SOPS_CONFIG_FILE } from './tree-layout.js';

/** The target's state as one typed, read-only value (see the header). */
export interface PublishedState {
  /** Every file the target holds, by path. */
  readonly tree: RenderedTree;
  /** Its provenance record, if it has a readable one (frozen). */
  readonly provenance: Provenance | undefined;
  /** Unit records by directory: their input and render digests, files and notes. */
  readonly units: ReadonlyMap<string, UnitRecord>;
  /** Values templates that failed before, by `dir inputDigest`, with the reason. */
  readonly valuesFailures: ReadonlyMap<string, string>;
  readonly sharedObjects: readonly SharedObjectRecord[];
  /** Addon objects in the middle of a move, by the path of their marked copy. */
  readonly addonHandovers: ReadonlyMap<string, AddonHandoverRecord>;
  /** The providers rendered before: their versions are the locks of unpinned providers. */
  readonly providers: readonly ProviderRecord[];
  /** Which ClusterRequest holds which generated Cluster. */
  readonly clusterRequests: ClusterRequestsRecord | undefined;
  /** How the units' helm hooks were laid out (absent: written before hooks were handled). */
  readonly helmHooks: HookPlacement | undefined;
  /** The user's SOPS configuration at the root, kept as it is. */
  readonly sopsConfig: string | undefined;
}

/** Reads the state `tree` records about itself; pure. */
export function readPublishedState(tree: RenderedTree): PublishedState {
  const provenance = parseProvenance(tree);
  return Object.freeze({
    tree,
    provenance,
    units: new Map((provenance?.units ?? []).map((unit) => [unit.dir, unit])),
    valuesFailures: new Map(
      (provenance?.valuesFailures ?? []).map((failure) => [`${failure.dir} ${failure.inputDigest}`, failure.reason]),
    ),
    sharedObjects: provenance?.sharedObjects ?? [],
    addonHandovers: new Map((provenance?.addonHandovers ?? []).map((handover) => [handover.path, handover])),
    providers: provenance?.providers ?? [],
    clusterRequests: provenance?.clusterRequests,
    helmHooks: provenance?.helmHooks,
    sopsConfig: tree.get(SOPS_CONFIG_FILE),
  });
}

/** The provenance record of a tree, if it has a readable one (a damaged record reads as none), frozen. */
function parseProvenance(tree: RenderedTree): Provenance | undefined {
  const text = tree.get(PROVENANCE_FILE);
  if (!text) return undefined;
  try {
    return deepFreeze(JSON.parse(text) as Provenance);
  } catch {
    return undefined;
  }
}

/** Frozen all the way down: the record is shared by everything that reads the state; a reader that must change a part copies it. */
function deepFreeze<T>(value: T): T {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (item === null || typeof item !== 'object' || Object.isFrozen(item)) continue;
    Object.freeze(item);
    for (const child of Object.values(item)) pending.push(child);
  }
  return value;
}

/** The state of a target that holds nothing yet. */
export const NOTHING_PUBLISHED: PublishedState = readPublishedState(new Map());
