// The order the suite's files start in: the slowest first, so that no long file starts near the end
// and runs alone while the other workers are idle. Vitest orders by the durations of the last run in
// its cache (node_modules/.vite, which `npm ci` removes, so a clean clone has none) and otherwise by
// file size, which puts the long real-engine files anywhere. SLOW_FILES is the prior: the files that
// took longest in a profile of the whole suite (the JSON reporter's testResults[].startTime/endTime),
// slowest first; refresh it when the profile changes. A file not in it keeps Vitest's order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The suite's slowest files, slowest first (by a profile of the whole suite on two cores). */
const SLOW_FILES = [
  'test/real-flux-layers.test.ts',
  'test/controller/controller-kill.test.ts',
  'test/faults/kill-9.test.ts',
  'test/shards/shard-kill.test.ts',
  'test/controller-real-api.test.ts',
  'test/shared-objects.test.ts',
  'test/faults/inputs.test.ts',
  'test/real-flux-controller.test.ts',
  'test/controller/controller-exit.test.ts',
  'test/layers/addon-layers-render.test.ts',
  'test/faults/output-ownership.test.ts',
  'test/layers/layer-versions-and-hold.test.ts',
  'test/package-entry.test.ts',
  'test/faults/releases.test.ts',
  'test/shards/shard-publishing.test.ts',
  'test/real-flux-e2e.test.ts',
];

/** Starts the files of SLOW_FILES first, in its order; then the rest in Vitest's own order. */
export default class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification): number => {
      const index = SLOW_FILES.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return index === -1 ? SLOW_FILES.length : index;
    };
    const slow = files.filter((spec) => rank(spec) < SLOW_FILES.length).sort((a, b) => rank(a) - rank(b));
    const rest = await super.sort(files.filter((spec) => rank(spec) === SLOW_FILES.length));
    return [...slow, ...rest];
  }
}
