// Small builders for the objects tests need: aClusterStack().withVersions('v1').build().
import {
  API_VERSION,
  type CapiCluster,
  type ClusterStack,
  type ClusterStackSpec,
  type KubeObject,
} from '../../src/api/types.js';
import type { AvailableRelease } from '../../src/release/resolve-releases.js';
import { parseReleaseTag } from '../../src/core/release-tag.js';

class ClusterStackBuilder {
  private readonly stack: ClusterStack = {
    apiVersion: API_VERSION,
    kind: 'ClusterStack',
    metadata: { name: 'docker-ferrol-1-30', namespace: 'cluster-stacks' },
    spec: {
      provider: 'docker',
      name: 'ferrol',
      kubernetesVersion: '1.30',
      channel: 'stable',
      autoSubscribe: true,
      noProvider: true,
      versions: [],
    },
  };

  named(name: string, namespace = 'cluster-stacks'): this {
    this.stack.metadata = { ...this.stack.metadata, name, namespace };
    return this;
  }

  withSpec(spec: Partial<ClusterStackSpec>): this {
    this.stack.spec = { ...this.stack.spec, ...spec };
    return this;
  }

  withVersions(...versions: string[]): this {
    return this.withSpec({ versions });
  }

  withChannel(channel: string): this {
    return this.withSpec({ channel });
  }

  withoutAutoSubscribe(): this {
    return this.withSpec({ autoSubscribe: false });
  }

  withProvider(kind = 'DockerClusterStackReleaseTemplate'): this {
    return this.withSpec({
      noProvider: false,
      providerRef: { apiVersion: 'infrastructure.clusterstack.x-k8s.io/v1alpha1', kind, name: 'docker-template' },
    });
  }

  build(): ClusterStack {
    return structuredClone(this.stack);
  }
}

export function aClusterStack(): ClusterStackBuilder {
  return new ClusterStackBuilder();
}

/**
 * The Kubernetes version (metadata.yaml, with the patch) of the example and fixture release a class
 * names: the ferrol releases v0 and v1 carry v1.30.2, the rest v1.30.4. A Cluster's
 * spec.topology.version must be exactly that (the cluster-stack-operator's webhook), so test
 * Clusters take it from here.
 */
export function kubernetesVersionOf(className: string): string {
  return /^docker-ferrol-1-30-v[01]([-.]|$)/.test(className) ? 'v1.30.2' : 'v1.30.4';
}

export function aCluster(
  name: string,
  className: string | undefined,
  extra: Partial<NonNullable<CapiCluster['spec']>> = {},
  namespace = 'cluster-stacks',
): CapiCluster {
  const spec: NonNullable<CapiCluster['spec']> = {
    controlPlaneEndpoint: { host: `${name}.example.test`, port: 6443 },
    clusterNetwork: { pods: { cidrBlocks: ['192.168.0.0/16'] } },
    ...extra,
  };
  if (className !== undefined) spec.topology = { class: className, version: kubernetesVersionOf(className) };
  return { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', metadata: { name, namespace }, spec };
}

/** The same Cluster as aCluster makes, as Cluster API v1beta2 serves it: `topology.classRef`, references by apiGroup. */
export function aV1beta2Cluster(
  name: string,
  className: string,
  classNamespace?: string,
  namespace = 'cluster-stacks',
): CapiCluster {
  const cluster = aCluster(name, className, {}, namespace);
  cluster.apiVersion = 'cluster.x-k8s.io/v1beta2';
  cluster.spec!.topology = {
    classRef: { name: className, ...(classNamespace ? { namespace: classNamespace } : {}) },
    version: kubernetesVersionOf(className),
  };
  return cluster;
}

export function releases(...tags: string[]): AvailableRelease[] {
  return tags.map((tag) => ({ tag, parsed: parseReleaseTag(tag) }));
}

export function aProviderRelease(tag: string, ready: boolean, namespace = 'cluster-stacks'): KubeObject {
  return {
    apiVersion: 'infrastructure.clusterstack.x-k8s.io/v1alpha1',
    kind: 'DockerClusterStackRelease',
    metadata: { name: tag, namespace },
    status: { ready },
  };
}
