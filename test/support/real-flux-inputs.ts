// Inputs for test/real-flux-layers.test.ts: one ClusterStack (the quick start's releases), one
// Cluster (bravo), addon layers (plain manifests and a chart), and two Cluster API providers whose
// components come from ConfigMaps in the inputs (the operator's `fetchConfig.selector`), with CRDs
// of a test group so they never collide with the real Cluster API CRDs the server has installed.

/** The stack in `namespace`, keeping exactly `versions` (noProvider: no provider objects needed). */
export function stackInput(namespace: string, versions: string[]): string {
  return `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: ${namespace}}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", channel: stable, autoSubscribe: false, noProvider: true, versions: [${versions.join(', ')}]}
`;
}

/** The quick start's bravo (release v2: stages cni and metrics-server) in `namespace`. */
export function clusterInput(namespace: string, name: string): string {
  return `apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: ${name}, namespace: ${namespace}, labels: {env: test}}
spec:
  clusterNetwork:
    pods: {cidrBlocks: [192.168.0.0/16]}
    services: {cidrBlocks: [10.128.0.0/12]}
    serviceDomain: cluster.local
  controlPlaneEndpoint: {host: 172.18.0.12, port: 6443}
  topology: {class: docker-ferrol-1-30-v2, version: v1.30.4}
`;
}

/** An AddonsLayer of `./addons/<name>`, independent of the stack's stages unless `dependsOn` says so. */
export function layerInput(
  name: string,
  version: string,
  extra: { hold?: boolean; dependsOn?: string[] } = {},
): string {
  return `---
apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata: {name: ${name}}
spec:
  version: ${version}
  hold: ${extra.hold ?? false}
  source: {path: ./addons/${name}}
  prereqs: {dependsOn: [${(extra.dependsOn ?? []).join(', ')}]}
  clusterSelector: {matchLabels: {env: test}}
  namespace: kube-system
`;
}

/** A ConfigMap manifest in kube-system. */
export function configMapManifest(name: string, value: string): string {
  return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: kube-system\ndata:\n  value: "${value}"\n`;
}

/** A chart whose DaemonSet mounts a Secret with `defaultMode: 0400`: octal, r-------- (256), never decimal 400. */
export const AGENT_CHART: Record<string, string> = {
  'Chart.yaml': 'apiVersion: v2\nname: agent\nversion: 1.0.0\n',
  'templates/daemonset.yaml': `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
        - name: agent
          image: registry.example.test/agent:1.0.0
          volumeMounts:
            - {name: keys, mountPath: /keys}
      volumes:
        - name: keys
          secret:
            secretName: agent-keys
            defaultMode: 0400
`,
};

const CONTRACT_METADATA = `apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Metadata
releaseSeries:
- {major: 1, minor: 0, contract: v1beta1}
- {major: 1, minor: 1, contract: v1beta1}
`;

/** A CRD `<plural>.<group>` for kind `kind`, as provider components carry them. */
function crd(group: string, kind: string, plural: string): string {
  return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${plural}.${group}
spec:
  group: ${group}
  names: {kind: ${kind}, listKind: ${kind}List, plural: ${plural}, singular: ${kind.toLowerCase()}}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`;
}

export const WIDGET_GROUP = 'infrastructure.widget.test';

/** Provider components (clusterctl's format) for `type` at `version`: a Namespace, CRDs, a ConfigMap naming the version. */
function components(namespace: string, crds: string[], version: string): string {
  return [
    `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${namespace}\n`,
    ...crds,
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: provider-version\n  namespace: ${namespace}\ndata:\n  version: ${version}\n`,
  ].join('---\n');
}

/** The ConfigMap `fetchConfig.selector` finds for one provider version (keys `metadata` and `components`). */
function providerConfigMap(namespace: string, provider: string, version: string, componentsText: string): string {
  const indent = (text: string): string => text.replace(/^(?=.)/gm, '    ');
  return `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${provider}-${version}
  namespace: ${namespace}
  labels: {provider.cluster.x-k8s.io/name: ${provider}, provider.cluster.x-k8s.io/version: ${version}}
data:
  metadata: |
${indent(CONTRACT_METADATA)}
  components: |
${indent(componentsText)}
`;
}

/**
 * The core provider (v1.0.0) and the widget infrastructure provider at `widgetVersion`, or none of
 * the latter when undefined. Widget v1.0.0 has WidgetCluster and WidgetMachine; v1.1.0 dropped
 * WidgetMachine (a provider that stopped shipping a CRD).
 */
export function providerInputs(widgetVersion: 'v1.0.0' | 'v1.1.0' | undefined): string {
  const core = `---
apiVersion: operator.cluster.x-k8s.io/v1alpha2
kind: CoreProvider
metadata: {name: cluster-api, namespace: capi-system}
spec:
  version: v1.0.0
  fetchConfig: {selector: {matchLabels: {provider.cluster.x-k8s.io/name: cluster-api}}}
${providerConfigMap('capi-system', 'cluster-api', 'v1.0.0', components('capi-system', [crd('core.widget.test', 'CoreWidget', 'corewidgets')], 'v1.0.0'))}`;
  if (!widgetVersion) return core;
  const crds = [
    crd(WIDGET_GROUP, 'WidgetCluster', 'widgetclusters'),
    ...(widgetVersion === 'v1.0.0' ? [crd(WIDGET_GROUP, 'WidgetMachine', 'widgetmachines')] : []),
  ];
  return `${core}---
apiVersion: operator.cluster.x-k8s.io/v1alpha2
kind: InfrastructureProvider
metadata: {name: widget, namespace: widget-system}
spec:
  version: ${widgetVersion}
  fetchConfig: {selector: {matchLabels: {provider.cluster.x-k8s.io/name: widget}}}
${providerConfigMap('widget-system', 'widget', widgetVersion, components('widget-system', crds, widgetVersion))}`;
}
