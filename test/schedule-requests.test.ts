import { describe, expect, it } from 'vitest';
import type { ClusterProfileInfo } from '../src/cluster-requests/cluster-profiles.js';
import {
  type ClusterRequestInput,
  type ScheduleInput,
  scheduleRequests,
} from '../src/cluster-requests/schedule-requests.js';
import { parseSchedulerConfig } from '../src/cluster-requests/scheduler-config.js';

function profile(
  name: string,
  stackName: string,
  releases: { release: string; className: string; kubernetesVersion: string; deprecated?: boolean }[],
): ClusterProfileInfo {
  const list = releases.map((r) => ({ ...r, deprecated: r.deprecated ?? false }));
  const info: ClusterProfileInfo = {
    name,
    stack: { namespace: 'cluster-stacks', name: stackName, provider: 'docker' },
    releases: list,
  };
  const chosen = list.filter((r) => !r.deprecated).at(-1) ?? list.at(-1);
  if (chosen) info.newClusterRelease = chosen;
  return info;
}

const FERROL = profile('cluster-stacks.docker.ferrol-1-30', 'docker-ferrol-1-30', [
  { release: 'docker-ferrol-1-30-v3', className: 'docker-ferrol-1-30-v3', kubernetesVersion: 'v1.30.5' },
]);
const SCS = profile('cluster-stacks.docker.scs-1-31', 'docker-scs-1-31', [
  { release: 'docker-scs-1-31-v1', className: 'docker-scs-1-31-v1', kubernetesVersion: 'v1.31.2' },
]);

const CONFIG = parseSchedulerConfig(
  `scheduler:
  strategy: Balanced
  purposeMappings:
    workload:
      tenancyCount: 2
      template:
        metadata: {namespace: workload-clusters}
        spec: {profile: cluster-stacks.docker.ferrol-1-30, tenancy: Shared}
    platform:
      template:
        spec: {profile: cluster-stacks.docker.scs-1-31, tenancy: Exclusive}
`,
  'scheduler.yaml',
);

const request = (name: string, purpose: string, namespace = 'team-a'): ClusterRequestInput => ({
  namespace,
  name,
  purpose,
});

function schedule(
  requests: ClusterRequestInput[],
  extra: Partial<ScheduleInput> = {},
): ReturnType<typeof scheduleRequests> {
  const input: ScheduleInput = {
    requests,
    config: CONFIG,
    profiles: [FERROL, SCS],
    peopleClusters: new Set(),
    ...extra,
  };
  return scheduleRequests(input);
}

const FIVE = [
  request('r1', 'workload'),
  request('r2', 'workload'),
  request('r3', 'workload'),
  request('p1', 'platform'),
  request('x1', 'gaming'),
];

