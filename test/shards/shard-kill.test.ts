// Two shard controllers (real processes, real helm, one bare Git repository, a leased real API
// server, the shards running as the ServiceAccount of a copy of deploy/sharded, so a 403 fails the
// file): shard s0 is killed with SIGKILL at each of four points of its publish (phase ends and crash
// points, in an order the printed seed picks), and replaced by a new pod (a fresh cache directory)
// each time, while shard s1 keeps publishing its own changes. Then alpha moves from s0 to s1 by a
// label change. Checked on the branch's whole history: the remote stays
// fsck-clean, every commit touches one shard's subtree, every commit s1 reported is still on the
// branch, and from its first publish on alpha's addons are in some shard's subtree in every commit
// (no gap in the handover), ending in s1's only.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aStack, MERGE } from '../support/controller-fixture.js';
import { bundleCli, type ControllerProcess } from '../support/controller-process.js';
import { CONTROLLER_CRASH_STEPS, type CrashAt } from '../support/crash-steps.js';
import {
  aCluster,
  CAPI_V1BETA2 as CAPI,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';
import { auditEvents, describeAuditEvent } from '../support/real-kube-api/service-account.js';
import type { ShippedIdentity } from '../support/shipped-identity.js';
import { labelled, moveToShard, spawnShard, whenRemote } from './shard-fixture.js';

const NAMESPACE = 'fleet';
/** Where this file's copy of deploy/sharded keeps its ServiceAccount (not the shared clusterstack-system). */
const SHARDS_NAMESPACE = 'clusterstack-shards';
/**
 * Where s0 dies, each once per run, in an order the seed picks: at the end of a phase of its first
 * reconcile (the process group killed on reading the line, its helm and git children with it), or
 * at a crash point of its first publish (CLUSTERSTACK_CRASH_AT: it SIGKILLs itself there).
 */
const KILL_POINTS: { name: string; phase?: string; crashAt?: CrashAt }[] = [
  { name: 'as its render starts', phase: 'plan' },
  { name: 'as it commits what it rendered', phase: 'render' },
  ...CONTROLLER_CRASH_STEPS.git.map((crashAt) => ({ name: crashAt, crashAt })),
];
/** Limits that only stop a stuck test: every wait ends on the event it waits for. */
const PUBLISH_LIMIT_MS = 180_000;

/** A deterministic pseudo-random sequence (the seed is printed), so that a failing run can be repeated. */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** `items` in an order drawn from `random` (Fisher-Yates). */
function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const order = [...items];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/** The process's exit code once it exits; throws naming `what` if it is still running after `limitMs`. */
async function exitWithin(controller: ControllerProcess, limitMs: number, what: string): Promise<number | null> {
  let limit: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      controller.exited,
      new Promise<never>((_, reject) => {
        limit = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), limitMs);
      }),
    ]);
  } finally {
    clearTimeout(limit);
  }
}

