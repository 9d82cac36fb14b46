// `plan` says what `render` will do (issue 28): what a render withholds, plan names with the same
// reason, as far as it can see without rendering addon charts (src/render/foresee-withholds.ts);
// the rest is "decided at render". And what plan keeps in its cache holds no Secret value, in
// private files. Real helm.
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  clusterYaml,
  copyExampleReleases,
  EXAMPLE_MANIFESTS,
  EXAMPLE_RELEASES,
  FERROL_STACK_YAML,
  renderWithReport,
  runClusterstack,
  tempDir,
  writeTree,
} from './support/cli.js';

const V2 = 'docker-ferrol-1-30-v2';

/** `plan --json` with its own cache directory. */
async function planJson(args: string[], cacheDir: string): Promise<{ code: number; report: Record<string, any> }> {
  const result = await runClusterstack(['plan', ...args, '--json'], { env: { CLUSTERSTACK_CACHE_DIR: cacheDir } });
  return { code: result.code, report: JSON.parse(result.stdout) };
}

/** What render's report lists as withheld, as plan lists it (plan cannot know what a target holds). */
const asPlanned = (withheld: Record<string, unknown>[]): Record<string, unknown>[] =>
  withheld.map(({ previousOutputKept: _kept, ...entry }) => entry);

/** Every file and directory under `dir` with its permission bits. */
async function modesUnder(dir: string): Promise<{ path: string; mode: number; directory: boolean }[]> {
  const found: { path: string; mode: number; directory: boolean }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const full = path.join(entry.parentPath, entry.name);
    found.push({ path: full, mode: (await stat(full)).mode & 0o777, directory: entry.isDirectory() });
  }
  return found;
}

describe('plan names what render withholds', () => {
  it('on the quick start: delta, whose values read a field it does not have, with render’s reason; the others decided at render', async () => {
    const plan = await planJson(
      [EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES],
      await tempDir('csk-plan-cache-'),
    );
    const render = await renderWithReport([
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      path.join(await tempDir(), 'out'),
    ]);
    expect(plan.code).toBe(0);
    expect(plan.report.withheld).toEqual([
      expect.objectContaining({
        kind: 'cluster',
        namespace: 'cluster-stacks',
        name: 'delta',
        reason: expect.stringContaining('.Cluster.spec.controlPlaneEndpoint.host'),
      }),
    ]);
    expect(plan.report.withheld).toEqual(asPlanned(render.report.withheld));
    expect(plan.report.decidedAtRender.map((entry: { name: string }) => entry.name)).toEqual([
      'alpha',
      'bravo',
      'charlie',
    ]);
    expect(plan.report.decidedAtRender[1].reason).toMatch(
      /^the addon charts \(cni, metrics-server\) render only in render: a stage that renders no object/,
    );

    const text = await runClusterstack(['plan', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES], {
      env: { CLUSTERSTACK_CACHE_DIR: await tempDir('csk-plan-cache-') },
    });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /A render would withhold \(what it published before stays\):\n {2}cluster cluster-stacks\/delta: addon values need \.Cluster\.spec\.controlPlaneEndpoint\.host/,
    );
    expect(text.stdout).toContain(
      'Decided at render (plan renders no addon chart): cluster cluster-stacks/alpha, cluster cluster-stacks/bravo, cluster cluster-stacks/charlie.',
    );
  });

  it('a ClusterClass chart that renders nothing: the release, with render’s reason', async () => {
    const releases = await copyExampleReleases();
    const templates = path.join(releases, V2, 'docker-ferrol-1-30-cluster-class-v2', 'templates');
    for (const name of (await readdir(templates)).filter((file) => file.endsWith('.yaml'))) {
      await writeFile(
        path.join(templates, name),
        `{{- if .Values.neverSet }}\n${await readFile(path.join(templates, name), 'utf8')}\n{{- end }}\n`,
      );
    }
    const inputs = await writeTree({
      'stack.yaml': FERROL_STACK_YAML.replace('versions: [v1]', 'versions: [v1, v2]'),
      'c.yaml': clusterYaml('one', V2),
    });
    const plan = await planJson([inputs, '--release-source', releases], await tempDir('csk-plan-cache-'));
    const render = await renderWithReport([
      inputs,
      '--release-source',
      releases,
      '--output',
      path.join(await tempDir(), 'out'),
    ]);
    expect(plan.report.withheld).toEqual([
      { kind: 'release', namespace: 'cluster-stacks', name: V2, reason: expect.stringContaining('renders no object') },
    ]);
    expect(plan.report.withheld).toEqual(asPlanned(render.report.withheld));
    // The release is still kept (it is in use): plan's table says so, and its exit code is render's.
    expect(
      plan.report.clusterStacks[0].releases.find((release: { name: string }) => release.name === V2),
    ).toMatchObject({ kept: true });
    expect(plan.code).toBe(render.code);
  });

  it('a release whose provider object is not ready yet, with render’s reason', async () => {
    const stack = FERROL_STACK_YAML.replace(
      'noProvider: true',
      'noProvider: false, providerRef: {apiVersion: infrastructure.clusterstack.x-k8s.io/v1alpha1, kind: DockerClusterStackReleaseTemplate, name: t}',
    );
    const pending =
      '---\napiVersion: infrastructure.clusterstack.x-k8s.io/v1alpha1\nkind: DockerClusterStackRelease\nmetadata: {name: docker-ferrol-1-30-v1, namespace: cluster-stacks}\nstatus: {ready: false}\n';
    const inputs = await writeTree({ 's.yaml': stack + pending });
    const plan = await planJson([inputs, '--release-source', EXAMPLE_RELEASES], await tempDir('csk-plan-cache-'));
    const render = await renderWithReport([
      inputs,
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      path.join(await tempDir(), 'out'),
    ]);
    expect(plan.report.withheld).toEqual([
      {
        kind: 'release',
        namespace: 'cluster-stacks',
        name: 'docker-ferrol-1-30-v1',
        reason: expect.stringMatching(/status.ready: true/),
      },
    ]);
    expect(plan.report.withheld).toEqual(asPlanned(render.report.withheld));
  });
});

