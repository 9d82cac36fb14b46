// The real-weight render benchmark: N clusters on a generated release with a CNI-sized chart
// (heavy-stack.ts), rendered by the CLI process a user runs (full, no-op, one cluster changed), by
// a naive sequential `helm template` loop over the same charts, and by the same helm processes run
// as the renderer runs them with nothing else done (the floor), in one run; the floor and the full
// render twice each, in turns, so that a load that drifts meets both alike. An in-process full
// render, with every helm process timed, shows where the time goes.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DirectoryPublisher } from '../../gitops/directory-publisher.js';
import { describeHelm, type HelmBinary, resolveHelmBinary } from '../../renderers/helm-binary.js';
import { DEFAULT_HELM_CONCURRENCY } from '../../renderers/helm-dependencies.js';
import { HelmRenderer } from '../../renderers/helm-renderer.js';
import { HELM_GO_RUNTIME, HelmRunner, type HelmRunOptions, VALUES_PRIORITY } from '../../renderers/helm-runner.js';
import { evaluateValuesTemplates } from '../../renderers/values-template.js';
import { readInputFiles } from '../../src/inputs/read-input-files.js';
import { buildPlan } from '../../src/plan/build-plan.js';
import { compareTrees, summarizeChanges } from '../../src/output/tree-changes.js';
import { readPublishedState } from '../../src/output/published-state.js';
import type { RenderDependencies } from '../../src/render/render-dependencies.js';
import { renderPlan } from '../support/render-plan.js';
import { createSourceOpener } from '../../src/sources/open-release-source.js';
import { encodeYaml } from '../../src/yaml/kube-yaml.js';
import { assertCliBuilt, childrenCpuMs, runCliOk, type CliRun } from './cli-runs.js';
import { HEAVY_CLASS, type HeavyShape, writeHeavyRelease } from './heavy-stack.js';
import { checkCrdRules } from '../support/crd-rule-check.js';

/** Floor and full render are each measured this many times, in turns (see benchHeavy). */
const ROUNDS = 2;

/** One turn of the floor and the full render, each with the load average when it started. */
interface Round {
  floor: { ms: number; cpuMs: number; processes: number };
  floorLoad: number;
  full: CliRun;
  fullLoad: number;
}

/** The phases of a CLI run (CLUSTERSTACK_TIMINGS=1 prints them on stderr), as the run printed them. */
function phaseTimings(run: CliRun): string {
  return /^timings: (.*)$/m.exec(run.stderr)?.[1] ?? '(no timings line)';
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const verdict = (name: string, value: number, target: number): string =>
  `  ${value <= target ? 'PASS' : 'FAIL'}  ${name}: ${value.toFixed(3)} (target <= ${target})`;

function clusterObject(index: number, host: string): Record<string, unknown> {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name: `cluster-${String(index).padStart(4, '0')}`, namespace: 'cluster-stacks' },
    spec: {
      clusterNetwork: {
        pods: { cidrBlocks: [`10.${index % 250}.0.0/16`] },
        services: { cidrBlocks: ['10.128.0.0/12'] },
      },
      controlPlaneEndpoint: { host, port: 6443 },
      topology: { class: HEAVY_CLASS, version: 'v1.30.4' },
    },
  };
}

async function writeInputs(
  dir: string,
  clusterStack: Record<string, unknown>,
  count: number,
  changed?: number,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const docs = [
    clusterStack,
    ...Array.from({ length: count }, (_, i) =>
      clusterObject(i, i === changed ? '10.99.99.99' : `10.0.${Math.floor(i / 250)}.${i % 250}`),
    ),
  ];
  await writeFile(path.join(dir, 'fleet.yaml'), docs.map((doc) => encodeYaml(doc)).join('---\n'));
}

/**
 * The same `helm template` per cluster and stage as a script would run, values given for free.
 * Sequential with Go's defaults, it is the naive loop; with the runner's processes in flight and
 * its Go settings, it is the floor: what helm alone costs this run, with nothing of ours around it.
 */
