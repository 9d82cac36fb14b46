// A local release source holding one release of a stack for Cluster API v1beta2, shaped like the
// public docker/scs2 stack on SovereignCloudStack/cluster-stacks' feat/scs2-v1beta2 branch, built
// at test time from test/fixtures/charts/v1beta2-stack: a v1beta2 ClusterClass with v1beta2
// control-plane and bootstrap templates (v1beta1 Docker infrastructure), and one addon stage whose
// values template reads the Cluster's endpoint and network and its control plane object.
import { cp, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { packChart } from './helm-fixtures.js';
import { tempDir } from './cli.js';

const SOURCE = path.resolve(import.meta.dirname, '../fixtures/charts/v1beta2-stack');
export const V1BETA2_RELEASE = 'docker-scs2-1-33-v1';
export const V1BETA2_CLASS = 'docker-scs2-1-33-v1';
const V1BETA2_KUBERNETES = 'v1.33.7';

/** Writes the release into `dir` (a release source; default a new directory) and returns the directory. */
export async function buildV1beta2Releases(into?: string): Promise<string> {
  const dir = into ?? (await tempDir('csk-v1beta2-releases-'));
  const release = path.join(dir, V1BETA2_RELEASE);
  await mkdir(release, { recursive: true });
  await writeFile(
    path.join(release, 'metadata.yaml'),
    `apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\nversions:\n  clusterStack: v1\n  kubernetes: ${V1BETA2_KUBERNETES}\n  components:\n    clusterAddon: v1\n    nodeImage: v1\n`,
  );
  await cp(path.join(SOURCE, 'clusteraddon.yaml'), path.join(release, 'clusteraddon.yaml'));
  const work = await tempDir('csk-v1beta2-charts-');
  await cp(path.join(SOURCE, 'cluster-class'), path.join(work, 'docker-scs2-1-33-cluster-class'), { recursive: true });
  await packChart(
    path.join(work, 'docker-scs2-1-33-cluster-class'),
    path.join(release, 'docker-scs2-1-33-cluster-class-v1.tgz'),
  );
  // The multi-stage addon archive holds one directory per stage at its top.
  const { create } = await import('tar');
  await create(
    {
      gzip: true,
      file: path.join(release, 'docker-scs2-1-33-cluster-addon-v1.tgz'),
      cwd: path.join(SOURCE, 'cluster-addon'),
      portable: true,
    },
    ['cni'],
  );
  return dir;
}

/** A ClusterStack of the fixture stack in namespace `fleet`. */
export const V1BETA2_STACK = `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-scs2-1-33, namespace: fleet}
spec: {provider: docker, name: scs2, kubernetesVersion: "1.33", channel: stable, autoSubscribe: false, noProvider: true, versions: [v1]}
`;

/**
 * One Cluster, its KubeadmControlPlane and DockerCluster, as `kubectl get -o yaml` prints them in
 * `version` (v1beta1 or v1beta2 of cluster.x-k8s.io and controlplane.cluster.x-k8s.io): the same
 * objects, each version's shape.
 */
export function v1beta2TwinObjects(version: 'v1beta1' | 'v1beta2', name = 'alpha'): string {
  const v1beta2 = version === 'v1beta2';
  const topology = v1beta2 ? `    classRef: {name: ${V1BETA2_CLASS}}\n` : `    class: ${V1BETA2_CLASS}\n`;
  const controlPlaneRef = v1beta2
    ? `{apiGroup: controlplane.cluster.x-k8s.io, kind: KubeadmControlPlane, name: ${name}-cp}`
    : `{apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: KubeadmControlPlane, name: ${name}-cp, namespace: fleet}`;
  const infrastructureRef = v1beta2
    ? `{apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerCluster, name: ${name}-infra}`
    : `{apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerCluster, name: ${name}-infra, namespace: fleet}`;
  const status = v1beta2
    ? `status:\n  initialization: {infrastructureProvisioned: true, controlPlaneInitialized: true}\n  conditions:\n  - {type: Available, status: "True", reason: Available, lastTransitionTime: "2025-01-01T00:00:00Z"}\n`
    : `status:\n  infrastructureReady: true\n  controlPlaneReady: true\n  conditions:\n  - {type: Ready, status: "True", lastTransitionTime: "2025-01-01T00:00:00Z"}\n`;
  return `---
apiVersion: cluster.x-k8s.io/${version}
kind: Cluster
metadata: {name: ${name}, namespace: fleet}
spec:
  clusterNetwork:
    pods: {cidrBlocks: [192.168.0.0/16]}
    services: {cidrBlocks: [10.96.0.0/12]}
    serviceDomain: cluster.local
  controlPlaneEndpoint: {host: ${name}.example.test, port: 6443}
  controlPlaneRef: ${controlPlaneRef}
  infrastructureRef: ${infrastructureRef}
  topology:
${topology}    version: ${V1BETA2_KUBERNETES}
    controlPlane: {replicas: 3}
${status}---
apiVersion: controlplane.cluster.x-k8s.io/${version}
kind: KubeadmControlPlane
metadata: {name: ${name}-cp, namespace: fleet}
spec:
  replicas: 3
  version: ${V1BETA2_KUBERNETES}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: DockerCluster
metadata: {name: ${name}-infra, namespace: fleet}
spec: {}
`;
}
