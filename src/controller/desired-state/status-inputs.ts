// Everything one reconcile observed and did, as the pure status computation reads it.
import type { CapiCluster, ClusterAddon, ClusterStack, ClusterStackRelease, KubeObject } from '../../api/types.js';
import type { HookProgress } from './lifecycle-hook-decision.js';
import type { TypedFailure } from '../../core/failure.js';
import type { Plan } from '../../plan/build-plan.js';
import type { RenderOutcome } from '../../render/render-output.js';
import type { UnitRecord } from '../../output/provenance.js';
import type { RevisionOrder, UnitSync } from './sync-state.js';
import type { UnitObject } from './unit-resources.js';

export type GitOpsEngineName = 'none' | 'flux' | 'argocd';

/** The objects as the informer caches hold them. */
export interface LiveObjects {
  stacks: ClusterStack[];
  clusters: CapiCluster[];
  releases: ClusterStackRelease[];
  addons: ClusterAddon[];
  /** <Provider>ClusterStackRelease objects of the kinds the stacks reference. */
  providerReleases: KubeObject[];
  /** <Provider>ClusterStackReleaseTemplate objects the stacks reference. */
  providerTemplates: KubeObject[];
  /** Cluster API provider objects (CoreProvider, InfrastructureProvider, ...), when their kinds are served. */
  capiProviders?: KubeObject[];
}

/** Why a ClusterStack could not be resolved from its current spec or source. */
export interface StackIssue {
  /** ReleaseSourceUnavailable: retried with backoff; ReleaseSourceFailed: refused (not found, credentials), looked at again on change or resync. */
  reason: 'InvalidSpec' | 'ReleaseSourceUnavailable' | 'ReleaseSourceFailed';
  problems: string[];
  /** The stack was still rendered: from its last valid spec, or from the last listing of its source. */
  fallback: boolean;
  /** Not resolvable at all now: its published releases are kept, withheld, until it is (see withheld-stacks.ts). */
  keptPublished?: boolean;
}

export interface PublishState {
  /** Printable target, no credentials. */
  target: string;
  revisionKind: 'commit' | 'digest' | 'none';
  /** The revision the target holds now (after this round, or from before when it failed). */
  revision: string | null;
  /** What happened to this round's tree. */
  outcome: 'published' | 'unchanged' | 'failed' | 'skipped';
  /** The error (failed) or why nothing was published (skipped). */
  message?: string;
  /** Unit directories whose files differ between the target's previous tree and this round's. */
  dirtyDirs: Set<string>;
  order: RevisionOrder;
}

export interface StatusInputs {
  /** ISO timestamp for new lastTransitionTimes. */
  now: string;
  engine: GitOpsEngineName;
  live: LiveObjects;
  /** Undefined when no plan could be built at all (the default release source failed). */
  plan?: Plan;
  /** Per ClusterStack key (`ns/name`). */
  stackIssues: Map<string, StackIssue>;
  render?: RenderOutcome;
  /** The render as a whole failed (units that failed alone are in `render.withheld`). */
  renderFailure?: TypedFailure;
  publish: PublishState;
  sync: Map<string, UnitSync>;
  /** The newest progress of each lifecycle hook called for a Cluster since this process started (runtime extension), for its ClusterAddon. */
  hookProgress?: (namespace: string, name: string) => HookProgress[] | undefined;
  /** The objects of a rendered unit (memoised by the caller). */
  unitObjects: (unit: UnitRecord) => UnitObject[];
  /** Provider kinds (`apiVersion/Kind`) the API server does not serve, with the reason. */
  unservedKinds?: Map<string, string>;
  /** Per ClusterStack (`ns/name`), the objects it owns that the last reconcile could not write, and why. */
  ownedObjectErrors?: Map<string, string[]>;
}

export function releaseDir(namespace: string, release: string): string {
  return `management/${namespace}/${release}`;
}
