// Failures are classified by class: each error class of ours extends Failure and carries its kind
// and exit code; anything else is a failure nobody foresaw.
import { describe, expect, it } from 'vitest';
import { UsageError, RemoteFailureError } from '../src/cli/cli-io.js';
import { ConfigError } from '../src/config.js';
import { exitCodeOf, Failure, failureKindOf } from '../src/core/failure.js';
import { InputError } from '../src/core/problem.js';
import { ReleaseSourceError } from '../src/release/release-source.js';
import { PublishError } from '../gitops/publish-error.js';
import { LockHeldError } from '../gitops/publish-lock.js';
import { HelmRenderError } from '../renderers/helm-errors.js';

describe('failureKindOf and exitCodeOf', () => {
  it('take the kind and exit code from the class', () => {
    const input = new InputError([{ source: 'a.yaml', message: 'bad' }]);
    expect([failureKindOf(input), exitCodeOf(input)]).toEqual(['fix-input', 1]);
    expect([
      failureKindOf(new HelmRenderError('r', 'c', 'boom')),
      exitCodeOf(new HelmRenderError('r', 'c', 'boom')),
    ]).toEqual(['fix-input', 1]);
    expect([failureKindOf(new RemoteFailureError('down')), exitCodeOf(new RemoteFailureError('down'))]).toEqual([
      'retry',
      3,
    ]);
    expect(exitCodeOf(new Failure('wait', 'not ready'))).toBe(3);
  });

  it('give a wrong command line its own exit code, while the controller sees an input to fix', () => {
    for (const error of [new UsageError('--x is not a flag'), new ConfigError('--jobs must be a number')]) {
      expect(error).toBeInstanceOf(Failure);
      expect([failureKindOf(error), exitCodeOf(error)]).toEqual(['fix-input', 2]);
    }
  });

  it("derive a release source's and a publisher's kind from what failed", () => {
    expect(failureKindOf(new ReleaseSourceError('unavailable', 'registry down'))).toBe('retry');
    expect(failureKindOf(new ReleaseSourceError('rate-limited', 'slow down'))).toBe('retry');
    expect(failureKindOf(new ReleaseSourceError('not-found', 'no such release'))).toBe('fix-input');
    expect(new ReleaseSourceError('auth', 'no token').retryable).toBe(false);
    expect(failureKindOf(new PublishError('conflict', 'overtaken'))).toBe('retry');
    expect(failureKindOf(new PublishError('missing-tool', 'no git'))).toBe('fix-input');
    expect(failureKindOf(new LockHeldError('held'))).toBe('retry');
  });

  it('count anything else as internal, even when it looks like one of ours', () => {
    expect(failureKindOf(new Error('surprise'))).toBe('internal');
    expect(failureKindOf(Object.assign(new Error('look-alike'), { failureKind: 'fix-input', retryable: true }))).toBe(
      'internal',
    );
    expect(failureKindOf('a string')).toBe('internal');
    expect(exitCodeOf(undefined)).toBe(4);
  });
});
