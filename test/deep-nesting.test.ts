// Documents nested as deep as Kubernetes reads them (10,000 levels) go through a whole render: the
// CLI runs the command again on a thread with a deep stack (src/cli/deep-stack.ts), and there every
// step holds. One level more is refused naming the file and line, with nothing written. Helm's
// output nesting deeper than the default stack reads, from inputs that do not, reruns too (render
// and plan), with nothing written before the rerun.
import { execFileSync } from 'node:child_process';
import { rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { DEEP_STACK_MB } from '../src/cli/deep-stack.js';
import {
  copyExampleReleases,
  EXAMPLE_MANIFESTS,
  EXAMPLE_RELEASES,
  readTree,
  tempDir,
  writeTree,
} from './support/cli.js';
import { removeCliBundle, runCliProcess } from './support/cli-process.js';
import { kubernetesDecode } from './support/kube-yaml-oracle.js';

const WORKER_DIR = path.join(
  import.meta.dirname,
  '..',
  'node_modules',
  '.cache',
  `clusterstack-deep-worker-${process.pid}`,
);
afterAll(async () => {
  await removeCliBundle();
  await rm(WORKER_DIR, { recursive: true, force: true });
});

const KUBERNETES_DEPTH = 10_000;
/** A flow list nesting `levels` levels, a scalar counting as one (as Kubernetes counts). */
const nested = (levels: number): string => `${'['.repeat(levels - 1)}1${']'.repeat(levels - 1)}`;

/**
 * The quick start's stack with addon values for its cni stage: `deep` holds `lists` nested flow
 * lists (Kubernetes reads up to 10,000 of them: go-yaml's "max depth"), below four mappings.
 */
function deepStack(lists: number, scalar = true): string {
  return `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: cluster-stacks}
spec:
  provider: docker
  name: ferrol
  kubernetesVersion: "1.30"
  noProvider: true
  versions: [v2]
  addonStageValues:
    cni:
      deep: ${scalar ? nested(lists + 1) : `${'['.repeat(lists)}${']'.repeat(lists)}`}
`;
}

const CLUSTER = `apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: alpha, namespace: cluster-stacks}
spec:
  clusterNetwork: {pods: {cidrBlocks: [10.1.0.0/16]}}
  controlPlaneEndpoint: {host: alpha.example.test, port: 6443}
  topology: {class: docker-ferrol-1-30-v2, version: v1.30.4}
`;

let workerFile: Promise<string> | undefined;

/** Reads `text` on a worker with the CLI's deep stack, as the deep run does (the worker bundled, as the CLI is for process tests). */
async function decodeOnDeepStack(
  text: string,
): Promise<{ json?: string; encoded?: string; jsonLength?: number; error?: string }> {
  workerFile ??= (async () => {
    // Inside the repository, so that its packages resolve (as the CLI bundle of cli-process.ts).
    const outfile = path.join(WORKER_DIR, 'deep-stack-decode-worker.mjs');
    await build({
      entryPoints: [path.join(import.meta.dirname, 'support/deep-stack-decode-worker.ts')],
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      outfile,
      logLevel: 'warning',
    });
    return outfile;
  })();
  const file = await workerFile;
  return new Promise((resolve, reject) => {
    const worker = new Worker(file, { workerData: text, resourceLimits: { stackSizeMb: DEEP_STACK_MB } });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

describe('nesting as deep as Kubernetes reads', () => {
  it(`reads ${KUBERNETES_DEPTH} levels on the deep stack as Kubernetes does, and writes them back with the same meaning`, async () => {
    const text = `a: ${nested(KUBERNETES_DEPTH - 1)}\n`; // a mapping, 9,998 lists and a scalar
    const ours = await decodeOnDeepStack(text);
    expect(ours.error).toBeUndefined();
    const [kubernetes] = await kubernetesDecode(text);
    expect(kubernetes).toEqual({ line: 1, json: ours.json });
    const [again] = await kubernetesDecode(ours.encoded!);
    expect(again).toEqual({ line: 1, json: ours.json });
  });

  it(`refuses ${KUBERNETES_DEPTH + 1} levels on the deep stack, as Kubernetes does`, async () => {
    const text = `${'['.repeat(KUBERNETES_DEPTH + 1)}${']'.repeat(KUBERNETES_DEPTH + 1)}\n`;
    expect((await decodeOnDeepStack(text)).error).toMatch(
      /YamlDecodeError: nests collections more than 10000 levels deep, which Kubernetes refuses too/,
    );
    expect(await kubernetesDecode(text)).toEqual([{ line: 1, error: 'yaml: exceeded max depth of 10000' }]);
  });

  it(`render publishes inputs nesting ${KUBERNETES_DEPTH} levels (values for helm)`, async () => {
    // Four mappings and 9,995 lists: 9,999 collections and a scalar, as deep as our reader and Kubernetes both read.
    const inputs = await writeTree({ 'stack.yaml': deepStack(KUBERNETES_DEPTH - 5), 'clusters.yaml': CLUSTER });
    const out = path.join(await tempDir(), 'out');
    const run = await runCliProcess(['render', inputs, '--release-source', EXAMPLE_RELEASES, '--output', out]);
    expect(run.code, run.stderr).toBe(0);
    const tree = await readTree(path.join(out, 'current'));
    expect(Object.keys(tree).some((file) => file.startsWith('clusters/cluster-stacks/alpha/cni/'))).toBe(true);
    // The values' digest is recorded: the deep values reached the unit.
    expect(tree['provenance.json']).toContain('"kind": "cluster-stage"');
  }, 240_000);

  it("render and plan run again on the deep stack when only helm's output nests deeper than the default stack reads, nothing written before", async () => {
    // Shallow inputs; release v2's ClusterClass chart prints a field nesting 1,500 lists (sprig's repeat).
    const levels = 1500;
    const releases = await copyExampleReleases();
    const chart = path.join(releases, 'docker-ferrol-1-30-v2', 'docker-ferrol-1-30-cluster-class-v2');
    await writeFile(
      path.join(chart, 'templates', 'deep.yaml'),
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndeep: {{ repeat ${levels - 1} "[" }}1{{ repeat ${levels - 1} "]" }}\n`,
    );
    const repository = path.join(await tempDir(), 'fleet');
    const args = [EXAMPLE_MANIFESTS, '--release-source', releases, '--git', repository, '--json'];
    const env = { CLUSTERSTACK_TIMINGS: '1' };
    const run = await runCliProcess(['render', ...args], { env });
    expect(run.code, run.stderr).toBe(0);
    // Two runs' timings: the one on the default stack ended while rendering (no publish), the deep one published.
    const timings = run.stderr.split('\n').filter((line) => line.startsWith('timings:'));
    expect(timings).toHaveLength(2);
    expect(timings.filter((line) => / publish=/.test(line))).toHaveLength(1);
    expect(run.stderr).not.toMatch(/deep stack/);
    // One commit: the first run wrote nothing; what was published reads in Kubernetes as helm printed it.
    expect(execFileSync('git', ['-C', repository, 'rev-list', '--count', 'main'], { encoding: 'utf8' }).trim()).toBe(
      '1',
    );
    const file = execFileSync(
      'git',
      ['-C', repository, 'show', 'main:management/cluster-stacks/docker-ferrol-1-30-v2/configmap-deep.yaml'],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    const [document] = await kubernetesDecode(file);
    expect(document).toHaveProperty('json');
    expect((document as { json: string }).json).toContain(`"deep":${'['.repeat(levels - 1)}1${']'.repeat(levels - 1)}`);

    // plan's look at what render would withhold reruns too, instead of warning that it could not check.
    const plan = await runCliProcess(['plan', ...args], { env });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stderr).not.toMatch(/not checked|deep stack/);
    expect(plan.stderr.split('\n').filter((line) => line.startsWith('timings:'))).toHaveLength(2);
    const report = JSON.parse(plan.stdout) as { units: { decision: string }[]; withheld: { kind: string }[] };
    // The deep release renders and is reused: nothing of it is foreseen as withheld.
    expect(report.units.filter((unit) => unit.decision === 'render')).toEqual([]);
    expect(report.withheld.filter((entry) => entry.kind === 'release')).toEqual([]);
    await rm(releases, { recursive: true, force: true });
  }, 240_000);

  it(`render refuses ${KUBERNETES_DEPTH + 1} levels naming file and line, and writes nothing`, async () => {
    const inputs = await writeTree({ 'stack.yaml': deepStack(KUBERNETES_DEPTH + 1, false), 'clusters.yaml': CLUSTER });
    const out = path.join(await tempDir(), 'out');
    const run = await runCliProcess(['render', inputs, '--release-source', EXAMPLE_RELEASES, '--output', out]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /stack\.yaml:12: is not valid YAML: nests collections more than 10000 levels deep, which Kubernetes refuses too/,
    );
    expect(run.stderr).not.toMatch(/\n {4}at /);
    await expect(stat(out)).rejects.toThrow();
  }, 240_000);
});