describe('a shard killed while publishing, and a Cluster handed over', { timeout: 600_000 }, () => {
  let fx: RealControllerFixture;
  let identity: ShippedIdentity;
  let bundle: string;
  const running: ControllerProcess[] = [];
  const seed = Number(process.env.CSK_KILL_SEED ?? Date.now() % 100_000);

  beforeAll(async () => {
    bundle = bundleCli();
    fx = await startRealControllerFixture();
    await fx.createNamespace(NAMESPACE);
    // The shards' identity is what deploy/sharded ships (its RBAC is the base's), not the lease's deploy/argocd.
    identity = await fx.shippedIdentity({ overlay: 'sharded', namespace: SHARDS_NAMESPACE });
    // The stack (its releases) is s1's; alpha's addons are s0's, beta's s1's.
    await fx.create(labelled(aStack('ferrol', NAMESPACE), 's1'));
    await fx.create(labelled(aCluster('alpha', NAMESPACE, 'docker-ferrol-1-30-v2'), 's0'));
    await fx.create(labelled(aCluster('beta', NAMESPACE, 'docker-ferrol-1-30-v2'), 's1'));
  }, 300_000);

  afterAll(async () => {
    for (const process of running) await process.killHard();
    if (!fx) return;
    try {
      // Every request of the shards, killed ones included: none may have been refused.
      const refused = auditEvents({ name: fx.lease.name, auditLogFile: fx.lease.auditLogFile }).filter(
        (event) => event.user.username === identity?.user && event.responseStatus?.code === 403,
      );
      if (refused.length > 0)
        throw new Error(
          `the shards' ServiceAccount was refused (403) under deploy/sharded's RBAC:\n${refused.map(describeAuditEvent).join('\n')}`,
        );
    } finally {
      await fx.cleanup();
    }
  });

  function shard(name: string, bare: string, cacheDir: string, env: Record<string, string> = {}): ControllerProcess {
    const world = { bundle, root: fx.git.root, kubeconfig: identity.kubeconfigFile, releases: fx.releases };
    const controller = spawnShard(world, name, bare, cacheDir, [], env);
    running.push(controller);
    return controller;
  }
  const move = (name: string, host: string) =>
    fx.custom.patchNamespacedCustomObject(
      { ...CAPI, plural: 'clusters', namespace: NAMESPACE, name, body: { spec: { controlPlaneEndpoint: { host } } } },
      MERGE(),
    );
  /** alpha's addon files at `commit`, per shard. */
  const alphaIn = (bare: string, commit: string): string[] =>
    ['s0', 's1'].filter(
      (name) =>
        fx.git
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
    fx.git.head(bare, 'main') === ''
      ? ''
      : Object.entries(fx.git.files(bare, 'main'))
          .filter(([file]) => file.startsWith(`rendered/shards/${name}/clusters/${NAMESPACE}/${cluster}/`))
          .map(([, text]) => text)
          .join('\n');
  const alphaText = (bare: string, name: string): string => clusterText(bare, name, 'alpha');
  /** Where the last log line said the process was. */
  const lastLine = (controller: ControllerProcess): string => {
    const last = controller.lines.filter((line) => typeof line['msg'] === 'string').at(-1);
    return last === undefined ? 'none' : `${String(last['msg'])}${last['phase'] ? ` ${String(last['phase'])}` : ''}`;
  };

  it('keeps every commit of the other shard and publishes a moved Cluster without a gap', async () => {
    const { git } = fx;
    const bare = git.bareRepo('fleet');
    const s1 = shard('s1', bare, path.join(git.root, 'cache-s1'));
    const kills = shuffled(KILL_POINTS, randomFrom(seed));
    // Printed first: a round that fails is repeated with CSK_KILL_SEED.
    console.info(`shard kill test (seed ${seed}): s0 killed ${kills.map((point) => point.name).join('; ')}`);
    const points: string[] = [];
    for (const [i, point] of kills.entries()) {
      await move('alpha', `kill-${i}.test`);
      await move('beta', `beta-${i}.test`);
      // A new pod each time: its own, empty cache directory.
      const s0 = shard(
        's0',
        bare,
        path.join(git.root, `cache-s0-${i}`),
        point.crashAt ? { CLUSTERSTACK_CRASH_AT: point.crashAt } : {},
      );
      if (point.crashAt) {
        const code = await exitWithin(s0, PUBLISH_LIMIT_MS, `s0 to crash at ${point.crashAt}`);
        expect({ point: point.name, code, stderr: s0.stderr.join('') }).toEqual({
          point: point.name,
          code: null,
          stderr: '',
        });
      } else await s0.waitForLine((line) => line['phase'] === point.phase, PUBLISH_LIMIT_MS);
      // The group too: children a crash point leaves behind, or helm and git running at the phase's end.
      await s0.killHard();
      running.splice(running.indexOf(s0), 1);
      points.push(`${point.name}: ${lastLine(s0)}`);
      // s1 published this round's change of its own Cluster, concurrently with s0's run (so each
      // round adds one s1 commit that s0's lost or killed pushes must not revert).
      await whenRemote(
        bare,
        () => clusterText(bare, 's1', 'beta').includes(`beta-${i}.test`),
        `s1 to publish beta-${i}`,
        PUBLISH_LIMIT_MS,
      );
      git.git(bare, 'fsck', '--full', '--strict', '--no-progress');
    }
    console.info(`shard kill test: s0's last log lines when killed: ${points.join('; ')}`);
    await move('alpha', 'converged.test');
    const s0 = shard('s0', bare, path.join(git.root, 'cache-s0-final'));
    await whenRemote(
      bare,
      () => alphaText(bare, 's0').includes('converged.test'),
      'the replacement shard to publish alpha',
      PUBLISH_LIMIT_MS,
    );

    // The handover: alpha's label moves it to s1; s0 drops it only once s1's subtree holds it.
    await moveToShard(fx.custom, CAPI, 'clusters', NAMESPACE, 'alpha', 's1');
    await whenRemote(
      bare,
      () => alphaText(bare, 's1').includes('converged.test') && alphaText(bare, 's0') === '',
      'alpha to move from s0 to s1',
      PUBLISH_LIMIT_MS,
    );
    await s0.waitForLine((line) => line['msg'] === 'Handed over what its new shard publishes', PUBLISH_LIMIT_MS);
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
    expect(s1Revisions.length).toBeGreaterThan(KILL_POINTS.length);
    for (const revision of s1Revisions) expect(history, `s1's commit ${revision}`).toContain(revision);
    const first = history.findIndex((commit) => alphaIn(bare, commit).length > 0);
    expect(first).toBeGreaterThanOrEqual(0);
    for (const commit of history.slice(first))
      expect(alphaIn(bare, commit), `alpha's addons in commit ${commit}`).not.toEqual([]);
    expect(alphaIn(bare, head)).toEqual(['s1']);
    // The shards did talk to the API server as deploy/sharded's ServiceAccount (afterAll fails on any 403).
    expect(
      auditEvents({ name: fx.lease.name, auditLogFile: fx.lease.auditLogFile }).some(
        (event) => event.user.username === identity.user && event.verb === 'watch',
      ),
    ).toBe(true);
  });
});