async function helmLoop(
  helm: string,
  releaseDir: string,
  count: number,
  outDir: string,
  { inFlight, goRuntime }: { inFlight: number; goRuntime: Readonly<Record<string, string>> },
): Promise<{ ms: number; cpuMs: number; processes: number }> {
  const helmHome = await mkdtemp(path.join(os.tmpdir(), 'csk-naive-helm-'));
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: helmHome,
    HELM_CACHE_HOME: helmHome,
    HELM_CONFIG_HOME: helmHome,
    HELM_DATA_HOME: helmHome,
    ...goRuntime,
  };
  const addons = path.join(releaseDir, 'docker-heavy-1-30-cluster-addon-v1');
  const jobs: { args: string[]; file: string }[] = [];
  for (let index = 0; index < count; index += 1) {
    const name = `cluster-${String(index).padStart(4, '0')}`;
    const dir = path.join(outDir, name);
    await mkdir(dir, { recursive: true });
    const values = path.join(dir, 'values.yaml');
    await writeFile(
      values,
      JSON.stringify({
        clusterName: name,
        podCIDR: `10.${index % 250}.0.0/16`,
        hubble: { clusterName: name },
        operator: { clusterName: name },
        apiServerHost: `10.0.${Math.floor(index / 250)}.${index % 250}`,
      }),
    );
    for (const stage of ['cni', 'metrics-server']) {
      jobs.push({
        args: [
          'template',
          'cluster-addon',
          path.join(addons, stage),
          '--namespace',
          'kube-system',
          '--include-crds',
          '--kube-version',
          'v1.30.4',
          '-f',
          values,
        ],
        file: path.join(dir, `${stage}.yaml`),
      });
    }
  }
  const run = ({ args, file }: { args: string[]; file: string }): Promise<void> =>
    new Promise((resolve, reject) => {
      const child = spawn(helm, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      const chunks: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0
          ? writeFile(file, Buffer.concat(chunks)).then(resolve, reject)
          : reject(new Error(`helm exited ${code}`)),
      );
    });
  const cpuBefore = childrenCpuMs();
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < jobs.length) await run(jobs[next++]!);
    }),
  );
  return { ms: performance.now() - start, cpuMs: childrenCpuMs() - cpuBefore, processes: jobs.length };
}

/** The helm processes of one kind: how many, their own time summed, and the time one or more of them ran. */
class ProcessTimes {
  readonly spans: [number, number][] = [];
  add(end: number, elapsedMs: number): void {
    this.spans.push([end - elapsedMs, end]);
  }
  get count(): number {
    return this.spans.length;
  }
  get busyMs(): number {
    return this.spans.reduce((sum, [start, end]) => sum + end - start, 0);
  }
  /** The union of the spans, within [from, to]. */
  wallMs(from = -Infinity, to = Infinity): number {
    let total = 0;
    let reach = -Infinity;
    for (const [start, end] of [...this.spans].sort((a, b) => a[0] - b[0])) {
      const s = Math.max(start, reach, from);
      const e = Math.min(end, to);
      if (e > s) total += e - s;
      reach = Math.max(reach, end);
    }
    return total;
  }
}

/** A runner that records each helm process's own time (spawn to exit), values and charts apart. */
class TimedRunner extends HelmRunner {
  readonly values = new ProcessTimes();
  readonly charts = new ProcessTimes();
  override async run(args: readonly string[], options: HelmRunOptions): ReturnType<HelmRunner['run']> {
    const result = await super.run(args, options);
    (options.priority === VALUES_PRIORITY ? this.values : this.charts).add(performance.now(), result.elapsedMs);
    return result;
  }
}

