// How renderOutput schedules its work, seen through the RenderDependencies seam with a renderer
// that records the order of events: values are evaluated in chunks of whole clusters, one chunk at a
// time, while charts render, and a cluster whose values fail is withheld whole without any of its stages rendering.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../src/api/types.js';
import { readInputFiles } from '../src/inputs/read-input-files.js';
import { buildPlan, type Plan } from '../src/plan/build-plan.js';
import type {
  RenderDependencies,
  ValuesTemplateItem,
  ValuesTemplateResult,
} from '../src/render/render-dependencies.js';
import { renderPlan } from './support/render-plan.js';
import { createSourceOpener } from '../src/sources/open-release-source.js';
import { aCluster } from './support/builders.js';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, tempDir } from './support/cli.js';
import { checkCrdRules } from './support/crd-rule-check.js';

async function planWith(count: number): Promise<Plan> {
  const base = await readInputFiles([path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml')]);
  // v3 is multi-stage: two stages per cluster.
  const clusters = Array.from({ length: count }, (_, i) =>
    aCluster(`c${String(i).padStart(2, '0')}`, 'docker-ferrol-1-30-v3', {
      controlPlaneEndpoint: { host: `10.0.0.${i}`, port: 6443 },
      clusterNetwork: { pods: { cidrBlocks: ['10.1.0.0/16'] } },
    }),
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
}

/** A renderer whose values batches resolve only when the test says so; every call is logged. */
function recordingDeps(failing: Set<string> = new Set()): {
  deps: RenderDependencies;
  events: string[];
  batches: { items: ValuesTemplateItem[]; release: () => void }[];
} {
  const events: string[] = [];
  const batches: { items: ValuesTemplateItem[]; release: () => void }[] = [];
  const deps: RenderDependencies = {
    evaluateValues: (items) =>
      new Promise<ValuesTemplateResult[]>((resolve) => {
        const clusters = [...new Set(items.map((item) => item.id.split('/')[2]))];
        events.push(`values ${clusters.join(',')}`);
        batches.push({
          items,
          release: () =>
            resolve(
              items.map((item) =>
                failing.has(item.id.split('/')[2]!) && item.id.endsWith('/cni')
                  ? { id: item.id, ok: false, message: 'broken template', error: new Error('broken template') }
                  : { id: item.id, ok: true, values: { cluster: item.id } },
              ),
            ),
        });
      }),
    renderChart: async (request) => {
      const values = request.values?.[0] as { cluster?: string } | undefined;
      events.push(`render ${values?.cluster ?? request.releaseName}`);
      // One name per chart: two stages rendering one object differently would be a conflict.
      const name = request.chart.origin
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-|-$/g, '');
      return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  from: ${JSON.stringify(values?.cluster ?? request.releaseName)}\n`;
    },
  };
  return { deps, events, batches };
}

const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

describe('renderOutput scheduling', () => {
  it('renders releases at once and a chunk of clusters as soon as its values are in, while the next chunk is evaluated', async () => {
    const plan = await planWith(8);
    const { deps, events, batches } = recordingDeps();
    const outcome = renderPlan(plan, deps, { secrets: 'refuse', previous: new Map() });
    await settle();
    // One chunk at a time: the first, of two whole clusters, is the only one asked for.
    const clustersOf = (batch: { items: ValuesTemplateItem[] }): number =>
      new Set(batch.items.map((item) => item.id.split('/')[2])).size;
    expect(batches.map(clustersOf)).toEqual([2]);
    // The kept release renders without waiting for any values.
    expect(
      events.filter((event) => event.startsWith('render ')).every((event) => event.startsWith('render docker-ferrol')),
    ).toBe(true);
    expect(events.some((event) => event.startsWith('render docker-ferrol'))).toBe(true);

    batches[0]!.release();
    await settle();
    // The first chunk's stages render while the second chunk (the six others: up to eight times as large) is evaluated.
    const firstChunkRenders = events.filter((event) => /^render clusters\/cluster-stacks\/c0[01]\//.test(event));
    expect(firstChunkRenders).toHaveLength(4);
    expect(events.some((event) => /^render clusters\/cluster-stacks\/c0[2-7]\//.test(event))).toBe(false);
    expect(batches.map(clustersOf)).toEqual([2, 6]);

    batches[1]!.release();
    const result = await outcome;
    expect(result.withheld).toEqual([]);
    expect(result.stats.unitsRendered).toBe(events.filter((event) => event.startsWith('render ')).length);
  });

  it('asks for no later chunk once helm could not evaluate one: the render fails with that error', async () => {
    const plan = await planWith(8);
    let asked = 0;
    const deps: RenderDependencies = {
      evaluateValues: async () => {
        asked += 1;
        throw new Error('helm could not be started');
      },
      renderChart: async () => 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n',
    };
    await expect(renderPlan(plan, deps, { secrets: 'refuse', previous: new Map() })).rejects.toThrow(
      'helm could not be started',
    );
    await settle();
    expect(asked).toBe(1);
  });

  it('withholds a cluster whose values fail in one stage whole, rendering none of its stages, and renders the others', async () => {
    const plan = await planWith(3);
    const { deps, events, batches } = recordingDeps(new Set(['c01']));
    const outcome = renderPlan(plan, deps, { secrets: 'refuse', previous: new Map() });
    for (let answered = 0; answered < 2; answered += 1) {
      await settle();
      batches[answered]!.release();
    }
    const result = await outcome;
    expect(result.withheld).toMatchObject([
      { kind: 'cluster', namespace: 'cluster-stacks', name: 'c01', reason: 'broken template' },
    ]);
    expect(events.filter((event) => event.includes('/c01/'))).toEqual([]);
    expect(events.filter((event) => /^render clusters\/cluster-stacks\/c0[02]\//.test(event))).toHaveLength(4);
    expect(result.provenance.valuesFailures.map((failure) => failure.dir)).toEqual([
      'clusters/cluster-stacks/c01/cni',
      'clusters/cluster-stacks/c01/metrics-server',
    ]);
  });
});
