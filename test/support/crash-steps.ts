// The crash steps (gitops/crash-point.ts) each kill test passes through, in one place, so that
// test/crash-point.test.ts can check every named step is crashed at by some test.
import type { CrashStep } from '../../gitops/crash-point.js';

/** A CLUSTERSTACK_CRASH_AT value: a step, or its n-th time. */
export type CrashAt = CrashStep | `${CrashStep}:${number}`;

/** A file step twice: at the first file written and at the tenth (a switch between the kill tests' renders writes more than ten). */
const firstAndTenth = (step: CrashStep): CrashAt[] => [`${step}:1`, `${step}:10`];

/** What test/faults/kill-9.test.ts crashes the CLI at, per target. */
export const CLI_CRASH_STEPS = {
  output: [
    'directory:staging',
    ...firstAndTenth('directory:write-file'),
    'directory:tree-renamed',
    'directory:link-made',
    'directory:swapped',
  ],
  inPlaceGit: [
    'git:journal',
    ...firstAndTenth('work-tree:write-file'),
    'git:staged',
    'git:commit-message',
    'git:committed',
  ],
  // A run reads the branch head's tree first, so it commits what differs with fast-import, not through the work tree.
  bareGit: ['git:fast-committed', 'git:pushed'],
  oci: ['oci:blobs', 'oci:manifest', 'oci:content-tag', 'oci:tagged'],
  settledRun: ['settled-run:written'],
} satisfies Record<string, CrashAt[]>;

/** What test/controller/controller-kill.test.ts crashes the controller at (its first publish after a start). */
export const CONTROLLER_CRASH_STEPS = {
  git: ['git:fast-committed', 'git:pushed'],
  pullRequest: [
    'work-tree:write-file:1',
    'pull-request:staged',
    'pull-request:commit-message',
    'pull-request:committed',
    'pull-request:pushed',
    'pull-request:opened',
  ],
} satisfies Record<string, CrashAt[]>;
