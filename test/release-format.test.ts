import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { effectiveStages, parseClusterAddonConfig } from '../src/release/cluster-addon-config.js';
import { loadRelease } from '../src/release/load-release.js';
import { parseReleaseMetadata } from '../src/release/release-metadata.js';
import { parseReleaseTag } from '../src/core/release-tag.js';
import { LocalReleaseSource } from '../src/sources/local-release-source.js';

const TAG = parseReleaseTag('docker-ferrol-1-30-v3');
const EXAMPLE_RELEASES = path.resolve('examples/quickstart/releases');

describe('parseReleaseMetadata', () => {
  it('reads a valid metadata.yaml', () => {
    const result = parseReleaseMetadata(
      'apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\nversions:\n  clusterStack: v3\n  kubernetes: v1.30.4\n  components:\n    clusterAddon: v2\n    nodeImage: v1\n',
      TAG,
    );
    expect(result.metadata).toEqual({ clusterStack: { major: 3 }, kubernetesVersion: '1.30.4', clusterAddonVersion: 'v2', nodeImageVersion: 'v1' });
  });

  it('reports versions that do not parse or contradict the tag, all at once', () => {
    const result = parseReleaseMetadata('versions:\n  clusterStack: v4\n  kubernetes: v1.29.1\n  components: {}\n', TAG);
    expect(result.problems.map((p) => p.path)).toEqual(['versions.clusterStack', 'versions.kubernetes', 'versions.components.clusterAddon']);
    expect(result.problems[0]!.message).toMatch(/says v4 but the release tag says v3/);
    expect(result.problems[1]!.message).toMatch(/is v1.29.1 but the release tag is for Kubernetes 1.30/);
    expect(parseReleaseMetadata('versions:\n  clusterStack: three\n', TAG).problems[0]!.message).toMatch(/not a cluster stack version/);
  });

  it('reports YAML that does not parse', () => {
    expect(parseReleaseMetadata('versions: [\n', TAG).problems[0]!.message).toMatch(/not valid YAML/);
  });
});

describe('parseClusterAddonConfig', () => {
  it('orders stages by first appearance and takes the action of the newest hook', () => {
    const { config } = parseClusterAddonConfig(
      'addonStages:\n  AfterControlPlaneInitialized:\n  - {name: cni, action: apply}\n  - {name: old-csi, action: apply}\n  BeforeClusterUpgrade:\n  - {name: old-csi, action: delete}\n  - {name: csi, action: apply}\n',
      'x',
    );
    expect(effectiveStages(config!)).toEqual([
      { name: 'cni', action: 'apply', order: 0 },
      { name: 'old-csi', action: 'delete', order: 1 },
      { name: 'csi', action: 'apply', order: 2 },
    ]);
  });

  it('reports unknown hooks, bad actions and conditions', () => {
    const { problems } = parseClusterAddonConfig('addonStages:\n  AfterSomething: []\n  BeforeClusterUpgrade:\n  - {name: cni, action: install}\n  - {name: csi, action: apply, waitForPostCondition: {objects: x}}\n', 'r/clusteraddon.yaml');
    expect(problems.map((p) => p.path)).toEqual(['addonStages.AfterSomething', 'addonStages.BeforeClusterUpgrade[0].action', 'addonStages.BeforeClusterUpgrade[1].waitForPostCondition']);
  });
});

describe('loadRelease (local source)', () => {
  it('tells a legacy release from a multi-stage one', async () => {
    const work = await mkdtemp(path.join(os.tmpdir(), 'csk-load-'));
    const source = new LocalReleaseSource(EXAMPLE_RELEASES);
    const legacy = await loadRelease(await source.fetch('docker-ferrol-1-30-v1'), work);
    expect(legacy.addons.format).toBe('legacy');
    expect(legacy.addons.format === 'legacy' && legacy.addons.valuesTemplate).toMatch(/^values: \|/);
    const multi = await loadRelease(await source.fetch('docker-ferrol-1-30-v3'), work);
    expect(multi.addons.format).toBe('multi-stage');
    if (multi.addons.format !== 'multi-stage') return;
    expect(multi.addons.stages.map((s) => s.name)).toEqual(['cni', 'metrics-server']);
    expect(multi.addons.stages[0]!.valuesTemplate).toMatch(/clusterName/);
  });

  it('shares the addon digest between releases that share a clusterAddon version', async () => {
    const work = await mkdtemp(path.join(os.tmpdir(), 'csk-load-'));
    const source = new LocalReleaseSource(EXAMPLE_RELEASES);
    const v2 = await loadRelease(await source.fetch('docker-ferrol-1-30-v2'), work);
    const v3 = await loadRelease(await source.fetch('docker-ferrol-1-30-v3'), work);
    expect(v2.addons.format === 'multi-stage' && v3.addons.format === 'multi-stage' && v2.addons.digest === v3.addons.digest).toBe(true);
    expect(v2.clusterClassChart.digest).not.toBe(v3.clusterClassChart.digest);
  });

  it('lists release directories, skipping names that are not tags with a reason', async () => {
    const listing = await new LocalReleaseSource(path.resolve('test/fixtures/releases')).list();
    expect(listing.releases.map((r) => r.tag)).toContain('docker-ferrol-1-30-v1-alpha-10');
    expect(listing.skipped).toEqual([]);
  });
});
