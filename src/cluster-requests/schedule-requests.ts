// openMCP's cluster scheduler as a pure function over Git state: each ClusterRequest is given a
// Cluster created for its purpose, an existing shared one or a new one. Differences from the
// operator, because the output must be deterministic and reviewable:
// - the previous assignments come from the tree's provenance, so a request never moves once given a
//   cluster (the operator keeps this in a finalizer on the Cluster);
// - requests not yet assigned are scheduled in order of namespace/name, whatever order the inputs
//   list them in;
// - `Random` picks by a hash of the request's namespace/name, not a random number: the same
//   inputs always give the same tree;
// - new cluster names take a suffix hashed from the first request they were created for, where
//   the operator lets the API server generate one;
// - what cannot be scheduled fails small: a request whose purpose changed (immutable in openMCP),
//   a request without purpose, a purpose mapped to a profile no ClusterStack makes, or one whose
//   stack has no ready release is Pending with the reason, and a cluster it already had stays
//   (regenerated when its purpose still fits, else its previous manifest kept as it was). Only a
//   request that is gone takes its cluster with it.
// The configuration's label selectors act as in the operator: a request outside `selectors.requests`
// is not ours (no outcome, no status; a cluster it had keeps serving it, as the operator never
// reconciles it again), and a Cluster is shared only when its labels (the template's, openMCP's
// delete-without-requests, and whatever its live copy carries) match the purpose's selector and
// `selectors.clusters`. A granted request keeps its cluster whatever the selectors say.
import type {
  ClusterRequestsRecord,
  RequestAssignmentRecord,
  RequestedClusterRecord,
} from '../output/cluster-requests-record.js';
import { sha256Hex } from '../release/content-digest.js';
import type { ClusterProfileInfo, ProfileRelease } from './cluster-profiles.js';
import { matchesLabelSelector } from '../core/label-selector.js';
import { type ClusterDefinition, clusterSelectorOf, handlesRequest, type SchedulerConfig } from './scheduler-config.js';
import { compareText } from '../core/compare-text.js';

export interface ClusterRequestInput {
  namespace: string;
  name: string;
  /** `spec.purpose`; empty when the request has none (then it is reported and skipped). */
  purpose: string;
  /** `metadata.labels`, for `selectors.requests`. */
  labels?: Record<string, string>;
  source?: string;
}

/** A request `selectors.requests` leaves to someone else: never scheduled, never given a status. */
export interface NotOurRequest {
  namespace: string;
  name: string;
  message: string;
}

type RequestPhase = 'Granted' | 'Pending';

export interface RequestOutcome {
  namespace: string;
  name: string;
  purpose: string;
  phase: RequestPhase;
  cluster?: { namespace: string; name: string };
  /** Why it is Pending (PascalCase reason and a sentence), or which cluster it was given. */
  reason: RequestReason;
  message: string;
}

/**
 * Scheduled, or why not: the purpose has no mapping, its profile no stack, its stack no ready
 * release; a new cluster's name is taken; no configuration; the purpose changed or is missing
 * (refused: the request keeps what it had); the configuration is not valid (controller: the
 * previous output is kept).
 */
type RequestReason =
  | 'Scheduled'
  | 'UnknownPurpose'
  | 'UnknownProfile'
  | 'NoReadyRelease'
  | 'NameConflict'
  | 'NoSchedulerConfig'
  | 'PurposeChanged'
  | 'MissingPurpose'
  | 'SchedulerConfigInvalid';

/**
 * A cluster made for requests earlier that cannot be written again now (its purpose has no usable
 * mapping): the previous render's manifest is kept as it is, and it stays in the record.
 */
export interface WithheldCluster extends RequestedClusterRecord {
  requests: string[];
  reason: string;
}

export interface ScheduledCluster extends RequestedClusterRecord {
  /** Requests it serves, `namespace/name`, sorted. */
  requests: string[];
  release: ProfileRelease;
  /** Where the profile's stack lives (for topology.classNamespace). */
  stackNamespace: string;
  template: ClusterDefinition;
}

