import { describe, expect, it } from 'vitest';
import type { CapiProvider } from '../../src/api/provider-types.js';
import { InputError } from '../../src/core/problem.js';
import type { ProviderRecord } from '../../src/output/provenance.js';
import {
  guardProviderRemoval,
  guardProviderVersions,
  loadLockedProviders,
  providerGuardError,
} from '../../src/providers/guard-providers.js';
import type { PlannedProvider, ProviderPlan } from '../../src/providers/plan-providers.js';
import type { ProviderFetcher } from '../../src/providers/provider-fetcher.js';

const metadata =
  'releaseSeries:\n- {major: 1, minor: 8, contract: v1beta1}\n- {major: 1, minor: 9, contract: v1beta1}\n- {major: 2, minor: 0, contract: v1beta2}\n';
const fetcher: ProviderFetcher = {
  versions: async () => ['v1.8.0', 'v1.9.0'],
  fetch: async (_provider, version) => ({
    version,
    metadata,
    components: '',
    source: 'github:o/r',
    digest: `sha256:${version}`,
  }),
};

function planned(
  kind: string,
  name: string,
  version: string,
  contract: string,
  pinned = true,
  annotations?: Record<string, string>,
): PlannedProvider {
  const provider: CapiProvider = {
    apiVersion: 'operator.cluster.x-k8s.io/v1alpha2',
    kind,
    metadata: { name, namespace: 'ns', ...(annotations ? { annotations } : {}) },
    spec: pinned ? { version } : {},
  };
  return {
    provider,
    origin: 'p.yaml:1',
    dir: `management/providers/${kind.toLowerCase()}-${name}`,
    version,
    pinned,
    release: { version, metadata, components: '', source: 'github:o/r', digest: 'sha256:x' },
    contract,
    variables: new Map(),
    problems: [],
  };
}

function plan(...providers: PlannedProvider[]): ProviderPlan {
  return { providers, problems: [], fetcher, inputs: [] };
}

function record(of: PlannedProvider, version: string, kinds: string[] = []): ProviderRecord {
  return {
    dir: of.dir,
    kind: of.provider.kind,
    namespace: 'ns',
    name: of.provider.metadata.name,
    version,
    pinned: of.pinned,
    contract: 'v1beta1',
    source: 'github:o/r',
    digest: 'sha256:x',
    inputDigest: 'sha256:x',
    kinds,
    files: [],
  };
}

/** The guards as the pipeline applies them: the locks loaded from what is published, then decided. */
async function guard(providers: ProviderPlan, previous: ProviderRecord[], mode?: 'refuse' | 'withhold') {
  return guardProviderVersions(await loadLockedProviders(providers, previous), previous, mode);
}

describe('guardProviderVersions', () => {
  it('refuses a contract other than the core one (the CLI), or withholds only that provider (the controller)', async () => {
    const core = planned('CoreProvider', 'cluster-api', 'v1.8.0', 'v1beta1');
    const infra = planned('InfrastructureProvider', 'docker', 'v2.0.0', 'v1beta2');
    const refused = await guard(plan(core, infra), []);
    expect(providerGuardError(refused.refused)).toBeInstanceOf(InputError);
    expect(refused.refused).toHaveLength(1);
    const withheld = await guard(plan(core, infra), [], 'withhold');
    expect(withheld.refused).toEqual([]);
    expect(withheld.plan.providers[0]!.problems).toEqual([]);
    expect(withheld.plan.providers[1]!.problems[0]!.message).toContain(
      'implements Cluster API contract v1beta2, but CoreProvider ns/cluster-api v1.8.0 implements v1beta1',
    );
    // The plan given is not changed: the guards return a new one.
    expect(infra.problems).toEqual([]);
  });

  it('refuses a downgrade of a pinned version unless annotated', async () => {
    const infra = planned('InfrastructureProvider', 'docker', 'v1.8.0', 'v1beta1');
    expect(providerGuardError((await guard(plan(infra), [record(infra, 'v1.9.0')])).refused).message).toMatch(
      /v1\.8\.0 is lower than v1\.9\.0/,
    );
    const allowed = planned('InfrastructureProvider', 'docker', 'v1.8.0', 'v1beta1', true, {
      'clusterstack.x-k8s.io/allow-downgrade': 'true',
    });
    expect((await guard(plan(allowed), [record(allowed, 'v1.9.0')])).refused).toEqual([]);
  });

  it('keeps the version an unpinned provider was first rendered with, fetching it again, in a new plan', async () => {
    const core = planned('CoreProvider', 'cluster-api', 'v1.9.0', 'v1beta1', false);
    const guarded = await guard(plan(core), [record(core, 'v1.8.0')]);
    expect(guarded.refused).toEqual([]);
    expect(guarded.plan.providers[0]!.version).toBe('v1.8.0');
    expect(guarded.plan.providers[0]!.release?.digest).toBe('sha256:v1.8.0');
    expect(core.version).toBe('v1.9.0');
  });

  it('refuses (or withholds) a locked version that cannot be fetched', async () => {
    const core = planned('CoreProvider', 'cluster-api', 'v1.9.0', 'v1beta1', false);
    const failing: ProviderPlan = {
      ...plan(core),
      fetcher: { ...fetcher, fetch: async () => Promise.reject(new Error('registry down')) },
    };
    expect((await guard(failing, [record(core, 'v1.8.0')])).refused.map((problem) => problem.message).join()).toContain(
      'registry down',
    );
    const withheld = await guard(failing, [record(core, 'v1.8.0')], 'withhold');
    expect(withheld.plan.providers[0]!.problems.map((problem) => problem.message).join()).toContain('registry down');
  });
});

describe('guardProviderRemoval', () => {
  it('names what still uses a removed provider, and lets an unused one go', () => {
    const infra = planned('InfrastructureProvider', 'docker', 'v1.8.0', 'v1beta1');
    const previous = [record(infra, 'v1.8.0', ['infrastructure.cluster.x-k8s.io/DockerClusterTemplate'])];
    const tree = new Map([
      [
        'management/cluster-stacks/docker-ferrol-1-30-v1/dockerclustertemplate-x.yaml',
        'apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: DockerClusterTemplate\nmetadata:\n  name: x\n',
      ],
    ]);
    expect(() => guardProviderRemoval(previous, [], tree, [])).toThrow(
      /InfrastructureProvider ns\/docker: would be removed, but its kinds are still used by release cluster-stacks\/docker-ferrol-1-30-v1 \(DockerClusterTemplate\)/,
    );
    expect(() => guardProviderRemoval(previous, [], new Map(), [])).not.toThrow();
  });
});
