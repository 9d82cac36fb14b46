// The exit code for each kind of failure, decided in one place from the table in core/failure.ts:
// a command (here `releases`, replaced by one that throws what a test hands it) raises an error,
// and run-cli says what it means and which code ends the run.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { EXIT_CODES, Failure, FAILURE_REACTIONS } from '../src/core/failure.js';
import { InputError } from '../src/core/problem.js';
import { ConfigError } from '../src/config.js';
import { RemoteFailureError, UsageError } from '../src/cli/cli-io.js';
import { HelmNotFoundError, HelmRenderError, HelmTimeoutError } from '../renderers/helm-errors.js';
import { ValuesTemplateError } from '../renderers/values-template.js';
import { SecretRefusedError } from '../src/render/secret-policy.js';
import { TemplateError } from '../src/render/sandboxed-template.js';
import { UnsafeArchiveError } from '../src/release/safe-extract.js';
import { ReleaseSourceError } from '../src/sources/release-source.js';
import { DeadlineExceededError } from '../src/sources/remote-deadline.js';
import { RequestTimeoutError } from '../src/sources/http-retry.js';
import { YamlDecodeError } from '../src/yaml/kube-yaml.js';
import { TagSyntaxError } from '../src/core/release-tag.js';
import { VersionSyntaxError } from '../src/core/stack-version.js';
import { PublishError } from '../gitops/publish-error.js';
import { LockHeldError } from '../gitops/publish-lock.js';
import type { KubeObject } from '../src/api/types.js';
import { runClusterstack } from './support/cli.js';

const failing = vi.hoisted(() => ({ error: undefined as unknown }));

vi.mock('../src/cli/releases-command.js', async (original) => ({
  ...(await original<typeof import('../src/cli/releases-command.js')>()),
  releasesCommand: async () => {
    throw failing.error;
  },
}));

async function exitFor(error: unknown): Promise<{ code: number; stderr: string }> {
  failing.error = error;
  const { code, stderr } = await runClusterstack(['releases', 'list', '--source', 'anything']);
  return { code, stderr };
}

const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'token', namespace: 'kube-system' } } as unknown as KubeObject;

describe('exit codes by kind of failure', () => {
  beforeEach(() => {
    failing.error = undefined;
  });

  it('exits 1 for everything a person fixes in the inputs, a chart or the configuration', async () => {
    const fixInput: Error[] = [
      new InputError([{ message: 'spec.provider: is required' }]),
      // The mass-deletion refusal is an InputError too (render-command throws it so).
      new InputError([{ message: 'refused: the render removes every cluster' }], 'refused: the render removes every cluster'),
      new HelmRenderError('docker-ferrol-1-30-v1', 'cluster-class', 'template: bad'),
      new HelmNotFoundError('helm not found: install it'),
      // A template that never ends loops again on a retry: the chart or values template needs a fix.
      new HelmTimeoutError('rendering cluster-class', 60_000),
      new SecretRefusedError('cluster alpha', [{ object: secret, why: 'is a Secret' }]),
      new UnsafeArchiveError('release.tgz', '../etc/passwd', 'leaves the directory'),
      new ValuesTemplateError('overwrite.yaml', 'TemplateError', 'unclosed action', 2),
      new TemplateError('--commit-template', 'Parse error'),
      new YamlDecodeError('bad indentation', 3),
      new TagSyntaxError('docker-x', 'too short'),
      new VersionSyntaxError('v1-x', 'not a version'),
      new ReleaseSourceError('not-found', 'no such repository'),
      new PublishError('auth', 'the remote refused the token'),
    ];
    for (const error of fixInput) {
      const result = await exitFor(error);
      expect(result.code, error.name).toBe(FAILURE_REACTIONS['fix-input'].exitCode);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(`error: ${error.message}\n`);
    }
  });

  it('exits 3 for what may work when tried again later', async () => {
    const retry: Error[] = [
      new RemoteFailureError('a release source failed; retry later'),
      new RequestTimeoutError('https://registry.example/v2/', 30_000),
      new DeadlineExceededError('listing releases', 300_000),
      new ReleaseSourceError('rate-limited', 'GitHub rate limit'),
      new PublishError('unavailable', 'the remote did not answer'),
      new LockHeldError('another run holds the lock'),
    ];
    for (const error of retry) {
      const result = await exitFor(error);
      expect(result.code, error.name).toBe(FAILURE_REACTIONS.retry.exitCode);
      expect(result.code).toBe(3);
      expect(result.stderr).toBe(`error: ${error.message}\n`);
    }
  });

  it('exits 2 for a wrong command line or setting, with a hint to --help', async () => {
    for (const error of [new UsageError('releases list needs --source'), new ConfigError('--read-timeout must be a duration')]) {
      const result = await exitFor(error);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`error: ${error.message}\nRun 'clusterstack releases --help' for its options and examples.\n`);
    }
  });

  it('exits 4 for an error of no known kind, saying it is a bug to report', async () => {
    for (const error of [new TypeError("Cannot read properties of undefined (reading 'spec')"), 'a thrown string', new Failure('internal', 'an invariant broke')]) {
      const result = await exitFor(error);
      expect(result.code).toBe(FAILURE_REACTIONS.internal.exitCode);
      expect(result.code).toBe(4);
      expect(result.stderr).toContain(`error: ${error instanceof Error ? error.message : error}\n`);
      expect(result.stderr).toContain('This is a bug in clusterstack');
      expect(result.stderr).toContain('please report it');
    }
    // The stack goes with it, for the report.
    expect((await exitFor(new TypeError('boom'))).stderr).toMatch(/\n {4}at /);
  });

  it('ends a run that must wait with the code the table gives waiting', async () => {
    const result = await exitFor(new Failure('wait', 'the provider release is not ready yet'));
    expect(result.code).toBe(FAILURE_REACTIONS.wait.exitCode);
    expect(result.stderr).toBe('waiting: the provider release is not ready yet\n');
  });

  it('returns only codes the help and the README document', () => {
    const documented = new Set(EXIT_CODES.map((entry) => entry.code));
    for (const reaction of Object.values(FAILURE_REACTIONS)) expect(documented.has(reaction.exitCode)).toBe(true);
    expect(documented.has(2)).toBe(true);
  });
});
