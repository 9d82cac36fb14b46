// `clusterstack controller` settings: flags over environment over defaults, resolved in config.ts.
import { describe, expect, it } from 'vitest';
import { parseDuration, resolveControllerSettings } from '../../src/config.js';
import { parseListenAddress } from '../../src/cli/controller-command.js';
import { runClusterstack } from '../support/cli.js';

describe('resolveControllerSettings', () => {
  it('takes flags over the environment over defaults', () => {
    const settings = resolveControllerSettings(
      { CLUSTERSTACK_RELEASE_SOURCE: 'github:org/stacks', CLUSTERSTACK_GIT: 'https://git.example/a.git', CLUSTERSTACK_LEADER_ELECT: 'true', POD_NAME: 'pod-1', POD_NAMESPACE: 'ops' },
      { git: 'https://git.example/b.git', gitops: 'flux', resync: '2m' },
    );
    expect(settings).toMatchObject({ releaseSource: 'github:org/stacks', git: 'https://git.example/b.git', gitops: 'flux', leaderElect: true, identity: 'pod-1', leaseNamespace: 'ops', branch: 'main', metricsAddr: ':8080', argocdNamespace: 'argocd', resyncMs: 120_000, batchWindowMs: 1000 });
    expect(Object.isFrozen(settings)).toBe(true);
  });

  it('names the flag or variable that is missing or wrong', () => {
    expect(() => resolveControllerSettings({}, {})).toThrow(/--release-source \(or CLUSTERSTACK_RELEASE_SOURCE\)/);
    expect(() => resolveControllerSettings({ CLUSTERSTACK_RELEASE_SOURCE: 'x' }, {})).toThrow(/exactly one of --git/);
    expect(() => resolveControllerSettings({ CLUSTERSTACK_RELEASE_SOURCE: 'x', CLUSTERSTACK_OUTPUT: 'o', CLUSTERSTACK_LEADER_ELECT: 'maybe' }, {})).toThrow(/CLUSTERSTACK_LEADER_ELECT must be true or false/);
    expect(() => parseDuration('soon', '--resync')).toThrow(/--resync must be a duration/);
    expect(parseListenAddress(':8080')).toEqual({ port: 8080 });
    expect(parseListenAddress('127.0.0.1:9090')).toEqual({ host: '127.0.0.1', port: 9090 });
    expect(parseListenAddress('0')).toBeUndefined();
  });

  it('prints its usage, and refuses a command line without an output', async () => {
    expect((await runClusterstack(['controller', '--help'])).stdout).toContain('--leader-elect');
    const result = await runClusterstack(['controller', '--release-source', 'x'], { env: {} });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('exactly one of --git');
  });
});

describe('controller outputs', () => {
  it('takes an OCI artifact or a pull request as its output, like render', () => {
    const oci = resolveControllerSettings({ CLUSTERSTACK_RELEASE_SOURCE: 'x', CLUSTERSTACK_OCI: 'oci://registry.example/fleet:main' });
    expect(oci.oci).toBe('oci://registry.example/fleet:main');
    const pr = resolveControllerSettings({ CLUSTERSTACK_RELEASE_SOURCE: 'x', CLUSTERSTACK_GIT: 'https://github.com/o/r.git', CLUSTERSTACK_PULL_REQUEST: 'true' });
    expect(pr).toMatchObject({ pullRequest: true, prWhenUnnecessary: 'close' });
    expect(() => resolveControllerSettings({ CLUSTERSTACK_RELEASE_SOURCE: 'x', CLUSTERSTACK_GIT: 'g', CLUSTERSTACK_OCI: 'oci://r/f:t' })).toThrow(/exactly one of --git/);
    expect(() => resolveControllerSettings({ CLUSTERSTACK_RELEASE_SOURCE: 'x', CLUSTERSTACK_GIT: 'g', CLUSTERSTACK_PULL_REQUEST: 'maybe' })).toThrow(/CLUSTERSTACK_PULL_REQUEST must be true or false/);
  });
});
