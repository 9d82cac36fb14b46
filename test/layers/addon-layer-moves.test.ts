// Objects moving between addon layers of a cluster, commit by commit through the CLI with real git
// and real `kubectl kustomize`: the object must be in every tree, never in two directories at once
// unless both copies are marked against pruning, and never leave a directory (whose owner would
// then garbage-collect it) without that directory's last copy being marked for both engines:
// Flux (`kustomize.toolkit.fluxcd.io/prune: disabled`) and Argo CD (`sync-options: Prune=false`).
import { execFileSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyExampleReleases, runClusterstack, writeTree } from '../support/cli.js';
import { kustomizeBuild } from '../support/engine-schemas/kustomize-build.js';
import { parseObject } from '../support/engine-schemas/wiring-checks.js';
import { GitSandbox } from '../support/git-repos.js';
import { FLEET_CLUSTER as CLUSTER, FLEET_STACK as STACK } from '../support/layer-fleet.js';

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

function layers(holdBase = false): string {
  return ['base', 'extra']
    .map(
      (name) => `---
apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata: {name: ${name}}
spec:
  version: 1.0.0
  hold: ${name === 'base' && holdBase}
  source: {path: ./addons/${name}}
  clusterSelector: {}
`,
    )
    .join('');
}
const MOVING =
  'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moving\n  namespace: kube-system\n  annotations:\n    team: platform\ndata:\n  key: value\n';
const KEEP = (name: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep-${name}\n  namespace: kube-system\ndata: {}\n`;

const CLUSTER_DIR = 'clusters/fleet/one';
const DIRS = [`${CLUSTER_DIR}/layers/base`, `${CLUSTER_DIR}/layers/extra`, `${CLUSTER_DIR}/cluster-addon`];
const FLUX_PRUNE = 'kustomize.toolkit.fluxcd.io/prune';
const ARGO_OPTIONS = 'argocd.argoproj.io/sync-options';

/** The ConfigMap `moving` as each owner's directory builds it with kubectl kustomize, by directory. */
function copiesOf(files: Record<string, string>): Map<string, Record<string, any>> {
  const tree = new Map(Object.entries(files));
  const copies = new Map<string, Record<string, any>>();
  for (const dir of DIRS) {
    if (!files[`${dir}/kustomization.yaml`]) continue;
    const found = kustomizeBuild(tree, dir).find(
      (object) => object.kind === 'ConfigMap' && object.metadata.name === 'moving',
    );
    if (found) copies.set(dir, found);
  }
  return copies;
}

/** Whether both engines skip this live object when its owner garbage-collects it. */
function markedForBoth(object: Record<string, any>): boolean {
  const annotations = object.metadata.annotations ?? {};
  return (
    annotations[FLUX_PRUNE] === 'disabled' &&
    String(annotations[ARGO_OPTIONS] ?? '')
      .split(',')
      .includes('Prune=false')
  );
}

/**
 * The rules of the design, checked over consecutive trees: the object is in every tree; two
 * copies only when both are marked; an owner directory that loses it had it marked (its owner
 * applied the mark before the revision that takes the object away, so its garbage collection
 * skips it whichever owner reconciles first).
 */
function movesSafely(trees: Record<string, string>[]): string[] {
  const problems: string[] = [];
  const copies = trees.map(copiesOf);
  copies.forEach((tree, index) => {
    if (tree.size === 0) problems.push(`tree ${index}: the object is missing`);
    if (tree.size > 1 && ![...tree.values()].every(markedForBoth))
      problems.push(`tree ${index}: in ${[...tree.keys()].join(' and ')}, not all marked`);
    if (index === 0) return;
    for (const [dir, object] of copies[index - 1]!) {
      if (!tree.has(dir) && !markedForBoth(object))
        problems.push(`tree ${index}: leaves ${dir} unmarked, its owner may prune it`);
    }
  });
  return problems;
}

describe('an object moved between addon layers is handed over, never pruned (real git and kustomize)', () => {
  let repo: string;
  let releases: string;
  let remote: string;
  const trees: Record<string, string>[] = [];
  const reports: Record<string, any>[] = [];

  async function render(): Promise<void> {
    const result = await runClusterstack([
      'render',
      path.join(repo, 'manifests'),
      '--release-source',
      releases,
      '--git',
      remote,
      '--json',
      '--gitops',
      'flux',
      '--gitops-url',
      'https://git.example.test/fleet.git',
    ]);
    if (result.code !== 0) throw new Error(result.stderr);
    reports.push(JSON.parse(result.stdout));
    trees.push(sandbox.files(remote, 'main'));
  }

  async function move(from: string, to: string): Promise<void> {
    await rm(path.join(repo, `addons/${from}/moving.yaml`));
    await writeFile(path.join(repo, `addons/${to}/moving.yaml`), MOVING);
  }

  beforeAll(async () => {
    releases = await copyExampleReleases();
    repo = await writeTree({
      'manifests/stack.yaml': STACK,
      'manifests/cluster.yaml': CLUSTER,
      'manifests/layers.yaml': layers(),
      'addons/base/moving.yaml': MOVING,
      'addons/base/keep.yaml': KEEP('base'),
      'addons/extra/keep.yaml': KEEP('extra'),
    });
    execFileSync('git', ['init', '-q', repo]);
    remote = sandbox.bareRepo('layer-moves');
    await render(); // 0: in base
    await move('base', 'extra');
    await render(); // 1: handover, kept in base marked
    await render(); // 2: in extra, unmarked
    await render(); // 3: nothing left to do
    await move('extra', 'base');
    await render(); // 4: handover back, kept in extra marked
    await render(); // 5: in base
  });

  it('keeps the object in its old layer, marked for Flux and Argo CD, for the render that moves it', () => {
    const handover = copiesOf(trees[1]!);
    expect([...handover.keys()]).toEqual([`${CLUSTER_DIR}/layers/base`]);
    const marked = handover.get(`${CLUSTER_DIR}/layers/base`)!;
    expect(marked.metadata.annotations).toEqual({
      team: 'platform',
      [FLUX_PRUNE]: 'disabled',
      [ARGO_OPTIONS]: 'Prune=false',
    });
    expect(marked.data).toEqual({ key: 'value' });
    // Written as the manifests say, with the two marks added as lines.
    expect(trees[1]![`${CLUSTER_DIR}/layers/base/configmap-moving.kube-system.yaml`]).toContain(
      `  annotations:\n    ${FLUX_PRUNE}: disabled\n    ${ARGO_OPTIONS}: Prune=false\n    team: platform\n`,
    );
    expect(JSON.parse(trees[1]!['provenance.json']!).addonHandovers).toEqual([
      expect.objectContaining({
        path: `${CLUSTER_DIR}/layers/base/configmap-moving.kube-system.yaml`,
        from: `${CLUSTER_DIR}/layers/base`,
        to: `${CLUSTER_DIR}/layers/extra`,
        kind: 'ConfigMap',
        namespace: 'kube-system',
        name: 'moving',
      }),
    ]);
    expect(reports[1]!.warnings).toContainEqual(
      expect.stringContaining(
        `ConfigMap kube-system/moving moves from ${CLUSTER_DIR}/layers/base/ to ${CLUSTER_DIR}/layers/extra/`,
      ),
    );
  });

  it('completes the move on the next render: in the new layer only, unmarked, as the source says; then nothing changes', () => {
    const moved = copiesOf(trees[2]!);
    expect([...moved.keys()]).toEqual([`${CLUSTER_DIR}/layers/extra`]);
    expect(trees[2]![`${CLUSTER_DIR}/layers/extra/configmap-moving.kube-system.yaml`]).toBe(
      `# Source: ./addons/extra/moving.yaml\n${MOVING}`,
    );
    expect(JSON.parse(trees[2]!['provenance.json']!).addonHandovers).toBeUndefined();
    expect(reports[2]).toMatchObject({ changed: true });
    expect(reports[3]).toMatchObject({ changed: false, helmProcesses: 0 });
  });

  it('holds in every tree of the walk, both ways, by the rules of both engines', () => {
    expect(trees).toHaveLength(6);
    expect(movesSafely(trees)).toEqual([]);
    expect([...copiesOf(trees[4]!).keys()]).toEqual([`${CLUSTER_DIR}/layers/extra`]);
    expect(markedForBoth(copiesOf(trees[4]!).get(`${CLUSTER_DIR}/layers/extra`)!)).toBe(true);
    expect([...copiesOf(trees[5]!).keys()]).toEqual([`${CLUSTER_DIR}/layers/base`]);
    expect(markedForBoth(copiesOf(trees[5]!).get(`${CLUSTER_DIR}/layers/base`)!)).toBe(false);
  });

  it('the check itself catches a move published in one commit (what happened before)', () => {
    expect(movesSafely([trees[0]!, trees[2]!])).toEqual([
      `tree 1: leaves ${CLUSTER_DIR}/layers/base unmarked, its owner may prune it`,
    ]);
  });

  it('each layer directory stays its own Flux Kustomization, prune on, so the marks are what protects the object', () => {
    for (const tree of trees) {
      expect(parseObject(tree['flux/clusters/fleet/one/layers/base.yaml']!).spec).toMatchObject({
        path: `./${CLUSTER_DIR}/layers/base`,
        prune: true,
      });
      expect(parseObject(tree['flux/clusters/fleet/one/layers/extra.yaml']!).spec).toMatchObject({
        path: `./${CLUSTER_DIR}/layers/extra`,
        prune: true,
      });
    }
  });
});

