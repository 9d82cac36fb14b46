// The order the suite's files start in: the slowest first, so that no long file starts near the end
// and runs alone while the other workers are idle. Vitest orders by the durations of the last run in
// its cache (node_modules/.vite, which `npm ci` removes, so a clean clone has none) and otherwise by
// file size, which puts the long real-engine files anywhere. SLOW_FILES is the prior: the files that
// took longest in a profile of the whole suite (the JSON reporter's testResults[].startTime/endTime),
// slowest first; refresh it when the profile changes. A file not in it keeps Vitest's order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The suite's slowest files, slowest first: those over 10 s in the profile of a whole `.ci/run` on two
 * cores of 2026-11-26 (session 14, 968 s of file time in all; each file's wall in ms beside it).
 */
const SLOW_FILES = [
  'test/real-flux-layers.test.ts', // 133844
  'test/real-flux-controller.test.ts', // 61959
  'test/controller/controller-kill.test.ts', // 52867
  'test/controller-real-api.test.ts', // 41153
  'test/real-flux-e2e.test.ts', // 34036
  'test/shards/shard-kill.test.ts', // 33521
  'test/controller/controller-exit.test.ts', // 31108
  'test/faults/kill-9.test.ts', // 26432
  'test/shards/shard-handover.test.ts', // 24910
  'test/controller/controller-leadership-loss.test.ts', // 21956
  'test/real-server-validation.test.ts', // 21827
  'test/real-engines.test.ts', // 20021
  'test/render-command.test.ts', // 15774
  'test/controller/controller-providers.test.ts', // 14433
  'test/controller/controller-runtime-e2e.test.ts', // 14278
  'test/package-entry.test.ts', // 12201
  'test/layers/layer-versions-and-hold.test.ts', // 12086
  'test/controller/controller-namespaced.test.ts', // 11967
  'test/cluster-requests.test.ts', // 11583
  'test/controller/runtime-extension-leader.test.ts', // 10507
  'test/controller/controller-secrets-encrypt.test.ts', // 10454
  'test/git-publisher.test.ts', // 10404
  'test/layers/addon-layer-moves.test.ts', // 10021
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
