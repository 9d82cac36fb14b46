// Argo CD wiring for the rendered tree: Applications (argoproj.io/v1alpha1), all in the wiring
// namespace (argocd).
//
// Layout (under `argocd/`):
//   root.yaml                                      Application <name>: applies argocd/ (this directory)
//   management/<ns>/shared.yaml                    Application <ns>-shared             -> in-cluster, namespace <ns>
//   management/<ns>/<release>.yaml                 Application <ns>-<release>          -> in-cluster, namespace <ns>
//   clusters/<ns>/<cluster>.yaml                   Application <ns>-<cluster>          -> in-cluster: the cluster's app of apps
//   cluster-addons/<ns>/<cluster>/<stage>.yaml     Application <ns>-<cluster>-<stage>  -> workload cluster <ns>-<cluster>
//   cluster-addons/<ns>/<cluster>/layer-<layer>.yaml  Application <ns>-<cluster>-layer-<layer> (addon layers, see layerWaves)
// argocd/, management/ and clusters/ aggregate through their kustomization.yaml; cluster-addons/
// does not: each cluster's directory there is read only by that cluster's parent Application, and
// listing it higher up would make the root Application own (and fight over) the children too.
// Bootstrap once with `kubectl apply -k <path>/argocd`; the root Application keeps the wiring in
// step with the tree afterwards. It carries no deletion finalizer: deleting it never cascades.
//
// Why an app of apps per cluster rather than an ApplicationSet: the stages of a cluster must apply
// in order (CNI before CSI before the rest). Between Applications, Argo CD orders only through sync
// waves of a parent Application; an ApplicationSet can order its Applications only with the
// Progressive Syncs feature, which is off by default and has to switch off automated sync of the
// Applications it generates. The stage list and order are also known only at render time (from
// each release's clusteraddon.yaml), so a generator would only restate what is written here, and
// the explicit Applications are what a reviewer sees in the pull request.
// Sync waves between child Applications hold only if Argo CD assesses Application health, which it
// stopped doing by default in 1.8: gitops/health/argocd-cm-health-patch.yaml restores it
// (resource.customizations.health.argoproj.io_Application) beside the checks for our own kinds.
//
// Deleting an Application deletes what it applied (resources-finalizer.argocd.argoproj.io): when a
// release or a Cluster leaves the tree, the root prunes its Application and Argo CD prunes its
// objects. On the management side that means a dropped release's ClusterClass is deleted, which is
// only safe because resolution never drops a release some Cluster still uses (DESIGN §5): the
// caller must never pass units that leave out a used release. For a deleted workload cluster whose
// Argo CD cluster Secret is already gone, Argo CD removes the finalizer without pruning.
import type { KubeObject } from '../../src/api/types.js';
import type { ProviderRecord, UnitRecord } from '../../src/output/provenance.js';
import { sharedDir } from '../../src/output/tree-layout.js';
import { checkArgoCdHookLayout } from './argocd-helm-hooks.js';
import { argoProviderApplications } from './provider-wiring.js';
import { ARGOCD_SYNC_WAVE_ANNOTATION } from './argocd-sync-waves.js';
import { CLUSTER_REQUESTS_DIR } from '../../src/output/tree-layout.js';
import { checkWiringOptions, sourcePath, type WiringExtras, type WiringOptions } from './wiring-options.js';
import {
  type ClusterUnits,
  groupUnits,
  type LayerUnit,
  type ReleaseUnit,
  WiringObjects,
  wiringLabels,
} from './wiring-layout.js';
import {
  argoClusterApplicationName,
  argoLayerApplicationName,
  argoReleaseApplicationName,
  argoSharedApplicationName,
  argoStageApplicationName,
  LABEL_CLUSTER,
  LABEL_LAYER,
  LABEL_LAYER_VERSION,
  LABEL_NAMESPACE,
  LABEL_RELEASE,
  LABEL_STAGE,
} from './wiring-names.js';

export { syncWaveFor, withSyncWave } from './argocd-sync-waves.js';

const ARGOCD_DIR = 'argocd';
const ARGOCD_APPLICATION_API = 'argoproj.io/v1alpha1';
const ARGOCD_IN_CLUSTER = 'https://kubernetes.default.svc';
const ARGOCD_RESOURCES_FINALIZER = 'resources-finalizer.argocd.argoproj.io';
const DEFAULT_PROJECT = 'default';
const CLUSTER_ADDONS_DIR = `${ARGOCD_DIR}/cluster-addons`;