/** A full render in this process with every helm process timed: plan, values, helm and write times. */
async function breakdown(helm: string, inputs: string, releases: string, work: string): Promise<string[]> {
  const runner = new TimedRunner({
    binary: helm,
    workDir: path.join(work, 'helm'),
    concurrency: DEFAULT_HELM_CONCURRENCY,
  });
  const renderer = new HelmRenderer(runner);
  const deps: RenderDependencies = {
    evaluateValues: (items, kubeVersion) => evaluateValuesTemplates(runner, items, kubeVersion),
    renderChart: (request) => renderer.renderChart(request),
  };
  const publisher = new DirectoryPublisher(path.join(work, 'out'));
  const start = performance.now();
  const manifests = await readInputFiles([inputs]);
  const plan = await buildPlan({
    manifests,
    defaultSource: releases,
    openSource: createSourceOpener({ cacheDir: path.join(work, 'cache') }),
    workDir: path.join(work, 'cache'),
    checkCrdRules,
  });
  const planned = performance.now();
  const previous = await publisher.readPrevious();
  const outcome = await renderPlan(plan, deps, { secrets: 'refuse', previous });
  const rendered = performance.now();
  await publisher.publish(
    outcome.tree,
    summarizeChanges(
      compareTrees(readPublishedState(previous), { tree: outcome.tree, provenance: outcome.provenance }),
      outcome.provenance.inputDigest,
    ),
  );
  const end = performance.now();
  const renderMs = rendered - planned;
  const cores = os.availableParallelism();
  const { values, charts } = runner;
  const firstChart = Math.min(...charts.spans.map(([from]) => from));
  const lastChart = Math.max(...charts.spans.map(([, to]) => to));
  return [
    `  where the time goes (in-process full render, ${seconds(end - start)}; helm times are each process's own, spawn to exit):`,
    `    plan (inputs, releases):   ${seconds(planned - start)}`,
    `    render:                    ${seconds(renderMs)}`,
    `      values (helm):           ${values.count} processes, ${seconds(values.busyMs)} in all, ${seconds(values.wallMs(firstChart, lastChart))} of it while charts rendered`,
    `      charts (helm):           ${charts.count} processes, ${seconds(charts.busyMs)} in all, ${seconds(charts.wallMs())} with one or more running`,
    `      before the first chart:  ${seconds(firstChart - planned)} (reading the previous output, planning units, the first values)`,
    `      after the last chart:    ${seconds(rendered - lastChart)} (reading the last output, placing shared objects, the README and records)`,
    `    write (publish):           ${seconds(end - rendered)}`,
    `    helm processes at once:    ${(charts.busyMs / Math.max(1, charts.wallMs())).toFixed(2)} on average while charts render (${DEFAULT_HELM_CONCURRENCY} allowed, ${cores} cores)`,
  ];
}

