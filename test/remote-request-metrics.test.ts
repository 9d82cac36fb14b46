// clusterstack_remote_requests_total for release sources: every HTTP request a github: or oci://
// source makes is counted through the fetch the opener gives it, against the fake GitHub and a real
// registry (token auth, so the challenge and the token exchange are requests too).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrometheusMetrics } from '../src/controller/runtime/metrics.js';
import { pushReleaseDirectory } from './support/registry/push-artifact.js';
import { RegistryClient } from '../src/oci/registry-client.js';
import { countingFetch, type RequestOutcome } from '../src/http/counting-fetch.js';
import { createSourceOpener } from '../src/sources/open-release-source.js';
import { type FakeGitHub, startFakeGitHub } from './support/fake-github/index.js';
import { startRegistry, type TestRegistry } from './support/registry/index.js';

const RELEASES = path.resolve(import.meta.dirname, '../examples/quickstart/releases');
const TAG = 'docker-ferrol-1-30-v1';

describe('countingFetch', () => {
  const answering =
    (status: number): typeof fetch =>
    async () =>
      new Response(null, { status });

  it('counts answers as ok, server failures, throttling and requests without an answer as error', async () => {
    const outcomes: RequestOutcome[] = [];
    for (const status of [200, 304, 401, 404])
      expect(
        (
          await countingFetch(
            () => answering(status),
            (o) => outcomes.push(o),
          )('http://x/')
        ).status,
      ).toBe(status);
    for (const status of [429, 500, 503])
      await countingFetch(
        () => answering(status),
        (o) => outcomes.push(o),
      )('http://x/');
    const refused: typeof fetch = async () => {
      throw new TypeError('fetch failed');
    };
    await expect(
      countingFetch(
        () => refused,
        (o) => outcomes.push(o),
      )('http://x/'),
    ).rejects.toThrow('fetch failed');
    expect(outcomes).toEqual(['ok', 'ok', 'ok', 'ok', 'error', 'error', 'error', 'error']);
  });
});

describe('release sources count their requests into the controller metrics', () => {
  let github: FakeGitHub;
  let registry: TestRegistry;
  let cacheDir: string;

  beforeAll(async () => {
    [github, registry] = await Promise.all([startFakeGitHub(), startRegistry({ auth: 'token' })]);
    cacheDir = await mkdtemp(path.join(os.tmpdir(), 'remote-request-metrics-'));
    const assets = [
      {
        name: 'metadata.yaml',
        content: `apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\nversions:\n  clusterStack: ${TAG}\n`,
      },
      { name: `${TAG}-cluster-class.tgz`, content: Buffer.alloc(1024, 7) },
    ];
    github.addRelease('example', 'stacks', { tag: TAG, assets });
    const client = new RegistryClient({
      registry: registry.host,
      plainHttp: true,
      credentials: { username: registry.username, password: registry.password },
    });
    await pushReleaseDirectory(client, 'scs/cluster-stacks', TAG, path.join(RELEASES, TAG));
  });

  afterAll(async () => {
    await Promise.all([github?.close(), registry?.stop()]);
    if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  });

  const count = async (metrics: PrometheusMetrics, kind: string, outcome: string): Promise<number> => {
    const line = (await metrics.render())
      .split('\n')
      .find((l) => l.startsWith(`clusterstack_remote_requests_total{kind="${kind}",outcome="${outcome}"} `));
    return Number(line?.split(' ')[1]);
  };

  it('counts GitHub API calls and asset downloads as github, registry requests as oci', async () => {
    const metrics = new PrometheusMetrics({ processMetrics: false });
    const open = createSourceOpener({
      cacheDir,
      githubApiUrl: github.apiUrl,
      plainHttp: true,
      registryCredentials: { username: registry.username, password: registry.password },
      onRequest: (kind, outcome) => metrics.remoteRequest(kind, outcome),
    });

    const fromGitHub = open('github:example/stacks');
    expect((await fromGitHub.list()).releases.map((release) => release.tag)).toEqual([TAG]);
    await fromGitHub.fetch(TAG);
    const githubRequests = github.requests.length;
    expect(githubRequests).toBeGreaterThanOrEqual(3); // the listing, and each asset through its redirect
    expect(await count(metrics, 'github', 'ok')).toBe(githubRequests);
    expect(await count(metrics, 'oci', 'ok')).toBe(0);

    const fromRegistry = open(`oci://${registry.host}/scs/cluster-stacks`);
    expect((await fromRegistry.list()).releases.map((release) => release.tag)).toEqual([TAG]);
    await fromRegistry.fetch(TAG);
    // Tag list, manifest, blobs, plus the 401 challenge and the token exchange.
    expect(await count(metrics, 'oci', 'ok')).toBeGreaterThanOrEqual(5);
    expect(await count(metrics, 'github', 'ok')).toBe(githubRequests);
    expect(await count(metrics, 'github', 'error')).toBe(0);
    expect(await count(metrics, 'oci', 'error')).toBe(0);
  });
});
