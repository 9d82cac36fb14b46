// Flux wiring for the rendered tree: a source (GitRepository or OCIRepository), a root Kustomization
// that applies the wiring directory itself, one Kustomization per management release directory, and
// per workload cluster one Kustomization per addon stage, applied through CAPI's kubeconfig Secret.
//
// Layout (under `flux/`, every directory with a kustomization.yaml listing exactly its entries):
//   source.yaml                                   GitRepository | OCIRepository <name>
//   root.yaml                                     Kustomization <name>: applies flux/ (this directory)
//   management/<ns>/shared.yaml                   Kustomization <ns>-shared      (namespace: wiring namespace)
//   management/<ns>/<release>.yaml                Kustomization <ns>-<release>   (namespace: wiring namespace)
//   clusters/<ns>/<cluster>/<stage>.yaml          Kustomization <cluster>-<stage> (namespace: <ns>)
//   clusters/<ns>/<cluster>/layers/<layer>.yaml   Kustomization <cluster>-layer-<layer>  (see layerKustomization)
//   <unit dir>/helm-hooks/<pre|post>-w<weight>.yaml  Kustomization <unit's>-<pre|post>-hooks-w<weight> (flux-helm-hooks.ts)
// Bootstrap once with `kubectl apply -k <path>/flux`; from then on the root Kustomization keeps the
// wiring in step with the tree (new clusters, dropped releases).
//
// Needs Flux 2.6+ (OCIRepository source.toolkit.fluxcd.io/v1; healthCheckExprs came in 2.5), and
// kustomize-controller without --no-cross-namespace-refs: stage Kustomizations live in the cluster's
// namespace, because Flux reads kubeConfig.secretRef from the Kustomization's own namespace and CAPI
// writes `<cluster>-kubeconfig` into the Cluster's namespace, so they reach the source across
// namespaces. The kubeconfig is only ever referenced by name; nothing here carries a credential.
import type { KubeObject } from '../../src/api/types.js';
import type { ProviderRecord, UnitRecord } from '../../src/output/provenance.js';
import { CLUSTER_REQUESTS_DIR, sharedDir } from '../../src/output/tree-layout.js';
import { NODE_IMAGE_HEALTH } from './node-image-health.js';
import { fluxHookKustomizations, type KustomizationRef } from './flux-helm-hooks.js';
import { fluxProviderKustomizations } from './provider-wiring.js';
import { fluxDecryptionFor } from './sops-decryption.js';
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
  fluxReleaseKustomizationName,
  fluxSharedKustomizationName,
  fluxLayerKustomizationName,
  fluxStageKustomizationName,
  LABEL_CLUSTER,
  LABEL_LAYER,
  LABEL_LAYER_VERSION,
  LABEL_NAMESPACE,
  LABEL_RELEASE,
  LABEL_STAGE,
} from './wiring-names.js';

const FLUX_DIR = 'flux';
const FLUX_KUSTOMIZATION_API = 'kustomize.toolkit.fluxcd.io/v1';
const FLUX_SOURCE_API = 'source.toolkit.fluxcd.io/v1';
/** CAPI's kubeconfig Secret for a Cluster: `<cluster>-kubeconfig` in its namespace, kubeconfig under `value`. */
const CAPI_KUBECONFIG_KEY = 'value';

function capiKubeconfigSecretName(cluster: string): string {
  return `${cluster}-kubeconfig`;
}

const SOURCE_INTERVAL = '1m';
const INTERVAL = '10m';
// Until a workload cluster answers, stage Kustomizations fail; retry sooner than the interval.
const RETRY_INTERVAL = '2m';
const TIMEOUT = '5m';

