// `clusterstack plan` with a target (--output, --git): every provider, cert-manager included, says what
// a render would change against the target's provenance.json (added, upgraded from→to, unchanged
// also under the version lock, refused for a downgrade, removed), and the target is only read:
// nothing written, locked, created or repaired.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_PROBLEMS } from '../../src/cli/cli-io.js';
import { startFakeGitHub, type FakeGitHub } from '../support/fake-github/index.js';
import { addProviderRelease, dockerProviderWithVariables, providerFixture } from '../support/provider-fixtures.js';
import { EXAMPLE_RELEASES, readTree, runClusterstack, tempDir, writeTree } from '../support/cli.js';

function inputs(core: string | undefined, docker: string | undefined, certManager: string): string {
  const parts = [
    `apiVersion: operator.cluster.x-k8s.io/v1alpha2
kind: CoreProvider
metadata:
  name: cluster-api
  namespace: capi-system
  annotations:
    clusterstack.x-k8s.io/cert-manager-version: ${certManager}
spec:
${core ? `  version: ${core}\n` : ''}  fetchConfig:
    url: https://github.com/kubernetes-sigs/cluster-api/releases
`,
  ];
  if (docker) {
    parts.push(dockerProviderWithVariables(docker));
  }
  return parts.join('---\n');
}

