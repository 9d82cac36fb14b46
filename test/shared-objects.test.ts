// Objects several kept releases render (the node image of an openstack/scs-shaped stack): written
// once in management/<ns>/shared/, reference-counted, moved between a release and shared/ in one
// commit without any engine deleting them, and two contents for one object withheld as a conflict.
// The pure placement first, then the release lifecycle v1 -> v1+v2 -> v2 through the CLI into a
// real Git repository, with `kubectl kustomize` over every kustomization directory of every commit.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UnitRecord } from '../src/output/provenance.js';
import {
  findReleaseConflicts,
  findStageConflicts,
  handoverNotes,
  placeSharedObjects,
} from '../src/render/shared-objects.js';
import { withholdConflicts } from '../src/render/withhold-units.js';
import { compareTrees, summarizeChanges } from '../src/output/tree-changes.js';
import { readPublishedState } from '../src/output/published-state.js';
import { renderPullRequestBody } from '../gitops/pull-request-body.js';
import type { WithheldEntry } from '../src/output/provenance.js';
import { decodeYamlDocument } from '../src/yaml/kube-yaml.js';
import { readTree, runClusterstack, tempDir, writeTree } from './support/cli.js';
import { kustomizeBuild } from './support/engine-schemas/kustomize-build.js';
import { GitSandbox } from './support/git-repos.js';
import { buildOrcReleases, ORC_IMAGE_NAME, orcClusterStack, orcRelease } from './support/orc-stack-releases.js';

const image = (url: string, comment = ''): string =>
  `${comment}apiVersion: openstack.k-orc.cloud/v1alpha1\nkind: Image\nmetadata:\n  name: ${ORC_IMAGE_NAME}\n  namespace: fleet\nspec:\n  resource:\n    content:\n      download:\n        url: ${url}\n`;
const classOf = (release: string): string =>
  `apiVersion: cluster.x-k8s.io/v1beta1\nkind: ClusterClass\nmetadata:\n  name: ${release}\n  namespace: fleet\n`;

function releaseRecord(version: string, files: string[]): UnitRecord {
  const release = orcRelease(version);
  return {
    dir: `management/fleet/${release}`,
    kind: 'release',
    namespace: 'fleet',
    name: release,
    release,
    inputDigest: 'i',
    renderDigest: 'r',
    files,
  };
}

function stageRecord(stage: string, order: number, files: string[]): UnitRecord {
  return {
    dir: `clusters/fleet/alpha/${stage}`,
    kind: 'cluster-stage',
    namespace: 'fleet',
    name: 'alpha',
    release: orcRelease('v1'),
    stage,
    order,
    inputDigest: 'i',
    renderDigest: 'r',
    files,
  };
}

