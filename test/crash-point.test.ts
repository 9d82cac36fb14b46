// The crash-point hook the kill tests use (gitops/crash-point.ts): every named step is crashed at by
// some kill test, and a CLUSTERSTACK_CRASH_AT that names no step stops the process rather than
// letting a test pass with a run that crashed nowhere.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CRASH_STEPS } from '../gitops/crash-point.js';
import { CLI_CRASH_STEPS, CONTROLLER_CRASH_STEPS } from './support/crash-steps.js';

const load = (value: string) =>
  spawnSync(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', "await import('./gitops/crash-point.ts'); console.log('loaded')"],
    {
      env: { PATH: process.env.PATH, CLUSTERSTACK_CRASH_AT: value },
      encoding: 'utf8',
    },
  );

describe('crash points', () => {
  it('are each crashed at by a kill test', () => {
    const tested = new Set(
      [...Object.values(CLI_CRASH_STEPS), ...Object.values(CONTROLLER_CRASH_STEPS)]
        .flat()
        .map((value) => value.replace(/:\d+$/, '')),
    );
    expect([...CRASH_STEPS].filter((step) => !tested.has(step))).toEqual([]);
  });

  it('stop the process at startup when CLUSTERSTACK_CRASH_AT names no step, and load quietly for one that does', () => {
    const typo = load('git:pushd');
    expect(typo.status).not.toBe(0);
    expect(typo.stderr).toContain(
      'CLUSTERSTACK_CRASH_AT=git:pushd: expected <step>[:<n>], with step one of directory:staging,',
    );
    expect(typo.stdout).toBe('');
    const fine = load('git:pushed:2');
    expect({ status: fine.status, stdout: fine.stdout }).toEqual({ status: 0, stdout: 'loaded\n' });
  });
});
