// Two shard controllers (real processes, real helm, one bare Git repository, the fake API server):
// shard s0 is killed with SIGKILL at random points while it publishes, and replaced by a new pod
// (a fresh cache directory), while shard s1 keeps publishing its own changes. Then alpha moves from
// s0 to s1 by a label change. Checked on the branch's whole history: the remote stays fsck-clean,
// every commit touches one shard's subtree, every commit s1 reported is still on the branch, and from
// its first publish on alpha's addons are in some shard's subtree in every commit (no gap in the
// handover), ending in s1's only.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyExampleReleases } from '../support/cli.js';
import { aCluster, aStack, CAPI, GROUP, MERGE, waitFor } from '../support/controller-fixture.js';
import { bundleCli, type ControllerProcess } from '../support/controller-process.js';
import { labelled, moveToShard, spawnShard } from './shard-fixture.js';
import { startFakeKubeApi, type FakeKubeApi } from '../support/fake-kube-api/index.js';
import { GitSandbox } from '../support/git-repos.js';

const KILLS = 4;
const NAMESPACE = 'fleet';

/** A deterministic pseudo-random sequence (the seed is printed), so that a failing run can be repeated. */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('a shard killed while publishing, and a Cluster handed over', { timeout: 300_000 }, () => {
  let api: FakeKubeApi;
  let git: GitSandbox;
  let bundle: string;
  let kubeconfig: string;
  let releases: string;
  let custom: CustomObjectsApi;
  const running: ControllerProcess[] = [];
  const seed = Number(process.env.CSK_KILL_SEED ?? Date.now() % 100_000);

  beforeAll(async () => {
    bundle = bundleCli();
    api = await startFakeKubeApi();
    git = new GitSandbox();
    releases = await copyExampleReleases();
    kubeconfig = path.join(git.root, 'kubeconfig.yaml');
    await writeFile(kubeconfig, api.kubeConfigYaml());
    const kc = api.kubeConfig();
    custom = kc.makeApiClient(CustomObjectsApi);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
    // The stack (its releases) is s1's; alpha's addons are s0's, beta's s1's.
    await custom.createNamespacedCustomObject({
      ...GROUP,
      plural: 'clusterstacks',
      namespace: NAMESPACE,
      body: labelled(aStack('ferrol', NAMESPACE), 's1'),
    });
    await custom.createNamespacedCustomObject({
      ...CAPI,
      plural: 'clusters',
      namespace: NAMESPACE,
      body: labelled(aCluster('alpha', NAMESPACE, 'docker-ferrol-1-30-v2'), 's0'),
    });
    await custom.createNamespacedCustomObject({
      ...CAPI,
      plural: 'clusters',
      namespace: NAMESPACE,
      body: labelled(aCluster('beta', NAMESPACE, 'docker-ferrol-1-30-v2'), 's1'),
    });
  });

  afterAll(async () => {
    for (const process of running) await process.killHard();
    await api?.close();
    git?.cleanup();
  });

  function shard(name: string, bare: string, cacheDir: string): ControllerProcess {
    const controller = spawnShard({ bundle, root: git.root, kubeconfig, releases }, name, bare, cacheDir);
    running.push(controller);
    return controller;
  }
  const move = (name: string, host: string) =>
    custom.patchNamespacedCustomObject(
      { ...CAPI, plural: 'clusters', namespace: NAMESPACE, name, body: { spec: { controlPlaneEndpoint: { host } } } },
      MERGE(),
    );
  /** alpha's addon files at `commit`, per shard. */
  const alphaIn = (bare: string, commit: string): string[] =>
    ['s0', 's1'].filter(
      (name) =>
        git
          .git(
            bare,
            'ls-tree',
            '-r',
            '--name-only',
            commit,
            '--',
            `rendered/shards/${name}/clusters/${NAMESPACE}/alpha/`,
          )
          .trim() !== '',
    );
  /** A Cluster's addon files on the branch's head, in one shard's subtree. */
  const clusterText = (bare: string, name: string, cluster: string): string =>
    git.head(bare, 'main') === ''
      ? ''
      : Object.entries(git.files(bare, 'main'))
          .filter(([file]) => file.startsWith(`rendered/shards/${name}/clusters/${NAMESPACE}/${cluster}/`))
          .map(([, text]) => text)
          .join('\n');
  const alphaText = (bare: string, name: string): string => clusterText(bare, name, 'alpha');

  it('keeps every commit of the other shard and publishes a moved Cluster without a gap', async () => {
    const random = randomFrom(seed);
    const bare = git.bareRepo('fleet');
    const s1 = shard('s1', bare, path.join(git.root, 'cache-s1'));
    const points: string[] = [];
    for (let i = 0; i < KILLS; i++) {
      await move('alpha', `kill-${i}.test`);
      await move('beta', `beta-${i}.test`);
      // A new pod each time: its own, empty cache directory.
      const s0 = shard('s0', bare, path.join(git.root, `cache-s0-${i}`));
      await s0.waitForLine((line) => line['phase'] === 'render', 60_000);
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 700)));
      const last = s0.lines
        .filter((line) => typeof line['phase'] === 'string' || typeof line['msg'] === 'string')
        .at(-1);
      await s0.killHard();
      running.splice(running.indexOf(s0), 1);
      points.push(String(last?.['phase'] ?? last?.['msg'] ?? 'start'));
      // s1 published this round's change of its own Cluster, concurrently with s0's run (so each
      // round adds one s1 commit that s0's lost or killed pushes must not revert).
      await waitFor(
        () => clusterText(bare, 's1', 'beta').includes(`beta-${i}.test`),
        `s1 to publish beta-${i}`,
        90_000,
      );
      git.git(bare, 'fsck', '--full', '--strict', '--no-progress');
    }
    console.info(`shard kill test (seed ${seed}): killed s0 after ${points.join('; ')}`);
    await move('alpha', 'converged.test');
    const s0 = shard('s0', bare, path.join(git.root, 'cache-s0-final'));
    await waitFor(
      () => alphaText(bare, 's0').includes('converged.test'),
      'the replacement shard to publish alpha',
      90_000,
    );

    // The handover: alpha's label moves it to s1; s0 drops it only once s1's subtree holds it.
    await moveToShard(custom, CAPI, 'clusters', NAMESPACE, 'alpha', 's1');
    await waitFor(
      () => alphaText(bare, 's1').includes('converged.test') && alphaText(bare, 's0') === '',
      'alpha to move from s0 to s1',
      90_000,
    );
    await s0.waitForLine((line) => line['msg'] === 'Handed over what its new shard publishes', 30_000);
    expect(await s0.terminate()).toBe(0);
    expect(await s1.terminate()).toBe(0);
    running.length = 0;

    git.git(bare, 'fsck', '--full', '--strict', '--no-progress');
    const head = git.head(bare, 'main');
    const history = git.git(bare, 'rev-list', '--reverse', 'main').split('\n').filter(Boolean);
    for (const commit of history.slice(1)) {
      const touched = new Set(
        git
          .git(bare, 'diff-tree', '--no-commit-id', '--name-only', '-r', `${commit}^`, commit)
          .split('\n')
          // Beside its subtree a shard commit may rewrite the shards' index, derived from all subtrees.
          .filter((file) => file !== '' && file !== 'rendered/shards/README.md')
          .map((file) => file.split('/').slice(0, 3).join('/')),
      );
      expect(touched.size, `commit ${commit} touches ${[...touched].join(', ')}`).toBe(1);
    }
    const s1Revisions = s1.lines
      .filter((line) => line['msg'] === 'Published rendered manifests')
      .map((line) => String(line['revision']));
    expect(s1Revisions.length).toBeGreaterThan(KILLS);
    for (const revision of s1Revisions) expect(history, `s1's commit ${revision}`).toContain(revision);
    const first = history.findIndex((commit) => alphaIn(bare, commit).length > 0);
    expect(first).toBeGreaterThanOrEqual(0);
    for (const commit of history.slice(first))
      expect(alphaIn(bare, commit), `alpha's addons in commit ${commit}`).not.toEqual([]);
    expect(alphaIn(bare, head)).toEqual(['s1']);
  });
});
