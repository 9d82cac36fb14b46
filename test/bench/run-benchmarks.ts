// `npm run bench`: speed and cost targets as ratios against baselines measured in the same run.
// Not a test: it prints numbers and whether each target holds (exit code 0 either way).
//
//   npm run bench                     all benchmarks, 200 clusters
//   npm run bench -- --clusters 50    fewer clusters
//   npm run bench -- --only render    one benchmark (startup | heavy | render | scale | github | controller | shards)
//   npm run bench -- --heavy-clusters 24   clusters of the real-weight scenario (default 48)
//   npm run bench -- --heavy-shape dense   every template of the CNI chart renders (ten times a real chart's output)
//   npm run bench -- --only shards --helm-seconds 1.5   the sharding benchmark's fixed helm cost (default 0.5 s)
//   npm run bench -- --only shards --shards-api fake    its API servers (default fake,real: both, one after the other)
//
// startup, heavy, scale and controller run the built CLI (dist/): run `npm run build` first.
// The controller benchmark runs `clusterstack controller` as its own process against a fake API
// server in this one; CSK_BENCH_LOG=<file> keeps its debug log (reconcile phases and their times),
// CSK_BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=<dir>' profiles it. Its heap is the one Node sizes
// under the shipped Deployment's memory limit (deployedHeapMiB); CSK_BENCH_HOST_HEAP=1 lets Node size
// it from this machine's memory instead.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DirectoryPublisher } from '../../gitops/directory-publisher.js';
import { createHelmDependencies } from '../../renderers/helm-dependencies.js';
import { resolveHelmBinary } from '../../renderers/helm-binary.js';
import { readInputFiles } from '../../src/inputs/read-input-files.js';
import type { ParsedManifests, SourcedObject } from '../../src/inputs/parse-manifests.js';
import { buildPlan, loadedRelease, type Plan } from '../../src/plan/build-plan.js';
import { compareTrees, summarizeChanges } from '../../src/output/tree-changes.js';
import { readPublishedState } from '../../src/output/published-state.js';
import { renderPlan } from '../support/render-plan.js';
import { createSourceOpener } from '../../src/sources/open-release-source.js';
import { startFakeGitHub } from '../support/fake-github/index.js';
import { assertCliBuilt, startCli } from './cli-runs.js';
import { benchHeavy } from './heavy-render-bench.js';
import { heavyShape } from './heavy-stack.js';
import { benchScale } from './scale-bench.js';
import { benchShards } from './shards-bench.js';
import { benchStartup } from './startup-bench.js';
import { checkCrdRules } from '../support/crd-rule-check.js';

const { values } = parseArgs({
  options: {
    clusters: { type: 'string', default: '200' },
    'heavy-clusters': { type: 'string', default: '48' },
    'heavy-shape': { type: 'string', default: 'released' },
    only: { type: 'string' },
    'helm-seconds': { type: 'string', default: '0.5' },
    'shards-api': { type: 'string', default: 'fake,real' },
  },
});
const CLUSTERS = Number(values.clusters);
const EXAMPLE = path.resolve('examples/quickstart');
const RELEASES = ['docker-ferrol-1-30-v1', 'docker-ferrol-1-30-v2', 'docker-ferrol-1-30-v3'];
// The Kubernetes version each release is for (its metadata.yaml): a Cluster on another is withheld.
const RELEASE_KUBERNETES = ['v1.30.2', 'v1.30.4', 'v1.30.4'];

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function verdict(name: string, ratio: number, target: number, better: 'below' = 'below'): string {
  const holds = better === 'below' ? ratio <= target : ratio >= target;
  return `  ${holds ? 'PASS' : 'FAIL'}  ${name}: ${ratio.toFixed(3)} (target <= ${target})`;
}

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const start = performance.now();
  const result = await work();
  return { result, ms: performance.now() - start };
}