/** What a request with a known purpose and a ready release is scheduled with. */
interface Fit {
  definition: ClusterDefinition;
  profile: ClusterProfileInfo;
  release: ProfileRelease;
}

export interface ScheduleInput {
  requests: ClusterRequestInput[];
  /** Undefined: no scheduler configuration was given, every request stays Pending. */
  config?: SchedulerConfig;
  profiles: ClusterProfileInfo[];
  previous?: ClusterRequestsRecord;
  /**
   * The configuration file is there but not valid (controller): nothing is scheduled, every
   * request is Pending with this message and every cluster of `previous` is kept as it was.
   */
  configRefused?: string;
  /** `namespace/name` of Clusters written by people: a generated Cluster never takes their name. */
  peopleClusters: Set<string>;
  /** Labels of the live copies of generated Clusters, by `namespace/name` (for the cluster selectors). */
  liveLabels?: Map<string, Record<string, string>>;
}

export interface ScheduleResult {
  requests: RequestOutcome[];
  clusters: ScheduledCluster[];
  /** Clusters kept from the previous render as they were (see WithheldCluster). */
  withheld: WithheldCluster[];
  /** Requests outside `selectors.requests`, sorted. */
  notOurs: NotOurRequest[];
  record: ClusterRequestsRecord;
}

const key = (namespace: string, name: string): string => `${namespace}/${name}`;
const byKey = <T extends { namespace: string; name: string }>(a: T, b: T): number =>
  compareText(key(a.namespace, a.name), key(b.namespace, b.name));
/** openMCP's label: only Clusters carrying it with "true" are removed with their last request. */
export const DELETE_WITHOUT_REQUESTS_LABEL = 'clusters.openmcp.cloud/delete-without-requests';

/** Schedules every request; pure and deterministic. Never throws for a request or a mapping: see the header. */
export function scheduleRequests(input: ScheduleInput): ScheduleResult {
  const schedule = new Schedule(input);
  // First the requests that have a cluster already: they keep it, whatever else changed.
  const unassigned = [...input.requests].sort(byKey).flatMap((request) => schedule.placeHeldRequest(request));
  schedule.keepIdleClusters();
  for (const { request, fit } of unassigned) schedule.placeNewRequest(request, fit);
  return schedule.result();
}

type Unfit = { reason: RequestReason; message: string };
const isFit = (fit: Fit | Unfit): fit is Fit => 'definition' in fit;

/** One run of the scheduler: the clusters and outcomes so far, and the steps that add to them. */
class Schedule {
  private readonly config: SchedulerConfig | undefined;
  private readonly profiles: Map<string, ClusterProfileInfo>;
  private readonly outcomes: RequestOutcome[] = [];
  private readonly assignments: RequestAssignmentRecord[] = [];
  // Clusters made for requests earlier, by namespace/name; they keep their names and requests.
  private readonly clusters = new Map<string, ScheduledCluster>();
  private readonly withheld = new Map<string, WithheldCluster>();
  // The clusters of each purpose in namespace/name order, kept sorted as clusters are added.
  private readonly pools = new Map<string, { id: string; cluster: ScheduledCluster }[]>();
  private readonly previousClusters: Map<string, RequestedClusterRecord>;
  private readonly previousAssignments: Map<string, RequestAssignmentRecord>;
  private readonly fits = new Map<string, Fit | Unfit>();
  private readonly notOurs: NotOurRequest[] = [];

  constructor(private readonly input: ScheduleInput) {
    this.config = input.config;
    this.profiles = new Map(input.profiles.map((profile) => [profile.name, profile]));
    this.previousClusters = new Map((input.previous?.clusters ?? []).map((c) => [key(c.namespace, c.name), c]));
    this.previousAssignments = new Map((input.previous?.assignments ?? []).map((a) => [key(a.namespace, a.name), a]));
  }