describe('scheduleRequests', () => {
  it('packs shared requests up to tenancyCount, gives Exclusive requests a cluster each, and leaves an unknown purpose Pending', () => {
    const result = schedule(FIVE);
    const byName = Object.fromEntries(result.requests.map((r) => [r.name, r]));
    expect(byName.x1).toMatchObject({
      phase: 'Pending',
      reason: 'UnknownPurpose',
      message: expect.stringContaining('purpose "gaming" is not in the scheduler configuration'),
    });
    expect(byName.x1!.cluster).toBeUndefined();
    // r1 and r2 fill the first workload cluster (tenancyCount 2), r3 opens a second one.
    expect(byName.r1!.cluster).toEqual(byName.r2!.cluster);
    expect(byName.r3!.cluster).not.toEqual(byName.r1!.cluster);
    expect(byName.r1!.cluster!.namespace).toBe('workload-clusters');
    // Exclusive: in the request's namespace, named <purpose>-<hash>.
    expect(byName.p1!.cluster).toEqual({ namespace: 'team-a', name: expect.stringMatching(/^platform-[0-9a-f]{5}$/) });
    expect(result.clusters.map((c) => [c.namespace, c.purpose, c.requests.length, c.class, c.version])).toEqual(
      expect.arrayContaining([
        ['workload-clusters', 'workload', 2, 'docker-ferrol-1-30-v3', 'v1.30.5'],
        ['workload-clusters', 'workload', 1, 'docker-ferrol-1-30-v3', 'v1.30.5'],
        ['team-a', 'platform', 1, 'docker-scs-1-31-v1', 'v1.31.2'],
      ]),
    );
    expect(result.clusters).toHaveLength(3);
    expect(result.record.assignments.map((a) => a.name)).toEqual(['p1', 'r1', 'r2', 'r3']);
  });

  it('assigns the same way whatever order the requests come in', () => {
    const forward = schedule(FIVE);
    const backward = schedule([...FIVE].reverse());
    expect(backward).toEqual(forward);
  });

  it('never moves a request once assigned, even when a new request sorts before it', () => {
    const first = schedule([request('r2', 'workload'), request('r3', 'workload')]);
    const second = schedule([request('r0', 'workload'), request('r2', 'workload'), request('r3', 'workload')], {
      previous: first.record,
    });
    const where = (result: typeof first, name: string) => result.requests.find((r) => r.name === name)!.cluster;
    expect(where(second, 'r2')).toEqual(where(first, 'r2'));
    expect(where(second, 'r3')).toEqual(where(first, 'r3'));
    // The full cluster stays full; r0 opens a new one.
    expect(where(second, 'r0')).not.toEqual(where(first, 'r2'));
    expect(second.clusters).toHaveLength(2);
  });

  it('Balanced puts a new request on the least loaded cluster that has room', () => {
    const config = { ...CONFIG, purposeMappings: new Map(CONFIG.purposeMappings) };
    config.purposeMappings.set('workload', { ...config.purposeMappings.get('workload')!, tenancyCount: 3 });
    const first = schedule(
      [request('a', 'workload'), request('b', 'workload'), request('c', 'workload'), request('d', 'workload')],
      { config },
    );
    // a, b, c fill cluster 1; d opens cluster 2. Then e goes to cluster 2 (1 request) rather than 1 (full).
    const second = schedule(
      [
        request('a', 'workload'),
        request('b', 'workload'),
        request('c', 'workload'),
        request('d', 'workload'),
        request('e', 'workload'),
      ],
      { config, previous: first.record },
    );
    const cluster = (name: string) => second.requests.find((r) => r.name === name)!.cluster;
    expect(cluster('e')).toEqual(cluster('d'));
  });

  it('removes a cluster created for requests with its last request, and keeps one whose label says not to', () => {
    const first = schedule([request('p1', 'platform')]);
    const gone = schedule([], { previous: first.record });
    expect(gone.clusters).toEqual([]);
    expect(gone.record).toEqual({ assignments: [], clusters: [] });

    const config = { ...CONFIG, purposeMappings: new Map(CONFIG.purposeMappings) };
    const platform = config.purposeMappings.get('platform')!;
    config.purposeMappings.set('platform', {
      ...platform,
      template: {
        ...platform.template,
        metadata: {
          ...platform.template.metadata,
          labels: { 'clusters.openmcp.cloud/delete-without-requests': 'false' },
        },
      },
    });
    const kept = schedule([request('p1', 'platform')], { config });
    const after = schedule([], { config, previous: kept.record });
    expect(after.clusters.map((c) => c.name)).toEqual(kept.clusters.map((c) => c.name));
    expect(after.clusters[0]!.requests).toEqual([]);
  });

  it('Random picks by the request’s identity: the same inputs give the same cluster', () => {
    const config = { ...CONFIG, strategy: 'Random' as const, purposeMappings: new Map(CONFIG.purposeMappings) };
    config.purposeMappings.set('workload', { ...config.purposeMappings.get('workload')!, tenancyCount: 5 });
    // Two shared clusters with room, as an earlier render left them.
    const previous = {
      assignments: [
        {
          namespace: 'team-a',
          name: 'r1',
          purpose: 'workload',
          cluster: { namespace: 'workload-clusters', name: 'workload-one' },
        },
        {
          namespace: 'team-a',
          name: 'r2',
          purpose: 'workload',
          cluster: { namespace: 'workload-clusters', name: 'workload-two' },
        },
      ],
      clusters: ['workload-one', 'workload-two'].map((name) => ({
        namespace: 'workload-clusters',
        name,
        purpose: 'workload',
        profile: FERROL.name,
        tenancy: 'Shared' as const,
        deleteWithoutRequests: true,
        class: 'docker-ferrol-1-30-v3',
        version: 'v1.30.5',
      })),
    };
    const requests = [
      request('r1', 'workload'),
      request('r2', 'workload'),
      ...['n1', 'n2', 'n3', 'n4', 'n5', 'n6'].map((n) => request(n, 'workload')),
    ];
    const once = schedule(requests, { config, previous });
    const again = schedule([...requests].reverse(), { config, previous });
    expect(again.requests).toEqual(once.requests);
    // Not simply the first cluster with room: Simple fills workload-one first.
    const simple = schedule(requests, { config: { ...config, strategy: 'Simple' }, previous });
    expect(simple.requests.filter((r) => r.cluster!.name === 'workload-one')).toHaveLength(5);
    expect(once.requests).not.toEqual(simple.requests);
  });

  it('leaves a request Pending when its stack has no ready release', () => {
    const notReady = profile(FERROL.name, 'docker-ferrol-1-30', []);
    const result = schedule([request('r1', 'workload')], { profiles: [notReady, SCS] });
    expect(result.requests[0]).toMatchObject({
      phase: 'Pending',
      reason: 'NoReadyRelease',
      message: expect.stringContaining('has no kept, ready release yet'),
    });
    expect(result.clusters).toEqual([]);
  });

  it('never takes the name of a Cluster people wrote', () => {
    const config = { ...CONFIG, purposeMappings: new Map(CONFIG.purposeMappings) };
    config.purposeMappings.set('workload', { ...config.purposeMappings.get('workload')!, tenancyCount: 0 });
    const result = schedule([request('r1', 'workload')], {
      config,
      peopleClusters: new Set(['workload-clusters/workload']),
    });
    expect(result.requests[0]).toMatchObject({
      phase: 'Pending',
      reason: 'NameConflict',
      message: expect.stringContaining('workload-clusters/workload'),
    });
  });

  it('refuses a request whose purpose changed, and it keeps its cluster under the purpose it had', () => {
    const first = schedule([request('p1', 'platform'), request('r1', 'workload')]);
    const held = first.requests.find((r) => r.name === 'p1')!.cluster!;
    const changed = schedule([request('p1', 'workload'), request('r1', 'workload')], { previous: first.record });
    const p1 = changed.requests.find((r) => r.name === 'p1')!;
    expect(p1).toMatchObject({
      phase: 'Pending',
      reason: 'PurposeChanged',
      cluster: held,
      message: expect.stringMatching(
        /was "platform" and is now "workload", but a request's purpose is immutable.*keeps Cluster team-a\/platform-/,
      ),
    });
    // The cluster stays, still serving p1 under its old purpose; r1 is untouched.
    expect(changed.clusters.find((c) => c.name === held.name)).toMatchObject({
      purpose: 'platform',
      requests: ['team-a/p1'],
    });
    expect(changed.requests.find((r) => r.name === 'r1')).toMatchObject({
      phase: 'Granted',
      cluster: first.requests.find((r) => r.name === 'r1')!.cluster,
    });
    expect(changed.record.assignments.find((a) => a.name === 'p1')).toEqual({
      namespace: 'team-a',
      name: 'p1',
      purpose: 'platform',
      cluster: held,
    });
    // Put back, it is Granted on the same cluster; the refusal changed nothing in between.
    const back = schedule([request('p1', 'platform'), request('r1', 'workload')], { previous: changed.record });
    expect(back.requests.find((r) => r.name === 'p1')).toMatchObject({ phase: 'Granted', cluster: held });
    expect(back.record).toEqual(first.record);
  });

  it('reports and skips a request without purpose; one that had a cluster keeps it', () => {
    const first = schedule([request('p1', 'platform')]);
    const result = schedule([request('p1', ''), request('n1', ''), request('r1', 'workload')], {
      previous: first.record,
    });
    expect(result.requests.find((r) => r.name === 'n1')).toMatchObject({
      phase: 'Pending',
      reason: 'MissingPurpose',
      message: expect.stringContaining('spec.purpose is required'),
    });
    expect(result.requests.find((r) => r.name === 'n1')!.cluster).toBeUndefined();
    expect(result.requests.find((r) => r.name === 'p1')).toMatchObject({
      phase: 'Pending',
      reason: 'MissingPurpose',
      cluster: first.requests[0]!.cluster,
    });
    expect(result.requests.find((r) => r.name === 'r1')!.phase).toBe('Granted');
    expect(result.clusters.map((c) => c.purpose).sort()).toEqual(['platform', 'workload']);
  });

  it('leaves only the requests of a purpose mapped to an unknown profile Pending; their clusters are kept as they were', () => {
    const first = schedule([request('p1', 'platform'), request('r1', 'workload')]);
    // The scs stack is gone: platform's profile is unknown now, workload schedules on.
    const result = schedule(
      [request('p1', 'platform'), request('p2', 'platform'), request('r1', 'workload'), request('r2', 'workload')],
      { profiles: [FERROL], previous: first.record },
    );
    const byName = Object.fromEntries(result.requests.map((r) => [r.name, r]));
    expect(byName.p2).toMatchObject({
      phase: 'Pending',
      reason: 'UnknownProfile',
      message: expect.stringContaining(
        'mapped to ClusterProfile "cluster-stacks.docker.scs-1-31" (scheduler.yaml: purposeMappings.platform.template.spec.profile), but no ClusterStack makes it',
      ),
    });
    expect(byName.p2!.cluster).toBeUndefined();
    expect(byName.p1).toMatchObject({
      phase: 'Pending',
      reason: 'UnknownProfile',
      cluster: first.requests.find((r) => r.name === 'p1')!.cluster,
    });
    expect(byName.r2).toMatchObject({ phase: 'Granted', cluster: byName.r1!.cluster });
    expect(result.withheld).toEqual([
      expect.objectContaining({
        purpose: 'platform',
        requests: ['team-a/p1'],
        reason: expect.stringContaining('no ClusterStack makes it'),
      }),
    ]);
    expect(result.record.clusters.map((c) => c.purpose).sort()).toEqual(['platform', 'workload']);
    // Once p1 is deleted, its cluster leaves like any other.
    const gone = schedule([request('r1', 'workload')], { profiles: [FERROL], previous: result.record });
    expect(gone.withheld).toEqual([]);
    expect(gone.record.clusters.map((c) => c.purpose)).toEqual(['workload']);
  });

  it('keeps a cluster whose stack has no ready release for now, instead of removing it', () => {
    const first = schedule([request('r1', 'workload')]);
    const notReady = profile(FERROL.name, 'docker-ferrol-1-30', []);
    const result = schedule([request('r1', 'workload')], { profiles: [notReady, SCS], previous: first.record });
    expect(result.requests[0]).toMatchObject({
      phase: 'Pending',
      reason: 'NoReadyRelease',
      cluster: first.requests[0]!.cluster,
    });
    expect(result.withheld.map((c) => c.name)).toEqual([first.requests[0]!.cluster!.name]);
    expect(result.record).toEqual(first.record);
  });

  it('with the configuration refused, schedules nothing and keeps every cluster of the previous render', () => {
    const first = schedule([request('p1', 'platform'), request('r1', 'workload'), request('r2', 'workload')]);
    const result = schedule([request('p1', 'platform'), request('r1', 'workload'), request('n1', 'workload')], {
      configRefused: 'scheduler.yaml: strategy: must be one of Balanced, Random, Simple',
    });
    expect(result.requests.every((r) => r.phase === 'Pending' && r.reason === 'SchedulerConfigInvalid')).toBe(true);
    expect(result.clusters).toEqual([]);
    expect(result.withheld).toEqual([]);
    const kept = schedule([request('p1', 'platform'), request('r1', 'workload'), request('n1', 'workload')], {
      configRefused: 'bad',
      previous: first.record,
    });
    expect(kept.withheld.map((c) => c.purpose).sort()).toEqual(['platform', 'workload']);
    expect(kept.requests.find((r) => r.name === 'n1')!.cluster).toBeUndefined();
    expect(kept.requests.find((r) => r.name === 'r1')!.cluster).toEqual(
      first.requests.find((r) => r.name === 'r1')!.cluster,
    );
    // r2 is gone: its shared cluster still serves r1.
    expect(kept.withheld.find((c) => c.purpose === 'workload')!.requests).toEqual(['team-a/r1']);
  });
});

