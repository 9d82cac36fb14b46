// What the target holds, read once before a run decides anything: the tree itself and what it
// records about itself (provenance.json), parsed into the parts planning and rendering consult —
// unit records and their digests, values failures, shared objects, addon handovers, provider locks,
// ClusterRequest assignments, the helm hook layout and the user's .sops.yaml. Everything downstream
// reads these fields instead of parsing provenance.json again. A damaged record reads as nothing
// published: it only costs a full render.
import type { ClusterRequestsRecord } from './cluster-requests-record.js';
import type { HookPlacement } from './helm-hooks-record.js';
import {
  type AddonHandoverRecord,
  type Provenance,
  type ProviderRecord,
  readProvenance,
  type SharedObjectRecord,
  type UnitRecord,
} from './provenance.js';
import type { RenderedTree } from './rendered-tree.js';
import { SOPS_CONFIG_FILE } from './tree-layout.js';

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
  const provenance = readProvenance(tree);
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

/** The state of a target that holds nothing yet. */
export const NOTHING_PUBLISHED: PublishedState = readPublishedState(new Map());
