// Empty is not a render (issue 28): a ClusterClass chart, an addon stage or a helm that renders no
// object withholds its unit (a release alone, a Cluster whole) with the reason, its previous output
// kept, instead of publishing an empty directory Argo CD or Flux would prune. Real helm.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as tar from 'tar';
import { describe, expect, it } from 'vitest';
import {
  clusterYaml,
  copyExampleReleases,
  FERROL_STACK_YAML,
  readTree,
  renderWithReport,
  tempDir,
  writeTree,
} from './support/cli.js';
import { writeScript } from './support/helm-fixtures.js';

const V2 = 'docker-ferrol-1-30-v2';
const V2_CLASS = `management/cluster-stacks/${V2}/clusterclass-docker-ferrol-1-30-v2.yaml`;
const readOutput = (output: string): Promise<Record<string, string>> => readTree(path.join(output, 'current'));

/** Inputs: the example stack on v2 (multi-stage addons: cni, metrics-server) and one Cluster on it. */
const v2Inputs = (): Promise<string> =>
  writeTree({
    'stack.yaml': FERROL_STACK_YAML.replace('versions: [v1]', 'versions: [v2]'),
    'c.yaml': clusterYaml('one', V2),
  });

/** Puts every template of a chart directory behind a value no one sets: helm then renders nothing. */
async function hideTemplates(templatesDir: string): Promise<void> {
  for (const name of await readdir(templatesDir)) {
    if (!name.endsWith('.yaml')) continue;
    const file = path.join(templatesDir, name);
    await writeFile(file, `{{- if .Values.neverSet }}\n${await readFile(file, 'utf8')}\n{{- end }}\n`);
  }
}

/** A copy of the example releases with v2's addon archive unpacked (so a test can edit a stage). */
async function releasesWithUnpackedAddons(): Promise<{ releases: string; addons: string }> {
  const releases = await copyExampleReleases();
  const archive = path.join(releases, V2, 'docker-ferrol-1-30-cluster-addon-v2.tgz');
  const addons = path.join(releases, V2, 'docker-ferrol-1-30-cluster-addon-v2');
  await mkdir(addons);
  await tar.x({ file: archive, cwd: addons });
  await rm(archive);
  return { releases, addons };
}

