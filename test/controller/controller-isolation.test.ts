// Failure isolation in the running controller: a ClusterStack whose release source hangs or fails,
// or a publish that keeps failing, never holds back the reaction to other changes. The failing
// stack is withheld with its published output kept and retried on its own schedule; a change to it
// is looked at at once, not after its backoff. Backoffs here are 20 s or more, far longer than any
// wait in these tests: whatever happens, happens because of a change, not a retry.
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerRuntime } from '../../src/controller/run-controller.js';
import { copyExampleReleases } from '../support/cli.js';
import { aCluster, aStack, CAPI, condition, GROUP, MERGE, startControllerFixture, waitFor, type ControllerFixture } from '../support/controller-fixture.js';

const A = 'cluster-stacks';
const B = 'team-b';
// Jitter pinned high: a first retry comes after about 20 s, never early by chance.
const SLOW_BACKOFF = { baseDelayMs: 20_000, maxDelayMs: 60_000, random: () => 0.99 };

describe('controller failure isolation', () => {
  let fx: ControllerFixture;
  let teamBSource: string;
  let runtime: ControllerRuntime;

  beforeAll(async () => {
    fx = await startControllerFixture();
    teamBSource = await copyExampleReleases();
    await fx.createNamespace(A);
    await fx.createNamespace(B);
    // Team A keeps only v2 and team B only v3 (tags of one stack identity are the same in every namespace).
    await fx.create(aStack('ferrol', A, { autoSubscribe: false }));
    await fx.create(aCluster('alpha', A, 'docker-ferrol-1-30-v2'));
    await fx.create(aStack('ferrol', B, { releaseSource: teamBSource, versions: ['v3'] }));
    await fx.create(aCluster('bravo', B, 'docker-ferrol-1-30-v3'));
    runtime = await fx.start('first', { backoff: SLOW_BACKOFF });
    await waitFor(() => condition(fx.get('ClusterAddon', B, 'bravo'), 'ManifestsPublished')?.status === 'True' && condition(fx.get('ClusterAddon', A, 'alpha'), 'ManifestsPublished')?.status === 'True', 'both stacks published', 30_000);
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  const patchCluster = (namespace: string, name: string, host: string) =>
    fx.custom.patchNamespacedCustomObject({ ...CAPI, plural: 'clusters', namespace, name, body: { spec: { controlPlaneEndpoint: { host } } } }, MERGE());
  /** Everything published for Cluster alpha, as one text. */
  const alphaFiles = () => Object.entries(fx.published()).filter(([file]) => file.startsWith(`clusters/${A}/alpha/`)).map(([, content]) => content).join('\n');

  it("publishes other stacks' changes at once after a restart while a published stack's source hangs, keeping that stack's output", async () => {
    const teamB = () => Object.fromEntries(Object.entries(fx.published()).filter(([file]) => file.includes(`/${B}/`)));
    const teamBBefore = teamB();
    expect(Object.keys(teamBBefore).some((file) => file.startsWith(`management/${B}/docker-ferrol-1-30-v3/`))).toBe(true);
    await runtime.stop();

    // A new process: no listing of team B's source in memory, and the source never answers.
    fx.down.set(teamBSource, 'hang');
    runtime = await fx.start('after-restart', { backoff: SLOW_BACKOFF });
    await waitFor(() => condition(fx.get('ClusterStack', B, 'ferrol'), 'ReleasesResolved')?.reason === 'ReleaseSourceUnavailable', "team B's condition", 20_000);
    expect(condition(fx.get('ClusterStack', B, 'ferrol'), 'ReleasesResolved')?.message).toContain('has not answered within 300 ms; the releases published before stay in place, withheld');
    expect(condition(fx.get('ClusterStackRelease', B, 'docker-ferrol-1-30-v3'), 'ManifestsRendered')).toMatchObject({ status: 'False', reason: 'ManifestsWithheld' });
    expect(condition(fx.get('ClusterAddon', B, 'bravo'), 'ManifestsRendered')).toMatchObject({ status: 'False', reason: 'AddonsWithheld' });

    // Team B still hangs; a change to team A goes out with the next publish.
    const started = Date.now();
    await patchCluster(A, 'alpha', 'alpha-moved.test');
    await waitFor(() => alphaFiles().includes('alpha-moved.test'), "alpha's change in Git", 15_000);
    const took = Date.now() - started;
    // Team B's ClusterClass and addons are still there, byte for byte.
    expect(teamB()).toEqual(teamBBefore);
    expect(condition(fx.get('ClusterStack', A, 'ferrol'), 'Ready')?.status).toBe('True');
    console.info(`isolation: alpha's change reached Git ${took} ms after the patch while team B's source hung`);
  });

  it("looks at a failing stack at once when it changes, not after its backoff", async () => {
    // Team B's key failed above and backs off now (20 s and more); the fix below must not wait for that.
    expect(condition(fx.get('ClusterStack', B, 'ferrol'), 'ReleasesResolved')?.reason).toBe('ReleaseSourceUnavailable');
    const fixed = await copyExampleReleases();
    const started = Date.now();
    await fx.custom.patchNamespacedCustomObject({ ...GROUP, plural: 'clusterstacks', namespace: B, name: 'ferrol', body: { spec: { releaseSource: fixed } } }, MERGE());
    await waitFor(() => condition(fx.get('ClusterStack', B, 'ferrol'), 'ReleasesResolved')?.status === 'True', 'team B resolved from its new source', 15_000);
    await waitFor(() => condition(fx.get('ClusterStackRelease', B, 'docker-ferrol-1-30-v3'), 'ManifestsRendered')?.status === 'True', "team B's release rendered again", 15_000);
    expect(Date.now() - started).toBeLessThan(SLOW_BACKOFF.baseDelayMs);
  });

  it('runs a publish that keeps failing again as soon as something changes, not after its backoff', async () => {
    fx.git.declinePushes(fx.remote, 'pushes are frozen');
    await patchCluster(A, 'alpha', 'alpha-frozen.test');
    await waitFor(() => condition(fx.get('ClusterAddon', A, 'alpha'), 'ManifestsPublished')?.reason === 'PublishRetrying', 'the failed publish in the status', 10_000);
    // The publish key now backs off for 20 s or more; the remote recovers and a Cluster changes.
    await unlink(path.join(fx.remote, 'hooks', 'pre-receive'));
    const started = Date.now();
    await patchCluster(A, 'alpha', 'alpha-thawed.test');
    await waitFor(() => alphaFiles().includes('alpha-thawed.test'), 'the change in Git', 15_000);
    expect(Date.now() - started).toBeLessThan(SLOW_BACKOFF.baseDelayMs);
  });
});
