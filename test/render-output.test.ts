import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHelmDependencies } from '../renderers/helm-dependencies.js';
import type { KubeObject } from '../src/api/types.js';
import { readInputFiles } from '../src/inputs/read-input-files.js';
import { buildPlan } from '../src/plan/build-plan.js';
import type { RenderDependencies } from '../src/render/render-dependencies.js';
import { unitFilesAhead } from '../src/render/assemble-tree.js';
import { kustomizationEncoder } from '../src/render/kustomization-yaml.js';
import { renderPlan } from './support/render-plan.js';
import { createSourceOpener } from '../src/sources/open-release-source.js';
import { aCluster } from './support/builders.js';
import { copyExampleReleases, EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, tempDir } from './support/cli.js';
import { checkCrdRules } from './support/crd-rule-check.js';

describe('renderOutput', () => {
  // The input reader decodes integers beyond 2^53 as bigint: digests and values templates must take them.
  it('renders a Cluster whose integer beyond 2^53 arrives as bigint, printing it exactly', async () => {
    const releases = await copyExampleReleases();
    await writeFile(
      path.join(releases, 'docker-ferrol-1-30-v1', 'cluster-addon-values.yaml'),
      'values: |\n  cni:\n    clusterName: {{ .Cluster.metadata.name }}-{{ printf "%d" .Cluster.metadata.generation }}\n    podCIDR: {{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}\n',
    );
    const base = await readInputFiles([path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml')]);
    // ObjectMeta types generation as number; a decoded object may hold a bigint there all the same.
    const cluster = {
      apiVersion: 'cluster.x-k8s.io/v1beta1',
      kind: 'Cluster',
      metadata: { name: 'big', namespace: 'cluster-stacks', generation: 9007199254740993n },
      spec: {
        clusterNetwork: { pods: { cidrBlocks: ['10.1.0.0/16'] } },
        controlPlaneEndpoint: { host: 'big.example.test', port: 6443 },
        topology: { class: 'docker-ferrol-1-30-v1', version: 'v1.30.2' },
      },
    } as unknown as KubeObject;
    const workDir = await tempDir();
    const plan = await buildPlan({
      manifests: { objects: [...base.objects, { source: 'test', object: cluster }], problems: [] },
      defaultSource: releases,
      openSource: createSourceOpener({ cacheDir: workDir }),
      workDir,
      checkCrdRules,
    });

    const outcome = await renderPlan(plan, createHelmDependencies({ workDir, pathEnv: process.env.PATH ?? '' }), {
      secrets: 'refuse',
      previous: new Map(),
    });

    expect(outcome.withheld).toEqual([]);
    expect(outcome.tree.get('clusters/cluster-stacks/big/cluster-addon/configmap-kindnet-cfg.yaml')).toMatch(
      /cluster-name: "big-9007199254740993"\n/,
    );
  });

  it('renders only the changed cluster of a fleet whose stages share an object, into the tree a full render gives', async () => {
    const base = await readInputFiles([path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml')]);
    const planFor = async (changedHost?: string) => {
      // v3 is multi-stage: two stages per cluster.
      const clusters = ['c0', 'c1', 'c2'].map((name) =>
        aCluster(
          name,
          'docker-ferrol-1-30-v3',
          name === 'c1' && changedHost ? { controlPlaneEndpoint: { host: changedHost, port: 6443 } } : {},
        ),
      );
      const workDir = await tempDir();
      return buildPlan({
        manifests: {
          objects: [
            ...base.objects,
            ...clusters.map((object) => ({ source: 'test', object: object as unknown as KubeObject })),
          ],
          problems: [],
        },
        defaultSource: EXAMPLE_RELEASES,
        openSource: createSourceOpener({ cacheDir: workDir }),
        workDir,
        checkCrdRules,
      });
    };
    const charts: string[] = [];
    const deps: RenderDependencies = {
      evaluateValues: async (items) =>
        items.map((item) => ({
          id: item.id,
          ok: true as const,
          values: {
            host: (item.context.Cluster as { spec: { controlPlaneEndpoint: { host: string } } }).spec
              .controlPlaneEndpoint.host,
          },
        })),
      renderChart: async (request) => {
        const host = (request.values?.[0] as { host?: string } | undefined)?.host ?? request.releaseName;
        charts.push(`${request.chart.origin} ${host}`);
        const own = request.chart.origin
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, '-')
          .replace(/^-|-$/g, '');
        // Every stage renders the one `common` ConfigMap alike: it is written once, in the earlier stage.
        return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${own}\ndata:\n  host: ${JSON.stringify(host)}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: common\ndata:\n  host: ${JSON.stringify(host)}\n`;
      },
    };
    const first = await renderPlan(await planFor(), deps, { secrets: 'refuse', previous: new Map() });
    expect(first.provenance.sharedObjects?.filter((object) => object.path.startsWith('clusters/')).length).toBe(3);
    charts.length = 0;
    const changed = await renderPlan(await planFor('moved.example.test'), deps, {
      secrets: 'refuse',
      previous: first.tree,
    });
    // Only c1's two stages rendered; c0 and c2 kept their placement from the previous tree.
    expect(charts.filter((chart) => !chart.includes('cluster-class'))).toEqual(
      expect.arrayContaining([expect.stringContaining('moved.example.test')]),
    );
    expect(charts.filter((chart) => chart.includes('.example.test') && !chart.includes('moved'))).toEqual([]);
    const full = await renderPlan(await planFor('moved.example.test'), deps, {
      secrets: 'refuse',
      previous: new Map(),
    });
    expect([...changed.tree.entries()].sort()).toEqual([...full.tree.entries()].sort());
    expect(changed.provenance.sharedObjects).toEqual(full.provenance.sharedObjects);
  });

  it('hands each unit over as it renders with the files and kustomization the tree then holds (for writing ahead)', async () => {
    const base = await readInputFiles([path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml')]);
    const clusters = ['c0', 'c1'].map((name) => ({
      source: 'test',
      object: aCluster(name, 'docker-ferrol-1-30-v3') as unknown as KubeObject,
    }));
    const workDir = await tempDir();
    const plan = await buildPlan({
      manifests: { objects: [...base.objects, ...clusters], problems: [] },
      defaultSource: EXAMPLE_RELEASES,
      openSource: createSourceOpener({ cacheDir: workDir }),
      workDir,
      checkCrdRules,
    });
    const deps: RenderDependencies = {
      evaluateValues: async (items) => items.map((item) => ({ id: item.id, ok: true as const, values: {} })),
      renderChart: async (request) => {
        const own = request.chart.origin
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, '-')
          .replace(/^-|-$/g, '');
        return ['a', 'b']
          .map(
            (suffix) =>
              `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${own}-${suffix}\n  namespace: default\ndata: {}\n`,
          )
          .join('---\n');
      },
    };
    const encode = kustomizationEncoder();
    const ahead = new Map<string, string>();
    const outcome = await renderPlan(plan, deps, {
      secrets: 'refuse',
      previous: new Map(),
      onUnitRendered: (dir, files) =>
        unitFilesAhead(dir, files, encode).forEach(([file, content]) => ahead.set(file, content)),
    });
    const kustomizations = [...ahead.keys()].filter((file) => file.endsWith('/kustomization.yaml'));
    // One per unit: each release kept and both stages of both clusters.
    expect(kustomizations.sort()).toEqual(
      outcome.provenance.units.map((unit) => `${unit.dir}/kustomization.yaml`).sort(),
    );
    expect(kustomizations.filter((file) => file.startsWith('clusters/')).length).toBe(4);
    for (const [file, content] of ahead) expect(outcome.tree.get(file), file).toBe(content);
  });
});