describe('scheduleRequests with openMCP’s label selectors', () => {
  const SELECTED = parseSchedulerConfig(
    `scheduler:
  selectors:
    requests: {matchLabels: {scheduler: ours}}
    clusters: {matchExpressions: [{key: state, operator: NotIn, values: [draining]}]}
  purposeMappings:
    workload:
      tenancyCount: 5
      selector: {matchExpressions: [{key: zone, operator: NotIn, values: [b]}]}
      template:
        metadata: {namespace: workload-clusters, labels: {tier: shared}}
        spec: {profile: cluster-stacks.docker.ferrol-1-30, tenancy: Shared}
    shared:
      template:
        metadata: {namespace: workload-clusters}
        spec: {profile: cluster-stacks.docker.ferrol-1-30, tenancy: Shared}
`,
    'scheduler.yaml',
  );
  const ours = (name: string, purpose: string): ClusterRequestInput => ({
    ...request(name, purpose),
    labels: { scheduler: 'ours' },
  });
  const clusterOf = (result: ReturnType<typeof scheduleRequests>, name: string) =>
    result.requests.find((r) => r.name === name)?.cluster;

  it('leaves a request outside selectors.requests alone and reports it as not ours', () => {
    const result = schedule(
      [
        ours('r1', 'workload'),
        request('other', 'workload'),
        { ...request('labelled', 'workload'), labels: { scheduler: 'theirs' } },
      ],
      { config: SELECTED },
    );
    expect(result.requests.map((r) => r.name)).toEqual(['r1']);
    expect(result.notOurs.map((r) => r.name)).toEqual(['labelled', 'other']);
    expect(result.notOurs[0]!.message).toMatch(
      /its labels do not match the scheduler configuration's selectors\.requests \(scheduler\.yaml\): left to another scheduler/,
    );
    expect(result.clusters.flatMap((c) => c.requests)).toEqual(['team-a/r1']);
    expect(result.record.assignments.map((a) => a.name)).toEqual(['r1']);
  });

  it('keeps the cluster of a request that leaves selectors.requests after it was granted, as the operator never looks at it again', () => {
    const first = schedule([ours('r1', 'workload')], { config: SELECTED });
    const after = schedule([request('r1', 'workload')], { config: SELECTED, previous: first.record });
    expect(after.requests).toEqual([]);
    expect(after.notOurs[0]!.message).toContain(
      `it keeps Cluster ${clusterOf(first, 'r1')!.namespace}/${clusterOf(first, 'r1')!.name}, given before`,
    );
    expect(after.record).toEqual(first.record);
    expect(after.clusters.map((c) => [c.name, c.requests])).toEqual(first.clusters.map((c) => [c.name, c.requests]));
  });

  it('never schedules onto a Cluster that does not match selectors.clusters, but leaves its requests on it', () => {
    const first = schedule([ours('r1', 'workload')], { config: SELECTED });
    const one = clusterOf(first, 'r1')!;
    const draining = new Map([[`${one.namespace}/${one.name}`, { state: 'draining' }]]);
    const second = schedule([ours('r1', 'workload'), ours('r2', 'workload')], {
      config: SELECTED,
      previous: first.record,
      liveLabels: draining,
    });
    expect(clusterOf(second, 'r1')).toEqual(one);
    expect(clusterOf(second, 'r2')).not.toEqual(one);
    // Without the label the cluster has room, and r2 shares it.
    expect(
      clusterOf(
        schedule([ours('r1', 'workload'), ours('r2', 'workload')], { config: SELECTED, previous: first.record }),
        'r2',
      ),
    ).toEqual(one);
  });

  it('narrows a purpose’s candidates with its own selector, and no other purpose’s', () => {
    const first = schedule([ours('r1', 'workload'), ours('s1', 'shared')], { config: SELECTED });
    const zoneB = new Map(
      [clusterOf(first, 'r1')!, clusterOf(first, 's1')!].map((c) => [`${c.namespace}/${c.name}`, { zone: 'b' }]),
    );
    const second = schedule(
      [ours('r1', 'workload'), ours('r2', 'workload'), ours('s1', 'shared'), ours('s2', 'shared')],
      { config: SELECTED, previous: first.record, liveLabels: zoneB },
    );
    // workload's selector excludes zone b: r2 gets a new cluster.
    expect(clusterOf(second, 'r2')).not.toEqual(clusterOf(first, 'r1'));
    expect(second.clusters.filter((c) => c.purpose === 'workload')).toHaveLength(2);
    // shared has no selector of its own: s2 shares s1's cluster in zone b.
    expect(clusterOf(second, 's2')).toEqual(clusterOf(first, 's1'));
  });

  it('leaves a request Pending when the one cluster of an unlimited purpose is excluded and a new one would take its name', () => {
    const first = schedule([ours('s1', 'shared')], { config: SELECTED });
    const cluster = clusterOf(first, 's1')!;
    const second = schedule([ours('s1', 'shared'), ours('s2', 'shared')], {
      config: SELECTED,
      previous: first.record,
      liveLabels: new Map([[`${cluster.namespace}/${cluster.name}`, { state: 'draining' }]]),
    });
    expect(second.requests.find((r) => r.name === 's2')).toMatchObject({
      phase: 'Pending',
      reason: 'NameConflict',
      message: expect.stringContaining(
        'its labels do not match purposeMappings.shared.selector and selectors.clusters',
      ),
    });
    expect(second.clusters.map((c) => c.requests)).toEqual([['team-a/s1']]);
  });
});