  /**
   * A request as it stands against its previous assignment: left alone when not ours, refused when
   * its purpose changed or is missing, kept or granted on the cluster it had; else returned to be
   * placed once every held cluster is known.
   */
  placeHeldRequest(request: ClusterRequestInput): { request: ClusterRequestInput; fit: Fit }[] {
    const before = this.previousAssignments.get(key(request.namespace, request.name));
    const held = before ? this.previousClusters.get(key(before.cluster.namespace, before.cluster.name)) : undefined;
    if (this.config && !handlesRequest(this.config, request.labels)) {
      this.leaveToOthers(request, this.config, before, held);
      return [];
    }
    if (before && before.purpose !== request.purpose) {
      this.refusePurposeChange(request, before, held);
      return [];
    }
    if (request.purpose === '') {
      this.pending(
        request,
        'MissingPurpose',
        "spec.purpose is required: the purpose the cluster is for (a key of the scheduler configuration's purposeMappings); the request is skipped",
      );
      return [];
    }
    const fit = this.fitOf(request.purpose);
    if (!isFit(fit)) {
      if (held && held.purpose === request.purpose) this.keep(request, held, fit.reason, fit.message);
      else this.pending(request, fit.reason, fit.message);
      return [];
    }
    if (held && held.purpose === request.purpose) {
      this.grant(request, this.cluster(held, fit));
      return [];
    }
    return [{ request, fit }];
  }

  /** Not ours: left alone. A cluster it was given before still serves it (and stays). */
  private leaveToOthers(
    request: ClusterRequestInput,
    config: SchedulerConfig,
    before: RequestAssignmentRecord | undefined,
    held: RequestedClusterRecord | undefined,
  ): void {
    const had = held ? `; it keeps Cluster ${key(held.namespace, held.name)}, given before` : '';
    this.notOurs.push({
      namespace: request.namespace,
      name: request.name,
      message: `its labels do not match the scheduler configuration's selectors.requests (${config.origin}): left to another scheduler${had}`,
    });
    if (held && before) {
      const fit = this.fitOf(held.purpose);
      (isFit(fit) ? this.cluster(held, fit) : this.withhold(held, fit.message)).requests.push(
        key(request.namespace, request.name),
      );
      this.assignments.push(before);
    }
  }

  /** Immutable in openMCP: refused, and the request keeps what it had under its old purpose. */
  private refusePurposeChange(
    request: ClusterRequestInput,
    before: RequestAssignmentRecord,
    held: RequestedClusterRecord | undefined,
  ): void {
    const [reason, message] =
      request.purpose === ''
        ? ([
            'MissingPurpose',
            `spec.purpose is missing, but the request was scheduled for purpose "${before.purpose}" and a request's purpose is immutable; put it back, or create a new request with its own name and delete this one`,
          ] as const)
        : ([
            'PurposeChanged',
            `spec.purpose was "${before.purpose}" and is now "${request.purpose}", but a request's purpose is immutable; put it back, or create a new request with its own name and delete this one`,
          ] as const);
    if (held) this.keep(request, held, reason, message);
    else this.pending(request, reason, message);
  }

  /** Clusters kept without requests (their template said delete-without-requests is not "true"). */
  keepIdleClusters(): void {
    for (const held of this.previousClusters.values()) {
      const id = key(held.namespace, held.name);
      if (held.deleteWithoutRequests || this.clusters.has(id) || this.withheld.has(id)) continue;
      const fit = this.fitOf(held.purpose);
      if (isFit(fit)) this.cluster(held, fit);
      else this.withhold(held, fit.message);
    }
  }

