// Handovers between two shard controllers with Flux wiring (real processes, real helm, real git, a
// leased real API server with Flux's CRDs, the shards running as deploy/'s ServiceAccount; no Flux
// controller runs: the test creates the live Kustomizations as root Kustomizations would). A Cluster moved from s0 to s1 stays in s0's subtree, its wiring marked
// `prune: disabled`, while the live Kustomization is still s0's root's and unmarked, even after s1
// publishes it; once the live object carries the mark, s0 drops it. A ClusterStack moved from s1 to
// s0 at the same time keeps its releases published by s1 until s0 publishes them. Neither output is
// ever absent from the branch. Stacks of one namespace split over the shards are told so on each
// shard's stack.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { SHARD_LABEL } from '../../src/shards/shard-scope.js';
import { decodeYamlDocument } from '../../src/yaml/kube-yaml.js';
import { aStack, condition, GROUP, MERGE } from '../support/controller-fixture.js';
import { bundleCli, type ControllerProcess } from '../support/controller-process.js';
import {
  aCluster,
  CAPI_V1BETA2 as CAPI,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';
import { labelled, moveToShard, spawnShard, whenRemote } from './shard-fixture.js';

const NAMESPACE = 'fleet';
const SPLIT = 'split';
const FLUX = { group: 'kustomize.toolkit.fluxcd.io', version: 'v1', plural: 'kustomizations' } as const;
const PRUNE_MARK = 'kustomize.toolkit.fluxcd.io/prune: disabled';
/** Waits on the branch end on a push to it (not a poll of git); this only stops a stuck test. */
const LIMIT_MS = 180_000;

describe('handovers between shards keep the wiring', { timeout: 300_000 }, () => {
  let fx: RealControllerFixture;
  let bundle: string;
  const running: ControllerProcess[] = [];

  beforeAll(async () => {
    bundle = bundleCli();
    fx = await startRealControllerFixture();
    for (const name of [NAMESPACE, SPLIT, 'flux-system']) await fx.createNamespace(name);
    // The stack (its releases) is s1's; alpha's addons are s0's, beta's s1's.
    await fx.create(labelled(aStack('ferrol', NAMESPACE), 's1'));
    await fx.create(labelled(aCluster('alpha', NAMESPACE, 'docker-ferrol-1-30-v2'), 's0'));
    await fx.create(labelled(aCluster('beta', NAMESPACE, 'docker-ferrol-1-30-v2'), 's1'));
    // One namespace, a stack in each shard.
    await fx.create(labelled(aStack('left', SPLIT), 's0'));
    await fx.create(labelled(aStack('right', SPLIT, { kubernetesVersion: '1.31' }), 's1'));
  }, 300_000);

  afterAll(async () => {
    for (const process of running) await process.killHard();
    await fx?.cleanup();
  });

  function shard(name: string, bare: string): ControllerProcess {
    const { git, releases, lease } = fx;
    const controller = spawnShard(
      { bundle, root: git.root, kubeconfig: lease.controller.kubeconfigFile, releases },
      name,
      bare,
      path.join(git.root, `cache-${name}`),
      ['--gitops', 'flux', '--gitops-url', 'https://git.example/fleet.git'],
    );
    running.push(controller);
    return controller;
  }

  it('holds a moving Cluster until no root would prune its Kustomization, and hands a ClusterStack over without a gap', async () => {
    const { git, custom } = fx;
    const bare = git.bareRepo('fleet');
    const s0 = shard('s0', bare);
    const s1 = shard('s1', bare);
    /** The files of one shard's subtree under `dir` on the branch head. */
    const filesOf = (name: string, dir: string): [string, string][] =>
      git.head(bare, 'main') === ''
        ? []
        : Object.entries(git.files(bare, 'main')).filter(([file]) => file.startsWith(`rendered/shards/${name}/${dir}`));
    const has = (name: string, dir: string) => filesOf(name, dir).length > 0;
    const alphaAddons = `clusters/${NAMESPACE}/alpha/`;
    const alphaWiring = `flux/clusters/${NAMESPACE}/alpha/`;
    const ferrolRelease = `management/${NAMESPACE}/`;
    const index = () => git.files(bare, 'main')['rendered/shards/README.md'] ?? '';

    await whenRemote(
      bare,
      () => has('s0', alphaAddons) && has('s1', ferrolRelease),
      'both shards to publish',
      LIMIT_MS,
    );
    // What root Kustomization s0 applied: alpha's Kustomizations, owned by s0's root and unmarked.
    const root = decodeYamlDocument(filesOf('s0', 'flux/root.yaml')[0]![1]).value as KubeObject;
    const wiring = filesOf('s0', alphaWiring)
      .filter(([file]) => !file.endsWith('/kustomization.yaml'))
      .map(([, text]) => decodeYamlDocument(text).value as KubeObject);
    expect(wiring.length).toBeGreaterThan(0);
    for (const object of wiring)
      await custom.createNamespacedCustomObject({
        ...FLUX,
        namespace: object.metadata.namespace!,
        body: {
          ...object,
          metadata: {
            ...object.metadata,
            labels: {
              ...object.metadata.labels,
              'kustomize.toolkit.fluxcd.io/name': root.metadata.name,
              'kustomize.toolkit.fluxcd.io/namespace': root.metadata.namespace!,
            },
          },
        },
      });

    // alpha moves to s1, and at the same time the stack to s0 (its handover is checked further down):
    // two handovers in opposite directions, each shard giving one thing up and taking one over.
    await moveToShard(custom, CAPI, 'clusters', NAMESPACE, 'alpha', 's1');
    await moveToShard(custom, GROUP, 'clusterstacks', NAMESPACE, 'ferrol', 's0');
    await whenRemote(
      bare,
      () => has('s1', alphaAddons) && filesOf('s0', alphaWiring).some(([, text]) => text.includes(PRUNE_MARK)),
      "s1 to publish alpha and s0 to mark alpha's wiring",
      LIMIT_MS,
    );
    // s0 has read s1's subtree since (it looks every 500 ms here) and still publishes alpha: the live
    // Kustomization is its root's and unmarked, so dropping it now could delete it.
    const published = Date.now();
    await s0.waitForLine(
      (line) =>
        Number(line['time']) > published &&
        line['msg'] ===
          'Still publishing what another shard owns until its subtree holds it and no wiring would be pruned',
      LIMIT_MS,
    );
    expect(has('s0', alphaAddons)).toBe(true);
    expect(s0.lines.some((line) => line['msg'] === 'Handed over what its new shard publishes')).toBe(false);
    // The shards' index, whichever shard committed last, names alpha as published by both.
    expect(index()).toContain(`- Cluster ${NAMESPACE}/alpha: s0, s1\n`);

    // Root s0 applies its marked revision: the live objects carry the mark; s0 drops alpha.
    for (const object of wiring)
      await custom.patchNamespacedCustomObject(
        {
          ...FLUX,
          namespace: object.metadata.namespace!,
          name: object.metadata.name,
          body: { metadata: { annotations: { 'kustomize.toolkit.fluxcd.io/prune': 'disabled' } } },
        },
        MERGE(),
      );
    await whenRemote(bare, () => !has('s0', alphaAddons) && !has('s0', alphaWiring), 's0 to drop alpha', LIMIT_MS);
    await s0.waitForLine((line) => line['msg'] === 'Handed over what its new shard publishes', LIMIT_MS);

    // The stack moved to s0: s1 kept its release (and marked its wiring) until s0 published it (no
    // gap: the history check below), then dropped it.
    await whenRemote(
      bare,
      () => has('s0', ferrolRelease) && !has('s1', ferrolRelease),
      'ferrol to move from s1 to s0',
      LIMIT_MS,
    );

    // Split namespace: each shard tells its own stack, naming the other.
    for (const [name, shardName, other] of [
      ['left', 's0', 'right'],
      ['right', 's1', 'left'],
    ] as const) {
      const resolvedOf = () => condition(fx.get('ClusterStack', SPLIT, name)!, 'ReleasesResolved');
      await fx.waitFor(() => resolvedOf()?.reason === 'InvalidSpec', `${name} told of the split`, LIMIT_MS);
      const resolved = resolvedOf();
      expect(resolved?.status).toBe('False');
      expect(resolved?.message).toContain(
        `this ClusterStack is in shard ${shardName} (--shard-selector ${SHARD_LABEL}=${shardName}) but ClusterStack(s) ${other} (${SHARD_LABEL}=${other === 'left' ? 's0' : 's1'}) of namespace ${SPLIT} are not`,
      );
    }

    expect(await s0.terminate()).toBe(0);
    expect(await s1.terminate()).toBe(0);
    running.length = 0;

    // Along the whole history, from their first publish on, alpha's addons and ferrol's release are
    // in some shard's subtree in every commit.
    const history = git.git(bare, 'rev-list', '--reverse', 'main').split('\n').filter(Boolean);
    const inSomeShard = (commit: string, dir: string) =>
      ['s0', 's1'].some(
        (name) =>
          git.git(bare, 'ls-tree', '-r', '--name-only', commit, '--', `rendered/shards/${name}/${dir}`).trim() !== '',
      );
    for (const dir of [alphaAddons, ferrolRelease]) {
      const first = history.findIndex((commit) => inSomeShard(commit, dir));
      expect(first).toBeGreaterThanOrEqual(0);
      for (const commit of history.slice(first)) expect(inSomeShard(commit, dir), `${dir} in ${commit}`).toBe(true);
    }
    // The index at the end: both shards, alpha with s1 alone, no handover left.
    expect(index()).toMatch(/^\| s0 \| \d+ \|.*\n\| s1 \| \d+ \|/m);
    expect(index()).not.toContain('more than one shard');
    expect(index()).toMatch(new RegExp(`## s1\\n[^#]*- \`${NAMESPACE}\` \\(\\d+\\): [^\\n]*\\balpha\\b`));
  });
});