describe('plan’s cache holds no Secret value', () => {
  it('after a plan whose ClusterClass chart renders a Secret: neither the value nor its base64 is in any cache file, each 0600 in 0700 directories', async () => {
    const token = 'plan-cache-s3cret-token';
    const key = 'plan-cache-s3cret-key';
    const releases = await copyExampleReleases();
    await writeFile(
      path.join(releases, V2, 'docker-ferrol-1-30-cluster-class-v2', 'templates', 'credentials.yaml'),
      `apiVersion: v1\nkind: Secret\nmetadata:\n  name: credentials\nstringData:\n  token: ${token}\ndata:\n  key: ${Buffer.from(key).toString('base64')}\n`,
    );
    const cacheDir = path.join(await tempDir(), 'cache');
    const inputs = await writeTree({
      'stack.yaml': FERROL_STACK_YAML.replace('versions: [v1]', 'versions: [v2]'),
      'c.yaml': clusterYaml('one', V2),
    });
    const plan = await planJson([inputs, '--release-source', releases], cacheDir);
    expect(plan.code).toBe(0);
    expect(plan.report.withheld).toEqual([]);

    const found = await modesUnder(cacheDir);
    expect(found.some((entry) => entry.path.includes(`${path.sep}chart-renders${path.sep}`))).toBe(true);
    for (const entry of found) {
      expect(entry.mode, `${entry.path} ${entry.mode.toString(8)}`).toBe(entry.directory ? 0o700 : 0o600);
      if (entry.directory) continue;
      const bytes = await readFile(entry.path);
      // v2's ClusterClass chart is a directory of the release source, read in place: nothing in the cache may hold its Secret.
      for (const secret of [token, key, Buffer.from(key).toString('base64'), Buffer.from(token).toString('base64')])
        expect(bytes.includes(secret), `${entry.path} holds ${secret}`).toBe(false);
    }
    expect((await stat(cacheDir)).mode & 0o777).toBe(0o700);
  });
});
