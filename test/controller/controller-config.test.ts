// `clusterstack controller` settings: flags over environment over defaults, resolved in config.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { parseDuration, resolveControllerSettings } from '../../src/config.js';
import { parseListenAddress } from '../../src/cli/controller-command.js';
import { readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EXAMPLE_RELEASES, runClusterstack, tempDir } from '../support/cli.js';

// An in-process `controller` that gets as far as its logger sends Node's process warnings to that
// logger from then on (logProcessWarnings: a controller process keeps it until it ends). Node's own
// printer is put back after each test, so nothing of a run here reaches the files sharing this worker.
const warningListeners = process.listeners('warning');
afterEach(() => {
  process.removeAllListeners('warning');
  for (const listener of warningListeners) process.on('warning', listener);
});

describe('resolveControllerSettings', () => {
  it('takes flags over the environment over defaults', () => {
    const settings = resolveControllerSettings(
      {
        CLUSTERSTACK_RELEASE_SOURCE: 'github:org/stacks',
        CLUSTERSTACK_GIT: 'https://git.example/a.git',
        CLUSTERSTACK_LEADER_ELECT: 'true',
        POD_NAME: 'pod-1',
        POD_NAMESPACE: 'ops',
      },
      { git: 'https://git.example/b.git', gitops: 'flux', resync: '2m' },
    );
    expect(settings).toMatchObject({
      releaseSource: 'github:org/stacks',
      git: 'https://git.example/b.git',
      gitops: 'flux',
      leaderElect: true,
      identity: 'pod-1',
      leaseNamespace: 'ops',
      branch: 'main',
      metricsAddr: ':8080',
      argocdNamespace: 'argocd',
      resyncMs: 120_000,
      batchWindowMs: 200,
      handoverRecheckMs: 5000,
    });
    expect(Object.isFrozen(settings)).toBe(true);
  });

  it('names the flag or variable that is missing or wrong', () => {
    expect(() => resolveControllerSettings({}, {})).toThrow(/--release-source \(or CLUSTERSTACK_RELEASE_SOURCE\)/);
    expect(() => resolveControllerSettings({ CLUSTERSTACK_RELEASE_SOURCE: 'x' }, {})).toThrow(/exactly one of --git/);
    expect(() =>
      resolveControllerSettings(
        { CLUSTERSTACK_RELEASE_SOURCE: 'x', CLUSTERSTACK_OUTPUT: 'o', CLUSTERSTACK_LEADER_ELECT: 'maybe' },
        {},
      ),
    ).toThrow(/CLUSTERSTACK_LEADER_ELECT must be true or false/);
    expect(() => parseDuration('soon', '--resync')).toThrow(/--resync must be a duration/);
    expect(parseListenAddress(':8080')).toEqual({ port: 8080 });
    expect(parseListenAddress('127.0.0.1:9090')).toEqual({ host: '127.0.0.1', port: 9090 });
    expect(parseListenAddress('0')).toBeUndefined();
  });

  it("takes leader election's timing from flags or the environment, client-go's by default, and refuses an order that unseats a live leader", () => {
    const base = { CLUSTERSTACK_RELEASE_SOURCE: 'x', CLUSTERSTACK_OUTPUT: 'o' };
    expect(resolveControllerSettings(base, {})).toMatchObject({
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    });
    expect(
      resolveControllerSettings(
        { ...base, CLUSTERSTACK_LEADER_ELECT_LEASE_DURATION: '6s', CLUSTERSTACK_LEADER_ELECT_RENEW_DEADLINE: '4s' },
        { retryPeriod: '500ms' },
      ),
    ).toMatchObject({ leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 500 });
    expect(() => resolveControllerSettings(base, { leaseDuration: '10s' })).toThrow(
      '--leader-elect-lease-duration / CLUSTERSTACK_LEADER_ELECT_LEASE_DURATION (10000 ms) must be longer than --leader-elect-renew-deadline / CLUSTERSTACK_LEADER_ELECT_RENEW_DEADLINE (10000 ms)',
    );
    expect(() => resolveControllerSettings(base, { renewDeadline: '2s' })).toThrow(
      /RENEW_DEADLINE \(2000 ms\) must be longer than --leader-elect-retry-period/,
    );
    expect(() => resolveControllerSettings(base, { retryPeriod: '0s' })).toThrow(
      '--leader-elect-retry-period / CLUSTERSTACK_LEADER_ELECT_RETRY_PERIOD must be longer than 0',
    );
    expect(() => resolveControllerSettings({ ...base, CLUSTERSTACK_LEADER_ELECT_LEASE_DURATION: 'long' }, {})).toThrow(
      '--leader-elect-lease-duration / CLUSTERSTACK_LEADER_ELECT_LEASE_DURATION must be a duration such as 500ms, 2s or 5m, not "long"',
    );
  });

  it('prints its usage, and refuses a command line without an output', async () => {
    expect((await runClusterstack(['controller', '--help'])).stdout).toContain('--leader-elect');
    const result = await runClusterstack(['controller', '--release-source', 'x'], { env: {} });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('exactly one of --git');
    const badPolicy = await runClusterstack(
      ['controller', '--release-source', 'x', '--output', 'out', '--secrets', 'keep'],
      { env: {} },
    );
    expect(badPolicy.code).toBe(2);
    expect(badPolicy.stderr).toContain('--secrets must be one of refuse, drop, allow, encrypt, not "keep"');
    const badLease = await runClusterstack(
      ['controller', '--release-source', 'x', '--output', 'out', '--leader-elect-renew-deadline', '20s'],
      { env: {} },
    );
    expect(badLease.code).toBe(2);
    expect(badLease.stderr).toContain('(15000 ms) must be longer than --leader-elect-renew-deadline');
  });

  it('reads --handover-recheck over CLUSTERSTACK_HANDOVER_RECHECK, and refuses one that would fetch without pause', async () => {
    const base = { CLUSTERSTACK_RELEASE_SOURCE: 'x', CLUSTERSTACK_OUTPUT: 'o' };
    expect(resolveControllerSettings({ ...base, CLUSTERSTACK_HANDOVER_RECHECK: '2s' }).handoverRecheckMs).toBe(2000);
    expect(
      resolveControllerSettings({ ...base, CLUSTERSTACK_HANDOVER_RECHECK: '2s' }, { handoverRecheck: '250ms' })
        .handoverRecheckMs,
    ).toBe(250);
    expect(() => resolveControllerSettings({ ...base, CLUSTERSTACK_HANDOVER_RECHECK: 'often' })).toThrow(
      '--handover-recheck / CLUSTERSTACK_HANDOVER_RECHECK must be a duration such as 500ms, 2s or 5m, not "often"',
    );
    const out = await tempDir('csk-ctl-recheck-');
    const tooOften = await runClusterstack(
      ['controller', '--release-source', 'x', '--output', out, '--handover-recheck', '10ms'],
      { env: {} },
    );
    expect(tooOften.code).toBe(2);
    expect(tooOften.stderr).toContain(
      '--handover-recheck / CLUSTERSTACK_HANDOVER_RECHECK must be at least 100ms (each recheck fetches the branch), not "10ms"',
    );
    expect(readdirSync(out)).toEqual([]);
  });
});

