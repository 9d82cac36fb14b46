// Scale: a synthetic fleet of 250, 500 and 1000 clusters on the example stack, each rendered from
// scratch by the CLI process a user runs; time per cluster should stay flat (linear growth) and the
// node process's peak memory below 500 MiB.
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { encodeYaml } from '../../src/yaml/kube-yaml.js';
import { assertCliBuilt, runCliOk } from './cli-runs.js';

const EXAMPLE = path.resolve('examples/quickstart');
const RELEASES = ['docker-ferrol-1-30-v1', 'docker-ferrol-1-30-v2', 'docker-ferrol-1-30-v3'];
const MEMORY_LIMIT_MIB = 500;

async function writeFleet(dir: string, count: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  const stack = await readFile(path.join(EXAMPLE, 'manifests', 'clusterstack.yaml'), 'utf8');
  const clusters = Array.from({ length: count }, (_, index) =>
    encodeYaml({
      apiVersion: 'cluster.x-k8s.io/v1beta1',
      kind: 'Cluster',
      metadata: { name: `cluster-${String(index).padStart(4, '0')}`, namespace: 'cluster-stacks' },
      spec: {
        clusterNetwork: { pods: { cidrBlocks: ['192.168.0.0/16'] }, services: { cidrBlocks: ['10.128.0.0/12'] } },
        controlPlaneEndpoint: { host: `10.0.${Math.floor(index / 250)}.${index % 250}`, port: 6443 },
        topology: { class: RELEASES[index % RELEASES.length], version: 'v1.30.4' },
      },
    }),
  );
  await writeFile(path.join(dir, 'clusterstack.yaml'), stack);
  await writeFile(path.join(dir, 'clusters.yaml'), clusters.join('---\n'));
}

export async function benchScale(sizes: number[] = [250, 500, 1000]): Promise<void> {
  assertCliBuilt();
  console.log(`\n== scale: ${sizes.join(' / ')} clusters on the example stack, full render by the CLI ==`);
  const work = await mkdtemp(path.join(os.tmpdir(), 'csk-bench-scale-'));
  const perCluster: number[] = [];
  let peak = 0;
  for (const size of sizes) {
    const inputs = path.join(work, `fleet-${size}`);
    await writeFleet(inputs, size);
    const run = await runCliOk(
      [
        'render',
        inputs,
        '--release-source',
        path.join(EXAMPLE, 'releases'),
        '--output',
        path.join(work, `out-${size}`),
        '--json',
      ],
      { CLUSTERSTACK_CACHE_DIR: path.join(work, 'cache') },
    );
    perCluster.push(run.ms / size);
    peak = Math.max(peak, run.maxRssMiB);
    console.log(
      `  ${String(size).padStart(5)} clusters: ${(run.ms / 1000).toFixed(2)} s, ${(run.ms / size).toFixed(1)} ms per cluster, peak ${run.maxRssMiB.toFixed(0)} MiB`,
    );
  }
  const growth = perCluster[perCluster.length - 1]! / perCluster[0]!;
  console.log(
    `  ${growth <= 1.25 ? 'PASS' : 'FAIL'}  time per cluster at ${sizes[sizes.length - 1]} / at ${sizes[0]}: ${growth.toFixed(2)} (linear: <= 1.25)`,
  );
  console.log(
    `  ${peak <= MEMORY_LIMIT_MIB ? 'PASS' : 'FAIL'}  peak memory of the CLI process: ${peak.toFixed(0)} MiB (target <= ${MEMORY_LIMIT_MIB})`,
  );
}