/** The example's ClusterStack and `count` Clusters spread over its three releases. */
async function syntheticManifests(
  count: number,
  changedHost?: { index: number; host: string },
): Promise<ParsedManifests> {
  const base = await readInputFiles([path.join(EXAMPLE, 'manifests', 'clusterstack.yaml')]);
  const objects: SourcedObject[] = [...base.objects];
  for (let index = 0; index < count; index += 1) {
    const host = changedHost?.index === index ? changedHost.host : `10.0.${Math.floor(index / 250)}.${index % 250}`;
    objects.push({
      source: `synthetic:${index}`,
      object: {
        apiVersion: 'cluster.x-k8s.io/v1beta1',
        kind: 'Cluster',
        metadata: { name: `cluster-${String(index).padStart(4, '0')}`, namespace: 'cluster-stacks' },
        spec: {
          clusterNetwork: { pods: { cidrBlocks: ['192.168.0.0/16'] }, services: { cidrBlocks: ['10.128.0.0/12'] } },
          controlPlaneEndpoint: { host, port: 6443 },
          topology: { class: RELEASES[index % RELEASES.length], version: RELEASE_KUBERNETES[index % RELEASES.length] },
        },
      },
    });
  }
  return { objects, problems: [] };
}

async function planFor(manifests: ParsedManifests, workDir: string): Promise<Plan> {
  return buildPlan({
    manifests,
    defaultSource: path.join(EXAMPLE, 'releases'),
    openSource: createSourceOpener({ cacheDir: workDir }),
    workDir,
    checkCrdRules,
  });
}

async function renderOnce(
  manifests: ParsedManifests,
  publisher: DirectoryPublisher,
  workDir: string,
  helm: ReturnType<typeof createHelmDependencies>,
): Promise<{ ms: number; helm: number; rendered: number }> {
  const before = helm.processesSpawned();
  const { ms, result } = await timed(async () => {
    const plan = await planFor(manifests, workDir);
    const previous = await publisher.readPrevious();
    const outcome = await renderPlan(plan, helm, { secrets: 'refuse', previous });
    await publisher.publish(
      outcome.tree,
      summarizeChanges(
        compareTrees(readPublishedState(previous), { tree: outcome.tree, provenance: outcome.provenance }),
        outcome.provenance.inputDigest,
      ),
    );
    return outcome;
  });
  return { ms, helm: helm.processesSpawned() - before, rendered: result.stats.unitsRendered };
}

/** One `helm template` per cluster per chart, one after another, each writing its output: what a script would do. */
async function naiveBaseline(
  plan: Plan,
  outDir: string,
  helmBinary: string,
): Promise<{ ms: number; processes: number }> {
  let processes = 0;
  const helmHome = await mkdtemp(path.join(os.tmpdir(), 'csk-naive-helm-'));
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: helmHome,
    HELM_CACHE_HOME: helmHome,
    HELM_CONFIG_HOME: helmHome,
    HELM_DATA_HOME: helmHome,
  };
  const run = (args: string[], file: string): Promise<void> =>
    new Promise((resolve, reject) => {
      processes += 1;
      const child = spawn(helmBinary, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      const chunks: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0
          ? writeFile(file, Buffer.concat(chunks)).then(resolve, reject)
          : reject(new Error(`helm exited ${code}`)),
      );
    });
  const { ms } = await timed(async () => {
    for (const cluster of plan.resolution.clusters.filter((c) => c.managed && c.release)) {
      const content = loadedRelease(plan, cluster.namespace, cluster.release)!.content!;
      const host = (cluster.cluster.spec?.controlPlaneEndpoint as { host?: string } | undefined)?.host ?? '';
      const dir = path.join(outDir, cluster.name);
      await mkdir(dir, { recursive: true });
      // The baseline gets its values for free (no template evaluation): it is a lower bound.
      const valuesFile = path.join(dir, 'values.yaml');
      const charts =
        content.addons.format === 'legacy'
          ? [{ name: 'cluster-addon', dir: content.addons.chart.dir }]
          : content.addons.stages.filter((s) => s.chart).map((s) => ({ name: s.name, dir: s.chart!.dir }));
      await writeFile(
        valuesFile,
        JSON.stringify({
          clusterName: cluster.name,
          apiServerHost: host,
          cni: { clusterName: cluster.name },
          'metrics-server': { apiServerHost: host },
        }),
      );
      for (const chart of charts) {
        await run(
          [
            'template',
            'cluster-addon',
            chart.dir,
            '--namespace',
            'kube-system',
            '--include-crds',
            '--kube-version',
            `v${content.metadata.kubernetesVersion}`,
            '-f',
            valuesFile,
          ],
          path.join(dir, `${chart.name}.yaml`),
        );
      }
    }
  });
  return { ms, processes };
}