  /** A request without a cluster: a shared one with room when the strategy finds one, else a new one. */
  placeNewRequest(request: ClusterRequestInput, fit: Fit): void {
    const config = this.config!;
    const namespace = fit.definition.template.metadata.namespace ?? request.namespace;
    const chosen = this.sharedClusterFor(request, fit, config, namespace);
    if (chosen) {
      this.grant(request, chosen);
      return;
    }
    const name = newClusterName(
      request,
      fit.definition,
      namespace,
      this.clusters,
      this.input.peopleClusters,
      this.withheld,
    );
    if (this.clusters.has(key(namespace, name)) || this.withheld.has(key(namespace, name))) {
      // Only an unlimited shared cluster's fixed name can be taken: by the one cluster of the purpose,
      // which the selectors keep this request from sharing. The operator would conflict too.
      this.pending(
        request,
        'NameConflict',
        `a new Cluster for it would be ${key(namespace, name)}, the purpose's existing cluster, which it may not share: its labels do not match purposeMappings.${request.purpose}.selector and selectors.clusters (${config.origin}); set template.metadata.generateName for purpose ${request.purpose}, or label that Cluster to match`,
      );
      return;
    }
    if (this.input.peopleClusters.has(key(namespace, name))) {
      this.pending(
        request,
        'NameConflict',
        `a new Cluster for it would be ${key(namespace, name)}, but a Cluster of that name is in the inputs and is not one created for requests; rename that Cluster or set template.metadata.generateName for purpose ${request.purpose}`,
      );
      return;
    }
    const labels = fit.definition.template.metadata.labels;
    const record: RequestedClusterRecord = {
      namespace,
      name,
      purpose: request.purpose,
      profile: fit.profile.name,
      tenancy: fit.definition.template.spec.tenancy,
      deleteWithoutRequests: (labels[DELETE_WITHOUT_REQUESTS_LABEL] ?? 'true') === 'true',
      class: fit.release.className,
      version: fit.release.kubernetesVersion,
    };
    this.grant(request, this.cluster(record, fit));
  }

  /** The shared cluster of the purpose the strategy picks among those with room that the selectors allow. */
  private sharedClusterFor(
    request: ClusterRequestInput,
    fit: Fit,
    config: SchedulerConfig,
    namespace: string,
  ): ScheduledCluster | undefined {
    if (fit.definition.template.spec.tenancy !== 'Shared') return undefined;
    const selector = clusterSelectorOf(config, fit.definition);
    const candidates = (this.pools.get(request.purpose) ?? [])
      .map((entry) => entry.cluster)
      .filter((c) => config.scope === 'Cluster' || c.namespace === namespace)
      .filter((c) => fit.definition.tenancyCount === 0 || c.requests.length < fit.definition.tenancyCount)
      .filter((c) => selector === undefined || matchesLabelSelector(selector, this.labelsOf(c)));
    return candidates.length > 0 ? pick(candidates, config.strategy, request) : undefined;
  }

  /** What is kept, sorted: a cluster created for requests leaves with its last request, when its label says so. */
  result(): ScheduleResult {
    const kept = [...this.clusters.values()]
      .filter((c) => c.requests.length > 0 || !c.deleteWithoutRequests)
      .sort(byKey);
    const keptWithheld = [...this.withheld.values()]
      .filter((c) => c.requests.length > 0 || !c.deleteWithoutRequests)
      .sort(byKey);
    for (const c of [...kept, ...keptWithheld]) c.requests.sort();
    this.outcomes.sort(byKey);
    this.assignments.sort(byKey);
    const record: ClusterRequestsRecord = {
      assignments: this.assignments,
      clusters: [...kept, ...keptWithheld].map(recordOf).sort(byKey),
    };
    return { requests: this.outcomes, clusters: kept, withheld: keptWithheld, notOurs: this.notOurs, record };
  }

  /** What a purpose is scheduled with now, or why it cannot be; asked once per purpose. */
  private fitOf(purpose: string): Fit | Unfit {
    if (!this.fits.has(purpose)) this.fits.set(purpose, fitFor(this.input, this.profiles, purpose));
    return this.fits.get(purpose)!;
  }

