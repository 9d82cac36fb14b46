// What the shard controller tests share: objects labelled into a shard, and a shard controller
// process (the bundled CLI) against an API server, publishing to `<bare>` under `rendered/`, and a wait
// on that branch.
import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeObject } from '../../src/api/types.js';
import { SHARD_LABEL } from '../../src/shards/shard-scope.js';
import { MERGE } from '../support/controller-fixture.js';
import { spawnController, type ControllerProcess } from '../support/controller-process.js';

/** `object` with the shard label naming `shard`. */
export const labelled = (object: KubeObject, shard: string): KubeObject => ({
  ...object,
  metadata: { ...object.metadata, labels: { [SHARD_LABEL]: shard } },
});

export interface ShardWorld {
  bundle: string;
  /** The sandbox root: home and cache directories go below it. */
  root: string;
  kubeconfig: string;
  releases: string;
}

/** Shard `name` (selecting `SHARD_LABEL=name`) as a process, its cache in `cacheDir`; `extraArgs` go before the shard flags, `extraEnv` (a crash point) into its environment. */
export function spawnShard(
  world: ShardWorld,
  name: string,
  bare: string,
  cacheDir: string,
  extraArgs: string[] = [],
  extraEnv: Record<string, string> = {},
): ControllerProcess {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: path.join(world.root, 'home'),
    KUBECONFIG: world.kubeconfig,
    CLUSTERSTACK_CACHE_DIR: cacheDir,
    CLUSTERSTACK_RELEASE_SOURCE: world.releases,
    CLUSTERSTACK_METRICS_ADDR: '0',
    CLUSTERSTACK_BATCH_WINDOW: '50ms',
    CLUSTERSTACK_LOG_LEVEL: 'debug',
    // A shard handing over reads the new shard's subtree again this soon (default 5 s): a handover
    // the test waits for ends within a second of the new shard's push, not up to 5 s after it.
    CLUSTERSTACK_HANDOVER_RECHECK: '500ms',
    ...extraEnv,
  };
  return spawnController(
    world.bundle,
    ['--git', bare, '--path', 'rendered', ...extraArgs, '--shard', name, '--shard-selector', `${SHARD_LABEL}=${name}`],
    env,
  );
}

/** Moves a namespaced object (a Cluster, a ClusterStack) to `shard` by its shard label. */
export async function moveToShard(
  custom: CustomObjectsApi,
  group: { group: string; version: string },
  plural: string,
  namespace: string,
  name: string,
  shard: string,
): Promise<void> {
  await custom.patchNamespacedCustomObject(
    { ...group, plural, namespace, name, body: { metadata: { labels: { [SHARD_LABEL]: shard } } } },
    MERGE(),
  );
}

/**
 * Resolves once `check` holds, looked at now and on every change in the bare repository `bare`'s
 * own directory or refs/heads/ (a push lands: a branch ref or packed-refs is rewritten; a hook
 * writes a file there); throws naming `what` after `limitMs`, which only stops a stuck test.
 */
export function whenRemote(bare: string, check: () => boolean, what: string, limitMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const watchers: FSWatcher[] = [];
    let scheduled = false;
    let finished = false;
    const done = (error?: Error) => {
      if (finished) return;
      finished = true;
      for (const watcher of watchers) watcher.close();
      clearTimeout(limit);
      if (error) reject(error);
      else resolve();
    };
    const look = () => {
      scheduled = false;
      if (finished) return;
      try {
        if (check()) done();
      } catch (error) {
        done(error as Error);
      }
    };
    // A push renames several files at once: one look for the lot.
    const changed = () => {
      if (scheduled) return;
      scheduled = true;
      setImmediate(look);
    };
    const limit = setTimeout(() => done(new Error(`timed out waiting for ${what}`)), limitMs);
    for (const dir of [bare, path.join(bare, 'refs', 'heads')]) watchers.push(watch(dir, changed).on('error', done));
    look();
  });
}