/**
 * ClusterClass health for `wait: true`: kstatus alone calls a class Current as soon as its
 * generation is observed, even when its variables could not be reconciled, and Clusters using it
 * would then fail. CAPI v1beta1 reports that as VariablesReconciled, v1beta2 as VariablesReady.
 * One expression for both: kustomize-controller keys health checks by group and kind (a second
 * entry for the same kind is refused, "duplicate custom health check for GroupKind", and the whole
 * Kustomization fails terminally) and reads the object at the version the server prefers, which
 * is v1beta1 or v1beta2 depending on the installed CAPI.
 *
 * What real Flux and CAPI do decides the shape (test/real-flux-layers.test.ts):
 * - Flux applies `*Class` kinds in a stage of their own and waits for them (at most 60 s, then the
 *   reconcile fails and is retried) before it applies the rest of the directory, so a fresh class
 *   is waited for while its templates are not applied yet. CAPI's class controller then reconciles
 *   the variables (VariablesReady True, the condition's observedGeneration current) but fails on the
 *   missing templates, and writes `status.observedGeneration` only after a reconcile without error.
 *   Requiring it would wait forever; the condition's own observedGeneration says the variables are
 *   current (v1beta1 conditions have none: any VariablesReconciled is taken).
 * - Before CAPI writes anything the class has no `status`, and CEL fails on a missing top-level
 *   variable even behind `?.` (has() cannot test one, and the objects Flux's poller reads carry no
 *   managedFields, where the status writer would show): Flux reads the class as Unknown, which it
 *   keeps waiting on like InProgress, naming the missing `status` when the class stage times out.
 */
const CURRENT_CLASS_VARIABLES =
  "status.?conditions.orValue([]).filter(c, (c.type == 'VariablesReady' || c.type == 'VariablesReconciled') && c.?observedGeneration.orValue(metadata.generation) == metadata.generation)";
const CLUSTER_CLASS_HEALTH = [
  {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'ClusterClass',
    failed: `${CURRENT_CLASS_VARIABLES}.exists(c, c.status == 'False')`,
    current: `${CURRENT_CLASS_VARIABLES}.exists(c, c.status == 'True')`,
  },
];

function path(options: WiringOptions, treeDir: string): string {
  return `./${sourcePath(options.source, treeDir)}`;
}

function sourceObject(options: WiringOptions): KubeObject {
  const metadata = { name: options.name, namespace: options.namespace, labels: wiringLabels(options.name, 'source') };
  const secretRef = options.source.secretName ? { secretRef: { name: options.source.secretName } } : {};
  if (options.source.kind === 'git') {
    return {
      apiVersion: FLUX_SOURCE_API,
      kind: 'GitRepository',
      metadata,
      spec: {
        interval: SOURCE_INTERVAL,
        url: options.source.url,
        ref: { branch: options.source.branch },
        ...secretRef,
      },
    };
  }
  // A registry the render reached over plain HTTP is one Flux must reach the same way.
  const insecure = options.source.insecure ? { insecure: true } : {};
  return {
    apiVersion: FLUX_SOURCE_API,
    kind: 'OCIRepository',
    metadata,
    spec: {
      interval: SOURCE_INTERVAL,
      url: options.source.url,
      ref: { tag: options.source.tag },
      ...secretRef,
      ...insecure,
    },
  };
}

/** Flux wiring files (paths under `flux/`) for the rendered units. Pure; throws InputError on bad options. */
export function renderFluxWiring(
  units: UnitRecord[],
  options: WiringOptions,
  extras: WiringExtras = {},
): Map<string, string> {
  checkWiringOptions({ ...options, engine: 'flux' });
  const { releases, clusters } = groupUnits(units);
  const flux = new FluxWiring(units, options);
  flux.addSourceAndRoot();
  const shared = flux.addSharedKustomizations(releases);
  const providers = flux.addProviders(extras.providers ?? []);
  for (const release of releases) flux.addRelease(release, shared.get(release.namespace)!, providers);
  if (extras.clusterRequests) flux.addClusterRequests(releases);
  for (const cluster of clusters) flux.addLayers(cluster, flux.addStages(cluster));
  return flux.wiring.files('Flux Kustomization', () => true);
}

/** The Flux wiring as it is built, one step per kind of Kustomization. */
class FluxWiring {
  readonly wiring = new WiringObjects();
  private readonly localSource: { kind: string; name: string };
  private readonly unitsByDir: Map<string, UnitRecord>;

  constructor(
    private readonly units: UnitRecord[],
    private readonly options: WiringOptions,
  ) {
    this.localSource = { kind: options.source.kind === 'git' ? 'GitRepository' : 'OCIRepository', name: options.name };
    this.unitsByDir = new Map(units.map((unit) => [unit.dir, unit]));
  }