/**
 * The name of the Argo CD cluster (the `name` in its cluster Secret, used as `destination.name`) of
 * a CAPI workload cluster: `<namespace>-<cluster>`. The controller creates that Secret in the Argo
 * CD namespace from CAPI's `<cluster>-kubeconfig` Secret, in the cluster, never in Git; both sides
 * call this function so the names cannot drift.
 */
export function argoClusterName(namespace: string, cluster: string): string {
  return `${namespace}-${cluster}`;
}

// ServerSideApply: a ClusterClass is too large for the last-applied annotation of client-side apply.
// CreateNamespace=false: release namespaces are the ClusterStacks' own; addons bring their namespaces.
const SYNC_POLICY = {
  automated: { prune: true, selfHeal: true },
  syncOptions: ['ServerSideApply=true', 'CreateNamespace=false'],
  // A workload cluster comes up after its Application: retry failed syncs instead of waiting for
  // the next commit.
  retry: { limit: 10, backoff: { duration: '30s', factor: 2, maxDuration: '5m' } },
};

/** Automated sync with selfHeal, pruning unless `prune: false`; none for a layer on hold (`manual`). */
function syncPolicy(parts: Pick<ApplicationParts, 'prune' | 'manual'>): Record<string, unknown> {
  const policy: Record<string, unknown> = {
    ...structuredClone(SYNC_POLICY),
    automated: { prune: parts.prune ?? true, selfHeal: true },
  };
  if (parts.manual === true) delete policy.automated;
  return policy;
}

/**
 * Sync waves of a cluster's layers inside its app of apps: after the stage waves (0..stages-1) when
 * the layer comes after the stack's addons, and one wave after each layer it depends on. The parent
 * moves to the next wave only when every Application of the wave is Healthy (the Application health
 * check in gitops/health), which is how a layer waits for its dependencies to be applied and ready.
 *
 * A layer on hold never syncs, so it never becomes Healthy, and a later wave would wait for it on
 * every sync of the parent (the stack's stages and unrelated layers included). So a paused layer
 * (on hold, or depending on one, directly or not) leaves the chain: it gets no automated sync (it
 * waits, as Kraan's dependants of a held layer do) and the one wave after every other child. Argo
 * CD does not wait for the health of a sync's last wave (gitops-engine's sync context ends a sync
 * once the last wave is applied), so nothing waits for a paused layer. Lifting the hold puts the
 * layer and its dependants back in their waves, in order.
 */
function layerWaves(stageWaves: number, layers: LayerUnit[]): { waves: Map<string, number>; paused: Set<string> } {
  const waves = new Map<string, number>();
  const paused = new Set<string>();
  // Layers come sorted by depth: every dependency is decided before its dependents.
  for (const { layer } of layers) {
    if (layer.hold || layer.dependsOn.some((dependency) => paused.has(dependency.layer))) {
      paused.add(layer.name);
      continue;
    }
    let wave = layer.afterStack ? stageWaves : 0;
    for (const dependency of layer.dependsOn) wave = Math.max(wave, (waves.get(dependency.layer) ?? 0) + 1);
    waves.set(layer.name, wave);
  }
  const last = Math.max(stageWaves - 1, ...waves.values()) + 1;
  for (const name of paused) waves.set(name, last);
  return { waves, paused };
}

function applicationSource(options: WiringOptions, treeDir: string): Record<string, string> {
  const path = sourcePath(options.source, treeDir);
  if (options.source.kind === 'git')
    return { repoURL: options.source.url, targetRevision: options.source.branch, path };
  // Argo CD 3.1+ OCI sources: the artifact is extracted and `path` selects a directory in it.
  return { repoURL: options.source.url, targetRevision: options.source.tag, path: path === '' ? '.' : path };
}

interface ApplicationParts {
  name: string;
  labels: Record<string, string>;
  treeDir: string;
  destination: Record<string, string>;
  finalizer: boolean;
  wave?: number;
  /** Automated prune; true unless the Application must never delete what leaves it (see renderArgoWiring). */
  prune?: boolean;
  /** An addon layer on hold or depending on one: no automated sync (a person may still sync it by hand). */
  manual?: boolean;
}

