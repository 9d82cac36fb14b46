// The controller meets objects as the API server serves them, up to Kubernetes' 10,000 levels: a
// ClusterStack whose addon values nest that deep (from the fake API server, which runs on a deep
// stack itself) reaches helm, and what the controller publishes reads in Kubernetes' own decoder
// (the Go oracle) exactly as the values were served. One level more, which a real API server never
// serves, withholds that stack's Cluster with the reason on the ClusterStack, and nothing else.
// The controller is the real process (the bundled CLI), as it runs: on its deep-stack thread.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { build } from 'esbuild';
import * as tar from 'tar';
import { afterAll, describe, expect, it } from 'vitest';
import { DEEP_STACK_MB } from '../src/cli/deep-stack.js';
import { copyExampleReleases } from './support/cli.js';
import { bundleCli, spawnController, type ControllerProcess } from './support/controller-process.js';
import { GitSandbox } from './support/git-repos.js';
import { kubernetesDecode } from './support/kube-yaml-oracle.js';

const WORK = await mkdtemp(path.join(os.tmpdir(), 'csk-deep-controller-'));
const git = new GitSandbox();
let controller: ControllerProcess | undefined;
let api: DeepApi | undefined;
const releasesDirs: string[] = [];
afterAll(async () => {
  await controller?.terminate();
  await api?.close();
  git.cleanup();
  for (const dir of [WORK, ...releasesDirs]) await rm(dir, { recursive: true, force: true });
});

/** Lists nested `lists` deep around a scalar, as JSON text. */
const nested = (lists: number): string => `${'['.repeat(lists)}1${']'.repeat(lists)}`;

/** The quick start's stack in `namespace`, its cni values holding `deep` (the object, spec, addonStageValues and cni are four levels). */
const stackJson = (namespace: string, lists: number): string =>
  `{"apiVersion":"clusterstack.x-k8s.io/v1alpha1","kind":"ClusterStack","metadata":{"name":"ferrol","namespace":"${namespace}"},"spec":{"provider":"docker","name":"ferrol","kubernetesVersion":"1.30","versions":["v2"],"noProvider":true,"addonStageValues":{"cni":{"deep":${nested(lists)}}}}}`;

const clusterJson = (namespace: string, name: string): string =>
  JSON.stringify({
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name, namespace },
    spec: {
      controlPlaneEndpoint: { host: `${name}.test`, port: 6443 },
      clusterNetwork: { pods: { cidrBlocks: ['10.0.0.0/16'] } },
      topology: { class: 'docker-ferrol-1-30-v2', version: 'v1.30.4' },
    },
  });

/** The fake API server on its deep-stack worker (support/deep-fake-kube-api-worker.ts). */
interface DeepApi {
  kubeConfigYaml: string;
  seed(json: string): Promise<void>;
  status(apiVersion: string, kind: string, namespace: string, name: string): Promise<string>;
  close(): Promise<void>;
}

