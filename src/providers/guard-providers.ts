// The guards the cluster-api-operator lacks, which need the previously published tree: an
// unversioned provider keeps the version it was first rendered with (the lock, recorded in
// provenance.json, never written back into the input); a version lower than the published one is
// a downgrade and refused unless the provider carries the allow annotation; every provider's
// contract must be the core's; and a provider may not leave the tree while rendered ClusterClasses
// or Clusters still use kinds its CRDs define.
import { semver } from '../core/semver-functions.js';
import { ALLOW_DOWNGRADE_ANNOTATION, CERT_MANAGER_VERSION_ANNOTATION, describeProvider } from '../api/provider-types.js';
import type { CapiCluster } from '../api/types.js';
import { InputError, type Problem } from '../core/problem.js';
import type { ProviderRecord } from '../output/provenance.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { MANAGEMENT_DIR, PROVIDERS_DIR } from '../output/tree-layout.js';
import { decodeYamlDocuments } from '../yaml/kube-yaml.js';
import { fetchProblem } from './provider-fetcher.js';
import { contractProblems, type ProviderPlan, readContract } from './plan-providers.js';

/**
 * Applies the version lock and refuses downgrades and contract mismatches. Fetches a locked
 * version that is not the newest. `refuse` (the CLI) throws InputError naming every problem, so
 * nothing is written; `withhold` (the controller) adds each problem to its provider, which is then
 * withheld alone with its published output kept.
 */
export async function guardProviderVersions(plan: ProviderPlan, previous: ProviderRecord[], mode: 'refuse' | 'withhold' = 'refuse'): Promise<void> {
  const problems: Problem[] = [];
  await Promise.all(
    plan.providers.map(async (planned) => {
      const before = previous.find((record) => record.dir === planned.dir);
      if (!before || planned.problems.length > 0) return;
      if (!planned.pinned && before.version !== planned.version && semver.valid(before.version)) {
        // Resolved once: the newest version when first rendered, kept until spec.version says otherwise.
        planned.version = before.version;
        try {
          planned.release = await plan.fetcher.fetch(planned.provider, before.version, plan.inputs);
        } catch (error) {
          problems.push(fetchProblem(error, describeProvider(planned.provider)));
          return;
        }
        readContract(planned);
        problems.push(...planned.problems);
        return;
      }
      const allowed = planned.provider.metadata.annotations?.[ALLOW_DOWNGRADE_ANNOTATION] === 'true';
      if (planned.pinned && semver.valid(before.version) && semver.lt(planned.version, before.version) && !allowed) {
        problems.push({
          object: describeProvider(planned.provider),
          path: 'spec.version',
          message: `${planned.version} is lower than ${before.version}, which is published (provenance.json); a downgrade can break objects stored at the newer API version. If it is meant, annotate the provider with ${ALLOW_DOWNGRADE_ANNOTATION}: "true"`,
        });
      }
    }),
  );
  problems.push(...contractProblems(plan));
  const certManager = plan.certManager;
  const certManagerBefore = previous.find((record) => record.dir === certManager?.dir);
  if (certManager?.release && certManagerBefore && semver.valid(certManagerBefore.version) && semver.lt(certManager.version, certManagerBefore.version) && certManager.core.metadata.annotations?.[ALLOW_DOWNGRADE_ANNOTATION] !== 'true') {
    const problem = {
      object: `${describeProvider(certManager.core)} cert-manager`,
      path: `metadata.annotations[${CERT_MANAGER_VERSION_ANNOTATION}]`,
      message: `${certManager.version} is lower than ${certManagerBefore.version}, which is published (provenance.json); a downgrade can break objects stored at the newer API version. If it is meant, annotate the CoreProvider with ${ALLOW_DOWNGRADE_ANNOTATION}: "true"`,
    };
    if (mode === 'withhold') certManager.problems.push(problem);
    else problems.push(problem);
  }
  if (mode === 'withhold') {
    for (const problem of problems) plan.providers.find((planned) => describeProvider(planned.provider) === problem.object)?.problems.push(problem);
    return;
  }
  if (problems.length > 0) throw new InputError(problems, `nothing was rendered or written:\n  ${problems.map((p) => `${p.object ? `${p.object}${p.path ? ` ${p.path}` : ''}: ` : ''}${p.message}`).join('\n  ')}`);
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
export function guardProviderRemoval(previous: ProviderRecord[], current: ProviderRecord[], tree: RenderedTree, clusters: CapiCluster[]): void {
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
    if (!file.startsWith(`${MANAGEMENT_DIR}/`) || file.endsWith('/kustomization.yaml') || !file.endsWith('.yaml')) continue;
    // Providers use each other's kinds too: every provider's Certificates and Issuers need cert-manager.
    const release = file.startsWith(`${PROVIDERS_DIR}/`) ? `provider ${file.split('/')[2]}` : `release ${file.split('/').slice(1, 3).join('/')}`;
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
    for (const ref of [cluster.spec?.infrastructureRef, cluster.spec?.controlPlaneRef]) if (ref) use(kindOf(ref.apiVersion, ref.kind), name);
  }
  const problems: Problem[] = [];
  for (const record of removed) {
    const usedBy = record.kinds.flatMap((kind) => [...(users.get(kind) ?? [])].map((user) => `${user} (${kind.split('/')[1]})`));
    if (usedBy.length === 0) continue;
    problems.push({
      object: `${record.kind} ${record.namespace}/${record.name}`,
      message: `would be removed, but its kinds are still used by ${[...new Set(usedBy)].sort().join(', ')}; Argo CD or Flux would then delete the controller those objects need. Remove or move those first, or keep the provider`,
    });
  }
  if (problems.length > 0) throw new InputError(problems, `nothing was rendered or written:\n  ${problems.map((p) => `${p.object}: ${p.message}`).join('\n  ')}`);
}
