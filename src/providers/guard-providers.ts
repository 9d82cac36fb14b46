// The guards the cluster-api-operator lacks, which need what the target published: an unversioned
// provider keeps the version it was first rendered with (the lock, recorded in provenance.json,
// never written back into the input); a version lower than the published one is a downgrade and
// refused unless the provider carries the allow annotation; every provider's contract must be the
// core's; and a provider may not leave the tree while rendered ClusterClasses or Clusters still use
// kinds its CRDs define. The lock's release is fetched before planning decides (loadLockedProviders,
// through the plan's fetcher); deciding (guardProviderVersions) is pure and returns a new plan.
import { semver } from '../core/semver-functions.js';
import {
  ALLOW_DOWNGRADE_ANNOTATION,
  CERT_MANAGER_VERSION_ANNOTATION,
  describeProvider,
} from '../api/provider-types.js';
import type { CapiCluster } from '../api/types.js';
import { InputError, type Problem } from '../core/problem.js';
import type { ProviderRecord } from '../output/provenance.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { MANAGEMENT_DIR, PROVIDERS_DIR } from '../output/tree-layout.js';
import { decodeYamlDocuments } from '../yaml/kube-yaml.js';
import { fetchProblem } from './provider-fetcher.js';
import { contractProblems, type PlannedProvider, type ProviderPlan, readContract } from './plan-providers.js';

/** The providers whose version is locked, with their locked release loaded (or why it could not be). */
export interface LockedProviders {
  readonly plan: ProviderPlan;
  /** By provider directory: the problems locking it met (fetching its release, reading its contract); empty when none. */
  readonly locked: ReadonlyMap<string, readonly Problem[]>;
}

/**
 * Loads the version each unversioned provider was first rendered with, when that is not the newest:
 * a new plan whose locked providers carry that version and release (the given plan is not changed).
 */
export async function loadLockedProviders(
  plan: ProviderPlan,
  published: readonly ProviderRecord[],
): Promise<LockedProviders> {
  const locked = new Map<string, Problem[]>();
  const providers = await Promise.all(
    plan.providers.map(async (planned): Promise<PlannedProvider> => {
      const before = published.find((record) => record.dir === planned.dir);
      if (
        !before ||
        planned.problems.length > 0 ||
        planned.pinned ||
        before.version === planned.version ||
        !semver.valid(before.version)
      )
        return planned;
      // Resolved once: the newest version when first rendered, kept until spec.version says otherwise.
      const lockedProvider: PlannedProvider = { ...planned, version: before.version, problems: [] };
      try {
        lockedProvider.release = await plan.fetcher.fetch(planned.provider, before.version, plan.inputs);
      } catch (error) {
        locked.set(planned.dir, [fetchProblem(error, describeProvider(planned.provider))]);
        return { ...planned, version: before.version };
      }
      readContract(lockedProvider);
      locked.set(planned.dir, [...lockedProvider.problems]);
      return lockedProvider;
    }),
  );
  return { plan: { ...plan, providers }, locked };
}

/** What the version guards decided: the plan to render, and (refuse) the problems that stop the run. */
export interface ProviderGuards {
  readonly plan: ProviderPlan;
  /** With `refuse`: every problem; the run must stop with them (InputError), nothing written. */
  readonly refused: readonly Problem[];
}

/**
 * Refuses downgrades and contract mismatches, and the problems locking met. `refuse` (the CLI)
 * returns them to stop the run; `withhold` (the controller) adds each to its provider, which is
 * then withheld alone with its published output kept. Pure: the plan given is not changed.
 */
export function guardProviderVersions(
  loaded: LockedProviders,
  previous: readonly ProviderRecord[],
  mode: 'refuse' | 'withhold' = 'refuse',
): ProviderGuards {
  const { plan } = loaded;
  const problems: Problem[] = [];
  for (const planned of plan.providers) {
    const lockProblems = loaded.locked.get(planned.dir);
    if (lockProblems) {
      problems.push(...lockProblems);
      continue;
    }
    const before = previous.find((record) => record.dir === planned.dir);
    if (!before || planned.problems.length > 0) continue;
    const allowed = planned.provider.metadata.annotations?.[ALLOW_DOWNGRADE_ANNOTATION] === 'true';
    if (planned.pinned && semver.valid(before.version) && semver.lt(planned.version, before.version) && !allowed) {
      problems.push({
        object: describeProvider(planned.provider),
        path: 'spec.version',
        message: `${planned.version} is lower than ${before.version}, which is published (provenance.json); a downgrade can break objects stored at the newer API version. If it is meant, annotate the provider with ${ALLOW_DOWNGRADE_ANNOTATION}: "true"`,
      });
    }
  }
  problems.push(...contractProblems(plan));
  const certManagerProblem = certManagerDowngrade(plan, previous);
  if (mode === 'refuse') return { plan, refused: certManagerProblem ? [...problems, certManagerProblem] : problems };
  // Withheld alone: each problem goes to its provider (a lock's problems are there already).
  const lockedDirs = new Set(loaded.locked.keys());
  const providers = plan.providers.map((planned) => {
    const own = problems.filter(
      (problem) =>
        problem.object === describeProvider(planned.provider) &&
        !(lockedDirs.has(planned.dir) && loaded.locked.get(planned.dir)!.includes(problem)),
    );
    const lockProblems =
      lockedDirs.has(planned.dir) && planned.problems.length === 0 ? loaded.locked.get(planned.dir)! : [];
    return own.length + lockProblems.length === 0
      ? planned
      : { ...planned, problems: [...planned.problems, ...lockProblems, ...own] };
  });
  const certManager =
    plan.certManager && certManagerProblem
      ? { ...plan.certManager, problems: [...plan.certManager.problems, certManagerProblem] }
      : plan.certManager;
  return { plan: { ...plan, providers, ...(certManager ? { certManager } : {}) }, refused: [] };
}