describe('placeSharedObjects', () => {
  it('writes an object two releases render alike once, in the shared directory, with both releases, as the older one rendered it', () => {
    const records = [
      releaseRecord('v2', ['clusterclass.yaml', 'image.yaml']),
      releaseRecord('v1', ['clusterclass.yaml', 'image.yaml']),
    ];
    const rendered = new Map([
      [
        records[0]!.dir,
        new Map([
          ['clusterclass.yaml', classOf(orcRelease('v2'))],
          ['image.yaml', image('https://x/a.qcow2', '# Source: v2\n')],
        ]),
      ],
      [
        records[1]!.dir,
        new Map([
          ['clusterclass.yaml', classOf(orcRelease('v1'))],
          ['image.yaml', image('https://x/a.qcow2', '# Source: v1\n')],
        ]),
      ],
    ]);
    expect(findReleaseConflicts(records, rendered)).toEqual([]);
    const placed = placeSharedObjects(records, rendered);
    const sharedPath = `management/fleet/shared/image-${ORC_IMAGE_NAME}.yaml`;
    expect([...placed.sharedFiles.keys()]).toEqual([sharedPath]);
    expect(placed.sharedFiles.get(sharedPath)).toContain('# Source: v1');
    expect(placed.sharedObjects).toEqual([
      {
        path: sharedPath,
        group: 'openstack.k-orc.cloud',
        version: 'v1alpha1',
        kind: 'Image',
        namespace: 'fleet',
        name: ORC_IMAGE_NAME,
        renderedBy: [orcRelease('v1'), orcRelease('v2')],
      },
    ]);
    for (const record of placed.records) {
      expect(record.files).toEqual(['clusterclass.yaml']);
      expect(record.shared).toEqual({ 'image.yaml': sharedPath });
      expect([...placed.rendered.get(record.dir)!.keys()]).toEqual(['clusterclass.yaml']);
    }
    expect(placed.sharedDirs).toEqual(['management/fleet/shared']);
  });

  it("recognizes one object however its metadata is written (quoted, flow style, JSON, with comments), by Kubernetes' reading", () => {
    const layouts = [
      `# Source: x\napiVersion: openstack.k-orc.cloud/v1alpha1\nkind: Image\nmetadata:\n\n  name: "${ORC_IMAGE_NAME}" # the image\n  namespace: 'fleet'\nspec: {}\n`,
      `apiVersion: openstack.k-orc.cloud/v1alpha1\nkind: Image\nmetadata: {name: ${ORC_IMAGE_NAME}, namespace: fleet}\nspec: {}\n`,
      `{"apiVersion": "openstack.k-orc.cloud/v1alpha1", "kind": "Image", "metadata": {"namespace": "fleet", "name": "${ORC_IMAGE_NAME}"}, "spec": {}}\n`,
    ];
    const records = layouts.map((_, index) => releaseRecord(`v${index + 1}`, ['image.yaml']));
    const rendered = new Map(records.map((record, index) => [record.dir, new Map([['image.yaml', layouts[index]!]])]));
    expect(findReleaseConflicts(records, rendered)).toEqual([]);
    expect(
      placeSharedObjects(records, rendered).sharedObjects.map((shared) => [shared.name, shared.renderedBy.length]),
    ).toEqual([[ORC_IMAGE_NAME, 3]]);
    // A differently named object is another object.
    const other = new Map([
      ...rendered,
      [records[0]!.dir, new Map([['image.yaml', layouts[0]!.replace(`"${ORC_IMAGE_NAME}"`, 'other-image')]])],
    ]);
    expect(placeSharedObjects(records, other).sharedObjects[0]!.renderedBy).toEqual([
      orcRelease('v2'),
      orcRelease('v3'),
    ]);
  });

  it('leaves an object one release renders in that release, and still names the (empty) shared directory', () => {
    const records = [releaseRecord('v1', ['image.yaml'])];
    const placed = placeSharedObjects(
      records,
      new Map([[records[0]!.dir, new Map([['image.yaml', image('https://x/a.qcow2')]])]]),
    );
    expect(placed.sharedFiles.size).toBe(0);
    expect(placed.records[0]!.files).toEqual(['image.yaml']);
    expect(placed.records[0]!.shared).toBeUndefined();
    expect(placed.sharedDirs).toEqual(['management/fleet/shared']);
  });

  it('withholds the newer of two releases rendering one object differently, naming both, whatever their order of discovery', () => {
    const records = [
      releaseRecord('v10', ['image.yaml']),
      releaseRecord('v9', ['image.yaml']),
      releaseRecord('v2', ['image.yaml']),
    ];
    const rendered = new Map([
      [records[0]!.dir, new Map([['image.yaml', image('https://x/rebuilt.qcow2')]])],
      [records[1]!.dir, new Map([['image.yaml', image('https://x/a.qcow2')]])],
      [records[2]!.dir, new Map([['image.yaml', image('https://x/a.qcow2')]])],
    ]);
    const conflicts = findReleaseConflicts(records, rendered);
    expect(conflicts.map((conflict) => conflict.record.release)).toEqual([orcRelease('v10')]);
    expect(conflicts[0]!.reason).toContain(
      `renders Image.openstack.k-orc.cloud fleet/${ORC_IMAGE_NAME} unlike the older release ${orcRelease('v2')}`,
    );
  });

  it('keeps an object two stages of a cluster render alike in the earlier stage only, and names stages rendering it differently', () => {
    const records = [stageRecord('csi', 1, ['image.yaml']), stageRecord('cni', 0, ['image.yaml'])];
    const same = new Map([
      [records[0]!.dir, new Map([['image.yaml', image('https://x/a.qcow2')]])],
      [records[1]!.dir, new Map([['image.yaml', image('https://x/a.qcow2')]])],
    ]);
    expect(findStageConflicts(records, same)).toEqual([]);
    const placed = placeSharedObjects(records, same);
    expect(placed.records.find((r) => r.stage === 'cni')!.files).toEqual(['image.yaml']);
    expect(placed.records.find((r) => r.stage === 'csi')).toMatchObject({
      files: [],
      shared: { 'image.yaml': 'clusters/fleet/alpha/cni/image.yaml' },
    });
    expect(placed.sharedDirs).toEqual([]);

    const different = new Map([...same, [records[0]!.dir, new Map([['image.yaml', image('https://x/b.qcow2')]])]]);
    const conflicts = findStageConflicts(records, different);
    expect(conflicts).toHaveLength(1);
    expect(conflicts[0]!.reason).toBe(
      `stages cni and csi both render Image.openstack.k-orc.cloud fleet/${ORC_IMAGE_NAME} with different content; one object cannot have two contents: render it in one stage only`,
    );
  });

  it('keeps the previous placement of a cluster whose stages were all reused, without reading their objects, and computes it otherwise', () => {
    const records = [stageRecord('csi', 1, ['image.yaml']), stageRecord('cni', 0, ['image.yaml'])];
    const same = new Map([
      [records[0]!.dir, new Map([['image.yaml', image('https://x/a.qcow2')]])],
      [records[1]!.dir, new Map([['image.yaml', image('https://x/a.qcow2')]])],
    ]);
    const full = placeSharedObjects(records, same);
    const before = new Map(full.records.map((record) => [record.dir, record]));
    const previous = { renderedClusters: new Set<string>(), before, sharedObjects: full.sharedObjects };
    // Reused: the recorded placement, exactly as computing it gives.
    const reused = placeSharedObjects(records, same, previous);
    expect(reused.records).toEqual(full.records);
    expect(reused.sharedObjects).toEqual(full.sharedObjects);
    expect(reused.rendered).toEqual(full.rendered);
    // Proof that nothing was read: an object under another name would stay apart if computed.
    const unread = new Map([
      ...same,
      [
        records[0]!.dir,
        new Map([['image.yaml', image('https://x/a.qcow2').replaceAll(ORC_IMAGE_NAME, 'another-image')]]),
      ],
    ]);
    expect(placeSharedObjects(records, unread, previous).records).toEqual(full.records);
    // A stage rendered now, a stage that moved in the order, another render digest: computed again.
    expect(
      placeSharedObjects(records, unread, {
        ...previous,
        renderedClusters: new Set(['clusters/fleet/alpha']),
      }).records.find((r) => r.stage === 'csi'),
    ).toMatchObject({ files: ['image.yaml'] });
    const reordered = [{ ...records[0]!, order: -1 }, records[1]!];
    expect(placeSharedObjects(reordered, same, previous).records.find((r) => r.stage === 'csi')).toMatchObject({
      files: ['image.yaml'],
    });
    expect(placeSharedObjects(reordered, same, previous).records.find((r) => r.stage === 'cni')).toMatchObject({
      files: [],
      shared: { 'image.yaml': 'clusters/fleet/alpha/csi/image.yaml' },
    });
    const redigested = [{ ...records[0]!, renderDigest: 'other' }, records[1]!];
    expect(placeSharedObjects(redigested, unread, previous).records.find((r) => r.stage === 'csi')).toMatchObject({
      files: ['image.yaml'],
    });
  });
});

