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
  const { config } = input;
  const profiles = new Map(input.profiles.map((profile) => [profile.name, profile]));
  const requests = [...input.requests].sort(byKey);
  const outcomes: RequestOutcome[] = [];
  const assignments: RequestAssignmentRecord[] = [];
  // Clusters made for requests earlier, by namespace/name; they keep their names and requests.
  const clusters = new Map<string, ScheduledCluster>();
  const withheld = new Map<string, WithheldCluster>();
  // The clusters of each purpose in namespace/name order, kept sorted as clusters are added.
  const pools = new Map<string, { id: string; cluster: ScheduledCluster }[]>();
  const addToPool = (created: ScheduledCluster): void => {
    const pool = pools.get(created.purpose) ?? [];
    const id = key(created.namespace, created.name);
    let low = 0;
    let high = pool.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compareText(pool[middle]!.id, id) < 0) low = middle + 1;
      else high = middle;
    }
    pool.splice(low, 0, { id, cluster: created });
    pools.set(created.purpose, pool);
  };
  const sortedPool = (purpose: string): ScheduledCluster[] => (pools.get(purpose) ?? []).map((entry) => entry.cluster);
  const previousClusters = new Map((input.previous?.clusters ?? []).map((c) => [key(c.namespace, c.name), c]));
  const previousAssignments = new Map((input.previous?.assignments ?? []).map((a) => [key(a.namespace, a.name), a]));

  /** What a purpose is scheduled with now, or why it cannot be. */
  const fitFor = (purpose: string): Fit | { reason: RequestReason; message: string } => {
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
  };
  const fits = new Map<string, ReturnType<typeof fitFor>>();
  const fitOf = (purpose: string): ReturnType<typeof fitFor> => {
    if (!fits.has(purpose)) fits.set(purpose, fitFor(purpose));
    return fits.get(purpose)!;
  };
  const isFit = (fit: ReturnType<typeof fitFor>): fit is Fit => 'definition' in fit;

  const cluster = (record: RequestedClusterRecord, fit: Fit): ScheduledCluster => {
    const existing = clusters.get(key(record.namespace, record.name));
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
    clusters.set(key(record.namespace, record.name), created);
    addToPool(created);
    return created;
  };
  /** A cluster of the previous render kept as it was, because its purpose cannot be written now. */
  const withhold = (record: RequestedClusterRecord, reason: string): WithheldCluster => {
    const id = key(record.namespace, record.name);
    const existing = withheld.get(id);
    if (existing) return existing;
    const created: WithheldCluster = { ...record, requests: [], reason };
    withheld.set(id, created);
    return created;
  };
  const grant = (request: ClusterRequestInput, target: ScheduledCluster): void => {
    target.requests.push(key(request.namespace, request.name));
    outcomes.push({
      namespace: request.namespace,
      name: request.name,
      purpose: request.purpose,
      phase: 'Granted',
      cluster: { namespace: target.namespace, name: target.name },
      reason: 'Scheduled',
      message: `scheduled to Cluster ${key(target.namespace, target.name)}`,
    });
    assignments.push({
      namespace: request.namespace,
      name: request.name,
      purpose: request.purpose,
      cluster: { namespace: target.namespace, name: target.name },
    });
  };
  /**
   * Pending for `reason`, keeping the cluster the request had (under the purpose it had): written
   * again when that purpose still fits, else kept as the previous render wrote it.
   */
  const keep = (
    request: ClusterRequestInput,
    held: RequestedClusterRecord,
    reason: RequestReason,
    message: string,
  ): void => {
    const fit = fitOf(held.purpose);
    const target = isFit(fit) ? cluster(held, fit) : withhold(held, fit.message);
    target.requests.push(key(request.namespace, request.name));
    const at = { namespace: held.namespace, name: held.name };
    outcomes.push({
      namespace: request.namespace,
      name: request.name,
      purpose: request.purpose,
      phase: 'Pending',
      cluster: at,
      reason,
      message: `${message}; it keeps Cluster ${key(held.namespace, held.name)}${isFit(fit) ? '' : ' as the previous render wrote it'}`,
    });
    assignments.push({ namespace: request.namespace, name: request.name, purpose: held.purpose, cluster: at });
  };
  const pending = (request: ClusterRequestInput, reason: RequestReason, message: string): void => {
    outcomes.push({
      namespace: request.namespace,
      name: request.name,
      purpose: request.purpose,
      phase: 'Pending',
      reason,
      message,
    });
  };
  const notOurs: NotOurRequest[] = [];
  /** Labels a shared cluster is selected by: what openMCP puts on it, and what its live copy carries. */
  const labelsOf = (target: ScheduledCluster): Record<string, string> => {
    const { labels } = target.template.template.metadata;
    return {
      ...labels,
      [DELETE_WITHOUT_REQUESTS_LABEL]: labels[DELETE_WITHOUT_REQUESTS_LABEL] ?? 'true',
      ...input.liveLabels?.get(key(target.namespace, target.name)),
    };
  };

  // First the requests that have a cluster already: they keep it, whatever else changed.
  const unassigned: { request: ClusterRequestInput; fit: Fit }[] = [];
  for (const request of requests) {
    const before = previousAssignments.get(key(request.namespace, request.name));
    const held = before ? previousClusters.get(key(before.cluster.namespace, before.cluster.name)) : undefined;
    if (config && !handlesRequest(config, request.labels)) {
      // Not ours: left alone. A cluster it was given before still serves it (and stays).
      const had = held ? `; it keeps Cluster ${key(held.namespace, held.name)}, given before` : '';
      notOurs.push({
        namespace: request.namespace,
        name: request.name,
        message: `its labels do not match the scheduler configuration's selectors.requests (${config.origin}): left to another scheduler${had}`,
      });
      if (held && before) {
        const fit = fitOf(held.purpose);
        (isFit(fit) ? cluster(held, fit) : withhold(held, fit.message)).requests.push(
          key(request.namespace, request.name),
        );
        assignments.push(before);
      }
      continue;
    }
    if (before && before.purpose !== request.purpose) {
      // Immutable in openMCP: refused, and the request keeps what it had under its old purpose.
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
      if (held) keep(request, held, reason, message);
      else pending(request, reason, message);
      continue;
    }
    if (request.purpose === '') {
      pending(
        request,
        'MissingPurpose',
        "spec.purpose is required: the purpose the cluster is for (a key of the scheduler configuration's purposeMappings); the request is skipped",
      );
      continue;
    }
    const fit = fitOf(request.purpose);
    if (!isFit(fit)) {
      if (held && held.purpose === request.purpose) keep(request, held, fit.reason, fit.message);
      else pending(request, fit.reason, fit.message);
      continue;
    }
    if (held && held.purpose === request.purpose) grant(request, cluster(held, fit));
    else unassigned.push({ request, fit });
  }
  // Clusters kept without requests (their template said delete-without-requests is not "true").
  for (const held of previousClusters.values()) {
    const id = key(held.namespace, held.name);
    if (held.deleteWithoutRequests || clusters.has(id) || withheld.has(id)) continue;
    const fit = fitOf(held.purpose);
    if (isFit(fit)) cluster(held, fit);
    else withhold(held, fit.message);
  }

  for (const { request, fit } of unassigned) {
    const namespace = fit.definition.template.metadata.namespace ?? request.namespace;
    const shared = fit.definition.template.spec.tenancy === 'Shared';
    const selector = clusterSelectorOf(config!, fit.definition);
    const candidates = shared
      ? sortedPool(request.purpose)
          .filter((c) => config!.scope === 'Cluster' || c.namespace === namespace)
          .filter((c) => fit.definition.tenancyCount === 0 || c.requests.length < fit.definition.tenancyCount)
          .filter((c) => selector === undefined || matchesLabelSelector(selector, labelsOf(c)))
      : [];
    const chosen = candidates.length > 0 ? pick(candidates, config!.strategy, request) : undefined;
    if (chosen) {
      grant(request, chosen);
      continue;
    }
    const name = newClusterName(request, fit.definition, namespace, clusters, input.peopleClusters, withheld);
    if (clusters.has(key(namespace, name)) || withheld.has(key(namespace, name))) {
      // Only an unlimited shared cluster's fixed name can be taken: by the one cluster of the purpose,
      // which the selectors keep this request from sharing. The operator would conflict too.
      pending(
        request,
        'NameConflict',
        `a new Cluster for it would be ${key(namespace, name)}, the purpose's existing cluster, which it may not share: its labels do not match purposeMappings.${request.purpose}.selector and selectors.clusters (${config!.origin}); set template.metadata.generateName for purpose ${request.purpose}, or label that Cluster to match`,
      );
      continue;
    }
    if (input.peopleClusters.has(key(namespace, name))) {
      pending(
        request,
        'NameConflict',
        `a new Cluster for it would be ${key(namespace, name)}, but a Cluster of that name is in the inputs and is not one created for requests; rename that Cluster or set template.metadata.generateName for purpose ${request.purpose}`,
      );
      continue;
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
    grant(request, cluster(record, fit));
  }

  // A cluster created for requests leaves with its last request, when its label says so.
  const kept = [...clusters.values()].filter((c) => c.requests.length > 0 || !c.deleteWithoutRequests).sort(byKey);
  const keptWithheld = [...withheld.values()]
    .filter((c) => c.requests.length > 0 || !c.deleteWithoutRequests)
    .sort(byKey);
  for (const c of [...kept, ...keptWithheld]) c.requests.sort();
  outcomes.sort(byKey);
  assignments.sort(byKey);
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
  const record: ClusterRequestsRecord = { assignments, clusters: [...kept, ...keptWithheld].map(recordOf).sort(byKey) };
  return { requests: outcomes, clusters: kept, withheld: keptWithheld, notOurs, record };
}

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