function application(options: WiringOptions, parts: ApplicationParts): KubeObject {
  const metadata: KubeObject['metadata'] = { name: parts.name, namespace: options.namespace, labels: parts.labels };
  if (parts.finalizer) metadata.finalizers = [ARGOCD_RESOURCES_FINALIZER];
  if (parts.wave !== undefined) metadata.annotations = { [ARGOCD_SYNC_WAVE_ANNOTATION]: String(parts.wave) };
  return {
    apiVersion: ARGOCD_APPLICATION_API,
    kind: 'Application',
    metadata,
    spec: {
      project: options.project ?? DEFAULT_PROJECT,
      source: applicationSource(options, parts.treeDir),
      destination: parts.destination,
      syncPolicy: syncPolicy(parts),
    },
  };
}

/** Argo CD wiring files (paths under `argocd/`) for the rendered units. Pure; throws InputError on bad options. */
export function renderArgoWiring(
  units: UnitRecord[],
  options: WiringOptions,
  extras: WiringExtras = {},
): Map<string, string> {
  checkWiringOptions({ ...options, engine: 'argocd' });
  // Helm hooks stay in each unit's directory, annotations as helm wrote them: Argo CD maps them itself.
  checkArgoCdHookLayout(units);
  const { releases, clusters } = groupUnits(units);
  const wiring = new WiringObjects();
  wiring.claim(options.namespace, options.name, 'the root Application');
  wiring.objects.set(
    `${ARGOCD_DIR}/root.yaml`,
    application(options, {
      name: options.name,
      labels: wiringLabels(options.name, 'root'),
      treeDir: ARGOCD_DIR,
      destination: { server: ARGOCD_IN_CLUSTER, namespace: options.namespace },
      finalizer: false,
    }),
  );
  addSharedApplications(wiring, options, releases);
  addProviderApplications(wiring, options, extras.providers ?? []);
  for (const release of releases) addReleaseApplication(wiring, options, release);
  if (extras.clusterRequests) addClusterRequestsApplication(wiring, options);
  for (const cluster of clusters) addClusterApplications(wiring, options, cluster);
  return wiring.files(
    'Argo CD Application',
    (dir) => dir !== CLUSTER_ADDONS_DIR && !dir.startsWith(`${CLUSTER_ADDONS_DIR}/`),
  );
}

/**
 * Shared objects (management/<ns>/shared/, one Application per namespace with a release, even when
 * empty) move between it and a release's directory in one revision, and Argo CD orders nothing
 * between Applications on a new revision: each syncs on its own. Argo CD deletes an object only
 * through the Application whose tracking id it carries, and only when that Application prunes
 * (or is deleted with its resources finalizer). So neither side of a move may prune:
 *  - the shared Application has no automated prune and no resources finalizer: an object moving
 *    back to a release is left for the release to take over, and removing the Application
 *    deletes nothing;
 *  - release Applications do not prune automatically either: a release's content never changes,
 *    so the only objects that leave a live release are those moving into shared/ (a release
 *    that is dropped is still cleaned up, by deleting its Application with the finalizer).
 * An object left behind this way shows as OutOfSync ("requires pruning") until its new owner
 * tracks it; one leaving the tree straight from shared/ stays that way until pruned by hand.
 * Wave -1 in the root Application: a new release's Application is created once shared/ is healthy.
 */
function addSharedApplications(wiring: WiringObjects, options: WiringOptions, releases: ReleaseUnit[]): void {
  for (const namespace of [...new Set(releases.map((release) => release.namespace))]) {
    wiring.add(
      `${ARGOCD_DIR}/${sharedDir(namespace)}.yaml`,
      application(options, {
        name: argoSharedApplicationName(namespace),
        labels: wiringLabels(options.name, 'shared', { [LABEL_NAMESPACE]: namespace }),
        treeDir: sharedDir(namespace),
        destination: { server: ARGOCD_IN_CLUSTER, namespace },
        finalizer: false,
        wave: -1,
        prune: false,
      }),
      `shared objects of namespace ${namespace}`,
    );
  }
}

/** Cluster API providers in earlier sync waves of the root (core first); releases need their CRDs. */
function addProviderApplications(wiring: WiringObjects, options: WiringOptions, providers: ProviderRecord[]): void {
  const providerApps = argoProviderApplications(
    providers,
    (parts) =>
      application(options, {
        name: parts.name,
        labels: parts.labels,
        treeDir: parts.treeDir,
        destination: { server: ARGOCD_IN_CLUSTER, namespace: parts.namespace },
        finalizer: true,
      }),
    options,
  );
  for (const [file, object] of providerApps) wiring.add(file, object, `provider ${file}`);
}

