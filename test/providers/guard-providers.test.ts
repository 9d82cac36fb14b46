import { describe, expect, it } from 'vitest';
import type { CapiProvider } from '../../src/api/provider-types.js';
import { InputError } from '../../src/core/problem.js';
import type { ProviderRecord } from '../../src/output/provenance.js';
import { guardProviderRemoval, guardProviderVersions } from '../../src/providers/guard-providers.js';
import type { PlannedProvider, ProviderPlan } from '../../src/providers/plan-providers.js';
import type { ProviderFetcher } from '../../src/providers/provider-fetcher.js';

const metadata = 'releaseSeries:\n- {major: 1, minor: 8, contract: v1beta1}\n- {major: 1, minor: 9, contract: v1beta1}\n- {major: 2, minor: 0, contract: v1beta2}\n';
const fetcher: ProviderFetcher = {
  versions: async () => ['v1.8.0', 'v1.9.0'],
  fetch: async (_provider, version) => ({ version, metadata, components: '', source: 'github:o/r', digest: `sha256:${version}` }),
};

function planned(kind: string, name: string, version: string, contract: string, pinned = true, annotations?: Record<string, string>): PlannedProvider {
  const provider: CapiProvider = { apiVersion: 'operator.cluster.x-k8s.io/v1alpha2', kind, metadata: { name, namespace: 'ns', ...(annotations ? { annotations } : {}) }, spec: pinned ? { version } : {} };
  return { provider, origin: 'p.yaml:1', dir: `management/providers/${kind.toLowerCase()}-${name}`, version, pinned, release: { version, metadata, components: '', source: 'github:o/r', digest: 'sha256:x' }, contract, variables: new Map(), problems: [] };
}

function plan(...providers: PlannedProvider[]): ProviderPlan {
  return { providers, problems: [], fetcher, inputs: [] };
}

function record(of: PlannedProvider, version: string, kinds: string[] = []): ProviderRecord {
  return { dir: of.dir, kind: of.provider.kind, namespace: 'ns', name: of.provider.metadata.name, version, pinned: of.pinned, contract: 'v1beta1', source: 'github:o/r', digest: 'sha256:x', inputDigest: 'sha256:x', kinds, files: [] };
}

describe('guardProviderVersions', () => {
  it('refuses a contract other than the core one (the CLI), or withholds only that provider (the controller)', async () => {
    const core = planned('CoreProvider', 'cluster-api', 'v1.8.0', 'v1beta1');
    const infra = planned('InfrastructureProvider', 'docker', 'v2.0.0', 'v1beta2');
    await expect(guardProviderVersions(plan(core, infra), [])).rejects.toThrow(InputError);
    await guardProviderVersions(plan(core, infra), [], 'withhold');
    expect(core.problems).toEqual([]);
    expect(infra.problems[0]!.message).toContain('implements Cluster API contract v1beta2, but CoreProvider ns/cluster-api v1.8.0 implements v1beta1');
  });

  it('refuses a downgrade of a pinned version unless annotated', async () => {
    const infra = planned('InfrastructureProvider', 'docker', 'v1.8.0', 'v1beta1');
    await expect(guardProviderVersions(plan(infra), [record(infra, 'v1.9.0')])).rejects.toThrow(/v1\.8\.0 is lower than v1\.9\.0/);
    const allowed = planned('InfrastructureProvider', 'docker', 'v1.8.0', 'v1beta1', true, { 'clusterstack.x-k8s.io/allow-downgrade': 'true' });
    await expect(guardProviderVersions(plan(allowed), [record(allowed, 'v1.9.0')])).resolves.toBeUndefined();
  });

  it('keeps the version an unpinned provider was first rendered with, fetching it again', async () => {
    const core = planned('CoreProvider', 'cluster-api', 'v1.9.0', 'v1beta1', false);
    await guardProviderVersions(plan(core), [record(core, 'v1.8.0')]);
    expect(core.version).toBe('v1.8.0');
    expect(core.release?.digest).toBe('sha256:v1.8.0');
  });
});

describe('guardProviderRemoval', () => {
  it('names what still uses a removed provider, and lets an unused one go', () => {
    const infra = planned('InfrastructureProvider', 'docker', 'v1.8.0', 'v1beta1');
    const previous = [record(infra, 'v1.8.0', ['infrastructure.cluster.x-k8s.io/DockerClusterTemplate'])];
    const tree = new Map([['management/cluster-stacks/docker-ferrol-1-30-v1/dockerclustertemplate-x.yaml', 'apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: DockerClusterTemplate\nmetadata:\n  name: x\n']]);
    expect(() => guardProviderRemoval(previous, [], tree, [])).toThrow(/InfrastructureProvider ns\/docker: would be removed, but its kinds are still used by release cluster-stacks\/docker-ferrol-1-30-v1 \(DockerClusterTemplate\)/);
    expect(() => guardProviderRemoval(previous, [], new Map(), [])).not.toThrow();
  });
});