  /** The source, and the root Kustomization that applies the wiring directory itself. */
  addSourceAndRoot(): void {
    const { options } = this;
    this.wiring.claim(options.namespace, options.name, 'the root Kustomization');
    this.wiring.objects.set(`${FLUX_DIR}/source.yaml`, sourceObject(options));
    this.wiring.objects.set(`${FLUX_DIR}/root.yaml`, {
      apiVersion: FLUX_KUSTOMIZATION_API,
      kind: 'Kustomization',
      metadata: { name: options.name, namespace: options.namespace, labels: wiringLabels(options.name, 'root') },
      // No wait: the root only applies Kustomizations; each reports its own readiness.
      spec: {
        interval: INTERVAL,
        retryInterval: RETRY_INTERVAL,
        timeout: TIMEOUT,
        path: path(options, FLUX_DIR),
        prune: true,
        sourceRef: this.localSource,
      },
    });
  }

  /**
   * Objects several releases render live in management/<ns>/shared/ (every namespace with a release
   * has one, possibly empty). Its Kustomization never prunes and every release of the namespace
   * depends on it, always, so that an object moving between a release and shared/ in one revision
   * is never deleted (see docs/output.md, "Shared objects and moves between owners"):
   *  - into shared/: a release's garbage collection of the new revision waits for shared/ to apply
   *    it first (dependsOn on the same source also waits for the same revision), and then skips it,
   *    since kustomize-controller only deletes objects whose owner labels still name itself;
   *  - out of shared/ (back to the one release still rendering it): shared/ never deletes it, the
   *    release takes it over (its owner labels) whenever it applies.
   * The price: an object leaving the tree straight from shared/ (all its releases dropped at once)
   * is not pruned by Flux; the render names it so it can be deleted by hand.
   * Returns each namespace's shared Kustomization name.
   */
  addSharedKustomizations(releases: ReleaseUnit[]): Map<string, string> {
    const { options } = this;
    const sharedNames = new Map<string, string>();
    for (const namespace of [...new Set(releases.map((release) => release.namespace))]) {
      const name = fluxSharedKustomizationName(namespace);
      sharedNames.set(namespace, name);
      this.wiring.add(
        `${FLUX_DIR}/${sharedDir(namespace)}.yaml`,
        {
          apiVersion: FLUX_KUSTOMIZATION_API,
          kind: 'Kustomization',
          metadata: {
            name,
            namespace: options.namespace,
            labels: wiringLabels(options.name, 'shared', { [LABEL_NAMESPACE]: namespace }),
          },
          spec: {
            interval: INTERVAL,
            retryInterval: RETRY_INTERVAL,
            timeout: TIMEOUT,
            path: path(options, sharedDir(namespace)),
            prune: false,
            wait: true,
            sourceRef: this.localSource,
            healthCheckExprs: structuredClone(NODE_IMAGE_HEALTH),
          },
        },
        `shared objects of namespace ${namespace}`,
      );
    }
    return sharedNames;
  }

  /** Cluster API providers first (core, then the others); releases need their CRDs. Returns what releases depend on. */
  addProviders(providers: ProviderRecord[]): { name: string }[] {
    const providerWiring = fluxProviderKustomizations(providers, this.options, {
      interval: INTERVAL,
      retryInterval: RETRY_INTERVAL,
      timeout: TIMEOUT,
      sourceRef: this.localSource,
    });
    for (const [file, object] of providerWiring.objects) this.wiring.add(file, object, `provider ${file}`);
    return providerWiring.dependsOn;
  }

  /** A management release, after its namespace's shared objects and the providers. */
  addRelease(release: ReleaseUnit, sharedName: string, providers: { name: string }[]): void {
    const { options, units } = this;
    const name = fluxReleaseKustomizationName(release.namespace, release.release);
    this.wiring.claim(options.namespace, name, `release ${release.namespace}/${release.release}`);
    const releaseLabels = { [LABEL_NAMESPACE]: release.namespace, [LABEL_RELEASE]: release.release };
    const main: KubeObject = {
      apiVersion: FLUX_KUSTOMIZATION_API,
      kind: 'Kustomization',
      metadata: { name, namespace: options.namespace, labels: wiringLabels(options.name, 'release', releaseLabels) },
      // No targetNamespace: every object carries its namespace. Flux applies kinds ending in
      // "Class" before the rest, so the ClusterClass needs no ordering of its own.
      spec: {
        interval: INTERVAL,
        retryInterval: RETRY_INTERVAL,
        timeout: TIMEOUT,
        path: path(options, release.dir),
        prune: true,
        wait: true,
        sourceRef: this.localSource,
        // The shared node images (and the providers) are ready before this release's ClusterClass is applied.
        dependsOn: [{ name: sharedName }, ...providers],
        healthCheckExprs: [...structuredClone(CLUSTER_CLASS_HEALTH), ...structuredClone(NODE_IMAGE_HEALTH)],
        ...fluxDecryptionFor(units, release.dir, options.sopsSecret),
      },
    };
    const after = [
      { name: sharedName, namespace: options.namespace },
      ...providers.map((dependency) => ({ ...dependency, namespace: options.namespace })),
    ];
    this.withHooks(release.dir, main, after, releaseLabels);
    this.wiring.objects.set(`${FLUX_DIR}/${release.dir}.yaml`, main);
  }

