// The CLI and the controller take one pipeline (src/pipeline/render-and-publish.ts): for the same
// objects and releases they publish the same units, with the same wiring, the same commit summary
// and, in pull-request mode, a generated pull request body (the controller once sent none).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as jsYaml from 'js-yaml';
import type { Publisher, PublishResult } from '../gitops/publisher.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { ControllerRuntime } from '../src/controller/run-controller.js';
import { runClusterstack, writeTree } from './support/cli.js';
import { aStack } from './support/controller-fixture.js';
import { aCluster, type RealControllerFixture, startRealControllerFixture } from './support/real-controller-fixture.js';

const NS = 'drivers';
const URL = 'https://git.example.test/fleet.git';
// What `--gitops flux --gitops-url <URL>` resolves to for a --git target on main at the root.
const WIRING = {
  engine: 'flux' as const,
  name: 'clusterstacks',
  namespace: 'flux-system',
  source: { kind: 'git' as const, url: URL, branch: 'main', path: '' },
};

/** A publisher that keeps what it is asked to publish in memory. */
function capturingPublisher(): Publisher & { published: { tree: RenderedTree; change: ChangeSummary }[] } {
  let current: RenderedTree = new Map();
  const published: { tree: RenderedTree; change: ChangeSummary }[] = [];
  return {
    target: 'memory',
    published,
    readPrevious: async () => current,
    publish: async (tree, change): Promise<PublishResult> => {
      published.push({ tree, change });
      current = tree;
      return { changed: true, written: [...tree.keys()], removed: [], revision: `rev-${published.length}` };
    },
  };
}

/** Unit directories and wiring: provenance and README carry input digests of the objects as each driver read them. */
const units = (tree: Map<string, string> | Record<string, string>): Record<string, string> =>
  Object.fromEntries(
    [...(tree instanceof Map ? tree.entries() : Object.entries(tree))]
      .filter(([file]) => /^(management|clusters|flux)\//.test(file))
      .sort(([a], [b]) => a.localeCompare(b)),
  );

describe('one pipeline for the CLI and the controller', () => {
  let fx: RealControllerFixture;
  let runtime: ControllerRuntime | undefined;

  beforeAll(async () => {
    fx = await startRealControllerFixture();
    await fx.createNamespace(NS);
    await fx.create(aStack('ferrol', NS, { versions: ['v2'] }));
    for (const name of ['alpha', 'bravo']) await fx.create(aCluster(name, NS, 'docker-ferrol-1-30-v2'));
  });
  afterAll(async () => {
    await runtime?.stop();
    await fx.cleanup();
  });

  it('publishes the same units and wiring with the same summary, and a pull request body from both', async () => {
    // The CLI reads the objects as the controller does: from the API server, exported to files.
    const objects = [
      fx.get('ClusterStack', NS, 'ferrol'),
      fx.get('Cluster', NS, 'alpha'),
      fx.get('Cluster', NS, 'bravo'),
    ];
    const inputs = await writeTree({ 'objects.yaml': objects.map((object) => jsYaml.dump(object)).join('---\n') });
    const remote = fx.git.bareRepo('cli');
    const cli = await runClusterstack([
      'render',
      inputs,
      '--release-source',
      fx.releases,
      '--git',
      remote,
      '--gitops',
      'flux',
      '--gitops-url',
      URL,
      '--json',
    ]);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);

    const publisher = capturingPublisher();
    runtime = await fx.start('drivers', {
      publisher,
      history: undefined,
      engine: 'flux',
      wiring: WIRING,
      pullRequest: true,
      revisionKind: 'none',
    });
    await fx.waitFor(
      () =>
        publisher.published.some(({ tree }) =>
          [...tree.keys()].some((file) => file.startsWith(`clusters/${NS}/bravo/`)),
        ),
      'the controller to publish both clusters',
      // Only stops a stuck test: a reconcile with real helm takes many times its quiet time under load.
      120_000,
    );
    const { tree, change } = publisher.published.at(-1)!;

    expect(units(tree)).toEqual(units(fx.git.files(remote, 'main')));
    const cliCommit = fx.git.git(remote, 'log', '-1', '--format=%s%n%n%b', 'main');
    expect(cliCommit.startsWith(change.title)).toBe(true);
    expect(cliCommit).toContain(change.body.split('\n')[0]!);
    // Pull-request mode: the body lists the clusters and draws the stack -> release -> cluster graph.
    expect(change.pullRequest?.body).toMatch(/```mermaid/);
    expect(change.pullRequest?.body).toContain(`${NS}/alpha`);
  });
});