describe('withholdConflicts', () => {
  it('takes a conflicting cluster out whole, and a release alone, recording why', () => {
    const stages = [stageRecord('cni', 0, ['a.yaml']), stageRecord('csi', 1, ['a.yaml'])];
    const releasesKept = [releaseRecord('v1', ['i.yaml']), releaseRecord('v3', ['i.yaml'])];
    const records = [...stages, ...releasesKept];
    const rendered = new Map(records.map((record) => [record.dir, new Map([['x.yaml', 'x']])]));
    const withheld: WithheldEntry[] = [];
    withholdConflicts(
      [
        { record: stages[1]!, reason: 'stages differ' },
        { record: releasesKept[1]!, reason: 'image differs' },
      ],
      rendered,
      records,
      withheld,
    );
    expect(records.map((record) => record.dir)).toEqual([releasesKept[0]!.dir]);
    expect([...rendered.keys()]).toEqual([releasesKept[0]!.dir]);
    expect(withheld).toEqual([
      { kind: 'cluster', namespace: 'fleet', name: 'alpha', reason: 'stages differ', previousKept: false },
      { kind: 'release', namespace: 'fleet', name: orcRelease('v3'), reason: 'image differs', previousKept: false },
    ]);
  });

  it('takes back previous output that brings the conflict with it', () => {
    const record = releaseRecord('v3', ['i.yaml']);
    const records = [record];
    const rendered = new Map([[record.dir, new Map([['i.yaml', 'x']])]]);
    const withheld: WithheldEntry[] = [
      { kind: 'release', namespace: 'fleet', name: orcRelease('v3'), reason: 'image differs', previousKept: true },
    ];
    withholdConflicts([{ record, reason: 'image differs' }], rendered, records, withheld);
    expect(records).toEqual([]);
    expect(withheld).toEqual([
      { kind: 'release', namespace: 'fleet', name: orcRelease('v3'), reason: 'image differs', previousKept: false },
    ]);
  });
});

