// What `plan` says is what `render` does: for a series of runs against one target (a first render,
// an unchanged one, a changed Cluster, a Cluster whose values wait for a field, a held Cluster, kept
// releases, provider locks and guards, a tree rendered with --secrets encrypt) the complete plan decideRun returns (through planRun, as
// both commands decide) names exactly the units render then renders, reuses and withholds. A fake
// helm (the RenderDependencies seam) makes each chart's output depend on its values only.
import { checkCrdRules } from './support/crd-rule-check.js';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../src/api/types.js';
import { InputError } from '../src/core/problem.js';
import { readInputFiles } from '../src/inputs/read-input-files.js';
import { readPublishedState } from '../src/output/published-state.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { buildPlan, type Plan } from '../src/plan/build-plan.js';
import { planRun, runSettings } from '../src/pipeline/plan-run.js';
import { type PipelineOptions, renderAndPublish } from '../src/pipeline/render-and-publish.js';
import type { ProviderFetcher } from '../src/providers/provider-fetcher.js';
import type { RenderDependencies, ValuesTemplateResult } from '../src/render/render-dependencies.js';
import type { RunPlan } from '../src/run-plan/decide-run.js';
import { planRunOptions } from '../src/cli/plan-run-options.js';
import { createSourceOpener } from '../src/sources/open-release-source.js';
import { aCluster } from './support/builders.js';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, tempDir } from './support/cli.js';
import { DOCKER_VARIABLES, dockerProvider, providerFixture } from './support/provider-fixtures.js';

/**
 * A Cluster's values read its endpoint; `waiting` ones have none yet (a missing field, withheld until
 * it exists). With `secret`, every chart renders a Secret beside its ConfigMap.
 */
