// Three shard publishers committing to disjoint subtrees of one branch at the same time, with real
// git: a push that loses the race restarts from the new head and manages only its own path, so no
// shard's commit is lost, reverted or touched by another shard.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitPublisher } from '../../gitops/git-publisher.js';
import { holdingsOfOtherShards } from '../../gitops/shard-fleet.js';
import type { RenderedTree } from '../../src/output/rendered-tree.js';
import { shardSubtree } from '../../src/shards/shard-scope.js';
import { GitSandbox } from '../support/git-repos.js';

const AUTHOR = { name: 'Clusterstack Bot', email: 'bot@example.com' };
const SHARDS = ['shard0', 'shard1', 'shard2'];
const ROUNDS = 5;

let sandbox: GitSandbox;
beforeAll(() => {
  sandbox = new GitSandbox();
});
afterAll(() => {
  sandbox.cleanup();
});

function git(repo: string, ...args: string[]): string {
  return execFileSync('git', ['-C', repo, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH!, HOME: sandbox.root },
  });
}

/** The files under `dir` at `commit`, relative to it. */
function subtreeAt(repo: string, commit: string, dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const names = git(repo, 'ls-tree', '-r', '--name-only', commit, '--', dir).split('\n').filter(Boolean);
  for (const name of names) files[name.slice(dir.length + 1)] = git(repo, 'show', `${commit}:${name}`);
  return files;
}

/** Round `round` of a shard: a README, a provenance naming one Cluster, and one unit file that the next round replaces. */
function roundTree(shard: string, round: number): RenderedTree {
  return new Map([
    ['README.md', `# ${shard}, round ${round}\n`],
    [
      'provenance.json',
      `${JSON.stringify({ units: [{ kind: 'cluster-stage', namespace: 'fleet', name: `${shard}-c${round}`, dir: `clusters/fleet/${shard}-c${round}/cluster-addon` }] })}\n`,
    ],
    [
      `clusters/fleet/${shard}-c${round}/cluster-addon/addon.yaml`,
      `kind: ConfigMap\nmetadata:\n  name: ${shard}-${round}\n`,
    ],
  ]);
}

describe('sharded publishing to one Git branch', () => {
  it('loses and reverts no shard commit when three shards publish concurrently', async () => {
    const bare = sandbox.bareRepo('fleet', { branch: 'main', files: { 'rendered/README.md': 'fleet\n' } });
    const published = new Map<string, { round: number; revision: string; tree: RenderedTree }[]>();
    await Promise.all(
      SHARDS.map(async (shard) => {
        const publisher = new GitPublisher({
          repository: bare,
          branch: 'main',
          path: shardSubtree('rendered', shard),
          workDir: path.join(sandbox.root, `work-${shard}`),
          author: AUTHOR,
          env: { PATH: process.env.PATH, HOME: sandbox.root },
        });
        const mine: { round: number; revision: string; tree: RenderedTree }[] = [];
        published.set(shard, mine);
        for (let round = 0; round < ROUNDS; round += 1) {
          await publisher.readPrevious();
          const tree = roundTree(shard, round);
          const result = await publisher.publish(tree, { title: `${shard} round ${round}`, body: '', trailers: {} });
          expect(result.changed).toBe(true);
          mine.push({ round, revision: result.revision!, tree });
        }
      }),
    );
    const head = git(bare, 'rev-parse', 'main').trim();
    const history = git(bare, 'rev-list', '--reverse', '--first-parent', 'main').split('\n').filter(Boolean);
    // Every shard commit is on the branch, holds exactly what that shard published then.
    for (const [shard, commits] of published) {
      const dir = shardSubtree('rendered', shard);
      for (const { revision, tree } of commits) {
        expect(history).toContain(revision);
        expect(subtreeAt(bare, revision, dir)).toEqual(Object.fromEntries(tree));
      }
      expect(subtreeAt(bare, head, dir)).toEqual(Object.fromEntries(commits.at(-1)!.tree));
    }
    // Each commit touches one shard's subtree only, and along the history each shard's subtree goes
    // through its published rounds in order (a revert would show an older round again).
    const states = new Map<string, string[]>(SHARDS.map((shard) => [shard, []]));
    for (const commit of history.slice(1)) {
      const touched = new Set(
        git(bare, 'diff-tree', '--no-commit-id', '--name-only', '-r', `${commit}^`, commit)
          .split('\n')
          .filter(Boolean)
          .map((file) => file.split('/').slice(0, 3).join('/')),
      );
      expect(touched.size).toBe(1);
      for (const shard of SHARDS)
        states.get(shard)!.push(subtreeAt(bare, commit, shardSubtree('rendered', shard))['README.md']?.trim() ?? '');
    }
    expect(history).toHaveLength(1 + SHARDS.length * ROUNDS);
    for (const shard of SHARDS) {
      const seen = [...new Set(states.get(shard)!.filter((state) => state !== ''))];
      expect(seen).toEqual(Array.from({ length: ROUNDS }, (_, round) => `# ${shard}, round ${round}`));
    }
    // What a shard reads to finish a handover: the others' Clusters, not its own.
    const shardsTree = new Map(Object.entries(subtreeAt(bare, head, 'rendered/shards')));
    expect([...holdingsOfOtherShards(shardsTree, 'shard0').clusters].sort()).toEqual([
      `fleet/shard1-c${ROUNDS - 1}`,
      `fleet/shard2-c${ROUNDS - 1}`,
    ]);
  }, 120_000);
});