describe('handoverNotes', () => {
  const v1 = `management/fleet/${orcRelease('v1')}`;
  const v2 = `management/fleet/${orcRelease('v2')}`;
  const shared = 'management/fleet/shared';
  const at = (dir: string): [string, string][] => [[`${dir}/image-${ORC_IMAGE_NAME}.yaml`, image('https://x/a.qcow2')]];

  it('says nothing for the safe moves: into shared/ while the release stays, and out of it to a kept release', () => {
    expect(handoverNotes(at(v1), at(shared), new Set([v1, v2]))).toEqual([]);
    expect(handoverNotes(at(shared), at(v2), new Set([v2]))).toEqual([]);
    expect(handoverNotes(at(v1), at(v1), new Set([v1]))).toEqual([]);
  });

  it('names an object that left the tree from shared/, which no engine prunes, with the command to delete it', () => {
    expect(handoverNotes(at(shared), [], new Set())).toEqual([
      `Image.openstack.k-orc.cloud fleet/${ORC_IMAGE_NAME} left management/fleet/shared/ with the last release rendering it; shared objects are never pruned by Flux or Argo CD (so that moving between releases never deletes them): once nothing uses it, delete it with \`kubectl delete image.openstack.k-orc.cloud -n fleet ${ORC_IMAGE_NAME}\``,
    ]);
  });

  it('warns when an object moves from a dropped release straight to another release, and says how to move it safely', () => {
    const [note] = handoverNotes(at(v1), at(v2), new Set([v2]));
    expect(note).toContain(`moves from the dropped release directory ${v1}/ straight to ${v2}/ in one commit`);
    expect(note).toContain(
      'keeping the old release one render longer (in spec.versions) moves it through the shared directory instead',
    );
  });
});