async function startDeepApi(): Promise<DeepApi> {
  const outfile = path.join(import.meta.dirname, '..', 'node_modules', '.cache', `deep-fake-api-${process.pid}.mjs`);
  await build({
    entryPoints: [path.join(import.meta.dirname, 'support/deep-fake-kube-api-worker.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    outfile,
    logLevel: 'warning',
  });
  const worker = new Worker(outfile, { resourceLimits: { stackSizeMb: DEEP_STACK_MB } });
  let next = 0;
  const pending = new Map<number, (answer: { result?: string; error?: string }) => void>();
  const ready = new Promise<string>((resolve, reject) => {
    worker.on('message', (message: { ready?: string; id?: number; result?: string; error?: string }) => {
      if (message.ready !== undefined) resolve(message.ready);
      else pending.get(message.id!)?.(message);
    });
    worker.once('error', reject);
  });
  const ask = (request: Record<string, unknown>): Promise<string | undefined> =>
    new Promise((resolve, reject) => {
      const id = (next += 1);
      pending.set(id, (answer) => {
        pending.delete(id);
        if (answer.error !== undefined) reject(new Error(answer.error));
        else resolve(answer.result);
      });
      worker.postMessage({ id, ...request });
    });
  const kubeConfigYaml = await ready;
  return {
    kubeConfigYaml,
    seed: async (json) => void (await ask({ seed: json })),
    status: async (apiVersion, kind, namespace, name) =>
      (await ask({ status: { apiVersion, kind, namespace, name } })) ?? 'null',
    close: async () => {
      await ask({ close: true });
      await worker.terminate();
      await rm(outfile, { force: true });
    },
  };
}

/** The quick start's releases, v2's addon chart unpacked with a cni template that prints the values' `deep` as JSON. */
async function releasesPrintingDeepValues(): Promise<string> {
  const releases = await copyExampleReleases();
  releasesDirs.push(releases);
  const v2 = path.join(releases, 'docker-ferrol-1-30-v2');
  const archive = path.join(v2, 'docker-ferrol-1-30-cluster-addon-v2.tgz');
  const chart = path.join(v2, 'docker-ferrol-1-30-cluster-addon-v2');
  await mkdir(chart, { recursive: true });
  await tar.x({ file: archive, cwd: chart });
  await rm(archive);
  await writeFile(
    path.join(chart, 'cni', 'templates', 'deep.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep-values\ndeep: {{ toJson .Values.deep }}\n',
  );
  return releases;
}

/** Polls `check` every half second until it returns a value; throws naming `what` after `limitMs`. */
async function eventually<T>(check: () => Promise<T | undefined>, what: string, limitMs = 180_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('the controller with objects nested as deep as Kubernetes serves them', { timeout: 300_000 }, () => {
  it('publishes values 10,000 levels deep as Kubernetes reads them, and withholds a stack one level deeper with the reason', async () => {
    const bundle = bundleCli();
    api = await startDeepApi();
    for (const namespace of ['deep-ok', 'deep-over'])
      await api.seed(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }));
    // 4 + 9,995 lists + the scalar: 10,000 levels, as deep as the API server stores; one more list is past it.
    await api.seed(stackJson('deep-ok', 9995));
    await api.seed(clusterJson('deep-ok', 'alpha'));
    await api.seed(stackJson('deep-over', 9996));
    await api.seed(clusterJson('deep-over', 'bravo'));
    const bare = git.bareRepo('fleet');
    const kubeconfig = path.join(WORK, 'kubeconfig.yaml');
    await writeFile(kubeconfig, api.kubeConfigYaml);
    controller = spawnController(bundle, ['--git', bare, '--metrics-addr', '127.0.0.1:0'], {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: WORK,
      KUBECONFIG: kubeconfig,
      CLUSTERSTACK_CACHE_DIR: path.join(WORK, 'cache'),
      CLUSTERSTACK_RELEASE_SOURCE: await releasesPrintingDeepValues(),
      CLUSTERSTACK_BATCH_WINDOW: '50ms',
    });

    const file = 'clusters/deep-ok/alpha/cni/configmap-deep-values.yaml';
    const published = await eventually(async () => {
      try {
        return execFileSync('git', ['--git-dir', bare, 'show', `main:${file}`], {
          encoding: 'utf8',
          maxBuffer: 64 * 1024 * 1024,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
      } catch {
        return undefined;
      }
    }, `${file} on main`);
    // Kubernetes reads the published document: its `deep` is the served values' 9,995 lists, no more, no less.
    const [document] = await kubernetesDecode(published);
    expect(document).toHaveProperty('json');
    expect((document as { json: string }).json).toContain(`"deep":${nested(9995)}`);

    // The stack past the limit: InvalidSpec with the reason; nothing of its Cluster is published.
    const status = await eventually(async () => {
      const text = await api!.status('clusterstack.x-k8s.io/v1alpha1', 'ClusterStack', 'deep-over', 'ferrol');
      return text.includes('InvalidSpec') ? text : undefined;
    }, 'the ClusterStack deep-over/ferrol to report InvalidSpec');
    expect(status).toContain('nests collections more than 10000 levels deep');
    const tree = execFileSync('git', ['--git-dir', bare, 'ls-tree', '-r', '--name-only', 'main'], { encoding: 'utf8' });
    expect(tree).not.toContain('clusters/deep-over/');
    expect(tree).toContain('management/deep-ok/docker-ferrol-1-30-v2/');
    expect(controller.unparsed).toEqual([]);
  });
});
