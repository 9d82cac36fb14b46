import { describe, expect, it } from 'vitest';
import { resolveReleases } from '../src/release/resolve-releases.js';
import type { CapiCluster } from '../src/api/types.js';
import { aCluster, aClusterStack, aProviderRelease, aV1beta2Cluster, releases } from './support/builders.js';

const STABLE = releases('docker-ferrol-1-30-v1', 'docker-ferrol-1-30-v2', 'docker-ferrol-1-30-v3');

function kept(resolution: ReturnType<typeof resolveReleases>, index = 0): Record<string, string[]> {
  const stack = resolution.clusterStacks[index]!;
  return Object.fromEntries(stack.releases.filter((r) => r.kept).map((r) => [r.name, r.reasons]));
}

describe('resolveReleases', () => {
  it('keeps the newest release with autoSubscribe and drops the rest with a reason', () => {
    const resolution = resolveReleases({
      stacks: [{ stack: aClusterStack().build(), releases: STABLE }],
      clusters: [],
    });
    expect(kept(resolution)).toEqual({
      'docker-ferrol-1-30-v3': ['newest release (autoSubscribe)', 'newest ready release'],
    });
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
    const resolution = resolveReleases({
      stacks: [{ stack, releases: STABLE }],
      clusters: [aCluster('alpha', 'docker-ferrol-1-30-v1')],
    });
    expect(kept(resolution)['docker-ferrol-1-30-v1']).toEqual(['used by Cluster cluster-stacks/alpha']);
    expect(resolution.clusters[0]).toMatchObject({
      release: 'docker-ferrol-1-30-v1',
      stack: { name: 'docker-ferrol-1-30' },
      problems: [],
    });
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
      providerReleases: [
        aProviderRelease('docker-ferrol-1-30-v2', true),
        aProviderRelease('docker-ferrol-1-30-v3', false),
      ],
    });
    expect(kept(resolution)).toEqual({
      'docker-ferrol-1-30-v2': ['newest ready release'],
      'docker-ferrol-1-30-v3': ['newest release (autoSubscribe)'],
    });
    const v3 = resolution.clusterStacks[0]!.releases.find((r) => r.name === 'docker-ferrol-1-30-v3')!;
    expect(v3.ready).toBe(false);
    expect(v3.readyMessage).toMatch(
      /DockerClusterStackRelease cluster-stacks\/docker-ferrol-1-30-v3 to report status.ready: true/,
    );
    expect(resolution.clusterStacks[0]!.latestRelease).toBe('docker-ferrol-1-30-v2');
    expect(resolution.clusterStacks[0]!.summary).toEqual([
      { name: 'docker-ferrol-1-30-v2', ready: true, phase: 'done' },
      { name: 'docker-ferrol-1-30-v3', ready: false, phase: 'provider-specific work', message: v3.readyMessage },
    ]);
  });

  it('orders pre-release patches numerically and never mixes channels', () => {
    const stack = aClusterStack().withChannel('alpha').build();
    const available = releases(
      'docker-ferrol-1-30-v1-alpha-9',
      'docker-ferrol-1-30-v1-alpha-10',
      'docker-ferrol-1-30-v3',
      'docker-ferrol-1-30-v1-beta-50',
    );
    const resolution = resolveReleases({ stacks: [{ stack, releases: available }], clusters: [] });
    expect(resolution.clusterStacks[0]!.releases.map((r) => r.name)).toEqual([
      'docker-ferrol-1-30-v1-alpha-9',
      'docker-ferrol-1-30-v1-alpha-10',
    ]);
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
    expect(resolution.clusterStacks[0]!.problems[0]).toMatchObject({
      path: 'spec.versions[0]',
      message: expect.stringMatching(/v9 is not in the release source \(no release docker-ferrol-1-30-v9\)/),
    });
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
    expect(byName.other!.problems[0]!.message).toMatch(
      /no ClusterStack in namespace cluster-stacks has provider openstack, name scs/,
    );
    expect(byName.mismatch!.problems[0]!.message).toMatch(
      /is v1.31.0 but class docker-ferrol-1-30-v3 is for Kubernetes 1.30/,
    );
  });

  it('blames the release source, not the Cluster, when its ClusterStack could not be listed', () => {
    const resolution = resolveReleases({
      stacks: [],
      unlisted: [{ stack: aClusterStack().build(), source: 'github:example/stacks', retryable: true }],
      clusters: [aCluster('alpha', 'docker-ferrol-1-30-v1')],
    });
    const [alpha] = resolution.clusters;
    expect(alpha!.problems).toEqual([
      {
        object: 'Cluster cluster-stacks/alpha',
        path: 'spec.topology.class',
        message:
          "names docker-ferrol-1-30-v1, of ClusterStack cluster-stacks/docker-ferrol-1-30, whose release source github:example/stacks could not be listed (the ClusterStack's problem says why); nothing is decided for this Cluster until it can be; retry later",
        retryable: true,
      },
    ]);
    expect(resolution.clusterStacks).toEqual([]);
  });

  it('ignores Clusters whose class is not a cluster stack class', () => {
    const resolution = resolveReleases({
      stacks: [{ stack: aClusterStack().build(), releases: STABLE }],
      clusters: [aCluster('plain', 'my-own-class'), aCluster('none', undefined)],
    });
    expect(resolution.clusters.map((c) => c.managed)).toEqual([false, false]);
    expect(resolution.clusters.flatMap((c) => c.problems)).toEqual([]);
  });

  it('reports a Cluster on a release that is not ready', () => {
    const stack = aClusterStack().withProvider().build();
    const resolution = resolveReleases({
      stacks: [{ stack, releases: STABLE }],
      clusters: [aCluster('early', 'docker-ferrol-1-30-v3')],
      providerReleases: [],
    });
    expect(resolution.clusters[0]!.problems[0]!.message).toMatch(/whose release is not ready/);
  });
});

