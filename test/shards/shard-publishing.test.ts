// Three shard publishers committing to disjoint subtrees of one branch at the same time, with real
// git: a push that loses the race restarts from the new head and manages only its own path, so no
// shard's commit is lost, reverted or touched by another shard. Beside the subtrees, every commit
// carries the shards' index (`rendered/shards/README.md`), derived from the subtrees it holds: at
// every commit it lists exactly those, whichever shard made it and however the pushes raced.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitPublisher } from '../../gitops/git-publisher.js';
import { holdingsOfOtherShards } from '../../gitops/shard-fleet.js';
import type { RenderedTree } from '../../src/output/rendered-tree.js';
import { shardSubtree } from '../../src/shards/shard-scope.js';
import { FLEET_INDEX_FILE, renderFleetIndex, summarizeShard } from '../../src/shards/fleet-index.js';
import { GitSandbox } from '../support/git-repos.js';
import { recordingLogger } from '../support/test-logger.js';

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

/** Commits read so far, by repository and sha: a commit never changes, and the checks read each one many times. */
const commitFiles = new Map<string, Record<string, string>>();

/** Every file at `revision` (read once per commit: one ls-tree and one cat-file --batch, not a git show per file). */
function filesAt(repo: string, revision: string): Record<string, string> {
  const commit = git(repo, 'rev-parse', '--verify', `${revision}^{commit}`).trim();
  const key = `${repo}\0${commit}`;
  if (!commitFiles.has(key)) commitFiles.set(key, sandbox.filesAt(repo, commit));
  return commitFiles.get(key)!;
}

/** The files under `dir` at `commit`, relative to it. */
function subtreeAt(repo: string, commit: string, dir: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(filesAt(repo, commit))
      .filter(([name]) => name.startsWith(`${dir}/`))
      .map(([name, text]) => [name.slice(dir.length + 1), text]),
  );
}

/** The file `name` at `commit`; throws as `git show` would when there is none. */
function fileAt(repo: string, commit: string, name: string): string {
  const text = filesAt(repo, commit)[name];
  if (text === undefined) throw new Error(`${name} is not in ${commit} of ${repo}`);
  return text;
}

const SHARDS_DIR = 'rendered/shards';

/**
 * Push attempts per publish: a push loses a race only to a commit that landed since its shard last
 * fetched, so a shard loses at most as many races as there are other writers' commits: here the
 * other shards' (SHARDS.length - 1) * ROUNDS and one foreign push. One attempt more than that can
 * never run out, however slowly a loaded machine runs the racing pushes (at load 35 the default 8
 * once did in the three-shard case).
 */
const PUSH_ATTEMPTS = (SHARDS.length - 1) * ROUNDS + 2;

/** A shard publisher on `bare`, keeping the shards' index beside its subtree; its git runs with HOME `home`. */
function shardPublisher(
  bare: string,
  shard: string,
  logger?: ReturnType<typeof recordingLogger>['logger'],
  home = sandbox.root,
) {
  return new GitPublisher({
    repository: bare,
    branch: 'main',
    path: shardSubtree('rendered', shard),
    workDir: path.join(sandbox.root, `work-${path.basename(bare)}-${shard}`),
    author: AUTHOR,
    env: { PATH: process.env.PATH, HOME: home },
    fleetIndex: true,
    maxPushAttempts: PUSH_ATTEMPTS,
    ...(logger ? { logger } : {}),
  });
}