describe('controller without a cluster', () => {
  it('exits at once with a clear message outside a pod without a kubeconfig, or with a kubeconfig naming no server', async () => {
    const out = await tempDir('csk-ctl-out-');
    const started = Date.now();
    const result = await runClusterstack(
      ['controller', '--release-source', EXAMPLE_RELEASES, '--output', out, '--metrics-addr', '0'],
      { env: {} },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'no Kubernetes configuration: this is not a pod (KUBERNETES_SERVICE_HOST is not set)',
    );
    expect(result.stderr).toContain('--kubeconfig');
    expect(Date.now() - started).toBeLessThan(5000);

    const kubeconfig = path.join(out, 'kubeconfig');
    await writeFile(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const broken = await runClusterstack(
      [
        'controller',
        '--release-source',
        EXAMPLE_RELEASES,
        '--output',
        out,
        '--metrics-addr',
        '0',
        '--kubeconfig',
        kubeconfig,
      ],
      { env: {} },
    );
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('names no usable API server');
  });

  it('refuses to start without git on PATH when it publishes to Git (exit 1), and an absolute --path (exit 2)', async () => {
    const dir = await tempDir('csk-ctl-git-');
    const kubeconfig = path.join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const flags = [
      'controller',
      '--release-source',
      EXAMPLE_RELEASES,
      '--git',
      'https://git.example/fleet.git',
      '--metrics-addr',
      '0',
      '--kubeconfig',
      kubeconfig,
      '--cache-dir',
      path.join(dir, 'cache'),
    ];
    const noGit = await runClusterstack(flags, { env: { PATH: '/nonexistent-bin' } });
    expect(noGit.code).toBe(1);
    expect(noGit.stderr).toContain(
      'git not found: --git https://git.example/fleet.git needs the git command, and there is none on PATH (/nonexistent-bin); install git, or put it on PATH',
    );
    expect(noGit.stderr).not.toMatch(/^\s+at /m);
    const absolute = await runClusterstack([...flags, '--path', '/srv/fleet'], { env: { PATH: '/nonexistent-bin' } });
    expect(absolute.code).toBe(2);
    expect(absolute.stderr).toContain('--path "/srv/fleet" is absolute');
  });
});

describe('controller outputs', () => {
  it('takes an OCI artifact or a pull request as its output, like render', () => {
    const oci = resolveControllerSettings({
      CLUSTERSTACK_RELEASE_SOURCE: 'x',
      CLUSTERSTACK_OCI: 'oci://registry.example/fleet:main',
    });
    expect(oci.oci).toBe('oci://registry.example/fleet:main');
    const pr = resolveControllerSettings({
      CLUSTERSTACK_RELEASE_SOURCE: 'x',
      CLUSTERSTACK_GIT: 'https://github.com/o/r.git',
      CLUSTERSTACK_PULL_REQUEST: 'true',
    });
    expect(pr).toMatchObject({ pullRequest: true, prWhenUnnecessary: 'close' });
    expect(() =>
      resolveControllerSettings({
        CLUSTERSTACK_RELEASE_SOURCE: 'x',
        CLUSTERSTACK_GIT: 'g',
        CLUSTERSTACK_OCI: 'oci://r/f:t',
      }),
    ).toThrow(/exactly one of --git/);
    expect(() =>
      resolveControllerSettings({
        CLUSTERSTACK_RELEASE_SOURCE: 'x',
        CLUSTERSTACK_GIT: 'g',
        CLUSTERSTACK_PULL_REQUEST: 'maybe',
      }),
    ).toThrow(/CLUSTERSTACK_PULL_REQUEST must be true or false/);
  });
});