describe('a move out of a layer on hold waits for the hold to be lifted', () => {
  it('keeps the marked copy in the held layer render after render, and completes once the hold is lifted', async () => {
    const releases = await copyExampleReleases();
    const repo = await writeTree({
      'manifests/stack.yaml': STACK,
      'manifests/cluster.yaml': CLUSTER,
      'manifests/layers.yaml': layers(true),
      'addons/base/moving.yaml': MOVING,
      'addons/base/keep.yaml': KEEP('base'),
      'addons/extra/keep.yaml': KEEP('extra'),
    });
    execFileSync('git', ['init', '-q', repo]);
    const remote = sandbox.bareRepo('layer-moves-hold');
    const trees: Record<string, string>[] = [];
    const render = async (): Promise<void> => {
      const result = await runClusterstack([
        'render',
        path.join(repo, 'manifests'),
        '--release-source',
        releases,
        '--git',
        remote,
        '--json',
      ]);
      if (result.code !== 0) throw new Error(result.stderr);
      trees.push(sandbox.files(remote, 'main'));
    };
    await render();
    await rm(path.join(repo, 'addons/base/moving.yaml'));
    await writeFile(path.join(repo, 'addons/extra/moving.yaml'), MOVING);
    await render();
    await render();
    expect([...copiesOf(trees[2]!).keys()]).toEqual([`${CLUSTER_DIR}/layers/base`]);
    expect(trees[2]).toEqual(trees[1]);
    await writeFile(path.join(repo, 'manifests/layers.yaml'), layers(false));
    await render(); // the hold is lifted: the owner applies the marked copy with this revision
    expect([...copiesOf(trees[3]!).keys()]).toEqual([`${CLUSTER_DIR}/layers/base`]);
    await render();
    expect([...copiesOf(trees[4]!).keys()]).toEqual([`${CLUSTER_DIR}/layers/extra`]);
    expect(movesSafely(trees)).toEqual([]);
  });
});