async function benchRender(): Promise<void> {
  console.log(
    `\n== render: ${CLUSTERS} clusters over ${RELEASES.length} releases (${os.availableParallelism()} cores) ==`,
  );
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'csk-bench-'));
  const helm = createHelmDependencies({ workDir: path.join(workDir, 'helm') });
  const publisher = new DirectoryPublisher(path.join(workDir, 'out'));
  const manifests = await syntheticManifests(CLUSTERS);

  const full = await renderOnce(manifests, publisher, workDir, helm);
  const noop = await renderOnce(manifests, publisher, workDir, helm);
  const changed = await renderOnce(
    await syntheticManifests(CLUSTERS, { index: 7, host: '10.99.99.99' }),
    publisher,
    workDir,
    helm,
  );
  const maxRssMiB = process.resourceUsage().maxRSS / 1024;
  const binary = await resolveHelmBinary({});
  const naive = await naiveBaseline(await planFor(manifests, workDir), path.join(workDir, 'naive'), binary.path);

  console.log(
    `  full render:          ${seconds(full.ms)}, ${full.helm} helm processes, ${full.rendered} units rendered`,
  );
  console.log(`  no-op re-render:      ${seconds(noop.ms)}, ${noop.helm} helm processes`);
  console.log(
    `  one cluster changed:  ${seconds(changed.ms)}, ${changed.helm} helm processes, ${changed.rendered} units rendered`,
  );
  console.log(
    `  naive baseline:       ${seconds(naive.ms)}, ${naive.processes} helm processes (sequential, values given for free)`,
  );
  console.log(`  peak memory (node):   ${maxRssMiB.toFixed(0)} MiB`);
  console.log(verdict('no-op re-render / full render', noop.ms / full.ms, 0.05));
  console.log(`  ${noop.helm === 0 ? 'PASS' : 'FAIL'}  no-op re-render spawns zero helm processes: ${noop.helm}`);
  console.log(verdict('one changed cluster / full render', changed.ms / full.ms, 0.1));
  console.log(verdict('full render / naive baseline', full.ms / naive.ms, 0.7));
}

async function benchGitHub(): Promise<void> {
  const stacks = 20;
  const releases = 100;
  console.log(`\n== GitHub polling: ${stacks} ClusterStacks on one repository with ${releases} releases ==`);
  const github = await startFakeGitHub();
  try {
    const metadata = (version: string): string =>
      `apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\nversions:\n  clusterStack: ${version}\n  kubernetes: v1.30.4\n  components:\n    clusterAddon: v1\n`;
    for (let index = 1; index <= releases; index += 1) {
      const minor = 11 + (index % stacks);
      github.addRelease('org', 'stacks', {
        tag: `docker-ferrol-1-${minor}-v${index}`,
        assets: [{ name: 'metadata.yaml', content: metadata(`v${index}`).replace('v1.30.4', `v1.${minor}.4`) }],
      });
    }
    const opener = createSourceOpener({
      cacheDir: await mkdtemp(path.join(os.tmpdir(), 'csk-bench-gh-')),
      githubApiUrl: github.apiUrl,
    });
    const cycle = async (): Promise<{ requests: number; counted: number }> => {
      github.clearRequests();
      // A poll cycle: every stack asks for the releases of its (shared) source.
      const source = opener('github:org/stacks');
      const listings = new Map<string, Promise<unknown>>();
      for (let stack = 0; stack < stacks; stack += 1) {
        if (!listings.has('github:org/stacks')) listings.set('github:org/stacks', source.list());
        await listings.get('github:org/stacks');
      }
      return { requests: github.requests.length, counted: github.requests.filter((r) => r.counted).length };
    };
    const first = await cycle();
    const second = await cycle();
    console.log(`  first cycle:   ${first.requests} HTTP requests, ${first.counted} counted against the rate limit`);
    console.log(`  second cycle:  ${second.requests} HTTP requests, ${second.counted} counted against the rate limit`);
    console.log(
      `  ${second.requests === 1 && second.counted === 0 ? 'PASS' : 'FAIL'}  second cycle of an unchanged repository: one conditional request, zero rate limit`,
    );
  } finally {
    await github.close();
  }
}

