// How renderOutput schedules its work, seen through the RenderDependencies seam with a renderer
// that records the order of events: values are evaluated in chunks of whole clusters, as many at a
// time as the renderer runs side by side (one by default), while charts render, and a cluster whose
// values fail is withheld whole without any of its stages rendering.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHelmDependencies, DEFAULT_HELM_CONCURRENCY } from '../renderers/helm-dependencies.js';
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
function recordingDeps(
  failing: Set<string> = new Set(),
  valuesInFlight?: number,
): {
  deps: RenderDependencies;
  events: string[];
  batches: { items: ValuesTemplateItem[]; release: () => void }[];
} {
  const events: string[] = [];
  const batches: { items: ValuesTemplateItem[]; release: () => void }[] = [];
  const deps: RenderDependencies = {
    ...(valuesInFlight !== undefined ? { valuesInFlight } : {}),
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

/** Waits until `condition` holds: the render goes on by itself, seconds late on a loaded machine; the limit only stops a stuck test. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await settle();
  }
}

/** Clusters (by name) in one values batch. */
const clustersIn = (batch: { items: ValuesTemplateItem[] }): string[] => [
  ...new Set(batch.items.map((item) => item.id.split('/')[2]!)),
];

/** Renders `plan`, answering each values batch once it is asked, the latest first, until the render is done. */
async function renderAnsweringLatestFirst(
  plan: Plan,
  recorded: ReturnType<typeof recordingDeps>,
): Promise<Awaited<ReturnType<typeof renderPlan>>> {
  let done = false;
  const outcome = renderPlan(plan, recorded.deps, { secrets: 'refuse', previous: new Map() }).finally(() => {
    done = true;
  });
  let answered = 0;
  while (!done) {
    await settle();
    const asked = recorded.batches.slice(answered);
    answered = recorded.batches.length;
    for (const batch of asked.reverse()) batch.release();
  }
  return outcome;
}

describe('renderOutput scheduling', () => {
  it('renders releases at once and a chunk of clusters as soon as its values are in, while the next chunk is evaluated', async () => {
    const plan = await planWith(8);
    const { deps, events, batches } = recordingDeps();
    const outcome = renderPlan(plan, deps, { secrets: 'refuse', previous: new Map() });
    await until(
      () => batches.length > 0 && events.some((event) => event.startsWith('render docker-ferrol')),
      'the first values chunk asked and the release rendered',
    );
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
    const firstChunkRendered = (): string[] =>
      events.filter((event) => /^render clusters\/cluster-stacks\/c0[01]\//.test(event));
    await until(
      () => firstChunkRendered().length >= 4 && batches.length >= 2,
      "the first chunk's stages rendered and the second chunk asked",
    );
    // The first chunk's stages render while the second chunk (the six others: up to eight times as large) is evaluated.
    const firstChunkRenders = firstChunkRendered();
    expect(firstChunkRenders).toHaveLength(4);
    expect(events.some((event) => /^render clusters\/cluster-stacks\/c0[2-7]\//.test(event))).toBe(false);
    expect(batches.map(clustersOf)).toEqual([2, 6]);

    batches[1]!.release();
    const result = await outcome;
    expect(result.withheld).toEqual([]);
    expect(result.stats.unitsRendered).toBe(events.filter((event) => event.startsWith('render ')).length);
  });

  it('asks as many chunks at once as the renderer runs side by side, and the next as soon as one of them is in', async () => {
    // 19 clusters: chunks of 2, 16 and 1 clusters; two in flight.
    const plan = await planWith(19);
    const { deps, events, batches } = recordingDeps(new Set(), 2);
    const outcome = renderPlan(plan, deps, { secrets: 'refuse', previous: new Map() });
    await until(() => batches.length >= 2, 'two values chunks asked');
    // Both slots take a chunk at once: the second is not held back behind the first.
    expect(batches.map((batch) => clustersIn(batch).length)).toEqual([2, 16]);
    // The second chunk is in before the first: the third is asked, and the second's charts render.
    batches[1]!.release();
    const secondChunkRenders = (): string[] =>
      events.filter((event) => /^render clusters\/cluster-stacks\/c(0[2-9]|1[0-7])\//.test(event));
    await until(
      () => batches.length >= 3 && secondChunkRenders().length >= 32,
      "the third chunk asked and the second chunk's stages rendered",
    );
    expect(batches.map((batch) => clustersIn(batch).length)).toEqual([2, 16, 1]);
    expect(batches[2]!.items.map((item) => item.id.split('/')[2])).toEqual(['c18', 'c18']);
    expect(secondChunkRenders()).toHaveLength(32);
    expect(events.some((event) => /^render clusters\/cluster-stacks\/c0[01]\//.test(event))).toBe(false);
    batches[0]!.release();
    batches[2]!.release();
    const result = await outcome;
    expect(result.withheld).toEqual([]);
    expect(result.stats.unitsRendered).toBe(events.filter((event) => event.startsWith('render ')).length);
  });

  it('renders the same tree and records whether chunks are evaluated one at a time or side by side, answered in any order', async () => {
    const plan = await planWith(19);
    // One failing cluster in each of the three chunks (c00: first, c05: second, c18: third).
    const failing = new Set(['c00', 'c05', 'c18']);
    const oneByOne = await renderAnsweringLatestFirst(plan, recordingDeps(failing));
    const sideBySide = recordingDeps(failing, 3);
    const threeAtOnce = await renderAnsweringLatestFirst(plan, sideBySide);
    // All three chunks were asked before any was answered.
    expect(sideBySide.batches.map((batch) => clustersIn(batch).length)).toEqual([2, 16, 1]);
    expect(threeAtOnce.withheld.map((entry) => entry.name)).toEqual(['c00', 'c05', 'c18']);
    expect(threeAtOnce.tree).toEqual(oneByOne.tree);
    expect(threeAtOnce.provenance).toEqual(oneByOne.provenance);
    expect(threeAtOnce.withheld).toEqual(oneByOne.withheld);
    expect([...threeAtOnce.tree.keys()]).toEqual([...oneByOne.tree.keys()]);
  });

  it("asks helm for as many values chunks at once as helm's runner has slots", async () => {
    const workDir = await tempDir();
    expect(createHelmDependencies({ workDir, concurrency: 2 }).valuesInFlight).toBe(2);
    expect(createHelmDependencies({ workDir }).valuesInFlight).toBe(DEFAULT_HELM_CONCURRENCY);
  });

  it('asks no chunk once one could not be evaluated, whatever else is in flight: the render fails with that error', async () => {
    // 19 clusters, two chunks in flight: the first rejects while the second is out; the third is never asked.
    const plan = await planWith(19);
    const asked: number[] = [];
    let answerSecond: (() => void) | undefined;
    const deps: RenderDependencies = {
      valuesInFlight: 2,
      evaluateValues: (items) => {
        asked.push(new Set(items.map((item) => item.id.split('/')[2])).size);
        if (asked.length === 1) return Promise.reject(new Error('helm could not be started'));
        return new Promise((resolve) => {
          answerSecond = () => resolve(items.map((item) => ({ id: item.id, ok: true as const, values: {} })));
        });
      },
      renderChart: async () => 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n',
    };
    await expect(renderPlan(plan, deps, { secrets: 'refuse', previous: new Map() })).rejects.toThrow(
      'helm could not be started',
    );
    answerSecond!();
    await settle();
    expect(asked).toEqual([2, 16]);
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
      await until(() => batches.length > answered, `values chunk ${answered + 1} asked`);
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
