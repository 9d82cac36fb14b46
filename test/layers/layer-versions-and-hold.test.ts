// Addon layer versions hand over like stages, and hold pauses a layer and its dependants only, in
// both engines. The version walk runs the CLI with real git and real `kubectl kustomize`, and the
// engines' prune rules (test/support/engine-prune-rules.ts) say what each commit deletes, keeps or
// orphans on the workload cluster. Hold is checked on the generated wiring itself.
import { execFileSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderWiring, type WiringOptions } from '../../gitops/wiring/render-wiring.js';
import type { LayerRecord, UnitRecord } from '../../src/output/provenance.js';
import { copyExampleReleases, runClusterstack, writeTree } from '../support/cli.js';
import { type Engine, transition } from '../support/engine-prune-rules.js';
import { kustomizeBuild } from '../support/engine-schemas/kustomize-build.js';
import { parseObject, stageUnit } from '../support/engine-schemas/wiring-checks.js';
import { GitSandbox } from '../support/git-repos.js';
import { FLEET_CLUSTER as CLUSTER, FLEET_STACK as STACK } from '../support/layer-fleet.js';

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

const layer = (name: string, version: string): string => `---
apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata: {name: ${name}}
spec:
  version: ${version}
  source: {path: ./addons/${name}}
  prereqs: {dependsOn: [cluster-stack]}
  clusterSelector: {}
`;
const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: kube-system\ndata:\n  value: "${value}"\n`;

const KEEP = 'clusters/fleet/one: ConfigMap kube-system/monitoring-keep';
const DROPPED = 'clusters/fleet/one: ConfigMap kube-system/monitoring-dropped';
const OTHER = 'clusters/fleet/one: ConfigMap kube-system/other';

const walks = new Map<Engine, Promise<Record<string, string>[]>>();

/** The trees of walkOnce(engine), rendered once per test file. */
function walk(engine: Engine): Promise<Record<string, string>[]> {
  if (!walks.has(engine)) walks.set(engine, walkOnce(engine));
  return walks.get(engine)!;
}

/** Three commits: monitoring 1.0.0 (keep, dropped), 1.1.0 (keep changed, dropped gone), monitoring removed; `other` throughout. */
async function walkOnce(engine: Engine): Promise<Record<string, string>[]> {
  const releases = await copyExampleReleases();
  const repo = await writeTree({
    'manifests/stack.yaml': STACK,
    'manifests/cluster.yaml': CLUSTER,
    'manifests/layers.yaml': layer('monitoring', '1.0.0') + layer('other', '1.0.0'),
    'addons/monitoring/keep.yaml': configMap('monitoring-keep', 'one'),
    'addons/monitoring/dropped.yaml': configMap('monitoring-dropped', 'one'),
    'addons/other/other.yaml': configMap('other', 'one'),
  });
  execFileSync('git', ['init', '-q', repo]);
  const remote = sandbox.bareRepo(`layer-versions-${engine}`);
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
      '--gitops',
      engine,
      '--gitops-url',
      'https://git.example.test/fleet.git',
    ]);
    if (result.code !== 0) throw new Error(result.stderr);
    trees.push(sandbox.files(remote, 'main'));
  };
  await render();
  await writeFile(path.join(repo, 'manifests/layers.yaml'), layer('monitoring', '1.1.0') + layer('other', '1.0.0'));
  await writeFile(path.join(repo, 'addons/monitoring/keep.yaml'), configMap('monitoring-keep', 'two'));
  await rm(path.join(repo, 'addons/monitoring/dropped.yaml'));
  await render();
  await writeFile(path.join(repo, 'manifests/layers.yaml'), layer('other', '1.0.0'));
  await render();
  return trees;
}

// Both walks start together: each is a chain of renders that waits on helm and git processes, and
// the two share nothing but the release cache, which concurrent renders share in any run. A walk's
// failure is reported by the tests that await it.
beforeAll(() => {
  for (const engine of ['flux', 'argocd'] as const) walk(engine).catch(() => undefined);
});

describe.each(['flux', 'argocd'] as const)(
  "a layer version bump and a layer removal under %s (real git and kustomize, the engine's prune rules)",
  (engine) => {
    let trees: Record<string, string>[];
    beforeAll(async () => {
      trees = await walk(engine);
    });

    it('the bump prunes what the new version dropped and neither re-creates nor orphans what both keep', () => {
      expect(transition(trees[0]!, trees[1]!, engine)).toEqual({ pruned: [DROPPED], orphaned: [], recreated: [] });
    });

    it('removing the layer prunes its objects and touches no other layer', () => {
      expect(transition(trees[1]!, trees[2]!, engine)).toEqual({ pruned: [KEEP], orphaned: [], recreated: [] });
      expect(
        kustomizeBuild(new Map(Object.entries(trees[2]!)), 'clusters/fleet/one/layers/other').map(
          (o) => o.metadata.name,
        ),
      ).toEqual(['other']);
    });

    it('keeps one owner per layer across versions, its version in a label', () => {
      const file =
        engine === 'flux'
          ? 'flux/clusters/fleet/one/layers/monitoring.yaml'
          : 'argocd/cluster-addons/fleet/one/layer-monitoring.yaml';
      const [before, after] = [parseObject(trees[0]![file]!), parseObject(trees[1]![file]!)];
      expect(after.metadata.name).toBe(before.metadata.name);
      expect(after.metadata.name).toBe(engine === 'flux' ? 'one-layer-monitoring' : 'fleet-one-layer-monitoring');
      expect([before, after].map((o) => o.metadata.labels['clusterstack.x-k8s.io/layer-version'])).toEqual([
        '1.0.0',
        '1.1.0',
      ]);
      expect(trees[2]![file]).toBeUndefined();
      expect(transition(trees[0]!, trees[1]!, engine).orphaned).not.toContain(OTHER);
    });
  },
);

describe('the prune rules catch what the wiring used to do', () => {
  it('Flux: a Kustomization per version with deletionPolicy Orphan orphans what the new version dropped', async () => {
    const trees = await walk('flux');
    const file = 'flux/clusters/fleet/one/layers/monitoring.yaml';
    const versioned = (tree: Record<string, string>, version: string): Record<string, string> => ({
      ...tree,
      [file]: tree[file]!.replace('name: one-layer-monitoring', `name: one-monitoring-v${version}`).replace(
        '  prune: true\n',
        '  prune: true\n  deletionPolicy: Orphan\n',
      ),
    });
    expect(versioned(trees[0]!, '1-0-0')[file]).toContain('deletionPolicy: Orphan');
    expect(transition(versioned(trees[0]!, '1-0-0'), versioned(trees[1]!, '1-1-0'), 'flux')).toEqual({
      pruned: [],
      orphaned: [DROPPED],
      recreated: [],
    });
    expect(transition(versioned(trees[1]!, '1-1-0'), trees[2]!, 'flux')).toEqual({
      pruned: [],
      orphaned: [KEEP],
      recreated: [],
    });
  });
});

// Hold, on the wiring the render generates from its unit records.
const options = (engine: Engine): WiringOptions => ({
  engine,
  name: 'clusterstacks',
  namespace: engine === 'flux' ? 'flux-system' : 'argocd',
  source: { kind: 'git', url: 'https://git.example.test/fleet.git', branch: 'main', path: '' },
});

function layerUnit(name: string, extra: Partial<LayerRecord> = {}): UnitRecord {
  const layer: LayerRecord = {
    name,
    version: '1.0.0',
    hold: false,
    dependsOn: [],
    afterStack: true,
    depth: 0,
    ...extra,
  };
  return {
    dir: `clusters/fleet/one/layers/${name}`,
    kind: 'cluster-layer',
    namespace: 'fleet',
    name: 'one',
    release: 'docker-ferrol-1-30-v1',
    layer,
    inputDigest: 'sha256:in',
    renderDigest: 'sha256:out',
    files: ['configmap-x.yaml'],
  };
}

/** base (held) <- apps <- web; logging unrelated; stages cni then csi. */
function heldFleet(): UnitRecord[] {
  return [
    stageUnit('fleet', 'one', 'docker-ferrol-1-30-v1', 'cni', 0),
    stageUnit('fleet', 'one', 'docker-ferrol-1-30-v1', 'csi', 1),
    layerUnit('base', { hold: true }),
    layerUnit('logging'),
    layerUnit('apps', { depth: 1, dependsOn: [{ layer: 'base', version: '1.0.0' }] }),
    layerUnit('web', { depth: 2, afterStack: false, dependsOn: [{ layer: 'apps', version: '1.0.0' }] }),
    layerUnit('metrics', { depth: 1, dependsOn: [{ layer: 'logging', version: '1.0.0' }] }),
  ];
}

describe('hold pauses that layer and its dependants only', () => {
  it('Argo CD: held layers and their dependants sync by hand in the last wave, after every other child, so nothing waits for them', () => {
    const files = renderWiring(heldFleet(), options('argocd'));
    const children = kustomizeBuild(files, 'argocd/cluster-addons/fleet/one');
    const view = Object.fromEntries(
      children.map((app) => [
        app.metadata.name,
        `${app.metadata.annotations['argocd.argoproj.io/sync-wave']} ${app.spec.syncPolicy.automated ? 'auto' : 'manual'}`,
      ]),
    );
    expect(view).toEqual({
      'fleet-one-cni': '0 auto',
      'fleet-one-csi': '1 auto',
      'fleet-one-layer-logging': '2 auto',
      'fleet-one-layer-metrics': '3 auto',
      'fleet-one-layer-base': '4 manual',
      'fleet-one-layer-apps': '4 manual',
      'fleet-one-layer-web': '4 manual',
    });
    // Argo CD waits for a wave's health only before a later wave (gitops-engine ends a sync once
    // its last wave is applied): no automated child is in or after a wave holding a paused one.
    const pausedWaves = children
      .filter((app) => !app.spec.syncPolicy.automated)
      .map((app) => Number(app.metadata.annotations['argocd.argoproj.io/sync-wave']));
    const lastAutomated = Math.max(
      ...children
        .filter((app) => app.spec.syncPolicy.automated)
        .map((app) => Number(app.metadata.annotations['argocd.argoproj.io/sync-wave'])),
    );
    expect(Math.min(...pausedWaves)).toBeGreaterThan(lastAutomated);
  });

  it('Argo CD: lifting the hold puts the layer and its dependants back in their waves, automated', () => {
    const lifted = heldFleet().map((unit) =>
      unit.layer?.name === 'base' ? { ...unit, layer: { ...unit.layer, hold: false } } : unit,
    );
    const children = kustomizeBuild(renderWiring(lifted, options('argocd')), 'argocd/cluster-addons/fleet/one');
    const view = Object.fromEntries(
      children
        .filter((app) => app.metadata.name.includes('-layer-'))
        .map((app) => [
          app.metadata.name,
          `${app.metadata.annotations['argocd.argoproj.io/sync-wave']} ${app.spec.syncPolicy.automated ? 'auto' : 'manual'}`,
        ]),
    );
    expect(view).toEqual({
      'fleet-one-layer-base': '2 auto',
      'fleet-one-layer-logging': '2 auto',
      'fleet-one-layer-apps': '3 auto',
      'fleet-one-layer-metrics': '3 auto',
      'fleet-one-layer-web': '4 auto',
    });
  });

  it('Flux: only the held layer is suspended; its dependants wait on it by dependsOn and nothing else depends on it', () => {
    const files = renderWiring(heldFleet(), options('flux'));
    const kustomizations = kustomizeBuild(files, 'flux').filter(
      (o) => o.kind === 'Kustomization' && o.metadata.namespace === 'fleet',
    );
    const view = Object.fromEntries(
      kustomizations.map((k) => [
        k.metadata.name,
        `${k.spec.suspend ? 'suspended' : 'active'} after ${(k.spec.dependsOn ?? []).map((d: { name: string }) => d.name).join(',') || '-'}`,
      ]),
    );
    expect(view).toEqual({
      'one-cni': 'active after -',
      'one-csi': 'active after one-cni',
      'one-layer-base': 'suspended after one-csi',
      'one-layer-logging': 'active after one-csi',
      'one-layer-apps': 'active after one-csi,one-layer-base',
      'one-layer-web': 'active after one-layer-apps',
      'one-layer-metrics': 'active after one-csi,one-layer-logging',
    });
  });
});