/** A loose ref's commit id ('' when there is none: the branch is missing, or its ref packed). */
function readRefFile(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

/**
 * Whether the controller's last reconcile (its debug log) has ended: a loaded machine may still be
 * computing one that writes nothing (the no-op round after the first), and a change made then would
 * wait for it and be measured with it.
 */
function reconcileIdle(logFile: string): boolean {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return false;
  }
  const lines = text.trimEnd().split('\n');
  for (let index = lines.length - 1; index >= 0; index -= 1) {
    let line: { reconcile?: number; msg?: string };
    try {
      line = JSON.parse(lines[index]!) as typeof line;
    } catch {
      continue;
    }
    if (line.reconcile === undefined) continue;
    return line.msg === 'Reconciled' || line.msg === 'Waiting for newly watched kinds to list';
  }
  return false;
}

/** Polls until `check` holds; returns the time it took. */
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 300_000): Promise<number> {
  const start = performance.now();
  while (!(await check())) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return performance.now() - start;
}

/**
 * The V8 old-space size Node gives the controller in the shipped Deployment (deploy/base): Node
 * sizes the heap from the container's memory limit (the cgroup's), a quarter of it and at least
 * 256 MiB. On this machine it would size it from all of the host's memory instead, and let garbage
 * pile up to several times the live heap before collecting it.
 */
async function deployedHeapMiB(): Promise<{ limit: string; oldSpaceMiB: number }> {
  const manifest = await readFile(path.resolve('deploy/base/deployment.yaml'), 'utf8');
  const limit = /limits:\s*\n(?:\s+\w+:.*\n)*?\s+memory:\s*"?(\d+)(Mi|Gi)"?/.exec(manifest);
  if (!limit) throw new Error('deploy/base/deployment.yaml: no memory limit found for the controller container');
  const mib = Number(limit[1]) * (limit[2] === 'Gi' ? 1024 : 1);
  return { limit: `${limit[1]}${limit[2]}`, oldSpaceMiB: Math.max(256, Math.floor(mib / 4)) };
}

/**
 * The controller as the process a user runs (`clusterstack controller`, the built CLI) against the
 * fake API server in this process: the change-to-commit time, and the controller process's own peak
 * memory (the fake API server and its 2000 objects are not counted).
 */