/** Where each object of a tree lives: identity -> paths of the files holding it (management and clusters only). */
function objectPaths(tree: Record<string, string>): Map<string, string[]> {
  const paths = new Map<string, string[]>();
  for (const [file, text] of Object.entries(tree)) {
    if (!/^(management|clusters)\//.test(file) || file.endsWith('/kustomization.yaml')) continue;
    const object = decodeYamlDocument(text).value as {
      apiVersion: string;
      kind: string;
      metadata: { namespace?: string; name: string };
    };
    const key = `${object.apiVersion.split('/')[0]}/${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    paths.set(key, [...(paths.get(key) ?? []), file]);
  }
  return paths;
}

const IMAGE_KEY = `openstack.k-orc.cloud/Image/fleet/${ORC_IMAGE_NAME}`;

/** The wiring object (Flux Kustomization or Argo CD Application) that applies `file`'s directory. */
function ownerOf(tree: Record<string, string>, file: string): Record<string, any> | undefined {
  const dir = path.posix.dirname(file);
  for (const [wiringFile, text] of Object.entries(tree)) {
    if (!/^(flux|argocd)\//.test(wiringFile) || wiringFile.endsWith('/kustomization.yaml')) continue;
    const object = decodeYamlDocument(text).value as Record<string, any>;
    const source = object.kind === 'Kustomization' ? object.spec.path : object.spec?.source?.path;
    if (source === `./${dir}` || source === dir) return object;
  }
  return undefined;
}

/**
 * Why an object that changed owner between two commits could be deleted by the owner it left, by
 * the engines' own rules: Flux deletes only through a Kustomization that prunes, and after a
 * dependency on the same source applied the revision first; Argo CD only through an Application
 * that prunes on sync, or one deleted with its resources finalizer.
 */
function handoverProblems(before: Record<string, string>, after: Record<string, string>): string[] {
  const problems: string[] = [];
  const paths = objectPaths(after);
  for (const [key, [oldPath]] of objectPaths(before)) {
    const newPath = paths.get(key)?.[0];
    if (!oldPath || !newPath) continue;
    const oldOwner = ownerOf(before, oldPath)!;
    const newOwner = ownerOf(after, newPath)!;
    if (oldOwner.metadata.name === newOwner.metadata.name) continue;
    const leftOwner = ownerOf(after, oldPath);
    if (oldOwner.kind === 'Kustomization') {
      const neverPrunes = oldOwner.spec.prune === false && (!leftOwner || leftOwner.spec.prune === false);
      const waits = [oldOwner, leftOwner].every(
        (ks) => ks && (ks.spec.dependsOn ?? []).some((dep: { name: string }) => dep.name === newOwner.metadata.name),
      );
      if (!neverPrunes && !waits)
        problems.push(
          `${key} moves from Kustomization ${oldOwner.metadata.name} to ${newOwner.metadata.name}, which the first may prune before the second applies it`,
        );
    } else {
      const prunes = [oldOwner, leftOwner].some((app) => app && app.spec.syncPolicy?.automated?.prune !== false);
      const cascades = !leftOwner && (oldOwner.metadata.finalizers ?? []).length > 0;
      if (prunes || cascades)
        problems.push(
          `${key} moves from Application ${oldOwner.metadata.name} to ${newOwner.metadata.name}, and the first may delete it`,
        );
    }
  }
  return problems;
}

/**
 * Runs `kubectl kustomize` on every directory holding a kustomization.yaml; returns the failures. A
 * directory another one lists among its resources is built inside that one's build (kustomize runs
 * the whole kustomization of each resource directory it takes in, as it does on its own): only the
 * directories nobody lists start a kubectl (a kubectl per directory was 48 runs in this file), and
 * when one of those fails, each directory it reaches is built on its own, so that the failures name
 * the directories that fail, as building every one did.
 */
function kustomizeEveryDirectory(tree: Record<string, string>): string[] {
  const files = new Map(Object.entries(tree));
  const dirs = Object.keys(tree)
    .filter((f) => f.endsWith('kustomization.yaml'))
    .map((file) => path.posix.dirname(file));
  const known = new Set(dirs);
  const listed = new Map<string, string[]>();
  for (const dir of dirs) {
    const resources = (decodeYamlDocument(tree[`${dir}/kustomization.yaml`]!).value as { resources?: unknown } | null)
      ?.resources;
    listed.set(
      dir,
      (Array.isArray(resources) ? resources : [])
        .filter((entry): entry is string => typeof entry === 'string')
        .map((entry) => path.posix.normalize(path.posix.join(dir, entry)))
        .filter((child) => child !== dir && known.has(child)),
    );
  }
  const reached = (from: string, into = new Set<string>()): Set<string> => {
    if (into.has(from)) return into;
    into.add(from);
    for (const child of listed.get(from)!) reached(child, into);
    return into;
  };
  const failures = new Map<string, string>();
  const builds = (dir: string): boolean => {
    try {
      kustomizeBuild(files, dir);
      return true;
    } catch (error) {
      failures.set(dir, `${dir}: ${(error as Error).message}`);
      return false;
    }
  };
  const proven = new Set<string>();
  const check = (dir: string): void => {
    if (proven.has(dir) || failures.has(dir)) return;
    if (builds(dir)) for (const built of reached(dir)) proven.add(built);
    else for (const child of listed.get(dir)!) check(child);
  };
  const nobodyLists = dirs.filter((dir) => ![...listed.values()].some((children) => children.includes(dir)));
  // Then any directory only a cycle reaches (kustomize refuses a cycle): on its own.
  for (const dir of [...nobodyLists, ...dirs]) check(dir);
  return dirs.filter((dir) => failures.has(dir)).map((dir) => failures.get(dir)!);
}

describe('kustomizeEveryDirectory', () => {
  it('names each directory that does not build, also under a parent that fails with it, and only those', () => {
    const kustomization = (...resources: string[]) =>
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${resources.map((r) => `- ${r}\n`).join('')}`;
    const configMap = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;
    const tree = {
      'top/kustomization.yaml': kustomization('good', 'bad'),
      'top/good/kustomization.yaml': kustomization('inner', 'map.yaml'),
      'top/good/map.yaml': configMap('good'),
      'top/good/inner/kustomization.yaml': kustomization('map.yaml'),
      'top/good/inner/map.yaml': configMap('inner'),
      'top/bad/kustomization.yaml': kustomization('missing.yaml'),
      'alone/kustomization.yaml': kustomization('map.yaml'),
      'alone/map.yaml': configMap('alone'),
    };

    const failures = kustomizeEveryDirectory(tree);

    expect(failures.map((failure) => failure.slice(0, failure.indexOf(':')))).toEqual(['top', 'top/bad']);
    expect(failures[1]).toMatch(/missing\.yaml/);
  });
});