  /**
   * ClusterProfiles and requested Clusters, after every ClusterClass. No wait (a Cluster takes
   * minutes); Orphan: removing this Kustomization never deletes workload clusters.
   */
  addClusterRequests(releases: ReleaseUnit[]): void {
    const { options } = this;
    const name = `${options.name}-cluster-requests`;
    this.wiring.add(
      `${FLUX_DIR}/${CLUSTER_REQUESTS_DIR}.yaml`,
      {
        apiVersion: FLUX_KUSTOMIZATION_API,
        kind: 'Kustomization',
        metadata: { name, namespace: options.namespace, labels: wiringLabels(options.name, 'cluster-requests') },
        spec: {
          interval: INTERVAL,
          retryInterval: RETRY_INTERVAL,
          timeout: TIMEOUT,
          path: path(options, CLUSTER_REQUESTS_DIR),
          prune: true,
          deletionPolicy: 'Orphan',
          sourceRef: this.localSource,
          ...(releases.length > 0
            ? {
                dependsOn: releases.map((release) => ({
                  name: fluxReleaseKustomizationName(release.namespace, release.release),
                })),
              }
            : {}),
        },
      },
      'the cluster requests',
    );
  }

  /**
   * A workload cluster's stages: a stage waits for every stage of the group before it, and for
   * nothing in any other cluster. Returns what the last group's install completes with.
   */
  addStages(cluster: ClusterUnits): KustomizationRef[] {
    const { options, units } = this;
    let previous: KustomizationRef[] = [];
    for (const group of cluster.groups) {
      const current: KustomizationRef[] = [];
      for (const stage of group) {
        const name = fluxStageKustomizationName(cluster.name, stage.stage);
        const what = `stage ${stage.stage} of Cluster ${cluster.namespace}/${cluster.name}`;
        this.wiring.claim(cluster.namespace, name, what);
        const stageLabels = {
          [LABEL_NAMESPACE]: cluster.namespace,
          [LABEL_CLUSTER]: cluster.name,
          [LABEL_STAGE]: stage.stage,
        };
        const main: KubeObject = {
          apiVersion: FLUX_KUSTOMIZATION_API,
          kind: 'Kustomization',
          metadata: {
            name,
            namespace: cluster.namespace,
            labels: wiringLabels(options.name, 'cluster-stage', stageLabels),
          },
          spec: {
            interval: INTERVAL,
            retryInterval: RETRY_INTERVAL,
            timeout: TIMEOUT,
            path: path(options, stage.dir),
            prune: true,
            wait: true,
            sourceRef: { ...this.localSource, namespace: options.namespace },
            kubeConfig: { secretRef: { name: capiKubeconfigSecretName(cluster.name), key: CAPI_KUBECONFIG_KEY } },
            ...(previous.length > 0 ? { dependsOn: previous } : {}),
            ...fluxDecryptionFor(units, stage.dir, options.sopsSecret),
          },
        };
        // The next group waits for this stage's install to be complete: its post-install hooks included.
        current.push(this.withHooks(stage.dir, main, previous, stageLabels));
        this.wiring.objects.set(`${FLUX_DIR}/${stage.dir}.yaml`, main);
      }
      previous = current;
    }
    return previous;
  }