  private cluster(record: RequestedClusterRecord, fit: Fit): ScheduledCluster {
    const existing = this.clusters.get(key(record.namespace, record.name));
    if (existing) return existing;
    const created: ScheduledCluster = {
      ...record,
      profile: fit.profile.name,
      release: fit.release,
      class: fit.release.className,
      version: fit.release.kubernetesVersion,
      stackNamespace: fit.profile.stack.namespace,
      template: fit.definition,
      requests: [],
    };
    this.clusters.set(key(record.namespace, record.name), created);
    this.addToPool(created);
    return created;
  }

  private addToPool(created: ScheduledCluster): void {
    const pool = this.pools.get(created.purpose) ?? [];
    const id = key(created.namespace, created.name);
    let low = 0;
    let high = pool.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compareText(pool[middle]!.id, id) < 0) low = middle + 1;
      else high = middle;
    }
    pool.splice(low, 0, { id, cluster: created });
    this.pools.set(created.purpose, pool);
  }

  /** A cluster of the previous render kept as it was, because its purpose cannot be written now. */
  private withhold(record: RequestedClusterRecord, reason: string): WithheldCluster {
    const id = key(record.namespace, record.name);
    const existing = this.withheld.get(id);
    if (existing) return existing;
    const created: WithheldCluster = { ...record, requests: [], reason };
    this.withheld.set(id, created);
    return created;
  }

  private grant(request: ClusterRequestInput, target: ScheduledCluster): void {
    target.requests.push(key(request.namespace, request.name));
    this.outcomes.push({
      namespace: request.namespace,
      name: request.name,
      purpose: request.purpose,
      phase: 'Granted',
      cluster: { namespace: target.namespace, name: target.name },
      reason: 'Scheduled',
      message: `scheduled to Cluster ${key(target.namespace, target.name)}`,
    });
    this.assignments.push({
      namespace: request.namespace,
      name: request.name,
      purpose: request.purpose,
      cluster: { namespace: target.namespace, name: target.name },
    });
  }

  /**
   * Pending for `reason`, keeping the cluster the request had (under the purpose it had): written
   * again when that purpose still fits, else kept as the previous render wrote it.
   */
  private keep(
    request: ClusterRequestInput,
    held: RequestedClusterRecord,
    reason: RequestReason,
    message: string,
  ): void {
    const fit = this.fitOf(held.purpose);
    const target = isFit(fit) ? this.cluster(held, fit) : this.withhold(held, fit.message);
    target.requests.push(key(request.namespace, request.name));
    const at = { namespace: held.namespace, name: held.name };
    this.outcomes.push({
      namespace: request.namespace,
      name: request.name,
      purpose: request.purpose,
      phase: 'Pending',
      cluster: at,
      reason,
      message: `${message}; it keeps Cluster ${key(held.namespace, held.name)}${isFit(fit) ? '' : ' as the previous render wrote it'}`,
    });
    this.assignments.push({ namespace: request.namespace, name: request.name, purpose: held.purpose, cluster: at });
  }

  private pending(request: ClusterRequestInput, reason: RequestReason, message: string): void {
    this.outcomes.push({
      namespace: request.namespace,
      name: request.name,
      purpose: request.purpose,
      phase: 'Pending',
      reason,
      message,
    });
  }

  /** Labels a shared cluster is selected by: what openMCP puts on it, and what its live copy carries. */
  private labelsOf(target: ScheduledCluster): Record<string, string> {
    const { labels } = target.template.template.metadata;
    return {
      ...labels,
      [DELETE_WITHOUT_REQUESTS_LABEL]: labels[DELETE_WITHOUT_REQUESTS_LABEL] ?? 'true',
      ...this.input.liveLabels?.get(key(target.namespace, target.name)),
    };
  }
}