async function benchController(): Promise<void> {
  assertCliBuilt();
  const stacks = 5;
  const clusters = values.clusters === '200' ? 2000 : CLUSTERS;
  console.log(
    `\n== controller: ${clusters} Clusters and ${stacks} ClusterStacks in the (fake) API, the controller as its own process ==`,
  );
  const { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } = await import('@kubernetes/client-node');
  const { startFakeKubeApi } = await import('../support/fake-kube-api/index.js');
  const { GitSandbox } = await import('../support/git-repos.js');
  const api = await startFakeKubeApi();
  const git = new GitSandbox();
  const work = await mkdtemp(path.join(os.tmpdir(), 'csk-bench-controller-'));
  const remote = git.bareRepo('gitops');
  const kubeConfig = api.kubeConfig();
  const kubeconfigFile = path.join(work, 'kubeconfig.yaml');
  await writeFile(kubeconfigFile, api.kubeConfigYaml());
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  for (let s = 0; s < stacks; s += 1) {
    const namespace = `fleet-${s}`;
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    api.seed({
      apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
      kind: 'ClusterStack',
      metadata: { name: 'ferrol', namespace },
      spec: { provider: 'docker', name: 'ferrol', kubernetesVersion: '1.30', versions: ['v2'], noProvider: true },
    });
  }
  for (let index = 0; index < clusters; index += 1) {
    api.seed({
      apiVersion: 'cluster.x-k8s.io/v1beta1',
      kind: 'Cluster',
      metadata: { name: `cluster-${index}`, namespace: `fleet-${index % stacks}` },
      spec: {
        clusterNetwork: { pods: { cidrBlocks: ['192.168.0.0/16'] } },
        controlPlaneEndpoint: { host: `10.1.${Math.floor(index / 250)}.${index % 250}`, port: 6443 },
        topology: { class: RELEASES[index % RELEASES.length], version: RELEASE_KUBERNETES[index % RELEASES.length] },
      },
    });
  }
  // Polled every 25 ms: git runs only when the branch's ref file changed, so the poll neither competes
  // with the controller (and its git) for CPU nor blocks the fake API server in this process.
  const branchRef = path.join(remote, 'refs', 'heads', 'main');
  let counted: { ref: string; commits: number } = { ref: '', commits: 0 };
  const packedRefs = path.join(remote, 'packed-refs');
  const commits = (): number => {
    const ref = readRefFile(branchRef);
    // No loose ref: the branch is not there yet, or its ref was packed (then git is asked every time).
    if (ref === '') return readRefFile(packedRefs).includes(' refs/heads/main') ? git.commitCount(remote, 'main') : 0;
    if (ref !== counted.ref) counted = { ref, commits: git.commitCount(remote, 'main') };
    return counted.commits;
  };
  const heap = await deployedHeapMiB();
  // The debug log (reconcile phases and their times) gives the change's breakdown; kept when CSK_BENCH_LOG names a file.
  const logFile = process.env.CSK_BENCH_LOG ?? path.join(work, 'controller.log');
  const started = performance.now();
  const controller = await startCli(
    [
      'controller',
      '--kubeconfig',
      kubeconfigFile,
      '--release-source',
      path.join(EXAMPLE, 'releases'),
      '--git',
      remote,
      '--metrics-addr',
      '0',
      '--log-level',
      'debug',
    ],
    { CLUSTERSTACK_CACHE_DIR: path.join(work, 'cache'), HOME: work },
    logFile,
    // CSK_BENCH_HOST_HEAP=1: the heap sized from this host's memory, as a process outside a container gets it.
    process.env.CSK_BENCH_HOST_HEAP ? [] : [`--max-old-space-size=${heap.oldSpaceMiB}`],
  );
  let stopped = false;
  try {
    // Every Cluster renders first: minutes on a loaded machine.
    await until(() => commits() >= 1, 'the first publish', 1_800_000);
    const firstPublishMs = performance.now() - started;
    // The first reconcile goes on after its commit (owned objects, 2000 statuses): the change is
    // measured once the controller has settled, i.e. every Cluster's ClusterAddon has a status, the
    // API has seen no write for two seconds (on a loaded machine the statuses are computed for
    // longer than that before the first one is written) and its last reconcile has ended.
    const writes = (): number => api.requests.filter((request) => request.method !== 'GET').length;
    const reported = (): boolean =>
      api
        .list('clusterstack.x-k8s.io/v1alpha1', 'ClusterAddon')
        .filter((addon) => (addon as { status?: unknown }).status !== undefined).length >= clusters;
    let lastWrites = writes();
    let quietSince = performance.now();
    await until(
      () => {
        const now = writes();
        if (now !== lastWrites) [lastWrites, quietSince] = [now, performance.now()];
        return performance.now() - quietSince >= 2000 && reported() && reconcileIdle(logFile);
      },
      'the first reconcile to settle',
      600_000,
    );
    const settledMs = performance.now() - started - 2000;
    const before = commits();
    // One Cluster's endpoint changes: the time until its commit lands.
    const { ms: ownRenderMs } = await timed(async () => {
      const single = await syntheticManifests(1);
      const helm = createHelmDependencies({ workDir: path.join(work, 'solo-helm') });
      await renderPlan(await planFor(single, path.join(work, 'solo')), helm, {
        secrets: 'refuse',
        previous: new Map(),
      });
    });
    const changeStarted = performance.now();
    const changeEpoch = Date.now();
    await custom.patchNamespacedCustomObject(
      {
        group: 'cluster.x-k8s.io',
        version: 'v1beta1',
        namespace: 'fleet-1',
        plural: 'clusters',
        name: 'cluster-1',
        body: { spec: { controlPlaneEndpoint: { host: '10.99.0.1', port: 6443 } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await until(() => commits() > before, 'the commit of the changed cluster');
    const changeMs = performance.now() - changeStarted;
    const exit = await controller.stop();
    stopped = true;
    const phases = changeBreakdown(await readFile(logFile, 'utf8'), changeEpoch);
    console.log(
      `  start to first complete publish: ${seconds(firstPublishMs)}; to the last status written: ${seconds(settledMs)}`,
    );
    console.log(
      `  one Cluster's change to its commit: ${seconds(changeMs)} (that cluster's own render, measured alone: ${seconds(ownRenderMs)})`,
    );
    if (phases)
      console.log(
        `    breakdown: ${seconds(phases.waitMs)} until its reconcile started (the batch window and the queue), then ${phases.phases.map(([name, ms]) => `${name} ${seconds(ms)}`).join(', ')}`,
      );
    console.log(
      `  controller heap: ${process.env.CSK_BENCH_HOST_HEAP ? "sized from this host's memory (CSK_BENCH_HOST_HEAP)" : `V8 old space ${heap.oldSpaceMiB} MiB, as Node sizes it under the shipped Deployment's memory limit (${heap.limit})`}`,
    );
    console.log(
      `  controller process: peak memory ${exit.maxRssMiB.toFixed(0)} MiB (live heap after a full collection at exit: ${exit.liveHeapMiB.toFixed(0)} MiB), CPU ${seconds(exit.cpuMs)}, exit code ${exit.code} on SIGTERM`,
    );
    console.log(
      `  ${changeMs <= 2000 + ownRenderMs ? 'PASS' : 'FAIL'}  change published within 2 s plus its own render: ${seconds(changeMs)} <= ${seconds(2000 + ownRenderMs)}`,
    );
    console.log(
      `  ${exit.maxRssMiB <= 400 ? 'PASS' : 'FAIL'}  controller memory at most 400 MiB: ${exit.maxRssMiB.toFixed(0)} MiB`,
    );
  } catch (error) {
    console.log(`  controller stderr:\n${controller.stderr().slice(-4000)}`);
    throw error;
  } finally {
    if (!stopped) await controller.stop();
    await api.close();
    git.cleanup();
  }
}

/**
 * From the controller's debug log: the reconcile that published the change made at `changeEpoch`,
 * how long after the change it started, and its phases (read target, plan, render, publish) in order.
 */
function changeBreakdown(
  log: string,
  changeEpoch: number,
): { waitMs: number; phases: Array<[string, number]> } | undefined {
  type Line = { time: number; reconcile?: number; phase?: string; ms?: number; msg?: string };
  const lines = log.split('\n').flatMap((line): Line[] => {
    try {
      return [JSON.parse(line) as Line];
    } catch {
      return [];
    }
  });
  const published = lines.find(
    (line) => line.msg === 'Published rendered manifests' && line.time >= changeEpoch && line.reconcile !== undefined,
  );
  if (!published) return undefined;
  const phases = lines.filter(
    (line) =>
      line.reconcile === published.reconcile &&
      line.phase !== undefined &&
      line.ms !== undefined &&
      line.phase !== 'apply',
  );
  if (phases.length === 0) return undefined;
  const start = phases[0]!.time - phases[0]!.ms!;
  return { waitMs: start - changeEpoch, phases: phases.map((line) => [line.phase!, line.ms!]) };
}

const benchmarks: Record<string, () => Promise<void>> = {
  startup: benchStartup,
  heavy: () => benchHeavy(Number(values['heavy-clusters']), heavyShape(values['heavy-shape'])),
  render: benchRender,
  scale: () => benchScale(),
  github: benchGitHub,
  controller: benchController,
  shards: () =>
    benchShards(
      values.clusters === '200' ? 60 : CLUSTERS,
      Number(values['helm-seconds']),
      values['shards-api'].split(',') as ('fake' | 'real')[],
    ),
};
// Every work directory of this run (os.tmpdir() reads TMPDIR on each call) in one, removed at the end.
const scratch = await mkdtemp(path.join(os.tmpdir(), 'csk-bench-run-'));
process.env.TMPDIR = scratch;
try {
  for (const [name, run] of Object.entries(benchmarks)) {
    if (values.only && values.only !== name) continue;
    await run();
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}
