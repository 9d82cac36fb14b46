// `clusterstack render` to its other outputs, end to end: a pull request (Git over HTTP with a
// token, the fake GitHub for the pull requests) and an OCI artifact (a real registry, skopeo).
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGitHub, type FakeGitHub } from './support/fake-github/index.js';
import { GitSandbox } from './support/git-repos.js';
import { startGitHttpServer, type GitHttpServer } from './support/git-http-server.js';
import { startRegistry, type TestRegistry } from './support/registry/index.js';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, runClusterstack, writeTree } from './support/cli.js';

const run = promisify(execFile);
const TOKEN = 'ghp_render_outputs_token';

describe('clusterstack render --git <GitHub URL> --pull-request', () => {
  let sandbox: GitSandbox;
  let server: GitHttpServer;
  let github: FakeGitHub;
  beforeAll(async () => {
    sandbox = new GitSandbox();
    server = await startGitHttpServer({ projectRoot: sandbox.root, token: TOKEN });
    github = await startFakeGitHub({ tokens: [TOKEN] });
  });
  afterAll(async () => {
    await server.close();
    await github.close();
    sandbox.cleanup();
  });

  it('opens one pull request, then updates it, then touches nothing when nothing changed', async () => {
    const bare = sandbox.bareRepo('fleet', { branch: 'main', files: { 'README.md': 'fleet\n' } });
    sandbox.git(bare, 'config', 'http.receivepack', 'true');
    github.addRepo('platform', 'fleet');
    const env = {
      GITHUB_TOKEN: TOKEN,
      GITHUB_API_URL: github.apiUrl,
      CLUSTERSTACK_CACHE_DIR: await mkdtemp(path.join(os.tmpdir(), 'csk-pr-')),
    };
    const args = (inputs: string): string[] => [
      'render',
      inputs,
      '--release-source',
      EXAMPLE_RELEASES,
      '--git',
      `${server.url}/fleet.git`,
      '--pull-request',
      '--github-repo',
      'platform/fleet',
      '--path',
      'rendered',
      '--json',
    ];
    const first = await runClusterstack(args(EXAMPLE_MANIFESTS), { env });
    expect(first.stderr).toBe('');
    const report = JSON.parse(first.stdout);
    expect(report.changed).toBe(true);
    expect(github.pulls('platform', 'fleet')).toHaveLength(1);
    const pull = github.pulls('platform', 'fleet')[0]!;
    expect(pull.body).toContain('```mermaid');
    expect(pull.body).toContain('Releases appearing');
    expect(sandbox.commitCount(bare, 'main')).toBe(1); // base untouched until merged

    const fewer = await writeTree({
      'stack.yaml': await readFile(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8'),
      'c.yaml': (await readFile(path.join(EXAMPLE_MANIFESTS, 'clusters.yaml'), 'utf8'))
        .split('\n---\n')
        .filter((doc) => !doc.includes('name: charlie'))
        .join('\n---\n'),
    });
    const second = JSON.parse((await runClusterstack(args(fewer), { env })).stdout);
    expect(second.changed).toBe(true);
    expect(github.pulls('platform', 'fleet')).toHaveLength(1);
    const third = JSON.parse((await runClusterstack(args(fewer), { env })).stdout);
    expect(third.changed).toBe(false);
    expect(github.pulls('platform', 'fleet')).toHaveLength(1);
  });

  it('refuses to start without a GitHub token, pushing nothing', async () => {
    const bare = sandbox.bareRepo('notoken', { branch: 'main', files: { 'README.md': 'x\n' } });
    const result = await runClusterstack(
      [
        'render',
        EXAMPLE_MANIFESTS,
        '--release-source',
        EXAMPLE_RELEASES,
        '--git',
        `${server.url}/notoken.git`,
        '--pull-request',
      ],
      { env: { GITHUB_API_URL: github.apiUrl } },
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/pull-request mode needs a GitHub token: set GITHUB_TOKEN/);
    expect(sandbox.git(bare, 'branch', '--list')).toBe('* main');
  });
});

describe('clusterstack render --oci', () => {
  let registry: TestRegistry;
  beforeAll(async () => {
    registry = await startRegistry();
  });
  afterAll(async () => {
    await registry.stop();
  });

  it('pushes the tree as one reproducible artifact that skopeo reads back, and pushes nothing the second time', async () => {
    const reference = `oci://${registry.host}/fleet/rendered:main`;
    const env = { CLUSTERSTACK_CACHE_DIR: await mkdtemp(path.join(os.tmpdir(), 'csk-oci-')) };
    const args = [
      'render',
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--oci',
      reference,
      '--plain-http',
      '--json',
    ];
    const first = JSON.parse((await runClusterstack(args, { env })).stdout);
    expect(first.changed).toBe(true);
    expect(first.commit).toMatch(/^sha256:[0-9a-f]{64}$/);
    const { stdout } = await run('skopeo', [
      'inspect',
      '--raw',
      '--tls-verify=false',
      `docker://${registry.host}/fleet/rendered:main`,
    ]);
    const manifest = JSON.parse(stdout);
    expect(manifest.layers).toHaveLength(1);
    expect(manifest.layers[0].mediaType).toBe('application/vnd.oci.image.layer.v1.tar+gzip');
    expect(manifest.annotations['org.opencontainers.image.created']).toBe('1970-01-01T00:00:00Z');
    const copy = await mkdtemp(path.join(os.tmpdir(), 'csk-oci-copy-'));
    await run('skopeo', [
      'copy',
      '--src-tls-verify=false',
      `docker://${registry.host}/fleet/rendered:main`,
      `dir:${copy}`,
    ]);
    expect((await readdir(copy)).length).toBeGreaterThan(2);
    const second = JSON.parse((await runClusterstack(args, { env })).stdout);
    expect(second).toMatchObject({ changed: false, commit: null });
  });

  it('rejects a reference that is not a valid OCI reference (a bad flag value), and an http registry without --plain-http', async () => {
    const bad = await runClusterstack([
      'render',
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--oci',
      `oci://${registry.host}/fleet:Not A Tag`,
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--oci/);
    const https = await runClusterstack([
      'render',
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--oci',
      `oci://${registry.host}/fleet/rendered:x`,
    ]);
    expect(https.code).not.toBe(0);
    expect(https.stderr).toMatch(/--plain-http/);
  });
});