/** A management release: no automated prune (see addSharedApplications), deleted with its finalizer. */
function addReleaseApplication(wiring: WiringObjects, options: WiringOptions, release: ReleaseUnit): void {
  wiring.add(
    `${ARGOCD_DIR}/${release.dir}.yaml`,
    application(options, {
      name: argoReleaseApplicationName(release.namespace, release.release),
      labels: wiringLabels(options.name, 'release', {
        [LABEL_NAMESPACE]: release.namespace,
        [LABEL_RELEASE]: release.release,
      }),
      treeDir: release.dir,
      destination: { server: ARGOCD_IN_CLUSTER, namespace: release.namespace },
      finalizer: true,
      prune: false,
    }),
    `release ${release.namespace}/${release.release}`,
  );
}

/**
 * ClusterProfiles and requested Clusters, a wave after the releases' Applications. No deletion
 * finalizer: removing this Application never deletes workload clusters.
 */
function addClusterRequestsApplication(wiring: WiringObjects, options: WiringOptions): void {
  wiring.add(
    `${ARGOCD_DIR}/${CLUSTER_REQUESTS_DIR}.yaml`,
    application(options, {
      name: `${options.name}-cluster-requests`,
      labels: wiringLabels(options.name, 'cluster-requests'),
      treeDir: CLUSTER_REQUESTS_DIR,
      destination: { server: ARGOCD_IN_CLUSTER },
      finalizer: false,
      wave: 1,
    }),
    'the cluster requests',
  );
}

/** A workload cluster's app of apps: its stages in sync waves by group, then its layers (see layerWaves). */
function addClusterApplications(wiring: WiringObjects, options: WiringOptions, cluster: ClusterUnits): void {
  const clusterLabels = { [LABEL_NAMESPACE]: cluster.namespace, [LABEL_CLUSTER]: cluster.name };
  const childrenDir = `${CLUSTER_ADDONS_DIR}/${cluster.namespace}/${cluster.name}`;
  const destination = { name: argoClusterName(cluster.namespace, cluster.name) };
  wiring.add(
    `${ARGOCD_DIR}/clusters/${cluster.namespace}/${cluster.name}.yaml`,
    application(options, {
      name: argoClusterApplicationName(cluster.namespace, cluster.name),
      labels: wiringLabels(options.name, 'cluster', clusterLabels),
      treeDir: childrenDir,
      destination: { server: ARGOCD_IN_CLUSTER, namespace: options.namespace },
      finalizer: true,
    }),
    `Cluster ${cluster.namespace}/${cluster.name}`,
  );
  cluster.groups.forEach((group, wave) => {
    for (const stage of group) {
      wiring.add(
        `${childrenDir}/${stage.dir.split('/').at(-1)}.yaml`,
        application(options, {
          name: argoStageApplicationName(cluster.namespace, cluster.name, stage.stage),
          labels: wiringLabels(options.name, 'cluster-stage', { ...clusterLabels, [LABEL_STAGE]: stage.stage }),
          treeDir: stage.dir,
          // No destination namespace: every addon object carries its own (kube-system by default).
          destination: { ...destination },
          finalizer: true,
          wave,
        }),
        `stage ${stage.stage} of Cluster ${cluster.namespace}/${cluster.name}`,
      );
    }
  });
  const { waves, paused } = layerWaves(cluster.groups.length, cluster.layers);
  for (const layer of cluster.layers) {
    wiring.add(
      `${childrenDir}/layer-${layer.layer.name}.yaml`,
      application(options, {
        name: argoLayerApplicationName(cluster.namespace, cluster.name, layer.layer.name),
        labels: wiringLabels(options.name, 'cluster-layer', {
          ...clusterLabels,
          [LABEL_LAYER]: layer.layer.name,
          [LABEL_LAYER_VERSION]: layer.layer.version,
        }),
        treeDir: layer.dir,
        destination: { ...destination },
        finalizer: true,
        wave: waves.get(layer.layer.name)!,
        manual: paused.has(layer.layer.name),
      }),
      `layer ${layer.layer.name} of Cluster ${cluster.namespace}/${cluster.name}`,
    );
  }
}
