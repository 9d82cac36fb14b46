// ClusterProfiles and ClusterRequests end to end: the CLI with real helm, real git and real
// `kubectl kustomize`, two stacks, three purposes (one unknown), five requests.
import { execFileSync } from 'node:child_process';
import { appendFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkObject } from './support/engine-schemas/schema-facts.js';
import { CLUSTER_API_SCHEMAS, OPENMCP_SCHEMAS } from './support/engine-schemas/cluster-request-schemas.js';
import { kustomizeBuild } from './support/engine-schemas/kustomize-build.js';
import { copyExampleReleases, EXAMPLE_RELEASES, readTree, runClusterstack, tempDir, writeTree } from './support/cli.js';
import { GitSandbox } from './support/git-repos.js';

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

// cluster-stacks: autoSubscribe, v2 pinned; v1 kept only for the Cluster alpha (people's).
// team-stacks: pinned to v1 alone, and the Cluster legacy (people's) uses v1 too.
const STACKS = `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: cluster-stacks}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", noProvider: true, versions: [v2]}
---
apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: team-stacks}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", noProvider: true, autoSubscribe: false, versions: [v1]}
`;

function peopleCluster(name: string, namespace: string, className: string): string {
  return `---
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  clusterNetwork: {pods: {cidrBlocks: [10.1.0.0/16]}}
  controlPlaneEndpoint: {host: ${name}.example.test, port: 6443}
  topology: {class: ${className}, version: v1.30.2}
`;
}

const CLUSTERS =
  peopleCluster('alpha', 'cluster-stacks', 'docker-ferrol-1-30-v1') +
  peopleCluster('legacy', 'team-stacks', 'docker-ferrol-1-30-v1');

function request(name: string, purpose: string, namespace = 'team-a'): string {
  return `---
apiVersion: clusters.openmcp.cloud/v1alpha1
kind: ClusterRequest
metadata: {name: ${name}, namespace: ${namespace}}
spec: {purpose: ${purpose}}
`;
}

const FIVE_REQUESTS = [
  request('r1', 'workload'),
  request('r2', 'workload'),
  request('r3', 'workload'),
  request('p1', 'platform'),
  request('x1', 'gaming'),
];

const SCHEDULER = `scheduler:
  scope: Cluster
  strategy: Balanced
  purposeMappings:
    workload:
      tenancyCount: 2
      template:
        metadata: {namespace: workload-clusters, labels: {tier: shared}}
        spec: {profile: cluster-stacks.docker.ferrol-1-30, tenancy: Shared}
    platform:
      template:
        spec: {profile: team-stacks.docker.ferrol-1-30, tenancy: Exclusive}
`;

interface Run {
  code: number;
  stderr: string;
  report: Record<string, any>;
}

async function render(inputs: string[], remote: string, scheduler: string, releases = EXAMPLE_RELEASES): Promise<Run> {
  const result = await runClusterstack([
    'render',
    ...inputs,
    '--release-source',
    releases,
    '--git',
    remote,
    '--scheduler-config',
    scheduler,
    '--json',
  ]);
  return { code: result.code, stderr: result.stderr, report: result.stdout ? JSON.parse(result.stdout) : {} };
}

interface FirstRender {
  run: Run;
  dir: string;
  scheduler: string;
  remote: string;
}
let firstRender: Promise<FirstRender> | undefined;

/** The first render of the five requests, made once for the file: the suites that start from it each take a copy of its remote. */
function renderFirst(): Promise<FirstRender> {
  firstRender ??= (async () => {
    const dir = await writeTree({
      'stacks.yaml': STACKS,
      'clusters.yaml': CLUSTERS,
      'requests.yaml': FIVE_REQUESTS.join(''),
    });
    const scheduler = path.join(await tempDir(), 'scheduler.yaml');
    await writeFile(scheduler, SCHEDULER);
    const remote = sandbox.bareRepo('requests-first');
    const run = await render(
      [path.join(dir, 'stacks.yaml'), path.join(dir, 'clusters.yaml'), path.join(dir, 'requests.yaml')],
      remote,
      scheduler,
    );
    return { run, dir, scheduler, remote };
  })();
  return firstRender;
}

/** A remote of its own (named `name`) holding `remote`'s history, for a suite that commits on from there. */
function copyRemote(remote: string, name: string): string {
  const copy = path.join(path.dirname(remote), `${name}.git`);
  execFileSync('git', ['clone', '--quiet', '--bare', remote, copy]);
  return copy;
}

const clusterFiles = (files: Record<string, string>): string[] =>
  Object.keys(files).filter(
    (file) => file.startsWith('management/_cluster-requests/clusters/') && !file.endsWith('kustomization.yaml'),
  );
const load = (text: string): Record<string, any> => yaml.load(text) as Record<string, any>;