/** cert-manager's version lower than the published one, without the CoreProvider's allow annotation. */
function certManagerDowngrade(plan: ProviderPlan, previous: readonly ProviderRecord[]): Problem | undefined {
  const certManager = plan.certManager;
  const before = previous.find((record) => record.dir === certManager?.dir);
  if (
    !certManager?.release ||
    !before ||
    !semver.valid(before.version) ||
    !semver.lt(certManager.version, before.version) ||
    certManager.core.metadata.annotations?.[ALLOW_DOWNGRADE_ANNOTATION] === 'true'
  )
    return undefined;
  return {
    object: `${describeProvider(certManager.core)} cert-manager`,
    path: `metadata.annotations[${CERT_MANAGER_VERSION_ANNOTATION}]`,
    message: `${certManager.version} is lower than ${before.version}, which is published (provenance.json); a downgrade can break objects stored at the newer API version. If it is meant, annotate the CoreProvider with ${ALLOW_DOWNGRADE_ANNOTATION}: "true"`,
  };
}

/** The InputError a refused provider guard stops the run with, naming every problem. */
export function providerGuardError(problems: readonly Problem[]): InputError {
  return new InputError(
    [...problems],
    `nothing was rendered or written:\n  ${problems.map((p) => `${p.object ? `${p.object}${p.path ? ` ${p.path}` : ''}: ` : ''}${p.message}`).join('\n  ')}`,
  );
}

function kindOf(apiVersion: unknown, kind: unknown): string | undefined {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return undefined;
  const slash = apiVersion.indexOf('/');
  return `${slash < 0 ? '' : apiVersion.slice(0, slash)}/${kind}`;
}

/**
 * Refuses removing a provider whose CRD kinds rendered ClusterClasses (management/<ns>/<release>/)
 * or Clusters still use, naming them. Throws InputError.
 */
export function guardProviderRemoval(
  previous: ProviderRecord[],
  current: ProviderRecord[],
  tree: RenderedTree,
  clusters: CapiCluster[],
): void {
  const present = new Set(current.map((record) => record.dir));
  const removed = previous.filter((record) => !present.has(record.dir) && record.kinds.length > 0);
  if (removed.length === 0) return;
  const users = new Map<string, Set<string>>();
  const use = (kind: string | undefined, user: string): void => {
    if (!kind) return;
    if (!users.has(kind)) users.set(kind, new Set());
    users.get(kind)!.add(user);
  };
  for (const [file, text] of tree) {
    if (!file.startsWith(`${MANAGEMENT_DIR}/`) || file.endsWith('/kustomization.yaml') || !file.endsWith('.yaml'))
      continue;
    // Providers use each other's kinds too: every provider's Certificates and Issuers need cert-manager.
    const release = file.startsWith(`${PROVIDERS_DIR}/`)
      ? `provider ${file.split('/')[2]}`
      : `release ${file.split('/').slice(1, 3).join('/')}`;
    try {
      for (const document of decodeYamlDocuments(text)) {
        const value = document.value as Record<string, unknown> | null;
        if (value && typeof value === 'object') use(kindOf(value.apiVersion, value.kind), release);
      }
    } catch {
      // A file we wrote ourselves that does not decode is reported where it was rendered.
    }
  }
  for (const cluster of clusters) {
    const name = `Cluster ${cluster.metadata.namespace ?? 'default'}/${cluster.metadata.name}`;
    use(kindOf(cluster.apiVersion, cluster.kind), name);
    for (const ref of [cluster.spec?.infrastructureRef, cluster.spec?.controlPlaneRef])
      if (ref) use(kindOf(ref.apiVersion, ref.kind), name);
  }
  const problems: Problem[] = [];
  for (const record of removed) {
    const usedBy = record.kinds.flatMap((kind) =>
      [...(users.get(kind) ?? [])].map((user) => `${user} (${kind.split('/')[1]})`),
    );
    if (usedBy.length === 0) continue;
    problems.push({
      object: `${record.kind} ${record.namespace}/${record.name}`,
      message: `would be removed, but its kinds are still used by ${[...new Set(usedBy)].sort().join(', ')}; Argo CD or Flux would then delete the controller those objects need. Remove or move those first, or keep the provider`,
    });
  }
  if (problems.length > 0)
    throw new InputError(
      problems,
      `nothing was rendered or written:\n  ${problems.map((p) => `${p.object}: ${p.message}`).join('\n  ')}`,
    );
}