describe('shared objects through the release lifecycle, in a real Git repository', () => {
  let sandbox: GitSandbox;
  let releases: string;
  beforeAll(async () => {
    sandbox = new GitSandbox();
    releases = await buildOrcReleases();
  });
  afterAll(() => sandbox.cleanup());

  /** The tree of `ref` in a bare repository, read back from Git. */
  async function treeAt(bare: string, ref: string): Promise<Record<string, string>> {
    const dir = await tempDir('csk-shared-tree-');
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git --git-dir="$0" archive --format=tar "$1" | tar -x -C "$2"`, bare, ref, dir]);
    return readTree(dir);
  }

  it.each(['flux', 'argocd'])(
    'moves the node image v1 -> shared -> v2 in one commit each, never in two places, never pruned (%s)',
    async (engine) => {
      const bare = sandbox.bareRepo(`fleet-${engine}`);
      const cache = await tempDir('csk-shared-cache-');
      const render = async (versions: string[]): Promise<{ changed: boolean; helmProcesses: number }> => {
        const inputs = await writeTree({ 'stack.yaml': orcClusterStack(versions) });
        const result = await runClusterstack(
          [
            'render',
            inputs,
            '--release-source',
            releases,
            '--git',
            bare,
            '--gitops',
            engine,
            '--gitops-url',
            'https://git.example.test/fleet.git',
            '--json',
          ],
          { env: { CLUSTERSTACK_CACHE_DIR: cache } },
        );
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
        return JSON.parse(result.stdout);
      };
      const steps: [string[], string][] = [
        [['v1'], `management/fleet/${orcRelease('v1')}`],
        [['v1', 'v2'], 'management/fleet/shared'],
        [['v2'], `management/fleet/${orcRelease('v2')}`],
      ];
      const trees: Record<string, string>[] = [];
      for (const [versions, home] of steps) {
        expect((await render(versions)).changed).toBe(true);
        const tree = await treeAt(bare, 'main');
        // In every tree, exactly once, where the reference count says.
        expect(objectPaths(tree).get(IMAGE_KEY), versions.join('+')).toEqual([`${home}/image-${ORC_IMAGE_NAME}.yaml`]);
        for (const [key, files] of objectPaths(tree)) expect(files, key).toHaveLength(1);
        expect(kustomizeEveryDirectory(tree), versions.join('+')).toEqual([]);
        expect(
          kustomizeBuild(new Map(Object.entries(tree)), 'management').filter((o) => o.kind === 'Image'),
        ).toHaveLength(1);
        trees.push(tree);
        if (versions.length === 2) {
          // The same inputs again: shared objects are reused with their units, nothing is rendered or committed.
          const again = await render(versions);
          expect(again).toMatchObject({ changed: false, helmProcesses: 0 });
        }
      }
      // One commit per step, and an unchanged render commits nothing.
      expect(sandbox.commitCount(bare, 'main')).toBe(3);
      expect((await render(['v2'])).changed).toBe(false);

      // Reference counting, in provenance and README.
      const shared = JSON.parse(trees[1]!['provenance.json']!).sharedObjects;
      expect(shared).toEqual([
        {
          path: `management/fleet/shared/image-${ORC_IMAGE_NAME}.yaml`,
          group: 'openstack.k-orc.cloud',
          version: 'v1alpha1',
          kind: 'Image',
          namespace: 'fleet',
          name: ORC_IMAGE_NAME,
          renderedBy: [orcRelease('v1'), orcRelease('v2')],
        },
      ]);
      expect(trees[1]!['README.md']).toContain(
        `| Image.openstack.k-orc.cloud fleet/${ORC_IMAGE_NAME} | \`management/fleet/shared/image-${ORC_IMAGE_NAME}.yaml\` | ${orcRelease('v1')}, ${orcRelease('v2')} |`,
      );
      expect(JSON.parse(trees[2]!['provenance.json']!).sharedObjects).toBeUndefined();
      // The commit message and a pull request name the shared object's move.
      const sharedPath = `management/fleet/shared/image-${ORC_IMAGE_NAME}.yaml`;
      const changes = compareTrees(
        readPublishedState(new Map(Object.entries(trees[0]!))),
        readPublishedState(new Map(Object.entries(trees[1]!))),
      );
      expect(changes.shared).toEqual([{ path: sharedPath, change: 'added' }]);
      expect(summarizeChanges(changes, 'sha256:x').body).toContain(`- Shared object ${sharedPath} added`);
      const body = renderPullRequestBody(changes, {
        inputDigest: 'x',
        stacks: [],
        clusters: [],
        withheld: [],
        notes: [],
        sharedObjects: [{ path: sharedPath, object: 'Image', renderedBy: [orcRelease('v1'), orcRelease('v2')] }],
      });
      expect(body).toContain(`| \`${sharedPath}\` | added | ${orcRelease('v1')}, ${orcRelease('v2')} |`);
      // Each move is safe by the engine's own pruning rules.
      expect(handoverProblems(trees[0]!, trees[1]!)).toEqual([]);
      expect(handoverProblems(trees[1]!, trees[2]!)).toEqual([]);
      // The check has teeth: a shared owner that pruned would lose the image on its way back to v2.
      const pruning = Object.fromEntries(
        Object.entries(trees[1]!).map(([file, text]) => [
          file,
          file.endsWith('/shared.yaml') ? text.replace('prune: false', 'prune: true') : text,
        ]),
      );
      expect(handoverProblems(pruning, trees[2]!)).toHaveLength(1);
    },
  );

  it('shows in plan which release a render would withhold for the conflict, and why', async () => {
    const inputs = await writeTree({ 'stack.yaml': orcClusterStack(['v1', 'v3']) });
    const result = await runClusterstack(['plan', inputs, '--release-source', releases, '--json'], {
      env: { CLUSTERSTACK_CACHE_DIR: await tempDir('csk-shared-cache-') },
    });
    expect(result.code).toBe(0);
    const notes: string[] = JSON.parse(result.stdout).clusterStacks[0].notes;
    expect(notes.filter((note) => note.includes('will be withheld'))).toEqual([
      expect.stringContaining(
        `release ${orcRelease('v3')} will be withheld: it renders Image.openstack.k-orc.cloud fleet/${ORC_IMAGE_NAME} unlike the older release ${orcRelease('v1')}`,
      ),
    ]);
    const text = await runClusterstack(['plan', inputs, '--release-source', releases], {
      env: { CLUSTERSTACK_CACHE_DIR: await tempDir('csk-shared-cache-') },
    });
    expect(text.stdout).toContain(`note: release ${orcRelease('v3')} will be withheld`);
    const agreeing = await runClusterstack([
      'plan',
      await writeTree({ 'stack.yaml': orcClusterStack(['v1', 'v2']) }),
      '--release-source',
      releases,
      '--json',
    ]);
    expect(
      JSON.parse(agreeing.stdout).clusterStacks[0].notes.filter((note: string) => note.includes('will be withheld')),
    ).toEqual([]);
  });

  it('withholds the newer release rendering the image with other content, naming the older one, and publishes the rest', async () => {
    const bare = sandbox.bareRepo('fleet-conflict');
    const inputs = await writeTree({ 'stack.yaml': orcClusterStack(['v1', 'v3']) });
    const result = await runClusterstack(['render', inputs, '--release-source', releases, '--git', bare, '--json'], {
      env: { CLUSTERSTACK_CACHE_DIR: await tempDir('csk-shared-cache-') },
    });
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    const withheld = report.withheld.find((entry: { name: string }) => entry.name === orcRelease('v3'));
    expect(withheld.reason).toContain(
      `renders Image.openstack.k-orc.cloud fleet/${ORC_IMAGE_NAME} unlike the older release ${orcRelease('v1')}`,
    );
    const tree = await treeAt(bare, 'main');
    expect(Object.keys(tree).some((file) => file.startsWith(`management/fleet/${orcRelease('v3')}/`))).toBe(false);
    expect(objectPaths(tree).get(IMAGE_KEY)).toEqual([
      `management/fleet/${orcRelease('v1')}/image-${ORC_IMAGE_NAME}.yaml`,
    ]);
    expect(tree['README.md']).toContain(`release fleet/${orcRelease('v3')}: renders Image.openstack.k-orc.cloud`);
    expect(kustomizeEveryDirectory(tree)).toEqual([]);
  });
});
