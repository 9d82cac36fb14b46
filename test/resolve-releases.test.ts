import { describe, expect, it } from 'vitest';
import { resolveReleases } from '../src/core/resolve-releases.js';
import { aCluster, aClusterStack, aProviderRelease, releases } from './support/builders.js';

const STABLE = releases('docker-ferrol-1-30-v1', 'docker-ferrol-1-30-v2', 'docker-ferrol-1-30-v3');

function kept(resolution: ReturnType<typeof resolveReleases>, index = 0): Record<string, string[]> {
  const stack = resolution.clusterStacks[index]!;
  return Object.fromEntries(stack.releases.filter((r) => r.kept).map((r) => [r.name, r.reasons]));
}

describe('resolveReleases', () => {
  it('keeps the newest release with autoSubscribe and drops the rest with a reason', () => {
    const resolution = resolveReleases({ stacks: [{ stack: aClusterStack().build(), releases: STABLE }], clusters: [] });
    expect(kept(resolution)).toEqual({ 'docker-ferrol-1-30-v3': ['newest release (autoSubscribe)', 'newest ready release'] });
    const dropped = resolution.clusterStacks[0]!.releases.find((r) => r.name === 'docker-ferrol-1-30-v1')!;
    expect(dropped.kept).toBe(false);
    expect(dropped.reasons[0]).toMatch(/no Cluster uses it/);
    expect(resolution.clusterStacks[0]!.latestRelease).toBe('docker-ferrol-1-30-v3');
  });

  it('keeps every version in spec.versions', () => {
    const stack = aClusterStack().withoutAutoSubscribe().withVersions('v1', 'v2').build();
    const resolution = resolveReleases({ stacks: [{ stack, releases: STABLE }], clusters: [] });
    expect(Object.keys(kept(resolution))).toEqual(['docker-ferrol-1-30-v1', 'docker-ferrol-1-30-v2']);
    expect(resolution.clusterStacks[0]!.usableVersions).toBe('v1, v2');
  });

  it('keeps a release a Cluster still uses', () => {
    const stack = aClusterStack().build();
    const resolution = resolveReleases({ stacks: [{ stack, releases: STABLE }], clusters: [aCluster('alpha', 'docker-ferrol-1-30-v1')] });
    expect(kept(resolution)['docker-ferrol-1-30-v1']).toEqual(['used by Cluster cluster-stacks/alpha']);
    expect(resolution.clusters[0]).toMatchObject({ release: 'docker-ferrol-1-30-v1', stack: { name: 'docker-ferrol-1-30' }, problems: [] });
  });

  it('allows version jumps', () => {
    const stack = aClusterStack().withVersions('v1', 'v3').withoutAutoSubscribe().build();
    const resolution = resolveReleases({ stacks: [{ stack, releases: STABLE }], clusters: [] });
    expect(Object.keys(kept(resolution))).toEqual(['docker-ferrol-1-30-v1', 'docker-ferrol-1-30-v3']);
  });

  it('keeps the newest ready release when a newer one is not ready (provider mode)', () => {
    const stack = aClusterStack().withProvider().build();
    const resolution = resolveReleases({
      stacks: [{ stack, releases: STABLE }],
      clusters: [],
      providerReleases: [aProviderRelease('docker-ferrol-1-30-v2', true), aProviderRelease('docker-ferrol-1-30-v3', false)],
    });
    expect(kept(resolution)).toEqual({
      'docker-ferrol-1-30-v2': ['newest ready release'],
      'docker-ferrol-1-30-v3': ['newest release (autoSubscribe)'],
    });
    const v3 = resolution.clusterStacks[0]!.releases.find((r) => r.name === 'docker-ferrol-1-30-v3')!;
    expect(v3.ready).toBe(false);
    expect(v3.readyMessage).toMatch(/DockerClusterStackRelease cluster-stacks\/docker-ferrol-1-30-v3 to report status.ready: true/);
    expect(resolution.clusterStacks[0]!.latestRelease).toBe('docker-ferrol-1-30-v2');
    expect(resolution.clusterStacks[0]!.summary).toEqual([
      { name: 'docker-ferrol-1-30-v2', ready: true, phase: 'done' },
      { name: 'docker-ferrol-1-30-v3', ready: false, phase: 'provider-specific work', message: v3.readyMessage },
    ]);
  });

  it('orders pre-release patches numerically and never mixes channels', () => {
    const stack = aClusterStack().withChannel('alpha').build();
    const available = releases('docker-ferrol-1-30-v1-alpha-9', 'docker-ferrol-1-30-v1-alpha-10', 'docker-ferrol-1-30-v3', 'docker-ferrol-1-30-v1-beta-50');
    const resolution = resolveReleases({ stacks: [{ stack, releases: available }], clusters: [] });
    expect(resolution.clusterStacks[0]!.releases.map((r) => r.name)).toEqual(['docker-ferrol-1-30-v1-alpha-9', 'docker-ferrol-1-30-v1-alpha-10']);
    expect(Object.keys(kept(resolution))).toEqual(['docker-ferrol-1-30-v1-alpha-10']);
  });

  it('matches hash builds to the custom channel and orders them by publish time, saying so', () => {
    const stack = aClusterStack().withChannel('custom').build();
    const available = [
      { ...releases('docker-ferrol-1-30-v0-sha-zzz')[0]!, publishedAt: '2026-01-01T00:00:00Z' },
      { ...releases('docker-ferrol-1-30-v0-sha-aaa')[0]!, publishedAt: '2026-02-01T00:00:00Z' },
    ];
    const resolution = resolveReleases({ stacks: [{ stack, releases: available }], clusters: [] });
    expect(Object.keys(kept(resolution))).toEqual(['docker-ferrol-1-30-v0-sha-aaa']);
    expect(resolution.clusterStacks[0]!.notes[0]).toMatch(/most recently published/);
  });

  it('reports a listed version the source does not have', () => {
    const stack = aClusterStack().withVersions('v9').build();
    const resolution = resolveReleases({ stacks: [{ stack, releases: STABLE }], clusters: [] });
    expect(resolution.clusterStacks[0]!.problems[0]).toMatchObject({ path: 'spec.versions[0]', message: expect.stringMatching(/v9 is not in the release source \(no release docker-ferrol-1-30-v9\)/) });
  });

  it('reports a Cluster whose class names no known release, without hiding the others', () => {
    const stack = aClusterStack().build();
    const resolution = resolveReleases({
      stacks: [{ stack, releases: STABLE }],
      clusters: [aCluster('ghost', 'docker-ferrol-1-30-v7'), aCluster('good', 'docker-ferrol-1-30-v2')],
    });
    const [ghost, good] = resolution.clusters;
    expect(ghost!.problems[0]!.message).toMatch(/no release docker-ferrol-1-30-v7/);
    expect(good!.problems).toEqual([]);
    expect(kept(resolution)['docker-ferrol-1-30-v2']).toEqual(['used by Cluster cluster-stacks/good']);
  });

  it('reports a Cluster whose class matches no ClusterStack, and a Kubernetes mismatch', () => {
    const stack = aClusterStack().build();
    const other = aCluster('other', 'openstack-scs-1-30-v1');
    const mismatch = aCluster('mismatch', 'docker-ferrol-1-30-v3');
    mismatch.spec!.topology!.version = 'v1.31.0';
    const resolution = resolveReleases({ stacks: [{ stack, releases: STABLE }], clusters: [other, mismatch] });
    const byName = Object.fromEntries(resolution.clusters.map((c) => [c.name, c]));
    expect(byName.other!.problems[0]!.message).toMatch(/no ClusterStack in namespace cluster-stacks has provider openstack, name scs/);
    expect(byName.mismatch!.problems[0]!.message).toMatch(/is v1.31.0 but class docker-ferrol-1-30-v3 is for Kubernetes 1.30/);
  });

  it('blames the release source, not the Cluster, when its ClusterStack could not be listed', () => {
    const resolution = resolveReleases({ stacks: [], unlisted: [{ stack: aClusterStack().build(), source: 'github:example/stacks', retryable: true }], clusters: [aCluster('alpha', 'docker-ferrol-1-30-v1')] });
    const [alpha] = resolution.clusters;
    expect(alpha!.problems).toEqual([
      {
        object: 'Cluster cluster-stacks/alpha',
        path: 'spec.topology.class',
        message: "names docker-ferrol-1-30-v1, of ClusterStack cluster-stacks/docker-ferrol-1-30, whose release source github:example/stacks could not be listed (the ClusterStack's problem says why); nothing is decided for this Cluster until it can be; retry later",
        retryable: true,
      },
    ]);
    expect(resolution.clusterStacks).toEqual([]);
  });

  it('ignores Clusters whose class is not a cluster stack class', () => {
    const resolution = resolveReleases({ stacks: [{ stack: aClusterStack().build(), releases: STABLE }], clusters: [aCluster('plain', 'my-own-class'), aCluster('none', undefined)] });
    expect(resolution.clusters.map((c) => c.managed)).toEqual([false, false]);
    expect(resolution.clusters.flatMap((c) => c.problems)).toEqual([]);
  });

  it('reports a Cluster on a release that is not ready', () => {
    const stack = aClusterStack().withProvider().build();
    const resolution = resolveReleases({ stacks: [{ stack, releases: STABLE }], clusters: [aCluster('early', 'docker-ferrol-1-30-v3')], providerReleases: [] });
    expect(resolution.clusters[0]!.problems[0]!.message).toMatch(/whose release is not ready/);
  });
});
