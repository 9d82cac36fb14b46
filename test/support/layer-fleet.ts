// The one-cluster fleet the addon layer tests render through the CLI: the quick start's stack on
// release v1 in namespace `fleet`, and its Cluster `one` (output under clusters/fleet/one).

/** The quick start's ClusterStack on release v1 only, in namespace `fleet`. */
export const FLEET_STACK = `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: fleet}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", noProvider: true, autoSubscribe: false, versions: [v1]}
`;

/** Cluster `fleet/one` on that release, with every field its addon values read. */
export const FLEET_CLUSTER = `apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: one, namespace: fleet}
spec:
  clusterNetwork: {pods: {cidrBlocks: [10.1.0.0/16]}}
  controlPlaneEndpoint: {host: one.example.test, port: 6443}
  topology: {class: docker-ferrol-1-30-v1, version: v1.30.2}
`;
