// Start-up of the CLI process a user runs: `clusterstack --help` and `plan` on the quick-start
// inputs, median of five runs each, beside bare `node -e 0` as the floor on this machine.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { assertCliBuilt, medianMs } from './cli-runs.js';

const TARGET_MS = 250;

function nodeFloorMs(times = 5): number {
  const runs: number[] = [];
  for (let index = 0; index < times; index += 1) {
    const start = performance.now();
    spawnSync(process.execPath, ['-e', '0']);
    runs.push(performance.now() - start);
  }
  return runs.sort((a, b) => a - b)[Math.floor(times / 2)]!;
}

export async function benchStartup(): Promise<void> {
  assertCliBuilt();
  console.log('\n== CLI start-up (median of 5 processes) ==');
  const example = path.resolve('examples/quickstart');
  const help = await medianMs(5, ['--help']);
  const plan = await medianMs(5, ['plan', path.join(example, 'manifests'), '--release-source', path.join(example, 'releases'), '--json']);
  console.log(`  node -e 0:                 ${nodeFloorMs().toFixed(0)} ms (the floor)`);
  console.log(`  clusterstack --help:       ${help.toFixed(0)} ms`);
  console.log(`  clusterstack plan (quick start): ${plan.toFixed(0)} ms`);
  console.log(`  ${help <= TARGET_MS ? 'PASS' : 'FAIL'}  --help starts within ${TARGET_MS} ms: ${help.toFixed(0)} ms`);
  console.log(`  ${plan <= TARGET_MS ? 'PASS' : 'FAIL'}  plan on the quick start within ${TARGET_MS} ms: ${plan.toFixed(0)} ms`);
}
