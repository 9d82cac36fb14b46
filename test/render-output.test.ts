import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHelmDependencies } from '../renderers/helm-dependencies.js';
import type { KubeObject } from '../src/api/types.js';
import { readInputFiles } from '../src/inputs/read-input-files.js';
import { buildPlan } from '../src/plan/build-plan.js';
import { renderOutput } from '../src/render/render-output.js';
import { createSourceOpener } from '../src/sources/open-release-source.js';
import { copyExampleReleases, EXAMPLE_MANIFESTS, tempDir } from './support/cli.js';

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
      spec: { clusterNetwork: { pods: { cidrBlocks: ['10.1.0.0/16'] } }, controlPlaneEndpoint: { host: 'big.example.test', port: 6443 }, topology: { class: 'docker-ferrol-1-30-v1', version: 'v1.30.4' } },
    } as unknown as KubeObject;
    const workDir = await tempDir();
    const plan = await buildPlan({ manifests: { objects: [...base.objects, { source: 'test', object: cluster }], problems: [] }, defaultSource: releases, openSource: createSourceOpener({ cacheDir: workDir }), workDir });

    const outcome = await renderOutput(plan, createHelmDependencies({ workDir }), { secrets: 'refuse', previous: new Map() });

    expect(outcome.withheld).toEqual([]);
    expect(outcome.tree.get('clusters/cluster-stacks/big/cluster-addon/configmap-kindnet-cfg.yaml')).toMatch(/cluster-name: "big-9007199254740993"\n/);
  });
});