describe('resolveReleases: Cluster API v1beta2 and Clusters whose class cannot be read', () => {
  const stack = aClusterStack().build();
  const resolve = (...clusters: CapiCluster[]) => resolveReleases({ stacks: [{ stack, releases: STABLE }], clusters });

  it("reads a v1beta2 Cluster's classRef as a v1beta1 Cluster's class, keeping its release", () => {
    const [v1beta1] = resolve(aCluster('alpha', 'docker-ferrol-1-30-v1')).clusters;
    const resolution = resolve(aV1beta2Cluster('alpha', 'docker-ferrol-1-30-v1'));
    expect(resolution.clusters[0]).toMatchObject({
      managed: true,
      className: 'docker-ferrol-1-30-v1',
      classField: 'spec.topology.classRef.name',
      release: v1beta1!.release,
      stack: v1beta1!.stack,
      problems: [],
    });
    expect(kept(resolution)['docker-ferrol-1-30-v1']).toEqual(['used by Cluster cluster-stacks/alpha']);
  });

  it('looks a v1beta2 class up in classRef.namespace, as Cluster API does', () => {
    const resolution = resolve(aV1beta2Cluster('alpha', 'docker-ferrol-1-30-v1', 'cluster-stacks', 'team-a'));
    expect(resolution.clusters[0]).toMatchObject({
      namespace: 'team-a',
      release: 'docker-ferrol-1-30-v1',
      stack: { namespace: 'cluster-stacks' },
      problems: [],
    });
    const elsewhere = resolve(aV1beta2Cluster('alpha', 'docker-ferrol-1-30-v1', undefined, 'team-a'));
    expect(elsewhere.clusters[0]!.problems[0]).toMatchObject({
      path: 'spec.topology.classRef.name',
      message: expect.stringMatching(/no ClusterStack in namespace team-a/),
    });
  });

  it.each([
    [
      'topology without a class',
      { topology: { version: 'v1.30.2' } },
      'spec.topology.class',
      /is missing: a Cluster with spec\.topology must name its ClusterClass here/,
    ],
    [
      'class as a list',
      { topology: { class: ['docker-ferrol-1-30-v1'], version: 'v1.30.2' } },
      'spec.topology.class',
      /is a list \(\["docker-ferrol-1-30-v1"\]\); it must be the ClusterClass name, a string/,
    ],
    [
      'topology as a string',
      { topology: 'docker-ferrol-1-30-v1' },
      'spec.topology',
      /is the string "docker-ferrol-1-30-v1"; it must be a mapping that names the ClusterClass \(class\)/,
    ],
    [
      'classNamespace as a number',
      { topology: { class: 'docker-ferrol-1-30-v1', classNamespace: 7, version: 'v1.30.2' } },
      'spec.topology.classNamespace',
      /is the number 7; it must be a namespace name/,
    ],
    [
      "v1beta2's classRef in a v1beta1 Cluster",
      { topology: { classRef: { name: 'docker-ferrol-1-30-v1' }, version: 'v1.30.2' } },
      'spec.topology.class',
      /names it in spec\.topology\.class \(spec\.topology\.classRef is v1beta2's field\)/,
    ],
  ])('makes %s a problem of that Cluster, never an unmanaged one', (_name, spec, path, message) => {
    const broken = {
      ...aCluster('alpha', undefined),
      spec: { ...aCluster('alpha', undefined).spec, ...spec },
    } as unknown as CapiCluster;
    const [cluster] = resolve(broken).clusters;
    expect(cluster).toMatchObject({
      managed: true,
      problems: [{ object: 'Cluster cluster-stacks/alpha', path, message: expect.stringMatching(message) }],
    });
    expect(cluster!.release).toBeUndefined();
  });

  it.each([
    [
      'a typo of an offered class',
      'docker-ferrol-1-30-v1.',
      /names docker-ferrol-1-30-v1\., which is not a cluster stack class of ClusterStack cluster-stacks\/docker-ferrol-1-30 .*; did you mean docker-ferrol-1-30-v1\?/,
    ],
    [
      "a stack's provider and name with a broken rest",
      'docker-ferrol-1.30-v2',
      /which is not a cluster stack class of ClusterStack cluster-stacks\/docker-ferrol-1-30 \(expected <provider>-<name>-<k8s major>-<k8s minor>-<version>.*did you mean docker-ferrol-1-30-v2\?/,
    ],
    ['capital letters', 'Docker-ferrol-1-30-v3', /did you mean docker-ferrol-1-30-v3\?/],
  ])('makes %s a problem with a did-you-mean', (_name, className, message) => {
    const [cluster] = resolve(aCluster('alpha', className)).clusters;
    expect(cluster).toMatchObject({
      managed: true,
      className,
      problems: [{ path: 'spec.topology.class', message: expect.stringMatching(message) }],
    });
  });

  it('leaves a ClusterClass that has nothing to do with the stacks unmanaged', () => {
    const [cluster] = resolve(aCluster('alpha', 'my-own-class'), aV1beta2Cluster('bravo', 'quick-start')).clusters;
    expect(cluster).toMatchObject({ managed: false, className: 'my-own-class', problems: [] });
    expect(resolve(aCluster('alpha', undefined)).clusters[0]).toMatchObject({ managed: false, problems: [] });
  });

  it('suggests the nearest existing release for a class of a release the source does not have', () => {
    const [cluster] = resolve(aCluster('alpha', 'docker-ferrol-1-30-v4')).clusters;
    expect(cluster!.problems[0]!.message).toMatch(
      /has no release docker-ferrol-1-30-v4; pick a class of an existing release; did you mean docker-ferrol-1-30-v1\?/,
    );
  });

  it.each([
    ['latest', /is "latest", not a Kubernetes version: Cluster API takes a version such as v1\.30\.0/],
    ['1.30.2', /is "1\.30\.2", not a Kubernetes version/],
    ['v1.30', /is "v1\.30", not a Kubernetes version/],
    [130, /is 130, not a Kubernetes version/],
    ['v1.31.0', /is v1\.31\.0 but class docker-ferrol-1-30-v1 is for Kubernetes 1\.30/],
  ])('refuses topology.version %j, naming the field and the value', (version, message) => {
    const cluster = aCluster('alpha', 'docker-ferrol-1-30-v1');
    cluster.spec!.topology!.version = version as string;
    expect(resolve(cluster).clusters[0]!.problems).toEqual([
      {
        object: 'Cluster cluster-stacks/alpha',
        path: 'spec.topology.version',
        message: expect.stringMatching(message),
      },
    ]);
  });
});
