// The published history a controller reads from Git on start: which commit last changed each unit
// directory under the path, and the order of the branch's commits.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GitHistoryReader } from '../gitops/git-history.js';
import { unitDirOf } from '../src/output/tree-layout.js';
import { GitSandbox, hermeticGitEnv } from './support/git-repos.js';

describe('GitHistoryReader', () => {
  const git = new GitSandbox();
  const dirs: string[] = [];
  afterAll(async () => {
    git.cleanup();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  async function reader(remote: string, subdir: string): Promise<GitHistoryReader> {
    const work = await mkdtemp(path.join(os.tmpdir(), 'csk-history-'));
    dirs.push(work);
    return new GitHistoryReader({
      repository: remote,
      branch: 'main',
      path: subdir,
      workDir: path.join(work, 'mirror'),
      author: { name: 'a', email: 'a@example.test' },
      env: hermeticGitEnv(work),
    });
  }

  it('names the newest commit that changed each unit directory under the path, and the order of commits', async () => {
    const remote = git.bareRepo('history');
    const c1 = git.commitFiles(
      remote,
      'main',
      {
        'rendered/management/ns/docker-ferrol-1-30-v2/clusterclass-a.yaml': 'a',
        'rendered/clusters/ns/alpha/cni/daemonset-cni.yaml': '1',
      },
      'first render',
    );
    const c2 = git.commitFiles(
      remote,
      'main',
      {
        'rendered/clusters/ns/bravo/cni/daemonset-cni.yaml': '1',
        'rendered/clusters/ns/alpha/kustomization.yaml': 'k',
      },
      'bravo',
    );
    const c3 = git.commitFiles(remote, 'main', { 'docs/notes.md': 'a person writes outside the path' }, 'notes');
    const c4 = git.commitFiles(
      remote,
      'main',
      { 'rendered/clusters/ns/alpha/cni/daemonset-cni.yaml': '2' },
      'alpha moved',
    );

    const history = await (await reader(remote, 'rendered')).read(unitDirOf);
    expect(history.head).toBe(c4);
    expect(history.history).toEqual([c1, c2, c3, c4]);
    expect(Object.fromEntries(history.unitRevisions)).toEqual({
      'management/ns/docker-ferrol-1-30-v2': c1,
      'clusters/ns/bravo/cni': c2,
      'clusters/ns/alpha/cni': c4,
    });
  });

  it('knows an empty history for a branch that does not exist yet', async () => {
    const remote = git.bareRepo('empty');
    expect(await (await reader(remote, '')).read(unitDirOf)).toEqual({
      head: null,
      history: [],
      unitRevisions: new Map(),
    });
  });
});
