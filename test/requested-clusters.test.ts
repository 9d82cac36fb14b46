// The Cluster written for ClusterRequests is in the Cluster API version of its stack's ClusterClass.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { requestedClusterObject } from '../src/cluster-requests/requested-clusters.js';
import type { ScheduledCluster } from '../src/cluster-requests/schedule-requests.js';
import { clusterClassApiVersion, clusterClassApiVersionIn } from '../src/release/cluster-class-api-version.js';
import { checkObject } from './support/engine-schemas/schema-facts.js';
import { CLUSTER_API_SCHEMAS } from './support/engine-schemas/cluster-request-schemas.js';
import { tempDir } from './support/cli.js';

function scheduled(clusterApiVersion: string | undefined, stackNamespace = 'cluster-stacks'): ScheduledCluster {
  return {
    namespace: 'workload-clusters',
    name: 'workload-abcde',
    purpose: 'workload',
    profile: 'cluster-stacks.docker.ferrol-1-30',
    tenancy: 'Shared',
    deleteWithoutRequests: true,
    class: 'docker-ferrol-1-30-v3',
    version: 'v1.30.4',
    requests: ['team-a/r1'],
    release: {
      release: 'docker-ferrol-1-30-v3',
      className: 'docker-ferrol-1-30-v3',
      kubernetesVersion: '1.30.4',
      deprecated: false,
      ...(clusterApiVersion ? { clusterApiVersion } : {}),
    },
    stackNamespace,
    template: {
      tenancyCount: 2,
      template: {
        metadata: { namespace: 'workload-clusters', labels: { tier: 'shared' }, annotations: {} },
        spec: { profile: 'cluster-stacks.docker.ferrol-1-30', tenancy: 'Shared' },
      },
      clusterSpec: { topology: { variables: [{ name: 'region', value: 'eu' }] } },
    },
  };
}

describe('requestedClusterObject', () => {
  it('writes a v1beta1 Cluster with topology.class for a v1beta1 stack', () => {
    const object = requestedClusterObject(scheduled('cluster.x-k8s.io/v1beta1'));
    expect(object.apiVersion).toBe('cluster.x-k8s.io/v1beta1');
    expect(object.spec?.topology).toEqual({
      class: 'docker-ferrol-1-30-v3',
      classNamespace: 'cluster-stacks',
      version: 'v1.30.4',
      variables: [{ name: 'region', value: 'eu' }],
    });
    expect(checkObject(object, CLUSTER_API_SCHEMAS, 'v1beta1')).toEqual([]);
  });

  it('writes v1beta1 when the stack’s class version is not known', () => {
    expect(requestedClusterObject(scheduled(undefined)).apiVersion).toBe('cluster.x-k8s.io/v1beta1');
  });

  it('writes a v1beta2 Cluster with topology.classRef for a v1beta2 stack', () => {
    const object = requestedClusterObject(scheduled('cluster.x-k8s.io/v1beta2'));
    expect(object.apiVersion).toBe('cluster.x-k8s.io/v1beta2');
    expect(object.spec?.topology).toEqual({
      classRef: { name: 'docker-ferrol-1-30-v3', namespace: 'cluster-stacks' },
      version: 'v1.30.4',
      variables: [{ name: 'region', value: 'eu' }],
    });
    expect(checkObject(object, CLUSTER_API_SCHEMAS, 'v1beta2')).toEqual([]);
  });

  it('leaves classRef.namespace out when the stack lives beside the Cluster', () => {
    const object = requestedClusterObject(scheduled('cluster.x-k8s.io/v1beta2', 'workload-clusters'));
    expect(object.spec?.topology?.classRef).toEqual({ name: 'docker-ferrol-1-30-v3' });
  });
});

describe('clusterClassApiVersion', () => {
  it('reads the ClusterClass document’s apiVersion among other documents', () => {
    const text = `apiVersion: controlplane.cluster.x-k8s.io/v1beta2\nkind: KubeadmControlPlaneTemplate\n---\n# the class\napiVersion: cluster.x-k8s.io/v1beta2\nkind: ClusterClass\nmetadata:\n  name: {{ .Release.Name }}\n`;
    expect(clusterClassApiVersionIn(text)).toBe('cluster.x-k8s.io/v1beta2');
    expect(clusterClassApiVersionIn('apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\n')).toBeUndefined();
  });

  it('finds the class in a chart’s templates, and falls back to v1beta1 for a templated apiVersion', async () => {
    const chart = await tempDir('csk-class-version-');
    await mkdir(path.join(chart, 'templates'), { recursive: true });
    await writeFile(
      path.join(chart, 'templates', 'a-templates.yaml'),
      'apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: DockerClusterTemplate\n',
    );
    await writeFile(
      path.join(chart, 'templates', 'cluster-class.yaml'),
      'apiVersion: "cluster.x-k8s.io/v1beta2"\nkind: ClusterClass\n',
    );
    expect(await clusterClassApiVersion(chart)).toBe('cluster.x-k8s.io/v1beta2');
    await writeFile(
      path.join(chart, 'templates', 'cluster-class.yaml'),
      'apiVersion: {{ .Values.capiVersion }}\nkind: ClusterClass\n',
    );
    expect(await clusterClassApiVersion(chart)).toBe('cluster.x-k8s.io/v1beta1');
    expect(await clusterClassApiVersion(path.join(chart, 'missing'))).toBe('cluster.x-k8s.io/v1beta1');
  });
});