describe('render: an empty render is withheld, never published', () => {
  it('withholds a ClusterClass release in use whose chart renders nothing, keeping the published class', async () => {
    const releases = await copyExampleReleases();
    const inputs = await v2Inputs();
    const out = path.join(await tempDir(), 'out');
    const first = await renderWithReport([inputs, '--release-source', releases, '--output', out]);
    expect(first.code).toBe(0);
    const published = (await readOutput(out))[V2_CLASS];
    expect(published).toContain('kind: ClusterClass');

    // A new chart version whose every template waits for a value the release does not set.
    await hideTemplates(path.join(releases, V2, 'docker-ferrol-1-30-cluster-class-v2', 'templates'));
    const empty = await renderWithReport([inputs, '--release-source', releases, '--output', out]);
    expect(empty.code).toBe(0);
    expect(empty.report.withheld).toEqual([
      {
        kind: 'release',
        namespace: 'cluster-stacks',
        name: V2,
        reason: expect.stringMatching(
          /docker-ferrol-1-30-cluster-class-v2 for release docker-ferrol-1-30-v2 renders no object .*withheld: check that its templates are not all behind a value left unset/,
        ),
        previousOutputKept: true,
      },
    ]);
    const files = await readOutput(out);
    expect(files[V2_CLASS]).toBe(published);
    // The Cluster's addons do not depend on its class's render: they stay published.
    expect(Object.keys(files)).toContain('clusters/cluster-stacks/one/cni/daemonset-kindnet.yaml');
    expect(files['README.md']).toMatch(/release cluster-stacks\/docker-ferrol-1-30-v2: .*renders no object/);
    // A withheld unit is tried again: the next run renders it again and withholds it again.
    const again = await renderWithReport([inputs, '--release-source', releases, '--output', out]);
    expect(again.report.units.rendered).toBe(1);
    expect(again.report.withheld).toEqual([expect.objectContaining({ name: V2, previousOutputKept: true })]);
    expect(again.report.noop).toBeUndefined();
  });

  it('withholds the Cluster whose addon stage renders nothing (comments only), keeping its published addons', async () => {
    const { releases, addons } = await releasesWithUnpackedAddons();
    const inputs = await v2Inputs();
    const out = path.join(await tempDir(), 'out');
    expect((await renderWithReport([inputs, '--release-source', releases, '--output', out])).code).toBe(0);
    const before = await readOutput(out);
    expect(Object.keys(before)).toContain('clusters/cluster-stacks/one/metrics-server/deployment-metrics-server.yaml');

    // metrics-server now renders documents that hold only comments.
    const templates = path.join(addons, 'metrics-server', 'templates');
    for (const name of await readdir(templates)) if (name.endsWith('.yaml')) await rm(path.join(templates, name));
    await writeFile(path.join(templates, 'nothing.yaml'), '# nothing to apply here\n---\n# nor here\n');
    const empty = await renderWithReport([inputs, '--release-source', releases, '--output', out]);
    expect(empty.code).toBe(0);
    expect(empty.report.withheld).toEqual([
      {
        kind: 'cluster',
        namespace: 'cluster-stacks',
        name: 'one',
        reason: expect.stringMatching(
          /^stage metrics-server: .*:metrics-server for Cluster cluster-stacks\/one \(stage metrics-server, release docker-ferrol-1-30-v2\) renders no object/,
        ),
        previousOutputKept: true,
      },
    ]);
    const after = await readOutput(out);
    for (const file of Object.keys(before).filter((name) => name.startsWith('clusters/')))
      expect(after[file], file).toBe(before[file]);
    expect(after['README.md']).toMatch(/cluster cluster-stacks\/one: stage metrics-server: .*renders no object/);

    // Never published: nothing of the Cluster appears, and the run says why.
    const fresh = path.join(await tempDir(), 'out');
    const first = await renderWithReport([inputs, '--release-source', releases, '--output', fresh]);
    expect(first.report.withheld).toEqual([
      expect.objectContaining({ kind: 'cluster', name: 'one', previousOutputKept: false }),
    ]);
    expect(Object.keys(await readOutput(fresh)).some((file) => file.startsWith('clusters/'))).toBe(false);
  });

  it('withholds what a --helm that exits 0 and prints nothing renders, keeping what a real helm published', async () => {
    const releases = await copyExampleReleases();
    const inputs = await v2Inputs();
    const out = path.join(await tempDir(), 'out');
    expect((await renderWithReport([inputs, '--release-source', releases, '--output', out])).code).toBe(0);
    const before = await readOutput(out);
    const silentHelm = await writeScript(
      path.join(await tempDir(), 'helm'),
      'if [ "$1" = version ]; then echo v3.15.4; fi\nexit 0',
    );
    // Another secret policy changes every unit's inputs: all of them go to this helm.
    const silent = await renderWithReport([
      inputs,
      '--release-source',
      releases,
      '--output',
      out,
      '--helm',
      silentHelm,
      '--secrets',
      'drop',
    ]);
    expect(silent.code).toBe(0);
    expect(silent.report.withheld).toEqual([
      expect.objectContaining({ kind: 'cluster', name: 'one', previousOutputKept: true }),
      expect.objectContaining({
        kind: 'release',
        name: V2,
        reason: expect.stringContaining('renders no object'),
        previousOutputKept: true,
      }),
    ]);
    expect(silent.report.files.removed).toEqual([]);
    const after = await readOutput(out);
    for (const file of Object.keys(before).filter((name) => !/(^|\/)(README\.md|provenance\.json)$/.test(name)))
      expect(after[file], file).toBe(before[file]);
  });
});
