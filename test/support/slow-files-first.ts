// The order the suite's files start in: the slowest first, so that no long file starts near the end
// and runs alone while the other workers are idle. Vitest orders by the durations of the last run in
// its cache (node_modules/.vite, which `npm ci` removes, so a clean clone has none) and otherwise by
// file size, which puts the long real-engine files anywhere. SLOW_FILES is the prior: the files that
// took longest in a profile of the whole suite (the JSON reporter's testResults[].startTime/endTime),
// slowest first; refresh it when the profile changes. A file not in it keeps Vitest's order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The suite's slowest files, slowest first: those over 9 s in the profile of a whole `.ci/run` on two
 * cores of 2026-11-27 (session 15, 755 s of file time in all; each file's wall in ms beside it).
 */
const SLOW_FILES = [
  'test/real-flux-layers.test.ts', // 77875
  'test/real-flux-controller.test.ts', // 48496
  // Beside the other two, though shorter: the three share one Flux world (real-flux-world-setup.ts),
  // started once while they all run; started after they left, it would be started a second time.
  'test/real-flux-e2e.test.ts', // 22861
  'test/controller/controller-kill.test.ts', // 40927
  'test/shards/shard-kill.test.ts', // 31979
  'test/controller-real-api.test.ts', // 24847
  // Before real-engines, though a little shorter: it starts about when controller-real-api's API
  // server is down for its restart, and its looping templates keep the cores busy meanwhile, where
  // real-engines, waiting on servers of its own, left them half idle (session 19's profile).
  'test/render-command.test.ts', // 22022
  'test/controller/controller-leadership-loss.test.ts', // 20110
  'test/controller/controller-exit.test.ts', // 17458
  'test/faults/kill-9.test.ts', // 16774
  'test/real-engines.test.ts', // 16388
  'test/controller/controller-objects.test.ts', // 15214
  'test/controller/controller-providers.test.ts', // 14524
  'test/package-entry.test.ts', // 12709
  'test/controller/controller-scheduler-config.test.ts', // 12416
  'test/controller/controller-layers.test.ts', // 12219
  'test/process-spawner.test.ts', // 11524
  'test/controller/controller-runtime-e2e.test.ts', // 10107
  'test/controller/controller-rbac.test.ts', // 10054
  'test/cluster-requests.test.ts', // 10043
  'test/real-server-validation.test.ts', // 10027
  'test/shards/shard-handover.test.ts', // 9618
  'test/controller/controller-isolation.test.ts', // 9420
  'test/shards/shard-layer-status.test.ts', // 9234
];

/**
 * Starts the files of SLOW_FILES first, in its order; then the rest in Vitest's own order. The files of a
 * project that shares workers (isolate: false) run one after another: Vitest keeps such a worker for the
 * next file only when the next file in its queue belongs to the same project, and otherwise stops it and
 * starts another, which imports everything again. So the isolated slow files come first, then each sharing
 * project's files (its slow ones first), then the other isolated files.
 */
export default class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification): number => {
      const index = SLOW_FILES.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return index === -1 ? SLOW_FILES.length : index;
    };
    const slow = files.filter((spec) => rank(spec) < SLOW_FILES.length).sort((a, b) => rank(a) - rank(b));
    const rest = await super.sort(files.filter((spec) => rank(spec) === SLOW_FILES.length));
    const sharing = (spec: TestSpecification): boolean => spec.project.config.isolate === false;
    const ordered = [...slow, ...rest];
    const projects = [...new Set(ordered.filter(sharing).map((spec) => spec.project.name))];
    return [
      ...slow.filter((spec) => !sharing(spec)),
      ...projects.flatMap((name) => ordered.filter((spec) => sharing(spec) && spec.project.name === name)),
      ...rest.filter((spec) => !sharing(spec)),
    ];
  }
}
