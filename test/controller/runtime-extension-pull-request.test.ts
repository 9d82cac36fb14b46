// The runtime extension with the controller in pull-request mode: what Flux applies is the base
// branch, and a merge (here a squash, which makes a commit of its own that the controller never
// pushed) is what brings the addons there. BeforeClusterUpgrade must hold while the change is only
// proposed, whatever revision the engine reports, and let go once the engine applied the merge.
// Real Git (a bare remote), the fake GitHub API for the pull request, a real API server for the
// management cluster (the controller as deploy/'s ServiceAccount, Flux's Kustomization CRD) and a
// fake Cluster API caller over HTTPS.
import path from 'node:path';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitHistoryReader } from '../../gitops/git-history.js';
import { PullRequestPublisher } from '../../gitops/pull-request-publisher.js';
import type { KubeObject } from '../../src/api/types.js';
import type { ControllerRuntime } from '../../src/controller/run-controller.js';
import { aStack, condition, MERGE, readyKustomization } from '../support/controller-fixture.js';
import {
  CAPI_V1BETA2,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';
import { beforeClusterUpgradeRequest, callExtension, hookPath, type HookCall } from '../support/fake-capi-caller.js';
import { startFakeGitHub, type FakeGitHub } from '../support/fake-github/index.js';
import { makeSelfSignedCert, type SelfSignedCert } from '../support/self-signed-cert.js';

const NS = 'team';
const TOKEN = 'ghp_pull-request-token';
const OWNER = 'fleet-org';
const REPO = 'fleet-pr';

describe('runtime extension in pull-request mode', () => {
  let fixture: RealControllerFixture;
  let github: FakeGitHub;
  let runtime: ControllerRuntime;
  let cert: SelfSignedCert;
  let bare: string;
  let prBranch = '';

  const cluster = (className: string, version: string): KubeObject => ({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Cluster',
    metadata: { name: 'alpha', namespace: NS },
    spec: {
      controlPlaneEndpoint: { host: 'alpha.test', port: 6443 },
      clusterNetwork: { pods: { cidrBlocks: ['10.0.0.0/16'] } },
      topology: { classRef: { name: className }, version },
    },
  });
  const liveCluster = () => fixture.get('Cluster', NS, 'alpha') as KubeObject;
  const onBranch = (branch: string) => (fixture.git.head(bare, branch) === '' ? {} : fixture.git.files(bare, branch));
  const openPulls = () => github.pulls(OWNER, REPO).filter((pull) => pull.state === 'open');
  const call = (body: unknown): Promise<HookCall> =>
    callExtension(runtime.extensionUrl!, hookPath('BeforeClusterUpgrade', 'before-cluster-upgrade'), body, cert.ca);
  /** What GitHub does on "Squash and merge": one new commit on main with the branch's tree. */
  const squashMerge = (branch: string): string => {
    const parent = fixture.git.head(bare, 'main');
    const tree = fixture.git.git(bare, 'rev-parse', `refs/heads/${branch}^{tree}`);
    const commit = fixture.git.git(bare, 'commit-tree', tree, '-p', parent, '-m', 'Render cluster stacks (#1)');
    fixture.git.git(bare, 'update-ref', 'refs/heads/main', commit, parent);
    return commit;
  };
  /** Flux reporting it applied `revision` of main for the cluster's directory. */
  const fluxApplied = (revision: string) => fixture.put(readyKustomization('alpha', `clusters/${NS}/alpha`, revision));
  async function callUntil(body: () => unknown, check: (answer: HookCall) => boolean, what: string): Promise<HookCall> {
    let last: HookCall | undefined;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      last = await call(body());
      if (check(last)) return last;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`no BeforeClusterUpgrade answer ${what}; last: ${JSON.stringify(last?.body)}`);
  }

  beforeAll(async () => {
    fixture = await startRealControllerFixture();
    github = await startFakeGitHub({ tokens: [TOKEN] });
    github.addRepo(OWNER, REPO);
    bare = fixture.git.bareRepo('fleet-pr', { branch: 'main', files: { 'README.md': 'fleet\n' } });
    cert = makeSelfSignedCert();
    await fixture.createNamespace(NS);
    await fixture.createNamespace('flux-system');
    const author = { name: 'clusterstack', email: 'clusterstack@example.test' };
    const env = { PATH: process.env.PATH ?? '', HOME: fixture.work };
    const dir = path.join(fixture.work, 'pr');
    runtime = await fixture.start('pr', {
      engine: 'flux',
      pullRequest: true,
      publisher: new PullRequestPublisher({
        git: { repository: bare, baseBranch: 'main', path: '', workDir: path.join(dir, 'clone'), author, env },
        github: { owner: OWNER, repo: REPO, baseUrl: github.apiUrl, token: TOKEN },
      }),
      history: new GitHistoryReader({
        repository: bare,
        branch: 'main',
        path: '',
        workDir: path.join(dir, 'history'),
        author,
        env,
      }),
      runtimeExtension: {
        port: 0,
        host: '127.0.0.1',
        certFile: cert.certFile,
        keyFile: cert.keyFile,
        retryAfterSeconds: 5,
        timeoutMs: 30 * 60_000,
        revisitIntervalMs: 200,
      },
    });
    await fixture.create(aStack('ferrol', NS, { versions: ['v1', 'v3'] }));
    await fixture.create(cluster('docker-ferrol-1-30-v1', 'v1.30.2'));
    await fixture.waitFor(() => openPulls().length === 1, 'the first pull request');
    prBranch = openPulls()[0]!.headRef;
    await fixture.waitFor(
      () => Object.keys(onBranch(prBranch)).some((file) => file.startsWith(`clusters/${NS}/alpha/cluster-addon/`)),
      'the v1 addons on the pull request branch',
    );
    await fluxApplied(squashMerge(prBranch));
  }, 240_000);

  afterAll(async () => {
    await fixture?.cleanup();
    await github?.close();
    if (cert) rmSync(cert.dir, { recursive: true, force: true });
  });

  it('holds the upgrade while the addons are only proposed, even when Flux applied a newer commit of main, and lets go once it applied the squash merge', async () => {
    await fixture.custom.patchNamespacedCustomObject(
      {
        ...CAPI_V1BETA2,
        plural: 'clusters',
        namespace: NS,
        name: 'alpha',
        body: { spec: { topology: { classRef: { name: 'docker-ferrol-1-30-v3' }, version: 'v1.30.4' } } },
      },
      MERGE(),
    );
    await fixture.waitFor(
      () => Object.keys(onBranch(prBranch)).some((file) => file.startsWith(`clusters/${NS}/alpha/cni/`)),
      'the v3 addons on the pull request branch',
    );
    const request = () => beforeClusterUpgradeRequest(liveCluster(), 'v1.30.2', 'v1.30.4');

    // A person's commit lands on main meanwhile, and Flux applies it: it does not hold the v3 addons.
    const unrelated = fixture.git.commitFiles(bare, 'main', { 'docs/notes.md': 'unrelated\n' }, 'Notes');
    await fluxApplied(unrelated);
    const held = await callUntil(
      request,
      (answer) => /proposed in pull request .* not merged yet/.test(String(answer.body['message'])),
      'naming the unmerged pull request',
    );
    expect(held.body).toMatchObject({ status: 'Success', retryAfterSeconds: 5 });
    expect(condition(fixture.get('ClusterAddon', NS, 'alpha'), 'ManifestsPublished')).toMatchObject({
      status: 'Unknown',
      reason: 'ProposedInPullRequest',
    });

    // Squash and merge: a commit the controller never pushed. Until Flux applied it, still held.
    const merged = squashMerge(prBranch);
    const stillHeld = await call(request());
    expect(stillHeld.body['retryAfterSeconds']).toBe(5);
    await fluxApplied(merged);
    const released = await callUntil(
      request,
      (answer) => answer.body['retryAfterSeconds'] === 0,
      'letting the upgrade go',
    );
    expect(released.body).toMatchObject({ status: 'Success', retryAfterSeconds: 0 });
    // The ClusterAddon names the merge commit as the one holding each v3 stage.
    await fixture.waitFor(() => {
      const stages =
        (fixture.get('ClusterAddon', NS, 'alpha')?.['status'] as { stages?: { release?: string; revision?: string }[] })
          ?.stages ?? [];
      return (
        stages.length > 0 &&
        stages.every((stage) => stage.release === 'docker-ferrol-1-30-v3' && stage.revision === merged)
      );
    }, 'the stages recorded at the merge commit');
    // The base holds the tree now: the pull request GitHub would have closed on merge is closed as unnecessary here.
    await fixture.waitFor(() => openPulls().length === 0, 'the pull request closed once the base holds the tree');
  }, 240_000);
});