/** What a purpose is scheduled with now, or why it cannot be. */
function fitFor(input: ScheduleInput, profiles: Map<string, ClusterProfileInfo>, purpose: string): Fit | Unfit {
  const { config } = input;
  if (input.configRefused !== undefined)
    return {
      reason: 'SchedulerConfigInvalid',
      message: `the scheduler configuration is not valid, nothing is scheduled until it is fixed: ${input.configRefused}`,
    };
  if (!config)
    return {
      reason: 'NoSchedulerConfig',
      message: 'no scheduler configuration was given (--scheduler-config); nothing is scheduled',
    };
  const definition = config.purposeMappings.get(purpose);
  if (!definition) {
    return {
      reason: 'UnknownPurpose',
      message: `purpose "${purpose}" is not in the scheduler configuration's purposeMappings (known: ${[...config.purposeMappings.keys()].join(', ') || 'none'}); add a mapping for it`,
    };
  }
  const profile = profiles.get(definition.template.spec.profile);
  if (!profile) {
    return {
      reason: 'UnknownProfile',
      message: `purpose "${purpose}" is mapped to ClusterProfile "${definition.template.spec.profile}" (${config.origin}: purposeMappings.${purpose}.template.spec.profile), but no ClusterStack makes it; profiles: ${[...profiles.keys()].join(', ') || 'none (no ClusterStack in the inputs)'}`,
    };
  }
  if (!profile.newClusterRelease) {
    return {
      reason: 'NoReadyRelease',
      message: `ClusterProfile ${profile.name} (ClusterStack ${key(profile.stack.namespace, profile.stack.name)}) has no kept, ready release yet; the request is scheduled once one is ready`,
    };
  }
  return { definition, profile, release: profile.newClusterRelease };
}

/** The record's own fields, without what the scheduler added to the cluster. */
const recordOf = ({
  namespace,
  name,
  purpose,
  profile,
  tenancy,
  deleteWithoutRequests,
  class: className,
  version,
}: RequestedClusterRecord): RequestedClusterRecord => ({
  namespace,
  name,
  purpose,
  profile,
  tenancy,
  deleteWithoutRequests,
  class: className,
  version,
});

function pick(
  candidates: ScheduledCluster[],
  strategy: SchedulerConfig['strategy'],
  request: ClusterRequestInput,
): ScheduledCluster {
  switch (strategy) {
    case 'Simple':
      return candidates[0]!;
    case 'Random':
      // Deterministic: the request's identity is the seed, so a render is repeatable.
      return candidates[
        Number.parseInt(sha256Hex(key(request.namespace, request.name)).slice(0, 8), 16) % candidates.length
      ]!;
    case 'Balanced':
      // The fewest requests; ties go to the first by namespace/name.
      return candidates.reduce((best, candidate) =>
        candidate.requests.length < best.requests.length ? candidate : best,
      );
  }
}

/**
 * A new cluster's name, after openMCP: unlimited shared clusters are `template.metadata.name` or
 * the purpose itself; others `<generateName or purpose->` plus a suffix, here hashed from the
 * request's namespace/name (and lengthened until it is free).
 */
function newClusterName(
  request: ClusterRequestInput,
  definition: ClusterDefinition,
  namespace: string,
  clusters: Map<string, ScheduledCluster>,
  people: Set<string>,
  withheld: Map<string, WithheldCluster>,
): string {
  const { metadata } = definition.template;
  const unlimited = definition.template.spec.tenancy === 'Shared' && definition.tenancyCount === 0;
  if (unlimited && !metadata.generateName) return metadata.name ?? request.purpose;
  const prefix = metadata.generateName ?? `${request.purpose}-`;
  const hash = sha256Hex(key(request.namespace, request.name));
  for (let length = 5; length <= hash.length; length += 1) {
    const name = `${prefix}${hash.slice(0, length)}`.slice(0, 63).replace(/-+$/, '');
    if (!clusters.has(key(namespace, name)) && !people.has(key(namespace, name)) && !withheld.has(key(namespace, name)))
      return name;
  }
  return `${prefix}${hash}`;
}
