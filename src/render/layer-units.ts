// The units of addon layers: one per layer and Cluster it is rendered for, in
// `clusters/<ns>/<cluster>/layers/<layer>/`, going through the same steps as a stack's addon
// stages (values template over the Cluster, helm or the manifests as written, secret policy,
// fidelity, reuse by digest). A layer the plan withholds for a Cluster is recorded with its reason.
import { layerRef } from '../core/layer-version.js';
import type { AddonsLayer } from '../api/addons-layer.js';
import type { KubeObject } from '../api/types.js';
import type { ClusterLayerDecision } from '../layers/resolve-layers.js';
import { type LayerRecord, OUTPUT_FORMAT, type WithheldEntry } from '../output/provenance.js';
import { layerDir } from '../output/tree-layout.js';
import { loadedRelease, type Plan } from '../plan/build-plan.js';
import { sha256Digest } from '../release/content-digest.js';
import { canonicalJson } from './canonical-json.js';
import { readableContext } from './template-reads.js';
import { clusterContext, type PendingUnit } from './render-units.js';
import { targetApiVersions } from '../core/kube-api-versions.js';

/** Where a layer's namespaced objects without a namespace go, and a chart's `--namespace`. */
const LAYER_DEFAULT_NAMESPACE = 'default';

/** Layer units to render, and the layers withheld before rendering (gate, dependencies). */
/** `secrets` is the secret policy's part of the input digest (with --secrets encrypt, the recipients too). */
export function layerUnits(plan: Plan, secrets: unknown): { units: PendingUnit[]; withheld: WithheldEntry[] } {
  const units: PendingUnit[] = [];
  const withheld: WithheldEntry[] = [];
  if (!plan.layers) return { units, withheld };
  const others = plan.inputs.others.map((sourced) => sourced.object);
  const byName = new Map(plan.layers.layers.map((layer) => [layer.metadata.name, layer]));
  for (const cluster of plan.layers.resolution.clusters) {
    const resolved = plan.resolution.clusters.find(
      (c) => c.namespace === cluster.namespace && c.name === cluster.name,
    )!;
    for (const decision of cluster.layers) {
      const entry = {
        kind: 'layer' as const,
        namespace: cluster.namespace,
        name: cluster.name,
        layer: decision.layer,
        previousKept: false,
      };
      if (decision.withheld) {
        withheld.push({ ...entry, reason: decision.withheld.reason });
        continue;
      }
      const layer = byName.get(decision.layer)!;
      const source = plan.layers.sources.get(decision.layer);
      const content = loadedRelease(plan, resolved.stack?.namespace ?? resolved.namespace, resolved.release)?.content;
      // helm needs a Kubernetes version: the Cluster's own, else its release's.
      const kubeVersion = resolved.cluster.spec?.topology?.version ?? content?.metadata.kubernetesVersion;
      if (!source || typeof kubeVersion !== 'string') {
        withheld.push({
          ...entry,
          reason: !source
            ? `${layerRef(decision.layer, decision.version)}: ${plan.layers.sourceFailures.get(decision.layer) ?? 'its source could not be read'}`
            : 'the Cluster has no spec.topology.version and no release to take a Kubernetes version from',
        });
        continue;
      }
      // The layer renders against what the Cluster serves: its version, and the CRDs its stack's release ships.
      const apiVersions = targetApiVersions(kubeVersion, content?.crdApiVersions ?? []);
      units.push(
        layerUnit(
          layer,
          decision,
          resolved.cluster,
          resolved.release ?? '',
          source,
          kubeVersion,
          apiVersions,
          others,
          secrets,
        ),
      );
    }
  }
  return { units, withheld };
}

function layerRecordOf(layer: AddonsLayer, decision: ClusterLayerDecision): LayerRecord {
  const record: LayerRecord = {
    name: decision.layer,
    version: decision.version,
    hold: decision.hold,
    dependsOn: decision.dependsOn,
    afterStack: decision.afterStack,
    depth: decision.depth,
  };
  if (layer.spec.interval) record.interval = layer.spec.interval;
  if (layer.spec.timeout) record.timeout = layer.spec.timeout;
  return record;
}

function layerUnit(
  layer: AddonsLayer,
  decision: ClusterLayerDecision,
  cluster: KubeObject,
  release: string,
  source: NonNullable<Plan['layers']>['sources'] extends Map<string, infer S> ? S : never,
  kubeVersion: string,
  apiVersions: string[],
  others: KubeObject[],
  secrets: unknown,
): PendingUnit {
  const namespace = cluster.metadata.namespace ?? 'default';
  const targetNamespace = layer.spec.namespace ?? LAYER_DEFAULT_NAMESPACE;
  const isChart = source.kind === 'chart';
  const template = isChart ? (layer.spec.valuesTemplate ?? '') : '';
  const context =
    isChart && template.trim() !== ''
      ? clusterContext(cluster as Parameters<typeof clusterContext>[0], others)
      : undefined;
  const digest = isChart ? source.chart.digest : source.digest;
  // Hold and dependencies change only the wiring, never the layer's objects: not in the digest.
  const inputDigest = sha256Digest(
    canonicalJson({
      format: OUTPUT_FORMAT,
      layer: decision.layer,
      source: digest,
      template: template || null,
      context: context ? readableContext(template, context) : null,
      values: (isChart ? layer.spec.values : undefined) ?? null,
      kubeVersion,
      apiVersions,
      namespace: targetNamespace,
      secrets,
    }),
  );
  const unit: PendingUnit = {
    record: {
      dir: layerDir(namespace, cluster.metadata.name, decision.layer),
      kind: 'cluster-layer',
      namespace,
      name: cluster.metadata.name,
      release,
      layer: layerRecordOf(layer, decision),
      inputDigest,
    },
    chart: isChart ? source.chart : { dir: '', digest: source.digest, origin: source.origin },
    releaseName: decision.layer,
    renderNamespace: targetNamespace,
    defaultNamespace: targetNamespace,
    kubeVersion,
    apiVersions,
    includeCrds: true,
    annotated: false,
    values: [],
  };
  if (source.kind === 'manifests') {
    // Like helm's output: each file's objects under a `# Source:` line naming it (for messages).
    unit.manifests = source.documents
      .map((document) => `---\n# Source: ${document.file}\n${document.text.replace(/\n?$/, '\n')}`)
      .join('');
    return unit;
  }
  if (layer.spec.values) unit.extraValues = layer.spec.values;
  if (context) unit.template = { text: template, origin: `${source.chart.origin} spec.valuesTemplate`, context };
  return unit;
}