/** `npm run bench -- --only heavy [--heavy-clusters 48] [--heavy-shape released|dense]`. */
export async function benchHeavy(count: number, { name, shape }: { name: string; shape: HeavyShape }): Promise<void> {
  assertCliBuilt();
  const cores = os.availableParallelism();
  console.log(
    `\n== real-weight render: ${count} clusters on a generated CNI-sized release, shape "${name}" (${cores} cores) ==`,
  );
  // One helm for the floor, the CLI and the in-process render: the one the CLI would choose from
  // this PATH (under \`npm run\`, node_modules/.bin comes first: the bundled helm), given to the CLI
  // by CLUSTERSTACK_HELM so that nothing else can pick another.
  const helm: HelmBinary = await resolveHelmBinary({ pathEnv: process.env.PATH ?? '' });
  console.log(`  helm:                 ${describeHelm(helm)}, for the floor, the naive loop and every render`);
  const work = await mkdtemp(path.join(os.tmpdir(), 'csk-bench-heavy-'));
  const { releases, clusterStack } = await writeHeavyRelease(path.join(work, 'releases'), shape);
  const inputs = path.join(work, 'inputs');
  await writeInputs(inputs, clusterStack, count);
  const fullArgs = (dir: string, round: number): string[] => [
    'render',
    inputs,
    '--release-source',
    releases,
    '--output',
    path.join(dir, `out-${round}`),
    '--json',
  ];

  const releaseDir = path.join(releases, 'docker-heavy-1-30-v1');
  const naive = await helmLoop(helm.path, releaseDir, count, path.join(work, 'naive'), { inFlight: 1, goRuntime: {} });
  // The floor and the full render, measured in turns (floor, full, floor, full): on a shared machine
  // the load drifts within minutes, and one of each measured a minute apart compares two machines.
  // Each full render starts from nothing (its own output and cache directories), as the first one does.
  const rounds: Round[] = [];
  for (let round = 1; round <= ROUNDS; round += 1) {
    const floorLoad = os.loadavg()[0]!;
    const floor = await helmLoop(helm.path, releaseDir, count, path.join(work, `floor-${round}`), {
      inFlight: DEFAULT_HELM_CONCURRENCY,
      goRuntime: HELM_GO_RUNTIME,
    });
    const fullLoad = os.loadavg()[0]!;
    const full = await runCliOk(fullArgs(work, round), {
      CLUSTERSTACK_CACHE_DIR: path.join(work, `cache-${round}`),
      CLUSTERSTACK_HELM: helm.path,
      CLUSTERSTACK_TIMINGS: '1',
    });
    rounds.push({ floor, floorLoad, full, fullLoad });
  }
  // Each at its least disturbed: the fastest floor against the fastest full render.
  const floor = rounds.reduce((best, round) => (round.floor.ms < best.ms ? round.floor : best), rounds[0]!.floor);
  const full = rounds.reduce((best, round) => (round.full.ms < best.ms ? round.full : best), rounds[0]!.full);
  const args = fullArgs(work, ROUNDS);
  const env = {
    CLUSTERSTACK_CACHE_DIR: path.join(work, `cache-${ROUNDS}`),
    CLUSTERSTACK_HELM: helm.path,
    CLUSTERSTACK_TIMINGS: '1',
  };
  const noop = await runCliOk(args, env);
  await writeInputs(inputs, clusterStack, count, 7);
  const changed = await runCliOk(args, env);
  const report = (run: { stdout: string }): { helmProcesses: number; units: unknown } =>
    JSON.parse(run.stdout) as { helmProcesses: number; units: unknown };
  await writeInputs(inputs, clusterStack, count);
  const lines = await breakdown(helm.path, inputs, releases, path.join(work, 'in-process'));
  const cniRender = await readFile(path.join(work, 'naive', 'cluster-0000', 'cni.yaml'));
  const objects = cniRender.toString('utf8').split(/^kind: /m).length - 1;
  console.log(`  chart weight:         ${objects} objects, ${(cniRender.length / 1024).toFixed(0)} KiB per CNI render`);
  const cpu = (run: CliRun): string =>
    `CPU ${seconds(run.cpuMs.node)} node (${seconds(run.nodeSystemMs)} of it in the kernel) + ${seconds(run.cpuMs.children)} helm`;
  console.log(
    `  load average:         ${os.loadavg()[0]!.toFixed(1)} on ${cores} cores (wall times mean little above the core count; CPU times still do)`,
  );
  console.log(
    `  naive loop:           ${seconds(naive.ms)}, ${naive.processes} helm processes (sequential, values given for free), CPU ${seconds(naive.cpuMs)} helm`,
  );
  for (const [index, round] of rounds.entries()) {
    console.log(
      `  round ${index + 1}: floor ${seconds(round.floor.ms)} (load ${round.floorLoad.toFixed(1)}), full render ${seconds(round.full.ms)} (load ${round.fullLoad.toFixed(1)}): ${(round.full.ms / round.floor.ms).toFixed(3)} of the floor`,
    );
    // Each round's CPU against its own floor: CPU times move less with the load than wall times,
    // so the rounds of one run show how much of a ratio is the machine and how much the code.
    console.log(
      `           CPU: floor ${seconds(round.floor.cpuMs)} helm, full render ${seconds(round.full.cpuMs.node)} node (${seconds(round.full.nodeSystemMs)} kernel) + ${seconds(round.full.cpuMs.children)} helm: ${((round.full.cpuMs.node + round.full.cpuMs.children) / round.floor.cpuMs).toFixed(3)} of the floor's CPU`,
    );
    console.log(`           full render's phases: ${phaseTimings(round.full)}`);
  }
  console.log(
    `  helm alone, in flight: ${seconds(floor.ms)}, the same ${floor.processes} processes ${DEFAULT_HELM_CONCURRENCY} at a time with the runner's Go settings (values given for free, nothing else done), CPU ${seconds(floor.cpuMs)} helm`,
  );
  console.log(
    `  full render (CLI):    ${seconds(full.ms)}, ${report(full).helmProcesses} helm processes, peak ${full.maxRssMiB.toFixed(0)} MiB, ${cpu(full)}`,
  );
  console.log(
    `  no-op re-render:      ${seconds(noop.ms)}, ${report(noop).helmProcesses} helm processes, ${cpu(noop)}`,
  );
  console.log(
    `  one cluster changed:  ${seconds(changed.ms)}, ${report(changed).helmProcesses} helm processes, ${cpu(changed)}`,
  );
  // What a change costs besides its Cluster's helm: start-up, planning, reading and rewriting the tree.
  console.log(`           its phases: ${phaseTimings(changed)}`);
  for (const line of lines) console.log(line);
  console.log(verdict('full render / naive loop', full.ms / naive.ms, 0.5));
  console.log(
    `  info  helm alone, in flight / naive loop: ${(floor.ms / naive.ms).toFixed(3)} (the floor for this run: what the full render spends above it is ours)`,
  );
  console.log(
    verdict(`full render / helm alone in flight (the floor), fastest of ${ROUNDS} each`, full.ms / floor.ms, 1.05),
  );
  // Two busy cores share out CPU time, not wall time: a run's CPU (ours and helm's) against the
  // floor's is the ratio two otherwise idle cores would show while helm keeps both busy, and the
  // load of other processes does not move it. Serial time (start-up, the tail after the last chart)
  // comes on top of it on idle cores.
  const cpuRatio = (full.cpuMs.node + full.cpuMs.children) / floor.cpuMs;
  console.log(
    `  info  full render CPU / the floor's CPU: ${cpuRatio.toFixed(3)} (node ${seconds(full.cpuMs.node)}, helm ${seconds(full.cpuMs.children)}, against ${seconds(floor.cpuMs)}): two idle cores that helm keeps busy show at best this wall ratio`,
  );
  // On busy cores our own CPU displaces helm: about half of it (two cores) shows up as wall time.
  console.log(
    `  info  full render above the floor: ${seconds(full.ms - floor.ms)}; node's CPU spread over ${cores} cores is ${seconds(full.cpuMs.node / cores)}, helm's CPU beyond the floor's ${seconds((full.cpuMs.children - floor.cpuMs) / cores)}`,
  );
  // The target's wall time on every core, less what helm alone needed: all the CPU left for
  // everything else (Node's start, planning, values, reading and checking helm's output, writing).
  const budgetMs = 0.5 * naive.ms * cores - floor.cpuMs;
  console.log(
    `  info  CPU the 0.5 target leaves beside helm alone: ${seconds(budgetMs)} on ${cores} cores; this run spent ${seconds(full.cpuMs.node)} in node and ${seconds(full.cpuMs.children - floor.cpuMs)} more in helm`,
  );
  console.log(verdict('no-op re-render / full render', noop.ms / full.ms, 0.03));
  console.log(verdict('one changed cluster / full render', changed.ms / full.ms, 0.05));
  // What two cores could reach if nothing else ran: the run's CPU spread over both, against the loop's wall.
  const fullCpu = full.cpuMs.node + full.cpuMs.children;
  console.log(
    `  info  full render CPU / naive loop CPU: ${(fullCpu / naive.cpuMs).toFixed(3)}; on ${cores} idle cores at best ${(fullCpu / cores / naive.cpuMs).toFixed(3)} of the loop`,
  );
  console.log(`  info  no-op CPU / full render CPU: ${((noop.cpuMs.node + noop.cpuMs.children) / fullCpu).toFixed(3)}`);
  console.log(
    `  info  one change CPU / full render CPU: ${((changed.cpuMs.node + changed.cpuMs.children) / fullCpu).toFixed(3)} (a chain of serial steps: its wall ratio moves with the load, its CPU less)`,
  );
}