// Steps of one history on one remote, in order (shuffle: false, which the nested suites keep): the
// first render's checks and its no-op rerun come before the later renders commit again.
describe('clusterstack render --scheduler-config', { shuffle: false }, () => {
  let dir: string;
  let scheduler: string;
  let remote: string;
  let first: Run;
  let files: Record<string, string>;

  beforeAll(async () => {
    const rendered = await renderFirst();
    ({ dir, scheduler, run: first } = rendered);
    remote = copyRemote(rendered.remote, 'requests');
    files = sandbox.files(remote, 'main');
  });

  it('publishes one ClusterProfile per ClusterStack, a version deprecated when only Clusters keep it', () => {
    expect(first.code).toBe(0);
    const profile = load(
      files['management/_cluster-requests/profiles/clusterprofile-cluster-stacks.docker.ferrol-1-30.yaml']!,
    );
    expect(profile).toEqual({
      apiVersion: 'clusters.openmcp.cloud/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name: 'cluster-stacks.docker.ferrol-1-30' },
      spec: {
        providerRef: { name: 'docker' },
        providerConfigRef: { name: 'docker-ferrol-1-30' },
        // v1 (Kubernetes 1.30.2) is kept only because alpha uses it; v2 and v3 carry 1.30.4.
        supportedVersions: [{ version: '1.30.2', deprecated: true }, { version: '1.30.4' }],
      },
    });
    const team = load(
      files['management/_cluster-requests/profiles/clusterprofile-team-stacks.docker.ferrol-1-30.yaml']!,
    );
    expect(team.spec.supportedVersions).toEqual([{ version: '1.30.2' }]);
    for (const file of Object.keys(files).filter((f) => f.includes('/profiles/clusterprofile-')))
      expect(checkObject(load(files[file]!), OPENMCP_SCHEMAS, file)).toEqual([]);
  });

  it('writes a Cluster per shared pair and per exclusive request, valid against CAPI’s Cluster schema', () => {
    const clusters = clusterFiles(files).map((file) => ({ file, object: load(files[file]!) }));
    expect(clusters).toHaveLength(3);
    for (const { file, object } of clusters) expect(checkObject(object, CLUSTER_API_SCHEMAS, file)).toEqual([]);
    const shared = clusters.filter(({ object }) => object.metadata.namespace === 'workload-clusters');
    expect(shared).toHaveLength(2);
    for (const { object } of shared) {
      // The newest non-deprecated release of cluster-stacks, and exactly its Kubernetes version.
      expect(object.spec.topology).toEqual({
        class: 'docker-ferrol-1-30-v3',
        classNamespace: 'cluster-stacks',
        version: 'v1.30.4',
      });
      expect(object.metadata.labels).toMatchObject({
        tier: 'shared',
        'clusters.openmcp.cloud/delete-without-requests': 'true',
        'clusterstack.x-k8s.io/requested-purpose': 'workload',
      });
    }
    const served = shared
      .map(({ object }) => object.metadata.annotations['clusterstack.x-k8s.io/cluster-requests'])
      .sort();
    expect(served).toEqual(['team-a/r1,team-a/r2', 'team-a/r3']);
    const pair = shared.find(
      ({ object }) => object.metadata.annotations['clusterstack.x-k8s.io/cluster-requests'] === 'team-a/r1,team-a/r2',
    )!;
    expect(pair.object.metadata.labels).toMatchObject({
      'request.clusterstack.x-k8s.io/team-a.r1': 'true',
      'request.clusterstack.x-k8s.io/team-a.r2': 'true',
    });
    const exclusive = clusters.find(({ object }) => object.metadata.namespace === 'team-a')!;
    expect(exclusive.object.metadata.name).toMatch(/^platform-[0-9a-f]{5}$/);
    expect(exclusive.object.spec.topology).toEqual({
      class: 'docker-ferrol-1-30-v1',
      classNamespace: 'team-stacks',
      version: 'v1.30.2',
    });
  });

  it('leaves the unknown purpose Pending with the reason, in the README and provenance', () => {
    expect(files['README.md']).toMatch(
      /\| team-a\/x1 \| gaming \| Pending \| - \| purpose "gaming" is not in the scheduler configuration's purposeMappings/,
    );
    const provenance = JSON.parse(files['provenance.json']!);
    expect(provenance.clusterRequests.assignments.map((a: { name: string }) => a.name)).toEqual([
      'p1',
      'r1',
      'r2',
      'r3',
    ]);
    expect(provenance.clusterRequests.clusters).toHaveLength(3);
    expect(provenance.clusterRequests.schedulerConfig).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('sends generated Clusters through the addon pipeline: withheld until CAPI fills their fields', () => {
    const generated = first.report.withheld.filter(
      (entry: { name: string }) => entry.name.startsWith('workload-') || entry.name.startsWith('platform-'),
    );
    expect(generated).toHaveLength(3);
    for (const entry of generated) expect(entry.reason).toMatch(/addon values need \.Cluster\.spec\./);
    // People's Clusters render as before.
    expect(Object.keys(files).some((file) => file.startsWith('clusters/cluster-stacks/alpha/'))).toBe(true);
  });

  it('builds with kubectl kustomize: the management side includes profiles and Clusters', () => {
    const objects = kustomizeBuild(new Map(Object.entries(files)), 'management');
    const kinds = objects.map((object) => `${object.kind}/${object.metadata.name}`);
    expect(kinds).toContain('ClusterProfile/cluster-stacks.docker.ferrol-1-30');
    expect(kinds.filter((kind) => kind.startsWith('Cluster/'))).toHaveLength(3);
    expect(kinds).toContain('ClusterClass/docker-ferrol-1-30-v3');
  });

  it('commits nothing when the same requests come in another order', async () => {
    const reordered = await writeTree({
      'a.yaml': [...FIVE_REQUESTS].reverse().join(''),
      'b.yaml': CLUSTERS,
      'c.yaml': STACKS,
    });
    const again = await render(
      [path.join(reordered, 'a.yaml'), path.join(reordered, 'c.yaml'), path.join(reordered, 'b.yaml')],
      remote,
      scheduler,
    );
    expect(again.code).toBe(0);
    expect(again.report.changed).toBe(false);
    expect(sandbox.commitCount(remote, 'main')).toBe(1);
  });

  // Steps of one history, in order (shuffle: false): the live-copy step commits a third render and
  // replaces `after`, which the assignment and removal steps before it read as the second one.
  describe('later renders', { shuffle: false }, () => {
    let second: Run;
    let after: Record<string, string>;

    beforeAll(async () => {
      // team-stacks moves to v3 (legacy still uses v1); p1 and r3 are deleted; r0 is new.
      const next = await writeTree({
        'stacks.yaml': STACKS.replace('autoSubscribe: false, versions: [v1]', 'autoSubscribe: false, versions: [v3]'),
        'clusters.yaml': CLUSTERS,
        'requests.yaml': [
          request('r0', 'workload'),
          request('r1', 'workload'),
          request('r2', 'workload'),
          request('p2', 'platform'),
          request('x1', 'gaming'),
        ].join(''),
      });
      second = await render([next], remote, scheduler);
      after = sandbox.files(remote, 'main');
    });

    it('marks a version deprecated once only Clusters keep it, and new clusters take the newest other one', () => {
      expect(second.code).toBe(0);
      const team = load(
        after['management/_cluster-requests/profiles/clusterprofile-team-stacks.docker.ferrol-1-30.yaml']!,
      );
      expect(team.spec.supportedVersions).toEqual([{ version: '1.30.2', deprecated: true }, { version: '1.30.4' }]);
      const exclusive = clusterFiles(after)
        .map((file) => load(after[file]!))
        .filter((object) => object.metadata.namespace === 'team-a');
      expect(exclusive).toHaveLength(1);
      expect(exclusive[0]!.spec.topology).toMatchObject({ class: 'docker-ferrol-1-30-v3', version: 'v1.30.4' });
      expect(exclusive[0]!.metadata.annotations['clusterstack.x-k8s.io/cluster-requests']).toBe('team-a/p2');
    });

    it('removes a cluster in the commit where its last request is gone, and keeps the others’ assignments', () => {
      const before = JSON.parse(files['provenance.json']!).clusterRequests;
      const now = JSON.parse(after['provenance.json']!).clusterRequests;
      const clusterOf = (record: any, name: string) =>
        record.assignments.find((a: { name: string }) => a.name === name)?.cluster;
      expect(clusterOf(now, 'r1')).toEqual(clusterOf(before, 'r1'));
      expect(clusterOf(now, 'r2')).toEqual(clusterOf(before, 'r2'));
      // r3's cluster had only r3, p1's only p1: both gone with them, in this one commit.
      const gone = [clusterOf(before, 'r3'), clusterOf(before, 'p1')];
      for (const cluster of gone)
        expect(Object.keys(after)).not.toContain(
          `management/_cluster-requests/clusters/${cluster.namespace}/cluster-${cluster.name}.yaml`,
        );
      const { written, removed } = second.report.files;
      expect(removed).toEqual(
        expect.arrayContaining(
          gone.map((c: any) => `management/_cluster-requests/clusters/${c.namespace}/cluster-${c.name}.yaml`),
        ),
      );
      expect(written.length).toBeGreaterThan(0);
      expect(second.report.summary).toMatch(/2 requested Clusters removed/);
      expect(sandbox.commitCount(remote, 'main')).toBe(2);
      // r0 is new and r1's cluster is full: a cluster of its own.
      expect(clusterOf(now, 'r0')).not.toEqual(clusterOf(now, 'r1'));
    });

    it('renders a generated Cluster’s addons once its live copy (with the endpoint CAPI filled in) is among the inputs', async () => {
      const now = JSON.parse(after['provenance.json']!).clusterRequests;
      const target = now.assignments.find((a: { name: string }) => a.name === 'r1').cluster;
      const generated = load(
        after[`management/_cluster-requests/clusters/${target.namespace}/cluster-${target.name}.yaml`]!,
      );
      // What `kubectl get cluster -o yaml` shows after Flux applied it and CAPI ran: ours plus the runtime fields.
      const live = {
        ...generated,
        spec: {
          ...generated.spec,
          clusterNetwork: { pods: { cidrBlocks: ['10.9.0.0/16'] } },
          controlPlaneEndpoint: { host: 'r1.example.test', port: 6443 },
        },
      };
      const inputs = await writeTree({
        'stacks.yaml': STACKS.replace('autoSubscribe: false, versions: [v1]', 'autoSubscribe: false, versions: [v3]'),
        'clusters.yaml': CLUSTERS + `---\n${yaml.dump(live)}`,
        'requests.yaml': [
          request('r0', 'workload'),
          request('r1', 'workload'),
          request('r2', 'workload'),
          request('p2', 'platform'),
          request('x1', 'gaming'),
        ].join(''),
      });
      const third = await render([inputs], remote, scheduler);
      expect(third.code).toBe(0);
      const files = sandbox.files(remote, 'main');
      expect(
        Object.keys(files).filter((file) => file.startsWith(`clusters/${target.namespace}/${target.name}/`)).length,
      ).toBeGreaterThan(1);
      expect(third.report.withheld.map((entry: { name: string }) => entry.name)).not.toContain(target.name);
      // The tree keeps our manifest (no runtime fields), and the assignment holds.
      expect(files[`management/_cluster-requests/clusters/${target.namespace}/cluster-${target.name}.yaml`]).toBe(
        after[`management/_cluster-requests/clusters/${target.namespace}/cluster-${target.name}.yaml`],
      );
      after = files;
    });

    it('never touches the Clusters people wrote', () => {
      expect(Object.keys(after).some((file) => file.includes('cluster-alpha') || file.includes('cluster-legacy'))).toBe(
        false,
      );
      expect(Object.keys(after).some((file) => file.startsWith('clusters/cluster-stacks/alpha/'))).toBe(true);
    });
  });

  describe('a configuration that is not valid: nothing is committed', () => {
    it('refuses a scheduler config with an unknown strategy, or that does not parse', async () => {
      const commits = sandbox.commitCount(remote, 'main');
      const bad = path.join(await tempDir(), 'scheduler.yaml');
      await writeFile(bad, SCHEDULER.replace('strategy: Balanced', 'strategy: RoundRobin'));
      const run = await render([dir], remote, bad);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/strategy: must be one of Balanced, Random, Simple, not "RoundRobin"/);
      await writeFile(bad, 'scheduler: {purposeMappings: [\n');
      const broken = await render([dir], remote, bad);
      expect(broken.code).toBe(1);
      expect(broken.stderr).toMatch(/is not valid YAML/);
      expect(sandbox.commitCount(remote, 'main')).toBe(commits);
    });
  });

  it('plan shows each request’s phase and profile versions (the configuration may sit among the inputs)', async () => {
    const inputs = await writeTree({
      'stacks.yaml': STACKS,
      'clusters.yaml': CLUSTERS,
      'requests.yaml': FIVE_REQUESTS.join(''),
      'scheduler.yaml': SCHEDULER,
    });
    const result = await runClusterstack([
      'plan',
      inputs,
      '--release-source',
      EXAMPLE_RELEASES,
      '--scheduler-config',
      path.join(inputs, 'scheduler.yaml'),
      '--json',
    ]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.clusterRequests.find((r: { name: string }) => r.name === 'x1')).toMatchObject({
      phase: 'Pending',
      reason: 'UnknownPurpose',
      cluster: null,
    });
    expect(report.clusterRequests.find((r: { name: string }) => r.name === 'p1')).toMatchObject({
      phase: 'Granted',
      cluster: expect.stringMatching(/^team-a\/platform-/),
    });
    expect(report.clusterProfiles.map((p: { name: string }) => p.name)).toEqual([
      'cluster-stacks.docker.ferrol-1-30',
      'team-stacks.docker.ferrol-1-30',
    ]);
    const text = await runClusterstack([
      'plan',
      inputs,
      '--release-source',
      EXAMPLE_RELEASES,
      '--scheduler-config',
      path.join(inputs, 'scheduler.yaml'),
    ]);
    expect(text.stdout).toContain(
      'ClusterProfile cluster-stacks.docker.ferrol-1-30  (ClusterStack cluster-stacks/docker-ferrol-1-30)  versions: 1.30.2 (docker-ferrol-1-30-v1, deprecated), 1.30.4 (docker-ferrol-1-30-v2), 1.30.4 (docker-ferrol-1-30-v3)  new clusters: docker-ferrol-1-30-v3',
    );
    expect(text.stdout).toMatch(
      /ClusterRequest team-a\/x1 {2}purpose: gaming {2}Pending {2}\(UnknownPurpose: purpose "gaming" is not in/,
    );
  });
});

// Steps of one move, in order (shuffle: false): the Cluster is kept on its class until the step that
// publishes its new addons.
describe(
  'a Cluster made for requests moving to another release: its new addons are published first',
  { shuffle: false },
  () => {
    const PLATFORM_ONLY = `scheduler:
  scope: Cluster
  strategy: Simple
  purposeMappings:
    platform:
      template:
        spec: {profile: team-stacks.docker.ferrol-1-30, tenancy: Exclusive}
`;
    const stacks = (version: string) =>
      STACKS.replace('autoSubscribe: false, versions: [v1]', `autoSubscribe: false, versions: [${version}]`);
    let remote: string;
    let scheduler: string;
    let brokenReleases: string;
    let clusterFile = '';
    let live: Record<string, any>;
    const unitsOf = (files: Record<string, string>, namespace: string, name: string) =>
      (
        JSON.parse(files['provenance.json']!).units as {
          kind: string;
          namespace: string;
          name: string;
          release: string;
        }[]
      ).filter((unit) => unit.kind === 'cluster-stage' && unit.namespace === namespace && unit.name === name);
    /** The inputs of a later render: the stacks at `version`, the live Cluster as Flux applied it, and its request. */
    const withLiveCluster = async (version: string) => [
      await writeTree({
        'stacks.yaml': stacks(version),
        'live.yaml': yaml.dump(live),
        'requests.yaml': request('p1', 'platform'),
      }),
    ];

    beforeAll(async () => {
      remote = sandbox.bareRepo('requests-moving');
      scheduler = path.join(await tempDir(), 'scheduler.yaml');
      await writeFile(scheduler, PLATFORM_ONLY);
      // The same releases, but v3's addon chart fails to render (a template helm cannot parse).
      brokenReleases = await copyExampleReleases();
      const release = path.join(brokenReleases, 'docker-ferrol-1-30-v3');
      const chart = path.join(release, 'docker-ferrol-1-30-cluster-addon-v2.tgz');
      const unpacked = await tempDir();
      execFileSync('tar', ['-xzf', chart, '-C', unpacked]);
      await appendFile(path.join(unpacked, 'cni', 'templates', 'configmap.yaml'), '\n{{ .Values.broken \n');
      execFileSync('tar', ['-czf', chart, '-C', unpacked, '.']);

      const first = await render(
        [await writeTree({ 'stacks.yaml': stacks('v1'), 'requests.yaml': request('p1', 'platform') })],
        remote,
        scheduler,
      );
      expect(first.code).toBe(0);
      const files = sandbox.files(remote, 'main');
      clusterFile = clusterFiles(files)[0]!;
      const generated = load(files[clusterFile]!);
      expect(generated.spec.topology.class).toBe('docker-ferrol-1-30-v1');
      // Flux applied it and CAPI filled in the endpoint: the live copy comes back as an input, and its v1 addons render.
      live = {
        ...generated,
        spec: {
          ...generated.spec,
          clusterNetwork: { pods: { cidrBlocks: ['10.9.0.0/16'] } },
          controlPlaneEndpoint: { host: 'p1.example.test', port: 6443 },
        },
      };
      const second = await render(await withLiveCluster('v1'), remote, scheduler);
      expect(second.code).toBe(0);
      expect(
        unitsOf(sandbox.files(remote, 'main'), live.metadata.namespace, live.metadata.name).map((unit) => unit.release),
      ).toEqual(['docker-ferrol-1-30-v1']);
    }, 120_000);

    it('keeps the Cluster on its class while the new release’s addons for it are withheld, and says why', async () => {
      const before = sandbox.files(remote, 'main');
      const run = await render(await withLiveCluster('v3'), remote, scheduler, brokenReleases);
      expect(run.code).not.toBe(2);
      const files = sandbox.files(remote, 'main');
      expect(files[clusterFile]).toBe(before[clusterFile]);
      expect(load(files[clusterFile]!).spec.topology.class).toBe('docker-ferrol-1-30-v1');
      expect(
        run.report.withheld.map((entry: { kind: string; name: string }) => `${entry.kind}/${entry.name}`),
      ).toContain(`cluster/${live.metadata.name}`);
      expect(JSON.stringify(run.report)).toMatch(
        /stays on class docker-ferrol-1-30-v1: its move to docker-ferrol-1-30-v3 is written once/,
      );
      // Its addons stay the v1 ones it runs.
      expect(unitsOf(files, live.metadata.namespace, live.metadata.name).map((unit) => unit.release)).toEqual([
        'docker-ferrol-1-30-v1',
      ]);
    }, 60_000);

    it('moves the Cluster in the same commit that publishes its addons for the new release', async () => {
      const commits = sandbox.commitCount(remote, 'main');
      const run = await render(await withLiveCluster('v3'), remote, scheduler);
      expect(run.code).toBe(0);
      expect(sandbox.commitCount(remote, 'main')).toBe(commits + 1);
      const files = sandbox.files(remote, 'main');
      expect(load(files[clusterFile]!).spec.topology).toMatchObject({
        class: 'docker-ferrol-1-30-v3',
        version: 'v1.30.4',
      });
      // The live copy still says v1, yet the addons are already v3's: what BeforeClusterUpgrade waits for.
      const units = unitsOf(files, live.metadata.namespace, live.metadata.name);
      expect(units.length).toBeGreaterThan(1);
      expect(new Set(units.map((unit) => unit.release))).toEqual(new Set(['docker-ferrol-1-30-v3']));
      // The ClusterClass the live copy still uses stays published until it moved.
      expect(Object.keys(files).some((file) => file.startsWith('management/team-stacks/docker-ferrol-1-30-v1/'))).toBe(
        true,
      );
    }, 60_000);
  },
);

describe('clusterstack render --scheduler-config: what cannot be scheduled withholds only itself', () => {
  let remote: string;
  let before: Record<string, string>;
  let run: Run;
  let after: Record<string, string>;
  let second: string;
  let unknownProfile: string;
  const recordOf = (files: Record<string, string>) => JSON.parse(files['provenance.json']!).clusterRequests;
  const clusterOf = (record: any, name: string) =>
    record.assignments.find((a: { name: string }) => a.name === name)?.cluster;
  const fileOf = (cluster: { namespace: string; name: string }) =>
    `management/_cluster-requests/clusters/${cluster.namespace}/cluster-${cluster.name}.yaml`;

  beforeAll(async () => {
    // It starts where the first suite's render left its remote: the same inputs, rendered once.
    const rendered = await renderFirst();
    expect(rendered.run.code).toBe(0);
    remote = copyRemote(rendered.remote, 'fail-small');
    before = sandbox.files(remote, 'main');
    // r1 changes its purpose, n1 has none, r4 is new; platform's profile is one no stack makes.
    unknownProfile = path.join(await tempDir(), 'scheduler.yaml');
    await writeFile(
      unknownProfile,
      SCHEDULER.replace('profile: team-stacks.docker.ferrol-1-30', 'profile: team-stacks.docker.ferrol-1-31'),
    );
    const noPurpose = `---\napiVersion: clusters.openmcp.cloud/v1alpha1\nkind: ClusterRequest\nmetadata: {name: n1, namespace: team-a}\nspec: {}\n`;
    second = await writeTree({
      'stacks.yaml': STACKS,
      'clusters.yaml': CLUSTERS,
      'requests.yaml':
        [
          request('r1', 'platform'),
          request('r2', 'workload'),
          request('r3', 'workload'),
          request('r4', 'workload'),
          request('p1', 'platform'),
          request('x1', 'gaming'),
        ].join('') + noPurpose,
    });
    run = await render([second], remote, unknownProfile);
    after = sandbox.files(remote, 'main');
  });

  it('publishes everything else, and says what it withheld', () => {
    expect(run.code).toBe(0);
    expect(run.report.changed).toBe(true);
    expect(sandbox.commitCount(remote, 'main')).toBe(2);
    const warnings = run.report.warnings.join('\n');
    expect(warnings).toMatch(
      /ClusterRequest team-a\/r1 is Pending \(PurposeChanged\): spec\.purpose was "workload" and is now "platform"/,
    );
    expect(warnings).toMatch(/ClusterRequest team-a\/n1 is Pending \(MissingPurpose\)/);
    expect(warnings).toMatch(
      /ClusterRequest team-a\/p1 is Pending \(UnknownProfile\): purpose "platform" is mapped to ClusterProfile "team-stacks\.docker\.ferrol-1-31"/,
    );
    const report = Object.fromEntries(run.report.clusterRequests.map((r: { name: string }) => [r.name, r]));
    expect(report.r4).toMatchObject({ phase: 'Granted', reason: 'Scheduled' });
    expect(report.n1).toMatchObject({ phase: 'Pending', reason: 'MissingPurpose', cluster: null });
  });

  it('keeps the cluster of a request whose purpose changed, still naming the request', () => {
    const held = clusterOf(recordOf(before), 'r1');
    expect(run.report.clusterRequests.find((r: { name: string }) => r.name === 'r1')).toMatchObject({
      phase: 'Pending',
      reason: 'PurposeChanged',
      cluster: `${held.namespace}/${held.name}`,
    });
    const cluster = load(after[fileOf(held)]!);
    expect(cluster.metadata.annotations['clusterstack.x-k8s.io/cluster-requests']).toBe('team-a/r1,team-a/r2');
    expect(recordOf(after).assignments.find((a: { name: string }) => a.name === 'r1')).toEqual({
      namespace: 'team-a',
      name: 'r1',
      purpose: 'workload',
      cluster: held,
    });
    // That cluster stays full: the new request r4 joins r3's.
    expect(clusterOf(recordOf(after), 'r4')).toEqual(clusterOf(recordOf(before), 'r3'));
    expect(after['README.md']).toMatch(
      /\| team-a\/r1 \| platform \| Pending \| workload-clusters\/workload-[0-9a-f]+ \| spec\.purpose was "workload" and is now "platform"/,
    );
  });

  it('keeps the Cluster of a purpose mapped to an unknown profile byte for byte, and its addons', () => {
    const p1 = clusterOf(recordOf(before), 'p1');
    expect(after[fileOf(p1)]).toBe(before[fileOf(p1)]);
    expect(recordOf(after).clusters.map((c: { name: string }) => c.name)).toContain(p1.name);
    // Its unit (withheld before: no endpoint yet) is as it was; nothing about it was removed.
    expect(run.report.files.removed.filter((file: string) => file.includes(p1.name))).toEqual([]);
    // The profiles still follow the stacks.
    expect(Object.keys(after)).toContain(
      'management/_cluster-requests/profiles/clusterprofile-team-stacks.docker.ferrol-1-30.yaml',
    );
  });

  it('plan with the target shows which requests keep their cluster, which get a new one, and why others are Pending', async () => {
    const inputs = await writeTree({ 'more.yaml': request('r5', 'workload') });
    const args = [
      'plan',
      second,
      inputs,
      '--release-source',
      EXAMPLE_RELEASES,
      '--scheduler-config',
      unknownProfile,
      '--git',
      remote,
    ];
    const result = await runClusterstack([...args, '--json']);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.target).toContain(remote);
    const byName = Object.fromEntries(report.clusterRequests.map((r: { name: string }) => [r.name, r]));
    const record = recordOf(after);
    const at = (name: string) => `${clusterOf(record, name).namespace}/${clusterOf(record, name).name}`;
    expect(byName.r2).toMatchObject({ phase: 'Granted', assignment: 'kept', cluster: at('r2') });
    expect(byName.r4).toMatchObject({ phase: 'Granted', assignment: 'kept', cluster: at('r4') });
    expect(byName.r1).toMatchObject({
      phase: 'Pending',
      reason: 'PurposeChanged',
      assignment: 'kept',
      cluster: at('r1'),
    });
    expect(byName.p1).toMatchObject({
      phase: 'Pending',
      reason: 'UnknownProfile',
      assignment: 'kept',
      cluster: at('p1'),
    });
    expect(byName.r5).toMatchObject({ phase: 'Granted', assignment: 'new' });
    expect(byName.n1).toMatchObject({ phase: 'Pending', reason: 'MissingPurpose', assignment: 'none', cluster: null });
    const text = await runClusterstack(args);
    expect(text.stdout).toContain(`ClusterRequests against ${remote}`);
    expect(text.stdout).toContain(`ClusterRequest team-a/r2  purpose: workload  Granted  cluster: ${at('r2')} (kept)`);
    expect(text.stdout).toMatch(
      /ClusterRequest team-a\/r5 {2}purpose: workload {2}Granted {2}cluster: workload-clusters\/workload-[0-9a-f]+ \(new\)/,
    );
    expect(text.stdout).toContain(
      `ClusterRequest team-a/r1  purpose: platform  Pending  cluster: ${at('r1')} (kept)  (PurposeChanged: spec.purpose was "workload"`,
    );
    // Read, never written: the remote is where the render left it.
    expect(sandbox.commitCount(remote, 'main')).toBe(2);
    // Without the target, plan schedules as a first render would, and says it did not compare.
    const first = JSON.parse(
      (
        await runClusterstack([
          'plan',
          second,
          '--release-source',
          EXAMPLE_RELEASES,
          '--scheduler-config',
          unknownProfile,
          '--json',
        ])
      ).stdout,
    );
    expect(first.clusterRequests.find((r: { name: string }) => r.name === 'r2').assignment).toBe('unknown');
  });

  it('builds with kubectl kustomize, the kept Clusters included', () => {
    const objects = kustomizeBuild(new Map(Object.entries(after)), 'management');
    expect(
      objects
        .filter((object) => object.kind === 'Cluster')
        .map((object) => object.metadata.name)
        .sort(),
    ).toEqual(
      recordOf(after)
        .clusters.map((c: { name: string }) => c.name)
        .sort(),
    );
  });
});

describe('clusterstack render with an openMCP operator configuration that uses every label selector', () => {
  // The operator's own file shape: other sections beside scheduler:, selectors on requests,
  // on clusters and on a purpose.
  const OPENMCP = `managedControlPlane: {mcpClusterPurpose: platform}
scheduler:
  scope: Cluster
  strategy: Balanced
  selectors:
    requests:
      matchLabels: {openmcp.cloud/scheduler: gitops}
    clusters:
      matchExpressions:
        - {key: state, operator: NotIn, values: [draining]}
  purposeMappings:
    workload:
      tenancyCount: 5
      selector:
        matchLabels: {tier: shared}
      template:
        metadata: {namespace: workload-clusters, labels: {tier: shared}}
        spec: {profile: cluster-stacks.docker.ferrol-1-30, tenancy: Shared}
`;
  const labelled = (name: string): string => `---
apiVersion: clusters.openmcp.cloud/v1alpha1
kind: ClusterRequest
metadata: {name: ${name}, namespace: team-a, labels: {openmcp.cloud/scheduler: gitops}}
spec: {purpose: workload}
`;
  let remote: string;
  let scheduler: string;
  let first: Run;
  let firstFiles: Record<string, string>;

  beforeAll(async () => {
    remote = sandbox.bareRepo('selectors');
    scheduler = path.join(await tempDir(), 'openmcp-config.yaml');
    await writeFile(scheduler, OPENMCP);
    const inputs = await writeTree({
      'stacks.yaml': STACKS,
      'requests.yaml': labelled('r1') + request('theirs', 'workload'),
    });
    first = await render([inputs], remote, scheduler);
    firstFiles = sandbox.files(remote, 'main');
  });

  it('renders, schedules the requests it selects, and reports the others as not ours', () => {
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.report.clusterRequests.map((r: { name: string }) => r.name)).toEqual(['r1']);
    expect(first.report.clusterRequests[0]).toMatchObject({
      phase: 'Granted',
      cluster: expect.stringMatching(/^workload-clusters\/workload-/),
    });
    expect(first.report.clusterRequestsNotOurs).toEqual([
      {
        namespace: 'team-a',
        name: 'theirs',
        message: expect.stringContaining("its labels do not match the scheduler configuration's selectors.requests"),
      },
    ]);
    const record = JSON.parse(firstFiles['provenance.json']!).clusterRequests;
    expect(record.assignments.map((a: { name: string }) => a.name)).toEqual(['r1']);
    expect(Object.values(firstFiles).some((text) => text.includes('team-a.theirs'))).toBe(false);
    // A request that is not ours is not a warning.
    expect(first.report.warnings.join('\n')).not.toContain('theirs');
  });

  it('never shares a Cluster whose live copy no longer matches selectors.clusters', async () => {
    const file = clusterFiles(firstFiles)[0]!;
    const live = load(firstFiles[file]!);
    live.metadata.labels.state = 'draining';
    const inputs = await writeTree({
      'stacks.yaml': STACKS,
      'requests.yaml': labelled('r1') + labelled('r2'),
      'live.yaml': yaml.dump(live),
    });
    const second = await render([inputs], remote, scheduler);
    expect(second.code).toBe(0);
    const where = Object.fromEntries(
      second.report.clusterRequests.map((r: { name: string; cluster: string }) => [r.name, r.cluster]),
    );
    expect(where.r1).toBe(`${live.metadata.namespace}/${live.metadata.name}`);
    expect(where.r2).toMatch(/^workload-clusters\/workload-/);
    expect(where.r2).not.toBe(where.r1);
  });

  it('plan reports the request that is not ours too', async () => {
    const inputs = await writeTree({
      'stacks.yaml': STACKS,
      'requests.yaml': labelled('r1') + request('theirs', 'workload'),
    });
    const result = await runClusterstack([
      'plan',
      inputs,
      '--release-source',
      EXAMPLE_RELEASES,
      '--scheduler-config',
      scheduler,
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /ClusterRequest team-a\/theirs {2}not ours: its labels do not match the scheduler configuration's selectors\.requests/,
    );
  });
});

describe('the cluster requests example', () => {
  it('renders the quick start with its requests into profiles and three Clusters', async () => {
    const output = path.join(await tempDir(), 'out');
    const result = await runClusterstack([
      'render',
      'examples/quickstart/manifests',
      'examples/cluster-requests/requests.yaml',
      '--release-source',
      EXAMPLE_RELEASES,
      '--scheduler-config',
      'examples/cluster-requests/scheduler.yaml',
      '--output',
      output,
      '--json',
    ]);
    expect(result.code).toBe(0);
    const files = await readTree(path.join(output, 'current'));
    expect(Object.keys(files)).toContain(
      'management/_cluster-requests/profiles/clusterprofile-cluster-stacks.docker.ferrol-1-30.yaml',
    );
    const clusters = clusterFiles(files).map((file) => load(files[file]!));
    expect(clusters.map((c) => c.metadata.annotations['clusterstack.x-k8s.io/cluster-requests']).sort()).toEqual([
      'team-a/batch,team-a/web',
      'team-b/ci',
      'team-b/control',
    ]);
    for (const cluster of clusters)
      expect(cluster.spec.topology).toMatchObject({ class: 'docker-ferrol-1-30-v3', version: 'v1.30.4' });
    // The workload clusters carry the example's clusterstack.clusterSpecs; all stay valid CAPI Clusters.
    for (const cluster of clusters)
      expect(checkObject(cluster, CLUSTER_API_SCHEMAS, cluster.metadata.name)).toEqual([]);
    const workload = clusters.filter(
      (c) => c.metadata.labels['clusterstack.x-k8s.io/requested-purpose'] === 'workload',
    );
    expect(workload).toHaveLength(2);
    for (const cluster of workload) {
      expect(cluster.spec.clusterNetwork).toEqual({ pods: { cidrBlocks: ['10.8.0.0/16'] } });
      expect(cluster.spec.topology).toEqual({
        class: 'docker-ferrol-1-30-v3',
        classNamespace: 'cluster-stacks',
        version: 'v1.30.4',
        controlPlane: { replicas: 1 },
        workers: { machineDeployments: [{ class: 'default-worker', name: 'md-0', replicas: 2 }] },
        variables: [{ name: 'maxPods', value: 150 }],
      });
    }
    const platform = clusters.find((c) => c.metadata.labels['clusterstack.x-k8s.io/requested-purpose'] === 'platform')!;
    expect(platform.spec).toEqual({
      topology: { class: 'docker-ferrol-1-30-v3', classNamespace: 'cluster-stacks', version: 'v1.30.4' },
    });
    // Addons wait for what only CAPI fills in (the endpoint); the platform one also for the pod network.
    const reasons = Object.fromEntries(
      result.stdout
        ? JSON.parse(result.stdout).withheld.map((w: { name: string; reason: string }) => [w.name, w.reason])
        : [],
    );
    for (const cluster of workload) {
      expect(reasons[cluster.metadata.name]).toMatch(/controlPlaneEndpoint/);
      expect(reasons[cluster.metadata.name]).not.toMatch(/clusterNetwork/);
    }
    expect(reasons[platform.metadata.name]).toMatch(/clusterNetwork/);
    // plan against that directory: every request keeps the cluster the render gave it.
    const plan = await runClusterstack([
      'plan',
      'examples/quickstart/manifests',
      'examples/cluster-requests/requests.yaml',
      '--release-source',
      EXAMPLE_RELEASES,
      '--scheduler-config',
      'examples/cluster-requests/scheduler.yaml',
      '--output',
      output,
      '--json',
    ]);
    expect(plan.code).toBe(0);
    const requests = JSON.parse(plan.stdout).clusterRequests;
    expect(requests.map((r: { assignment: string }) => r.assignment)).toEqual(['kept', 'kept', 'kept', 'kept']);
  });
});
