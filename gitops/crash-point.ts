// Crash points for the fault tests: with CLUSTERSTACK_CRASH_AT=<step>[:<n>] in its environment, the
// process kills itself with SIGKILL the n-th time (default: the first) it reaches that named write
// step of a publisher, exactly as a `kill -9` landing there would. A test then kills every run at
// every step on purpose instead of hoping a random kill lands in a window of a few milliseconds.
// The variable is read once, at startup; unset (always, outside the tests) every crash point is the
// same empty function.

/** Every named write step, in the order a publish reaches them (docs/development.md lists them too). */
export const CRASH_STEPS = [
  // --output: the staging directory made, a file written into it (:n), the tree renamed into trees/,
  // the new `current` link made beside the old one, and swapped in (leftovers not yet removed).
  'directory:staging',
  'directory:write-file',
  'directory:tree-renamed',
  'directory:link-made',
  'directory:swapped',
  // --git and pull requests: a file written into the work tree (:n).
  'work-tree:write-file',
  // --git: the in-place journal written, the render staged, the commit message written, committed
  // (not pushed, or in place not yet cleared from the journal), committed by fast-import from the
  // known tree (not pushed), pushed.
  'git:journal',
  'git:staged',
  'git:commit-message',
  'git:committed',
  'git:fast-committed',
  'git:pushed',
  // Pull requests: the tree staged, the commit message written, committed, the branch pushed (no
  // pull request opened or updated yet), the pull request opened or updated.
  'pull-request:staged',
  'pull-request:commit-message',
  'pull-request:committed',
  'pull-request:pushed',
  'pull-request:opened',
  // OCI: the blobs pushed, the manifest by digest, the content tag, the requested tag.
  'oci:blobs',
  'oci:manifest',
  'oci:content-tag',
  'oci:tagged',
  // Any target: the settled-run record's new file written, not yet renamed into place.
  'settled-run:written',
] as const;

/** A named write step. */
export type CrashStep = (typeof CRASH_STEPS)[number];

const CRASH_AT = /^([a-z-]+:[a-z-]+)(?::([1-9]\d*))?$/;

function crashPointFor(spec: string | undefined): (step: CrashStep) => void {
  if (spec === undefined || spec === '') return () => {};
  const match = CRASH_AT.exec(spec);
  if (match === null || !(CRASH_STEPS as readonly string[]).includes(match[1]!)) {
    // A test's typo must not pass as a run that crashed nowhere.
    throw new Error(`CLUSTERSTACK_CRASH_AT=${spec}: expected <step>[:<n>], with step one of ${CRASH_STEPS.join(', ')}`);
  }
  const wanted = match[1];
  let left = Number(match[2] ?? '1');
  return (step) => {
    if (step === wanted && --left === 0) process.kill(process.pid, 'SIGKILL');
  };
}

/** Kills the process here when CLUSTERSTACK_CRASH_AT names this step (and this is its n-th time); otherwise nothing. */
export const crashPoint: (step: CrashStep) => void = crashPointFor(process.env.CLUSTERSTACK_CRASH_AT);
