// Failure isolation in the running controller: a ClusterStack whose release source hangs or fails,
// or a publish that keeps failing, never holds back the reaction to other changes. The failing
// stack is withheld with its published output kept and retried on its own schedule; a change to it
// is looked at at once, not after its backoff. Backoffs here are ten minutes, longer than any test
// may run: whatever happens, happens because of a change, not a retry, with no stopwatch needed (a
// timing bound would fail on a loaded machine).
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerRuntime } from '../../src/controller/run-controller.js';
import { copyExampleReleases } from '../support/cli.js';
import { aStack, condition, GROUP, MERGE } from '../support/controller-fixture.js';
import {
  aCluster,
  CAPI_V1BETA2,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';

const A = 'cluster-stacks';
const B = 'team-b';
// Jitter pinned high: a first retry comes after about ten minutes, never early by chance; the
// tests end (or time out) long before.
const SLOW_BACKOFF = { baseDelayMs: 600_000, maxDelayMs: 600_000, random: () => 0.99 };
/** Waits end on what they wait for; the limit only stops a stuck test, and is generous for a loaded machine. */
const WAIT_MS = 120_000;
/** Each test and the setup wait for a publish or two of a real controller (helm, git), no more. */
const TEST_MS = 240_000;

describe('controller failure isolation', { timeout: TEST_MS }, () => {
  let fx: RealControllerFixture;
  let teamBSource: string;
  let runtime: ControllerRuntime;

  beforeAll(async () => {
    fx = await startRealControllerFixture();
    teamBSource = await copyExampleReleases();
    await fx.createNamespace(A);
    await fx.createNamespace(B);
    // Team A keeps only v2 and team B only v3 (tags of one stack identity are the same in every namespace).
    await fx.create(aStack('ferrol', A, { autoSubscribe: false }));
    await fx.create(aCluster('alpha', A, 'docker-ferrol-1-30-v2'));
    await fx.create(aStack('ferrol', B, { releaseSource: teamBSource, versions: ['v3'] }));
    await fx.create(aCluster('bravo', B, 'docker-ferrol-1-30-v3'));
    runtime = await fx.start('first', { backoff: SLOW_BACKOFF });
    await fx.waitFor(
      () =>
        condition(fx.get('ClusterAddon', B, 'bravo'), 'ManifestsPublished')?.status === 'True' &&
        condition(fx.get('ClusterAddon', A, 'alpha'), 'ManifestsPublished')?.status === 'True',
      'both stacks published',
      WAIT_MS,
    );
  }, TEST_MS);

  afterAll(async () => {
    await fx?.cleanup();
  });

  const patchCluster = (namespace: string, name: string, host: string) =>
    fx.custom.patchNamespacedCustomObject(
      { ...CAPI_V1BETA2, plural: 'clusters', namespace, name, body: { spec: { controlPlaneEndpoint: { host } } } },
      MERGE(),
    );
  /** Everything published for Cluster alpha, as one text. */
  const alphaFiles = () =>
    Object.entries(fx.published())
      .filter(([file]) => file.startsWith(`clusters/${A}/alpha/`))
      .map(([, content]) => content)
      .join('\n');

  it("publishes other stacks' changes at once after a restart while a published stack's source hangs, keeping that stack's output", async () => {
    const teamB = () => Object.fromEntries(Object.entries(fx.published()).filter(([file]) => file.includes(`/${B}/`)));
    const teamBBefore = teamB();
    expect(Object.keys(teamBBefore).some((file) => file.startsWith(`management/${B}/docker-ferrol-1-30-v3/`))).toBe(
      true,
    );
    await runtime.stop();

    // A new process: no listing of team B's source in memory, and the source never answers.
    fx.down.set(teamBSource, 'hang');
    runtime = await fx.start('after-restart', { backoff: SLOW_BACKOFF });
    await fx.waitFor(
      () => condition(fx.get('ClusterStack', B, 'ferrol'), 'ReleasesResolved')?.reason === 'ReleaseSourceUnavailable',
      "team B's condition",
      WAIT_MS,
    );
    expect(condition(fx.get('ClusterStack', B, 'ferrol'), 'ReleasesResolved')?.message).toContain(
      'has not answered within 300 ms; the releases published before stay in place, withheld',
    );
    expect(condition(fx.get('ClusterStackRelease', B, 'docker-ferrol-1-30-v3'), 'ManifestsRendered')).toMatchObject({
      status: 'False',
      reason: 'ManifestsWithheld',
    });
    expect(condition(fx.get('ClusterAddon', B, 'bravo'), 'ManifestsRendered')).toMatchObject({
      status: 'False',
      reason: 'AddonsWithheld',
    });

    // Team B still hangs; a change to team A goes out with the next publish.
    const started = Date.now();
    await patchCluster(A, 'alpha', 'alpha-moved.test');
    await fx.waitFor(() => alphaFiles().includes('alpha-moved.test'), "alpha's change in Git", WAIT_MS);
    const took = Date.now() - started;
    // Team B's ClusterClass and addons are still there, byte for byte.
    expect(teamB()).toEqual(teamBBefore);
    expect(condition(fx.get('ClusterStack', A, 'ferrol'), 'Ready')?.status).toBe('True');
    console.info(`isolation: alpha's change reached Git ${took} ms after the patch while team B's source hung`);
  });

  it('looks at a failing stack at once when it changes, not after its backoff', async () => {
    // Team B's key failed above and backs off now (ten minutes); the fix below must not wait for that.
    expect(condition(fx.get('ClusterStack', B, 'ferrol'), 'ReleasesResolved')?.reason).toBe('ReleaseSourceUnavailable');
    const fixed = await copyExampleReleases();
    await fx.custom.patchNamespacedCustomObject(
      { ...GROUP, plural: 'clusterstacks', namespace: B, name: 'ferrol', body: { spec: { releaseSource: fixed } } },
      MERGE(),
    );
    await fx.waitFor(
      () => condition(fx.get('ClusterStack', B, 'ferrol'), 'ReleasesResolved')?.status === 'True',
      'team B resolved from its new source',
      WAIT_MS,
    );
    await fx.waitFor(
      () =>
        condition(fx.get('ClusterStackRelease', B, 'docker-ferrol-1-30-v3'), 'ManifestsRendered')?.status === 'True',
      "team B's release rendered again",
      WAIT_MS,
    );
  });

  it('runs a publish that keeps failing again as soon as something changes, not after its backoff', async () => {
    fx.git.declinePushes(fx.remote, 'pushes are frozen');
    await patchCluster(A, 'alpha', 'alpha-frozen.test');
    await fx.waitFor(
      () => condition(fx.get('ClusterAddon', A, 'alpha'), 'ManifestsPublished')?.reason === 'PublishRetrying',
      'the failed publish in the status',
      WAIT_MS,
    );
    // The publish key now backs off for ten minutes; the remote recovers and a Cluster changes.
    await unlink(path.join(fx.remote, 'hooks', 'pre-receive'));
    await patchCluster(A, 'alpha', 'alpha-thawed.test');
    await fx.waitFor(() => alphaFiles().includes('alpha-thawed.test'), 'the change in Git', WAIT_MS);
  });
});
