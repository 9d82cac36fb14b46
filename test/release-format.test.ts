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
    expect(result.metadata).toEqual({
      clusterStack: { major: 3 },
      kubernetesVersion: '1.30.4',
      clusterAddonVersion: 'v2',
      nodeImageVersion: 'v1',
    });
  });

  it('reads the Kubernetes version as a semver release with patch, with or without the v', () => {
    const kubernetes = (version: string) =>
      parseReleaseMetadata(
        `versions:\n  clusterStack: v3\n  kubernetes: "${version}"\n  components:\n    clusterAddon: v2\n`,
        TAG,
      );
    expect(kubernetes('1.30.4').metadata?.kubernetesVersion).toBe('1.30.4');
    expect(kubernetes('v1.30.10').metadata?.kubernetesVersion).toBe('1.30.10');
    for (const refused of ['v1.30', 'v1.30.4-rc.1', 'v1.30.4+k3s1', ' v1.30.4', 'V1.30.4']) {
      expect(kubernetes(refused).problems.map((p) => p.message)).toEqual([
        expect.stringMatching(/must be a Kubernetes version with patch such as v1.30.4/),
      ]);
    }
  });

  it('reports versions that do not parse or contradict the tag, all at once', () => {
    const result = parseReleaseMetadata(
      'versions:\n  clusterStack: v4\n  kubernetes: v1.29.1\n  components: {}\n',
      TAG,
    );
    expect(result.problems.map((p) => p.path)).toEqual([
      'versions.clusterStack',
      'versions.kubernetes',
      'versions.components.clusterAddon',
    ]);
    expect(result.problems[0]!.message).toMatch(/says v4 but the release tag says v3/);
    expect(result.problems[1]!.message).toMatch(/is v1.29.1 but the release tag is for Kubernetes 1.30/);
    expect(parseReleaseMetadata('versions:\n  clusterStack: three\n', TAG).problems[0]!.message).toMatch(
      /not a cluster stack version/,
    );
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

  it('accepts every hook the operator registers and keeps the steady state after the newest one', () => {
    const { config, problems, warnings } = parseClusterAddonConfig(
      [
        'addonStages:',
        '  AfterControlPlaneInitialized:',
        '  - {name: cni, action: apply}',
        '  - {name: old-csi, action: apply}',
        '  BeforeClusterUpgrade:',
        '  - {name: cni, action: apply}',
        '  - {name: csi, action: apply}',
        '  AfterClusterUpgrade:',
        '  - {name: old-csi, action: delete}',
        '  - {name: post-upgrade-check, action: apply}',
        '',
      ].join('\n'),
      'x',
    );

    expect(problems).toEqual([]);
    expect(warnings).toEqual([]);
    expect(Object.keys(config!.addonStages)).toEqual([
      'AfterControlPlaneInitialized',
      'BeforeClusterUpgrade',
      'AfterClusterUpgrade',
    ]);
    expect(effectiveStages(config!)).toEqual([
      { name: 'cni', action: 'apply', order: 0 },
      { name: 'old-csi', action: 'delete', order: 1 },
      { name: 'csi', action: 'apply', order: 2 },
      { name: 'post-upgrade-check', action: 'apply', order: 3 },
    ]);
  });

  it('reads the hooks in lifecycle order, however the file orders its keys', () => {
    const { config } = parseClusterAddonConfig(
      'addonStages:\n  AfterClusterUpgrade:\n  - {name: cni, action: delete}\n  AfterControlPlaneInitialized:\n  - {name: cni, action: apply}\n  - {name: csi, action: apply}\n',
      'x',
    );

    expect(effectiveStages(config!)).toEqual([
      { name: 'cni', action: 'delete', order: 0 },
      { name: 'csi', action: 'apply', order: 1 },
    ]);
  });

  it('warns about a hook it does not know and ignores its stages, without refusing the file', () => {
    const { config, problems, warnings } = parseClusterAddonConfig(
      'addonStages:\n  AfterControlPlaneInitialized:\n  - {name: cni, action: apply}\n  BeforeClusterDelete:\n  - {name: cleanup, action: apply}\n  - {bogus: entry}\n',
      'docker-ferrol-1-30-v4/clusteraddon.yaml',
    );

    expect(problems).toEqual([]);
    expect(warnings).toEqual([
      {
        source: 'docker-ferrol-1-30-v4/clusteraddon.yaml',
        path: 'addonStages.BeforeClusterDelete',
        message:
          'is not a hook the cluster-stack-operator runs (AfterControlPlaneInitialized, BeforeClusterUpgrade, AfterClusterUpgrade); its stages are ignored. Check the spelling if they should be rendered',
      },
    ]);
    expect(effectiveStages(config!)).toEqual([{ name: 'cni', action: 'apply', order: 0 }]);
  });

  it('reads a hook without stages as an empty list, as the operator does', () => {
    const { config, problems } = parseClusterAddonConfig(
      'addonStages:\n  AfterControlPlaneInitialized:\n  - {name: cni, action: apply}\n  AfterClusterUpgrade:\n',
      'x',
    );

    expect(problems).toEqual([]);
    expect(config!.addonStages.AfterClusterUpgrade).toEqual([]);
    expect(effectiveStages(config!)).toEqual([{ name: 'cni', action: 'apply', order: 0 }]);
  });

  it('reports bad stage lists, actions and conditions, all at once, with their paths', () => {
    const { config, problems } = parseClusterAddonConfig(
      'addonStages:\n  AfterSomething: []\n  AfterClusterUpgrade: {name: cni}\n  BeforeClusterUpgrade:\n  - {name: cni, action: install}\n  - {name: csi, action: apply, waitForPostCondition: {objects: x}}\n',
      'r/clusteraddon.yaml',
    );

    expect(config).toBeUndefined();
    expect(problems.map((p) => [p.path, p.message])).toEqual([
      ['addonStages.AfterClusterUpgrade', 'must be a list of stages'],
      ['addonStages.BeforeClusterUpgrade[0].action', 'must be apply or delete, found "install"'],
      ['addonStages.BeforeClusterUpgrade[1].waitForPostCondition', expect.stringMatching(/^must have objects/)],
    ]);
  });

  it('names every hook when addonStages is missing', () => {
    expect(parseClusterAddonConfig('apiVersion: x\n', 'r/clusteraddon.yaml').problems).toEqual([
      {
        source: 'r/clusteraddon.yaml',
        path: 'addonStages',
        message:
          'is required: a map from hook (AfterControlPlaneInitialized, BeforeClusterUpgrade, AfterClusterUpgrade) to a list of stages',
      },
    ]);
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
    expect(
      v2.addons.format === 'multi-stage' && v3.addons.format === 'multi-stage' && v2.addons.digest === v3.addons.digest,
    ).toBe(true);
    expect(v2.clusterClassChart.digest).not.toBe(v3.clusterClassChart.digest);
  });

  it('lists release directories, skipping names that are not tags with a reason', async () => {
    const listing = await new LocalReleaseSource(path.resolve('test/fixtures/releases')).list();
    expect(listing.releases.map((r) => r.tag)).toContain('docker-ferrol-1-30-v1-alpha-10');
    expect(listing.skipped).toEqual([]);
  });
});