  /** A workload cluster's layers: after the stack's last stage group (when it says cluster-stack) and the layers it names. */
  addLayers(cluster: ClusterUnits, lastStages: KustomizationRef[]): void {
    const { options } = this;
    for (const layer of cluster.layers) {
      const name = fluxLayerKustomizationName(cluster.name, layer.layer.name);
      const what = `layer ${layer.layer.name} of Cluster ${cluster.namespace}/${cluster.name}`;
      this.wiring.claim(cluster.namespace, name, what);
      const after = [
        ...(layer.layer.afterStack ? lastStages : []),
        ...layer.layer.dependsOn.map((dependency) => ({
          name: fluxLayerKustomizationName(cluster.name, dependency.layer),
          namespace: cluster.namespace,
        })),
      ];
      const main = layerKustomization(options, cluster, layer, name, after, {
        ...this.localSource,
        namespace: options.namespace,
      });
      this.withHooks(layer.dir, main, after, {
        [LABEL_NAMESPACE]: cluster.namespace,
        [LABEL_CLUSTER]: cluster.name,
        [LABEL_LAYER]: layer.layer.name,
      });
      this.wiring.objects.set(`${FLUX_DIR}/${layer.dir}.yaml`, main);
    }
  }

  /**
   * A unit's helm install hooks, each phase and weight its own Kustomization around the unit's
   * (flux-helm-hooks.ts). Returns what the unit's install completes with.
   */
  private withHooks(
    dir: string,
    main: KubeObject,
    after: KustomizationRef[],
    extraLabels: Record<string, string>,
  ): KustomizationRef {
    const { options } = this;
    const unit = this.unitsByDir.get(dir);
    const mainRef = { name: main.metadata.name, namespace: main.metadata.namespace! };
    if (!unit?.hooks?.length) return mainRef;
    const {
      path: _path,
      dependsOn: _dependsOn,
      healthCheckExprs: _health,
      ...shared
    } = main.spec as Record<string, unknown>;
    const hooks = fluxHookKustomizations(
      unit,
      { ...mainRef, labels: wiringLabels(options.name, 'helm-hooks', extraLabels), spec: shared },
      after,
      (treeDir) => path(options, treeDir),
    );
    for (const [file, object] of hooks.objects) this.wiring.add(file, object, `helm hooks ${file}`);
    if (hooks.before.length > 0) (main.spec as Record<string, unknown>).dependsOn = [...after, ...hooks.before];
    return hooks.done;
  }
}

/**
 * One addon layer on one workload cluster. Kraan's interval and timeout carry over; `hold` becomes
 * `suspend: true` (lifting it resumes; dependants wait through dependsOn, since a suspended
 * Kustomization never reports the new revision applied). The name is the same for every version
 * of the layer and the path is the layer's directory, so a version bump is an ordinary new revision
 * for one Kustomization: its garbage collection prunes what the new version dropped and leaves what
 * both keep. Removing the layer deletes the Kustomization (the root prunes it), and with `prune:
 * true` and the default deletion policy its finalizer deletes what it applied. Which version is
 * applied shows in the layer-version label; that dependants wait for the right version is the
 * render's to ensure (a dependant of another version is withheld, see resolve-layers.ts).
 */
function layerKustomization(
  options: WiringOptions,
  cluster: { namespace: string; name: string },
  unit: LayerUnit,
  name: string,
  after: { name: string; namespace: string }[],
  sourceRef: Record<string, string>,
): KubeObject {
  const { layer } = unit;
  return {
    apiVersion: FLUX_KUSTOMIZATION_API,
    kind: 'Kustomization',
    metadata: {
      name,
      namespace: cluster.namespace,
      labels: wiringLabels(options.name, 'cluster-layer', {
        [LABEL_NAMESPACE]: cluster.namespace,
        [LABEL_CLUSTER]: cluster.name,
        [LABEL_LAYER]: layer.name,
        [LABEL_LAYER_VERSION]: layer.version,
      }),
    },
    spec: {
      interval: layer.interval ?? INTERVAL,
      retryInterval: RETRY_INTERVAL,
      timeout: layer.timeout ?? layer.interval ?? TIMEOUT,
      path: path(options, unit.dir),
      prune: true,
      wait: true,
      sourceRef,
      kubeConfig: { secretRef: { name: capiKubeconfigSecretName(cluster.name), key: CAPI_KUBECONFIG_KEY } },
      ...(after.length > 0 ? { dependsOn: after } : {}),
      ...(layer.hold ? { suspend: true } : {}),
    },
  };
}
