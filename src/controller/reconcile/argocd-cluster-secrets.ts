// Keeps one Argo CD cluster Secret per workload cluster, made from CAPI's `<cluster>-kubeconfig`
// Secret, and removes it when the Cluster goes away. The Secrets live in the cluster only. Nothing
// here logs a Secret's content: only names and error classes.
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from '../../api/types.js';
import type { Logger } from '../../core/logger.js';
import type { SecretStore } from '../runtime/kube-client.js';
import {
  ARGOCD_SECRET_TYPE_LABEL,
  argoClusterSecretName,
  credentialsFromKubeconfig,
  desiredArgoClusterSecret,
  KUBECONFIG_KEY,
  KubeconfigError,
  secretMatches,
} from '../desired-state/argocd-cluster-secret.js';
import { LABEL_CLUSTER_NAME, LABEL_CLUSTER_NAMESPACE } from '../desired-state/owned-objects.js';

export interface ArgoSecretsOptions {
  store: SecretStore;
  /** Where Argo CD looks for cluster Secrets (usually `argocd`). */
  namespace: string;
  logger: Logger;
  /** How often a cluster's kubeconfig is read again to catch rotations. Default 5 minutes. */
  refreshMs?: number;
  now?: () => number;
}

export interface ArgoSecretsReport {
  written: string[];
  deleted: string[];
  /** Clusters whose kubeconfig Secret does not exist yet (CAPI writes it once the control plane is up). */
  waiting: string[];
  errors: { cluster: string; error: unknown }[];
}

/** Argo CD cluster Secrets for a set of workload clusters. */
export class ArgoClusterSecrets {
  private readonly checkedAt = new Map<string, number>();
  private readonly refreshMs: number;
  private readonly now: () => number;

  constructor(private readonly options: ArgoSecretsOptions) {
    this.refreshMs = options.refreshMs ?? 300_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * Converges the Secrets on `clusters` (`{namespace, name}` of every workload cluster we render
   * for); a sharded controller passes `othersKeep`, the fleet's Clusters, whose Secrets other shards write.
   */
  async reconcile(
    clusters: { namespace: string; name: string }[],
    othersKeep?: ReadonlySet<string>,
  ): Promise<ArgoSecretsReport> {
    const { store, namespace: argoNamespace, logger } = this.options;
    const report: ArgoSecretsReport = { written: [], deleted: [], waiting: [], errors: [] };
    const existing = await store.listSecrets(
      argoNamespace,
      `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE},${ARGOCD_SECRET_TYPE_LABEL}=cluster`,
    );
    const byName = new Map(existing.map((secret) => [secret.metadata.name, secret]));
    const wanted = new Set<string>();
    for (const cluster of clusters) {
      const name = argoClusterSecretName(cluster.namespace, cluster.name);
      const key = `${cluster.namespace}/${cluster.name}`;
      wanted.add(name);
      const current = byName.get(name);
      const checked = this.checkedAt.get(key);
      if (current && checked !== undefined && this.now() - checked < this.refreshMs) continue;
      try {
        const kubeconfigName = `${cluster.name}-kubeconfig`;
        const source = await store.readSecret(cluster.namespace, kubeconfigName);
        const encoded = source?.data?.[KUBECONFIG_KEY];
        if (!encoded) {
          report.waiting.push(key);
          continue;
        }
        const credentials = credentialsFromKubeconfig(
          Buffer.from(encoded, 'base64').toString('utf8'),
          `Secret ${cluster.namespace}/${kubeconfigName}`,
        );
        const desired = desiredArgoClusterSecret(cluster, credentials, argoNamespace);
        if (!current || !secretMatches(current, desired)) {
          await store.writeSecret(desired, current?.metadata.resourceVersion);
          report.written.push(`${argoNamespace}/${name}`);
          logger.info({ cluster: key, secret: `${argoNamespace}/${name}` }, 'Argo CD cluster secret written');
        }
        this.checkedAt.set(key, this.now());
      } catch (error) {
        report.errors.push({ cluster: key, error });
        const reason =
          error instanceof KubeconfigError ? error.message : error instanceof Error ? error.message : 'unknown error';
        logger.warn({ cluster: key, error: reason }, 'could not write the Argo CD cluster secret');
      }
    }
    for (const secret of existing) {
      if (wanted.has(secret.metadata.name)) continue;
      if (
        othersKeep?.has(
          `${secret.metadata.labels?.[LABEL_CLUSTER_NAMESPACE]}/${secret.metadata.labels?.[LABEL_CLUSTER_NAME]}`,
        )
      )
        continue;
      try {
        await store.deleteSecret(argoNamespace, secret.metadata.name);
        report.deleted.push(`${argoNamespace}/${secret.metadata.name}`);
        const cluster = `${secret.metadata.labels?.[LABEL_CLUSTER_NAMESPACE] ?? '?'}/${secret.metadata.labels?.[LABEL_CLUSTER_NAME] ?? '?'}`;
        this.checkedAt.delete(cluster);
        logger.info({ cluster, secret: `${argoNamespace}/${secret.metadata.name}` }, 'Argo CD cluster secret removed');
      } catch (error) {
        report.errors.push({ cluster: secret.metadata.name, error });
        logger.warn(
          {
            secret: `${argoNamespace}/${secret.metadata.name}`,
            error: error instanceof Error ? error.message : String(error),
          },
          'could not remove the Argo CD cluster secret',
        );
      }
    }
    return report;
  }
}
