// Deciding a run: a pure function of the plan (inputs, source listings, loaded releases), the
// locked provider releases and the target's published state, returning the complete plan render
// carries out and `plan` prints — held Clusters, provider versions and guards, ClusterRequest
// assignments, each unit's digest and decision (reuse, render or withhold, with why), the kept
// releases with their reasons, and what leaves the tree. The result is frozen: nothing downstream
// edits it. What only helm's output shows is decided at render (unit-decisions.ts).
import type { Problem } from '../core/problem.js';
import type { ClusterRequestsRecord } from '../output/cluster-requests-record.js';
import type { WithheldEntry } from '../output/provenance.js';
import type { PublishedState } from '../output/published-state.js';
import { clusterDir, isLayerPath, layerDir, releaseDir } from '../output/tree-layout.js';
import type { Plan } from '../plan/build-plan.js';
import { holdPublishedClusters } from '../plan/held-published-clusters.js';
import {
  countClusterRequests,
  type PlannedClusterRequests,
  planClusterRequests,
  type SchedulerSetting,
} from '../cluster-requests/plan-cluster-requests.js';
import type { SchedulerConfig } from '../cluster-requests/scheduler-config.js';
import { guardProviderVersions, type LockedProviders } from '../providers/guard-providers.js';
import { decideUnits, type UnitPlan, type UnitPlanSettings } from '../render/unit-decisions.js';

/** How a run decides what the inputs alone cannot. */
export interface RunSettings extends UnitPlanSettings {
  /** A provider downgrade or contract mismatch: refuse the run (default) or withhold that provider alone. */
  readonly providerGuards?: 'refuse' | 'withhold';
  /** A Cluster the target renders that the inputs no longer make ours: refuse the run (default), or withhold it alone. */
  readonly heldClusters?: 'refuse' | 'withhold';
  /** Schedule ClusterRequests into Clusters (src/cluster-requests); absent: they are counted, not scheduled. */
  readonly scheduler?: SchedulerConfig | SchedulerSetting;
}

/** A kept release of a ClusterStack, and why it is kept. */
interface KeptRelease {
  readonly namespace: string;
  readonly stack: string;
  readonly release: string;
  readonly reasons: readonly string[];
}

/** The complete, frozen plan of one run (see the header). */
export interface RunPlan {
  readonly published: PublishedState;
  /** The plan render sees: held Clusters made ones to withhold, providers guarded, requested Clusters added. */
  readonly plan: Plan;
  readonly keptReleases: readonly KeptRelease[];
  /** Clusters the target renders that the inputs no longer make ours: held, their output kept. */
  readonly heldClusters: readonly Problem[];
  /** With `refuse`: why the run must stop before rendering (provider guards first, then held Clusters); empty otherwise. */
  readonly refused: { readonly providers: readonly Problem[]; readonly heldClusters: readonly Problem[] };
  /** ClusterRequests scheduled (with a scheduler configuration): assignments, files, notes. */
  readonly requests: PlannedClusterRequests | undefined;
  /** ClusterRequests in the inputs left unscheduled for want of a scheduler configuration. */
  readonly unscheduledRequests: number;
  /** The assignment record the requests output will carry. */
  readonly requestAssignments: ClusterRequestsRecord | undefined;
  readonly units: UnitPlan;
  /** Unit and provider directories the target holds that this run takes out of the tree (unless render withholds keep them). */
  readonly leaving: readonly string[];
}

/** Decides the run (see the header); pure. `locked` is the plan's providers with their locked releases loaded. */
export function decideRun(
  plan: Plan,
  locked: LockedProviders | undefined,
  published: PublishedState,
  settings: RunSettings,
): RunPlan {
  const guards = locked ? guardProviderVersions(locked, published.providers, settings.providerGuards) : undefined;
  const guarded: Plan = guards ? { ...plan, providers: guards.plan } : plan;
  // A Cluster the target renders is never dropped for what the inputs now say about it: it is held.
  const held = holdPublishedClusters(guarded, published);
  // Requests become Clusters before rendering, so their addons are rendered like anyone's.
  const requests = settings.scheduler ? planClusterRequests(held.plan, settings.scheduler, published) : undefined;
  const final = requests?.plan ?? held.plan;
  const units = decideUnits(final, published, settings);
  return Object.freeze({
    published,
    plan: freezePlan(final),
    keptReleases: Object.freeze(keptReleases(final)),
    heldClusters: Object.freeze(held.problems),
    refused: Object.freeze({
      providers: Object.freeze([...(guards?.refused ?? [])]),
      heldClusters: Object.freeze(settings.heldClusters === 'withhold' ? [] : held.problems),
    }),
    requests,
    unscheduledRequests: settings.scheduler ? 0 : countClusterRequests(final),
    requestAssignments: requests?.output.record,
    units,
    leaving: Object.freeze(leavingDirs(final, units, published)),
  });
}

/**
 * The plan as render sees it, frozen: its own structure (resolution, clusters, providers) is copied
 * and frozen, so the caller's plan stays its own; loaded releases and sources are shared as they are.
 */
function freezePlan(plan: Plan): Plan {
  const resolution = Object.freeze({
    ...plan.resolution,
    clusters: Object.freeze([...plan.resolution.clusters]) as Plan['resolution']['clusters'],
  });
  const providers = plan.providers
    ? Object.freeze({
        ...plan.providers,
        providers: Object.freeze([...plan.providers.providers]) as NonNullable<Plan['providers']>['providers'],
      })
    : undefined;
  return Object.freeze({ ...plan, resolution, ...(providers ? { providers } : {}) });
}

function keptReleases(plan: Plan): KeptRelease[] {
  return plan.resolution.clusterStacks.flatMap((stack) =>
    stack.releases
      .filter((release) => release.kept)
      .map((release) => ({
        namespace: stack.namespace,
        stack: stack.name,
        release: release.name,
        reasons: release.reasons,
      })),
  );
}

/** Published directories no planned unit, provider or withheld entry accounts for. */
function leavingDirs(plan: Plan, units: UnitPlan, published: PublishedState): string[] {
  const staying = new Set(units.units.map(({ unit }) => unit.record.dir));
  const withheld = (entry: WithheldEntry, dir: string): boolean =>
    entry.kind === 'release'
      ? dir === releaseDir(entry.namespace, entry.name)
      : entry.kind === 'layer'
        ? dir === layerDir(entry.namespace, entry.name, entry.layer ?? '')
        : entry.kind === 'cluster' &&
          dir.startsWith(`${clusterDir(entry.namespace, entry.name)}/`) &&
          !isLayerPath(dir);
  const unitDirs = [...published.units.keys()].filter(
    (dir) => !staying.has(dir) && !units.withheld.some((entry) => withheld(entry, dir)),
  );
  const providerDirs = new Set([
    ...(plan.providers?.providers ?? []).map((planned) => planned.dir),
    ...(plan.providers?.certManager ? [plan.providers.certManager.dir] : []),
  ]);
  return [
    ...unitDirs,
    ...published.providers.map((record) => record.dir).filter((dir) => !providerDirs.has(dir)),
  ].sort();
}
