// Wiring for the Cluster API providers under management/providers/<kind>-<name>/: cert-manager
// first when declared (management/providers/cert-manager/, ready when its webhook and the other
// Deployments are), then the core provider, every other provider after it, and the stacks'
// releases (whose ClusterClasses need the providers' CRDs) after all providers. Flux orders with `dependsOn`, Argo CD with sync
// waves of the root Application. CRDs and Namespaces in the provider directories carry the
// engines' no-prune annotations (render-providers.ts), so removing or upgrading a provider never
// deletes user objects through them.
import type { KubeObject } from '../../src/api/types.js';
import type { ProviderRecord } from '../../src/output/provenance.js';
import { ARGOCD_SYNC_WAVE_ANNOTATION } from './argocd-sync-waves.js';
import { sourcePath, type WiringOptions } from './wiring-options.js';
import { wiringLabels } from './wiring-layout.js';

/** Sync waves of provider Applications in the root Application: before releases (wave 0). */
const CERT_MANAGER_WAVE = -30;
const CORE_WAVE = -20;
const PROVIDER_WAVE = -10;
const LABEL_PROVIDER = 'clusterstack.x-k8s.io/provider';

/** The wiring object name of a provider: `provider-<kind>-<name>` (its directory's last part). */
function providerWiringName(record: Pick<ProviderRecord, 'dir'>): string {
  return `provider-${record.dir.split('/').at(-1)}`.slice(0, 63).replace(/-+$/, '');
}

function isCore(record: ProviderRecord): boolean {
  return record.kind === 'CoreProvider';
}

function isCertManager(record: ProviderRecord): boolean {
  return record.kind === 'CertManager';
}

/** Flux Kustomizations for the providers (path under flux/ -> object), and what releases must depend on. */
export function fluxProviderKustomizations(
  providers: ProviderRecord[],
  options: WiringOptions,
  spec: { interval: string; retryInterval: string; timeout: string; sourceRef: Record<string, string> },
): { objects: Map<string, KubeObject>; dependsOn: { name: string }[] } {
  const objects = new Map<string, KubeObject>();
  const core = providers.find(isCore);
  const certManager = providers.find(isCertManager);
  for (const record of providers) {
    // cert-manager first, then the core, then the others (each after both).
    const before = isCertManager(record) ? [] : isCore(record) ? [certManager] : [certManager, core];
    const dependsOn = before
      .filter((other): other is ProviderRecord => other !== undefined)
      .map((other) => ({ name: providerWiringName(other) }));
    // cert-manager is ready when its webhook (and the other Deployments and CRDs) are: providers'
    // Certificates are refused until the webhook answers.
    const health =
      isCertManager(record) && record.healthChecks && record.healthChecks.length > 0
        ? { wait: false, healthChecks: record.healthChecks }
        : { wait: true };
    objects.set(`flux/${record.dir}.yaml`, {
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: {
        name: providerWiringName(record),
        namespace: options.namespace,
        labels: wiringLabels(options.name, 'release', { [LABEL_PROVIDER]: record.dir.split('/').at(-1)! }),
      },
      spec: {
        ...spec,
        path: `./${sourcePath(options.source, record.dir)}`,
        prune: true,
        ...health,
        ...(dependsOn.length > 0 ? { dependsOn } : {}),
      },
    });
  }
  return { objects, dependsOn: providers.map((record) => ({ name: providerWiringName(record) })) };
}

/** Argo CD Applications for the providers (path under argocd/ -> object), in sync waves before the releases. */
export function argoProviderApplications(
  providers: ProviderRecord[],
  application: (parts: {
    name: string;
    labels: Record<string, string>;
    treeDir: string;
    namespace: string;
  }) => KubeObject,
  options: WiringOptions,
): Map<string, KubeObject> {
  const objects = new Map<string, KubeObject>();
  for (const record of providers) {
    const app = application({
      name: providerWiringName(record),
      labels: wiringLabels(options.name, 'release', { [LABEL_PROVIDER]: record.dir.split('/').at(-1)! }),
      treeDir: record.dir,
      namespace: record.namespace,
    });
    app.metadata.annotations = {
      ...app.metadata.annotations,
      [ARGOCD_SYNC_WAVE_ANNOTATION]: String(
        isCertManager(record) ? CERT_MANAGER_WAVE : isCore(record) ? CORE_WAVE : PROVIDER_WAVE,
      ),
    };
    objects.set(`argocd/${record.dir}.yaml`, app);
  }
  return objects;
}