/** The shard subtrees present at `commit`: the directories directly under SHARDS_DIR, in git's (byte) order. */
function subtreesAt(repo: string, commit: string): string[] {
  const dirs = Object.keys(filesAt(repo, commit))
    .filter((name) => name.startsWith(`${SHARDS_DIR}/`) && name.indexOf('/', SHARDS_DIR.length + 1) > 0)
    .map((name) => name.slice(SHARDS_DIR.length + 1, name.indexOf('/', SHARDS_DIR.length + 1)));
  return [...new Set(dirs)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/**
 * The index at `commit` lists exactly the shard subtrees that commit holds (by its table's rows),
 * and is byte for byte the index of their provenance records.
 */
function expectIndexOfSubtrees(repo: string, commit: string): string[] {
  const present = subtreesAt(repo, commit);
  const index = fileAt(repo, commit, `${SHARDS_DIR}/${FLEET_INDEX_FILE}`);
  expect(
    [...index.matchAll(/^\| ([a-z0-9-]+) \| (?:\d+|-) \|/gm)].map((row) => row[1]),
    commit,
  ).toEqual(present);
  const summaries = new Map(
    present.map((shard) => [shard, summarizeShard(fileAt(repo, commit, `${SHARDS_DIR}/${shard}/provenance.json`))]),
  );
  expect(index, commit).toBe(renderFleetIndex(summaries));
  return present;
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

// Each case has its own repositories (the commit cache is keyed by repository): side by side, the
// two short cases run while the three shards of the first wait on their lost races.
describe.concurrent('sharded publishing to one Git branch', () => {
  it('loses and reverts no shard commit when three shards publish concurrently', async () => {
    const bare = sandbox.bareRepo('fleet', { branch: 'main', files: { 'rendered/README.md': 'fleet\n' } });
    const published = new Map<string, { round: number; revision: string; tree: RenderedTree }[]>();
    await Promise.all(
      SHARDS.map(async (shard) => {
        const publisher = shardPublisher(bare, shard);
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
    // Each commit touches one shard's subtree only (and the shards' index), and along the history
    // each shard's subtree goes through its published rounds in order (a revert would show an older
    // round again). The index of every commit lists exactly the subtrees there.
    const states = new Map<string, string[]>(SHARDS.map((shard) => [shard, []]));
    for (const commit of history.slice(1)) {
      const touched = new Set(
        git(bare, 'diff-tree', '--no-commit-id', '--name-only', '-r', `${commit}^`, commit)
          .split('\n')
          .filter((file) => file !== '' && file !== `${SHARDS_DIR}/${FLEET_INDEX_FILE}`)
          .map((file) => file.split('/').slice(0, 3).join('/')),
      );
      expect(touched.size).toBe(1);
      expectIndexOfSubtrees(bare, commit);
      for (const shard of SHARDS)
        states.get(shard)!.push(subtreeAt(bare, commit, shardSubtree('rendered', shard))['README.md']?.trim() ?? '');
    }
    expect(history).toHaveLength(1 + SHARDS.length * ROUNDS);
    expect(subtreesAt(bare, head)).toEqual(SHARDS);
    // The user's file beside the shards directory is left alone.
    expect(git(bare, 'show', `${head}:rendered/README.md`)).toBe('fleet\n');
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

  it('keeps the index right through a lost push race, a removed shard and a publish with no change', async () => {
    const bare = sandbox.bareRepo('index', { branch: 'main', files: { 'rendered/README.md': 'fleet\n' } });
    const c = recordingLogger();
    const first = recordingLogger();
    const [a, b] = [shardPublisher(bare, 'shard0', first.logger), shardPublisher(bare, 'shard1')];
    const lateShard = shardPublisher(bare, 'shard2', c.logger);
    const commits: string[] = [];
    const publish = async (publisher: GitPublisher, shard: string, round: number) => {
      const result = await publisher.publish(roundTree(shard, round), {
        title: `${shard} ${round}`,
        body: '',
        trailers: {},
      });
      if (result.changed) commits.push(result.revision!);
      return result;
    };
    await a.readPrevious();
    await publish(a, 'shard0', 0);
    // shard1 and shard2 read the same head; shard1 commits first, so shard2 builds on shard1's commit.
    await b.readPrevious();
    await lateShard.readPrevious();
    await publish(b, 'shard1', 0);
    // Then another writer pushes between shard2's commit and its push: the push loses the race,
    // and the commit is made again on the new head, index and all.
    const lateClone = path.join(sandbox.root, `work-${path.basename(bare)}-shard2`);
    sandbox.pushForeignCommitBeforePush(lateClone, bare, 'main', 'rendered/other.txt', 'once');
    await publish(lateShard, 'shard2', 0);
    expect(sandbox.foreignPushes(lateClone)).toBe(1);
    // One lost race, the foreign push's: shard1's commit it saw by fetching before it committed.
    const lostRaces = (entries: { message: string }[]) =>
      entries.filter(
        (entry) => entry.message === 'Push lost a race with another writer, rebuilding on the new remote head',
      );
    expect(lostRaces(c.entries)).toHaveLength(1);
    const foreign = git(bare, 'rev-parse', `${commits[2]}^`).trim();
    expect(commits[2]).not.toBe(foreign);
    expect(git(bare, 'rev-parse', `${foreign}^`).trim()).toBe(commits[1]);
    // shard0 builds on a head three commits past the one it pushed (its own path unchanged there).
    await publish(a, 'shard0', 1);
    expect(lostRaces(first.entries)).toHaveLength(0);
    expect(commits.map((commit) => expectIndexOfSubtrees(bare, commit))).toEqual([
      ['shard0'],
      ['shard0', 'shard1'],
      ['shard0', 'shard1', 'shard2'],
      ['shard0', 'shard1', 'shard2'],
    ]);
    expect(git(bare, 'show', `${commits[3]}:${SHARDS_DIR}/${FLEET_INDEX_FILE}`)).toContain('shard0-c1');
    // shard2 leaves the fleet: someone removes its subtree. A publish with nothing new commits
    // nothing (not even the index); the next commit of any shard drops shard2 from the index.
    const clone = path.join(sandbox.root, 'remover');
    sandbox.git(sandbox.root, 'clone', '--quiet', '--branch', 'main', bare, clone);
    sandbox.git(clone, 'rm', '-r', '--quiet', `${SHARDS_DIR}/shard2`);
    sandbox.git(clone, 'commit', '--quiet', '-m', 'Remove shard2 from the fleet');
    sandbox.git(clone, 'push', '--quiet', 'origin', 'main');
    const removed = sandbox.head(bare, 'main');
    await b.readPrevious();
    expect((await publish(b, 'shard1', 0)).changed).toBe(false);
    expect(sandbox.head(bare, 'main')).toBe(removed);
    await publish(b, 'shard1', 1);
    expect(expectIndexOfSubtrees(bare, commits.at(-1)!)).toEqual(['shard0', 'shard1']);
    expect(git(bare, 'rev-parse', `${commits.at(-1)}^`).trim()).toBe(removed);
    expect(git(bare, 'show', `main:rendered/README.md`)).toBe('fleet\n');
  }, 120_000);

  it("rebuilds on the other shard's commit when two shards' first pushes both create the branch", async () => {
    const bare = sandbox.bareRepo('unborn');
    const change = { title: 'first', body: '', trailers: {} };
    // shard1's first commit, made on a side branch: the hook below lands it on main at the moment
    // shard0's push would have created main.
    const other = new GitPublisher({
      repository: bare,
      branch: 'side',
      path: shardSubtree('rendered', 'shard1'),
      workDir: path.join(sandbox.root, 'work-unborn-side'),
      author: AUTHOR,
      env: { PATH: process.env.PATH, HOME: sandbox.root },
      fleetIndex: true,
    });
    await other.readPrevious();
    const theirs = (await other.publish(roundTree('shard1', 0), change)).revision!;
    // shard0's git reads its hooks from `hooks` (its HOME's config; its clone does not exist yet).
    // pre-push runs once the remote has said it has no main, before the push reaches it: shard1's
    // push creates main then (only the first time), and the remote answers shard0's push with
    // "cannot lock ref 'refs/heads/main': reference already exists".
    const home = path.join(sandbox.root, 'home-unborn');
    mkdirSync(path.join(home, 'hooks'), { recursive: true });
    writeFileSync(path.join(home, '.gitconfig'), `[core]\n\thooksPath = ${path.join(home, 'hooks')}\n`);
    writeFileSync(
      path.join(home, 'hooks', 'pre-push'),
      `#!/bin/sh\nenv -i PATH='${process.env.PATH}' git -C '${bare}' update-ref refs/heads/main ${theirs} '' 2>/dev/null || true\n`,
      { mode: 0o755 },
    );
    const log = recordingLogger();
    const mine = shardPublisher(bare, 'shard0', log.logger, home);
    await mine.readPrevious();
    const result = await mine.publish(roundTree('shard0', 0), change);
    expect(
      log.entries.filter(
        (entry) => entry.message === 'Push lost a race with another writer, rebuilding on the new remote head',
      ),
    ).toHaveLength(1);
    expect(git(bare, 'rev-parse', 'main').trim()).toBe(result.revision);
    expect(git(bare, 'rev-parse', `${result.revision}^`).trim()).toBe(theirs);
    expect(expectIndexOfSubtrees(bare, result.revision!)).toEqual(['shard0', 'shard1']);
  }, 60_000);

  it('keeps the index in place too: committed with the subtree, refused over a file that is not its own', async () => {
    const repo = path.join(sandbox.root, 'in-place');
    const publisher = (shard: string) =>
      new GitPublisher({
        repository: repo,
        branch: 'main',
        path: shardSubtree('rendered', shard),
        workDir: path.join(sandbox.root, 'unused'),
        author: AUTHOR,
        env: { PATH: process.env.PATH, HOME: sandbox.root },
        fleetIndex: true,
      });
    const change = { title: 'round', body: '', trailers: {} };
    const [a, b] = [publisher('shard0'), publisher('shard1')];
    await a.readPrevious();
    await a.publish(roundTree('shard0', 0), change);
    // Someone's untracked file where shard1's commit would write the index: refused, nothing written.
    rmSync(path.join(repo, SHARDS_DIR, FLEET_INDEX_FILE));
    git(repo, 'rm', '--cached', '--quiet', `${SHARDS_DIR}/${FLEET_INDEX_FILE}`);
    git(
      repo,
      '-c',
      'user.name=Someone',
      '-c',
      'user.email=someone@example.com',
      'commit',
      '--quiet',
      '-m',
      'Drop the index',
    );
    writeFileSync(path.join(repo, SHARDS_DIR, FLEET_INDEX_FILE), 'mine\n');
    const before = git(repo, 'rev-parse', 'HEAD');
    await b.readPrevious();
    await expect(b.publish(roundTree('shard1', 0), change)).rejects.toThrow(
      `--git ${repo} has untracked files where the render writes (${SHARDS_DIR}/${FLEET_INDEX_FILE}); move them away or commit them elsewhere. Then run again. Nothing was written`,
    );
    expect(git(repo, 'rev-parse', 'HEAD')).toBe(before);
    expect(existsSync(path.join(repo, shardSubtree('rendered', 'shard1')))).toBe(false);
    expect(readFileSync(path.join(repo, SHARDS_DIR, FLEET_INDEX_FILE), 'utf8')).toBe('mine\n');
    rmSync(path.join(repo, SHARDS_DIR, FLEET_INDEX_FILE));
    await b.publish(roundTree('shard1', 0), change);
    await a.publish(roundTree('shard0', 1), change);
    expect(expectIndexOfSubtrees(repo, 'HEAD~3')).toEqual(['shard0']);
    // A commit a hook refuses puts the index back with the subtree: the work tree is as HEAD has it.
    const hook = path.join(repo, '.git', 'hooks', 'pre-commit');
    writeFileSync(hook, '#!/bin/sh\necho refused >&2\nexit 1\n', { mode: 0o755 });
    await expect(b.publish(roundTree('shard1', 1), change)).rejects.toThrow(/a commit hook refused the commit/);
    rmSync(hook);
    expect(git(repo, 'status', '--porcelain', '--untracked-files=all')).toBe('');
    expect(expectIndexOfSubtrees(repo, 'HEAD~1')).toEqual(['shard0', 'shard1']);
    expect(expectIndexOfSubtrees(repo, 'HEAD')).toEqual(['shard0', 'shard1']);
    expect(git(repo, 'status', '--porcelain')).toBe('');
  }, 60_000);
});