const deps = (rendered: string[], secret = false): RenderDependencies => ({
  evaluateValues: async (items) =>
    items.map((item): ValuesTemplateResult => {
      const endpoint = (item.context.Cluster as { spec?: { controlPlaneEndpoint?: { host?: string } } }).spec
        ?.controlPlaneEndpoint?.host;
      return endpoint
        ? { id: item.id, ok: true as const, values: { host: endpoint } }
        : {
            id: item.id,
            ok: false as const,
            message: 'missing field .Cluster.spec.controlPlaneEndpoint.host',
            missingField: '.Cluster.spec.controlPlaneEndpoint.host',
            error: new Error('missing field'),
          };
    }),
  renderChart: async (request) => {
    const own = request.chart.origin
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '');
    rendered.push(own);
    const configMap = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${own}\ndata:\n  values: ${JSON.stringify(JSON.stringify(request.values ?? []))}\n`;
    return secret
      ? `${configMap}---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: ${own}-token\nstringData:\n  token: not-in-git\n`
      : configMap;
  },
});

const metadataOf = (type: string, version: string): string => providerFixture(type, version, 'metadata.yaml');
/** Serves the fixture releases of the core and docker providers; the newest is what an unversioned provider gets. */
const fetcher = (newest: string): ProviderFetcher => ({
  versions: async () => ['v1.8.0', 'v1.9.0'].slice(0, newest === 'v1.8.0' ? 1 : 2),
  fetch: async (provider, version) => {
    const type = provider.kind === 'CoreProvider' ? 'core' : 'infrastructure';
    return {
      version,
      metadata: metadataOf(type, version),
      components: providerFixture(type, version, `${type}-components.yaml`),
      source: `fixture:${type}`,
      digest: `sha256:${type}-${version}`,
    };
  },
});

/** An age recipient (test/secret-encryption.test.ts's Alice): encrypting needs no identity. */
const ALICE = 'age1lj6msxhfwqjumsn6xg5ul68pe9vye2tqnsyytkcksct4zs79ef3qyqwd2q';

const CORE = (version?: string): string =>
  `apiVersion: operator.cluster.x-k8s.io/v1alpha2\nkind: CoreProvider\nmetadata:\n  name: cluster-api\n  namespace: capi-system\nspec:${version ? `\n  version: ${version}` : ' {}'}\n`;

async function planOf(objects: KubeObject[], providers?: { text: string; newest: string }): Promise<Plan> {
  const base = await readInputFiles([EXAMPLE_MANIFESTS]);
  const workDir = await tempDir();
  const extra = providers ? (await readInputFiles([await writeText(providers.text)])).objects : [];
  return buildPlan({
    manifests: {
      objects: [
        ...base.objects.filter(({ object }) => object.kind !== 'Cluster'),
        ...objects.map((object) => ({ source: 'test.yaml', object })),
        ...extra,
      ],
      problems: [],
    },
    defaultSource: EXAMPLE_RELEASES,
    openSource: createSourceOpener({ cacheDir: workDir }),
    workDir,
    checkCrdRules,
    ...(providers ? { providerFetcher: fetcher(providers.newest) } : {}),
  });
}

async function writeText(text: string): Promise<string> {
  const { writeFile } = await import('node:fs/promises');
  const file = `${await tempDir()}/providers.yaml`;
  await writeFile(file, text);
  return file;
}

const OPTIONS: PipelineOptions = {
  secrets: 'refuse',
  massDeletion: { allow: true, maxShare: 1 },
  heldClusters: 'withhold',
  providerGuards: 'withhold',
};

/** Plans the run as `plan` does, then renders it as `render` does, against the same target. */
async function planAndRender(
  plan: Plan,
  previous: RenderedTree,
  options: PipelineOptions = OPTIONS,
  renderer: RenderDependencies = deps([]),
): Promise<{
  run: RunPlan;
  tree: RenderedTree;
  rendered: number;
  withheld: { kind: string; name: string; previousKept: boolean }[];
  reused: number;
}> {
  const published = readPublishedState(previous);
  const run = await planRun(plan, published, await runSettings(options, published));
  const result = await renderAndPublish(
    plan,
    published,
    { renderer, publish: async () => undefined, logger: { info: () => undefined, warn: () => undefined } },
    options,
  );
  const { unitsRendered, unitsReused } = result.outcome.stats;
  return {
    run,
    tree: result.tree,
    rendered: unitsRendered,
    withheld: result.outcome.withheld.map(({ kind, name, previousKept }) => ({ kind, name, previousKept })),
    reused: unitsReused,
  };
}

const decided = (run: RunPlan, kind: 'reuse' | 'render' | 'withhold'): string[] =>
  run.units.units
    .filter(({ decision }) => decision.kind === kind)
    .map(({ unit }) => unit.record.dir)
    .sort();

describe('the plan is what render does', () => {
  it('renders what it plans to render, reuses what it plans to reuse, and withholds what it plans to withhold', async () => {
    const host = (name: string, value: string) =>
      aCluster(name, 'docker-ferrol-1-30-v3', {
        controlPlaneEndpoint: { host: value, port: 6443 },
      }) as unknown as KubeObject;
    const waiting = {
      ...aCluster('waiting', 'docker-ferrol-1-30-v3'),
      spec: { ...aCluster('waiting', 'docker-ferrol-1-30-v3').spec, controlPlaneEndpoint: undefined },
    } as unknown as KubeObject;

    // A first render: everything renders; the Cluster without an endpoint is withheld at render (its values wait).
    const first = await planAndRender(await planOf([host('a', 'a.test'), host('b', 'b.test'), waiting]), new Map());
    expect(decided(first.run, 'reuse')).toEqual([]);
    expect(decided(first.run, 'withhold')).toEqual([]);
    expect(first.withheld).toEqual([{ kind: 'cluster', name: 'waiting', previousKept: false }]);
    const waitingStages = first.run.units.units.filter(({ unit }) => unit.record.name === 'waiting').length;
    expect(first.rendered).toBe(decided(first.run, 'render').length - waitingStages);
    expect(first.run.keptReleases.map((kept) => kept.release)).toEqual(
      expect.arrayContaining(['docker-ferrol-1-30-v3']),
    );
    const releaseDirs = first.run.units.units
      .filter(({ unit }) => unit.record.kind === 'release')
      .map(({ unit }) => unit.record.dir);
    expect(releaseDirs).toHaveLength(first.run.keptReleases.length);

    // Unchanged inputs: everything is reused; the waiting Cluster is withheld by the plan, without helm.
    const same = await planAndRender(await planOf([host('a', 'a.test'), host('b', 'b.test'), waiting]), first.tree);
    expect(decided(same.run, 'render')).toEqual([]);
    expect(decided(same.run, 'withhold')).toEqual(
      same.run.units.units
        .filter(({ unit }) => unit.record.name === 'waiting')
        .map(({ unit }) => unit.record.dir)
        .sort(),
    );
    expect(same.run.units.units.find(({ unit }) => unit.record.name === 'waiting')!.decision.reason).toContain(
      'failed before with the same inputs',
    );
    expect(same.withheld).toEqual([{ kind: 'cluster', name: 'waiting', previousKept: false }]);
    expect(same.reused).toBe(decided(same.run, 'reuse').length);
    expect(same.rendered).toBe(0);
    expect(same.tree).toEqual(first.tree);

    // One Cluster changed: only its stages are planned to render, and only they render.
    const changed = await planAndRender(
      await planOf([host('a', 'a.test'), host('b', 'moved.test'), waiting]),
      first.tree,
    );
    const toRender = decided(changed.run, 'render');
    expect(toRender.length).toBeGreaterThan(0);
    expect(toRender.every((dir) => dir.startsWith('clusters/cluster-stacks/b/'))).toBe(true);
    expect(changed.rendered).toBe(toRender.length);
    expect(changed.reused).toBe(decided(changed.run, 'reuse').length);
    expect(changed.run.leaving).toEqual([]);

    // A Cluster the target renders whose class is no stack's any more: held, its output kept.
    const heldPlan = await planOf([
      host('a', 'a.test'),
      aCluster('b', 'some-other-class', {
        controlPlaneEndpoint: { host: 'b.test', port: 6443 },
      }) as unknown as KubeObject,
      waiting,
    ]);
    const held = await planAndRender(heldPlan, first.tree);
    expect(held.run.heldClusters.map((problem) => problem.object)).toEqual(['Cluster cluster-stacks/b']);
    expect(held.run.units.withheld.map((entry) => `${entry.kind} ${entry.name}`)).toContain('cluster b');
    expect(held.withheld).toContainEqual({ kind: 'cluster', name: 'b', previousKept: true });
    expect(held.run.leaving).toEqual([]);
    // Refused before anything renders when the run must not publish partially (the CLI without --allow-partial).
    const refusing = { ...OPTIONS, heldClusters: 'refuse' as const };
    const published = readPublishedState(first.tree);
    expect(
      (await planRun(heldPlan, published, await runSettings(refusing, published))).refused.heldClusters,
    ).toHaveLength(1);
    await expect(
      renderAndPublish(
        heldPlan,
        published,
        {
          renderer: deps([]),
          publish: async () => undefined,
          logger: { info: () => undefined, warn: () => undefined },
        },
        refusing,
      ),
    ).rejects.toThrow(/Cluster cluster-stacks\/b/);

    // A Cluster deleted from the inputs: its stages leave the tree, as planned.
    const deleted = await planAndRender(await planOf([host('a', 'a.test'), waiting]), first.tree);
    expect(deleted.run.leaving.filter((dir) => dir.startsWith('clusters/cluster-stacks/b/'))).toEqual(
      [...first.tree.keys()]
        .filter((file) => file.startsWith('clusters/cluster-stacks/b/') && file.endsWith('/kustomization.yaml'))
        .map((file) => file.replace(/\/kustomization\.yaml$/, ''))
        .filter((dir) => dir.split('/').length === 4)
        .sort(),
    );
    expect([...deleted.tree.keys()].some((file) => file.startsWith('clusters/cluster-stacks/b/'))).toBe(false);
  });

  it('locks an unversioned provider at its published version and guards a downgrade, in the plan and in the render alike', async () => {
    const cluster = aCluster('a', 'docker-ferrol-1-30-v3', {
      controlPlaneEndpoint: { host: 'a.test', port: 6443 },
    }) as unknown as KubeObject;
    const providers = (core: string, infra: string) => `${core}---\n${dockerProvider(infra)}---\n${DOCKER_VARIABLES}`;
    const first = await planAndRender(
      await planOf([cluster], { text: providers(CORE(), '  version: v1.9.0\n'), newest: 'v1.8.0' }),
      new Map(),
    );
    expect(first.run.plan.providers!.providers.map((planned) => planned.version)).toEqual(['v1.8.0', 'v1.9.0']);

    // v1.9.0 is the newest now, but the unversioned core stays at the v1.8.0 it was first rendered with.
    const locked = await planAndRender(
      await planOf([cluster], { text: providers(CORE(), '  version: v1.9.0\n'), newest: 'v1.9.0' }),
      first.tree,
    );
    const core = locked.run.plan.providers!.providers.find((planned) => planned.provider.kind === 'CoreProvider')!;
    expect(core.version).toBe('v1.8.0');
    expect(core.release?.digest).toBe('sha256:core-v1.8.0');
    expect(locked.tree.get('provenance.json')).toContain('"version": "v1.8.0"');

    // A downgrade: the plan refuses it (CLI) and render refuses alike, nothing rendered; or both withhold that provider alone.
    const downgrade = await planOf([cluster], { text: providers(CORE(), '  version: v1.8.0\n'), newest: 'v1.8.0' });
    const refusing = { ...OPTIONS, providerGuards: 'refuse' as const };
    const published = readPublishedState(first.tree);
    const refused = await planRun(downgrade, published, await runSettings(refusing, published));
    expect(refused.refused.providers.map((problem) => problem.message).join()).toMatch(
      /v1\.8\.0 is lower than v1\.9\.0/,
    );
    await expect(
      renderAndPublish(
        downgrade,
        published,
        {
          renderer: deps([]),
          publish: async () => undefined,
          logger: { info: () => undefined, warn: () => undefined },
        },
        refusing,
      ),
    ).rejects.toThrow(InputError);
    const withheld = await planAndRender(downgrade, first.tree);
    expect(
      withheld.run.plan.providers!.providers.find((planned) => planned.provider.kind === 'InfrastructureProvider')!
        .problems,
    ).toHaveLength(1);
    expect(withheld.withheld).toContainEqual({
      kind: 'provider',
      name: 'InfrastructureProvider/docker',
      previousKept: true,
    });
  });

  it('plans a tree rendered with --secrets encrypt as render does when plan is given the same secret flags', async () => {
    const cluster = aCluster('a', 'docker-ferrol-1-30-v3', {
      controlPlaneEndpoint: { host: 'a.test', port: 6443 },
    }) as unknown as KubeObject;
    const encryption = { recipients: [ALICE], recipientsOrigin: '--age-recipient' };
    const encrypting: PipelineOptions = { ...OPTIONS, secrets: 'encrypt', encryption };
    const plan = await planOf([cluster]);
    const first = await planAndRender(plan, new Map(), encrypting, deps([], true));
    expect(first.rendered).toBeGreaterThan(0);
    const secretFiles = [...first.tree.keys()].filter((file) => /\/secret-.*-token\.yaml$/.test(file));
    expect(secretFiles.length).toBeGreaterThan(0);
    expect(first.tree.get(secretFiles[0]!)).toContain('ENC[AES256_GCM');

    // `plan` with render's secret flags: every unit reused, as the render that follows does.
    const published = readPublishedState(first.tree);
    const planned = await planRun(
      plan,
      published,
      await runSettings(planRunOptions({ secrets: 'encrypt', encryption, engine: 'none' }), published),
    );
    expect(decided(planned, 'render')).toEqual([]);
    expect(decided(planned, 'reuse')).toHaveLength(first.rendered);
    const again = await planAndRender(plan, first.tree, encrypting, deps([], true));
    expect(again.rendered).toBe(0);
    expect(again.reused).toBe(decided(planned, 'reuse').length);
    expect(again.tree).toEqual(first.tree);

    // Without them plan decides with another policy, whose digests differ: every unit to render.
    const otherPolicy = await planRun(
      plan,
      published,
      await runSettings(planRunOptions({ secrets: 'refuse', engine: 'none' }), published),
    );
    expect(decided(otherPolicy, 'reuse')).toEqual([]);
    expect(decided(otherPolicy, 'render')).toEqual(decided(planned, 'reuse'));
  });

  it('is frozen: nothing downstream can edit it', async () => {
    const published = readPublishedState(new Map());
    const run = await planRun(
      await planOf([aCluster('a', 'docker-ferrol-1-30-v3') as unknown as KubeObject]),
      published,
      await runSettings(OPTIONS, published),
    );
    expect(Object.isFrozen(run)).toBe(true);
    expect(Object.isFrozen(run.plan)).toBe(true);
    expect(Object.isFrozen(run.units.units[0]!.unit)).toBe(true);
    expect(() => {
      (run.units.units[0]!.unit as { values: unknown[] }).values = [];
    }).toThrow(TypeError);
  });
});
