// The clone's git directory read without git: each answer what git says, or undefined (then the
// publishers ask git), over repositories real git wrote.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchedHead, headIs, plainOriginUrl, storedRef } from '../gitops/clone-git-files.js';
import { GitSandbox } from './support/git-repos.js';

let sandbox: GitSandbox;

beforeAll(() => {
  sandbox = new GitSandbox();
});

afterAll(() => {
  sandbox.cleanup();
});

describe('clone-git-files', () => {
  it('reads a ref loose, then packed, as git does, and nothing for a missing one', async () => {
    const bare = sandbox.bareRepo('refs', { branch: 'main', files: { 'a.yaml': 'a\n' } });
    const clone = path.join(sandbox.root, 'refs-clone');
    sandbox.git(sandbox.root, 'clone', '--quiet', bare, clone);
    const gitDir = path.join(clone, '.git');
    const head = sandbox.git(clone, 'rev-parse', 'refs/remotes/origin/main');
    sandbox.git(clone, 'pack-refs', '--all');
    expect(await storedRef(gitDir, 'refs/remotes/origin/main')).toBe(head);
    sandbox.git(clone, 'commit', '--quiet', '--allow-empty', '-m', 'next');
    expect(await storedRef(gitDir, 'refs/heads/main')).toBe(sandbox.git(clone, 'rev-parse', 'HEAD'));
    expect(await storedRef(gitDir, 'refs/heads/other')).toBeUndefined();
    expect(await headIs(gitDir, 'refs/heads/main')).toBe(true);
    expect(await headIs(gitDir, 'refs/heads/other')).toBe(false);
    sandbox.git(clone, 'checkout', '--quiet', '--detach');
    expect(await headIs(gitDir, 'refs/heads/main')).toBe(false);
  });

  it('names the fetched commit from FETCH_HEAD only when one ref was fetched', async () => {
    const bare = sandbox.bareRepo('fetched', { branch: 'main', files: { 'a.yaml': 'a\n' } });
    const clone = path.join(sandbox.root, 'fetched-clone');
    sandbox.git(sandbox.root, 'init', '--quiet', clone);
    const gitDir = path.join(clone, '.git');
    expect(await fetchedHead(gitDir)).toBeUndefined();
    sandbox.git(clone, 'fetch', '--quiet', bare, 'refs/heads/main');
    expect(await fetchedHead(gitDir)).toBe(sandbox.head(bare, 'main'));
    sandbox.git(clone, 'fetch', '--quiet', bare, 'refs/heads/main', 'refs/heads/main:refs/heads/copy');
    expect(await fetchedHead(gitDir)).toBeUndefined();
  });

  it("reads origin's URL as `git remote add` wrote it, and leaves a quoted or doubled one to git", async () => {
    const clone = path.join(sandbox.root, 'origin-clone');
    sandbox.git(sandbox.root, 'init', '--quiet', clone);
    const gitDir = path.join(clone, '.git');
    expect(await plainOriginUrl(gitDir)).toBeUndefined();
    sandbox.git(clone, 'remote', 'add', 'origin', 'https://git.example.com/fleet/gitops.git');
    sandbox.git(clone, 'remote', 'add', 'upstream', 'https://git.example.com/other.git');
    expect(await plainOriginUrl(gitDir)).toBe('https://git.example.com/fleet/gitops.git');
    sandbox.git(clone, 'remote', 'set-url', 'origin', '/srv/repos/a "quoted"; name#1.git');
    expect(sandbox.git(clone, 'config', '--get', 'remote.origin.url')).toBe('/srv/repos/a "quoted"; name#1.git');
    expect(await plainOriginUrl(gitDir)).toBeUndefined();
    sandbox.git(clone, 'remote', 'set-url', 'origin', '/srv/repos/plain.git');
    sandbox.git(clone, 'config', '--add', 'remote.origin.url', '/srv/repos/mirror.git');
    expect(await plainOriginUrl(gitDir)).toBeUndefined();
    writeFileSync(
      path.join(gitDir, 'config'),
      '[remote "origin"]\n\turl = /srv/repos/plain.git\n[remote "origin"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n',
    );
    expect(await plainOriginUrl(gitDir)).toBeUndefined();
  });
});