describe('clusterstack plan against a published tree', () => {
  let github: FakeGitHub;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    github = await startFakeGitHub();
    for (const version of ['v1.8.0', 'v1.9.0']) {
      addProviderRelease(github, 'core', version);
      addProviderRelease(github, 'infrastructure', version);
    }
    for (const version of ['v1.15.0', 'v1.16.2'])
      github.addRelease('cert-manager', 'cert-manager', {
        tag: version,
        assets: [{ name: 'cert-manager.yaml', content: providerFixture('cert-manager', version, 'cert-manager.yaml') }],
      });
    env = {
      GITHUB_API_URL: github.apiUrl,
      CLUSTERSTACK_CACHE_DIR: await mkdtemp(path.join(os.tmpdir(), 'csk-plan-changes-')),
    };
  });
  afterAll(async () => {
    await github.close();
  });

  const cli = (args: string[]) => runClusterstack(args, { env });
  const plan = async (text: string, ...target: string[]) => {
    const dir = await writeTree({ 'p.yaml': text });
    const json = await cli(['plan', dir, '--release-source', EXAMPLE_RELEASES, '--json', ...target]);
    const table = await cli(['plan', dir, '--release-source', EXAMPLE_RELEASES, ...target]);
    return { code: json.code, report: JSON.parse(json.stdout), text: table.stdout, stderr: json.stderr };
  };
  const byName = (report: { providers: { kind: string; name: string }[] }) =>
    new Map(report.providers.map((provider) => [`${provider.kind}/${provider.name}`, provider]));

  it('shows upgraded, unchanged under the lock, refused downgrades and removals against --output, reading it only', async () => {
    const out = await tempDir();
    const rendered = await cli([
      'render',
      await writeTree({ 'p.yaml': inputs('v1.8.0', 'v1.9.0', 'v1.15.0') }),
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      out,
      '--json',
    ]);
    expect(rendered.code).toBe(0);
    const snapshot = async () => ({
      entries: (await readdir(out, { recursive: true })).sort(),
      current: await readTree(path.join(out, 'current')),
    });
    const before = await snapshot();

    // No spec.version on the core: v1.9.0 is the newest, the lock keeps v1.8.0. docker asks for less than published.
    const first = await plan(inputs(undefined, 'v1.8.0', 'v1.16.2'), '--output', out);
    expect(first.code).toBe(EXIT_PROBLEMS);
    expect(first.report.comparedWith).toBe(out);
    const providers = byName(first.report);
    expect(providers.get('CoreProvider/cluster-api')).toMatchObject({
      change: 'unchanged',
      version: 'v1.8.0',
      previousVersion: 'v1.8.0',
      note: expect.stringContaining('kept at v1.8.0'),
    });
    expect(providers.get('InfrastructureProvider/docker')).toMatchObject({
      change: 'refused',
      version: 'v1.8.0',
      previousVersion: 'v1.9.0',
    });
    expect(providers.get('CertManager/cert-manager')).toMatchObject({
      change: 'upgraded',
      version: 'v1.16.2',
      previousVersion: 'v1.15.0',
      source: 'github:cert-manager/cert-manager cert-manager.yaml',
    });
    expect(first.report.problems).toContainEqual(
      expect.stringContaining(
        'InfrastructureProvider capd-system/docker: InfrastructureProvider capd-system/docker v1.8.0 is lower than v1.9.0, which is published',
      ),
    );
    expect(first.text).toContain(`Providers compared with ${out}:`);
    expect(first.text).toMatch(/InfrastructureProvider capd-system\/docker +v1\.8\.0 .* refused v1\.9\.0 -> v1\.8\.0/);
    expect(first.text).toMatch(/CertManager cert-manager\/cert-manager +v1\.16\.2 .* upgraded v1\.15\.0 -> v1\.16\.2/);

    const second = await plan(inputs('v1.9.0', undefined, 'v1.15.0'), '--output', out);
    expect(second.code).toBe(0);
    const after = byName(second.report);
    expect(after.get('CoreProvider/cluster-api')).toMatchObject({
      change: 'upgraded',
      previousVersion: 'v1.8.0',
      version: 'v1.9.0',
    });
    expect(after.get('InfrastructureProvider/docker')).toMatchObject({
      change: 'removed',
      previousVersion: 'v1.9.0',
      version: '',
    });
    expect(after.get('CertManager/cert-manager')).toMatchObject({ change: 'unchanged', previousVersion: 'v1.15.0' });
    expect(second.text).toContain('removed (was v1.9.0)');

    // Only read: the same files, no lock left behind.
    expect(await snapshot()).toEqual(before);

    // Without a target, no change is claimed.
    const untargeted = await plan(inputs('v1.9.0', undefined, 'v1.15.0'));
    expect(untargeted.report.comparedWith).toBeUndefined();
    expect(untargeted.report.providers.every((provider: { change?: string }) => provider.change === undefined)).toBe(
      true,
    );
    expect(untargeted.text).not.toContain('CHANGE');
  });

  it('reads a --git work tree without committing, and a --git path that does not exist as empty without creating it', async () => {
    const repo = path.join(await tempDir(), 'fleet');
    expect(
      (
        await cli([
          'render',
          await writeTree({ 'p.yaml': inputs('v1.8.0', 'v1.8.0', 'v1.15.0') }),
          '--release-source',
          EXAMPLE_RELEASES,
          '--git',
          repo,
          '--json',
        ])
      ).code,
    ).toBe(0);
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repo, encoding: 'utf8' });
    const planned = await plan(inputs('v1.8.0', 'v1.9.0', 'v1.15.0'), '--git', repo);
    expect(byName(planned.report).get('InfrastructureProvider/docker')).toMatchObject({
      change: 'upgraded',
      previousVersion: 'v1.8.0',
      version: 'v1.9.0',
    });
    expect(byName(planned.report).get('CoreProvider/cluster-api')).toMatchObject({ change: 'unchanged' });
    expect(execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repo, encoding: 'utf8' })).toBe(head);
    expect(execFileSync('git', ['status', '--porcelain'], { cwd: repo, encoding: 'utf8' })).toBe('');

    const missing = path.join(await tempDir(), 'not-yet');
    const fresh = await plan(inputs('v1.8.0', 'v1.8.0', 'v1.15.0'), '--git', missing);
    expect(fresh.code).toBe(0);
    expect(fresh.report.providers.map((provider: { change: string }) => provider.change)).toEqual([
      'added',
      'added',
      'added',
    ]);
    expect(existsSync(missing)).toBe(false);
  });
});
