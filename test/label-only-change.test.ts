// A label or annotation added to a Cluster that no values template reads changes nothing in the
// rendered tree: no manifest, and neither provenance.json nor the README (their digests cover what
// the render reads), so the controller and `render --git` make no commit for it. A template that
// reads labels does get its unit rendered again when one changes.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../src/api/types.js';
import { readableContext } from '../src/render/template-reads.js';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, renderWithReport, tempDir, writeTree } from './support/cli.js';

async function files(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, file)] = await readFile(file, 'utf8');
  }
  return out;
}

describe('a label- or annotation-only change on a Cluster', () => {
  it('leaves the rendered tree, provenance.json and README included, byte for byte as it was', async () => {
    const clusters = await readFile(path.join(EXAMPLE_MANIFESTS, 'clusters.yaml'), 'utf8');
    const stack = await readFile(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8');
    const inputs = await writeTree({ 'clusters.yaml': clusters, 'clusterstack.yaml': stack });
    const out = path.join(await tempDir(), 'out');
    expect((await renderWithReport([inputs, '--release-source', EXAMPLE_RELEASES, '--output', out])).code).toBe(0);
    const before = await files(out);
    expect(
      Object.keys(before).some((file) => file.endsWith('provenance.json')),
      Object.keys(before).join(' '),
    ).toBe(true);

    const labelled = clusters.replace(
      '  name: alpha\n  namespace: cluster-stacks\n',
      '  name: alpha\n  namespace: cluster-stacks\n  labels:\n    team: payments\n  annotations:\n    example.com/owner: someone\n',
    );
    expect(labelled).not.toBe(clusters);
    await writeTree({ 'clusters.yaml': labelled }, inputs);
    expect((await renderWithReport([inputs, '--release-source', EXAMPLE_RELEASES, '--output', out])).code).toBe(0);
    expect(await files(out)).toEqual(before);
  }, 120_000);
});

describe('readableContext', () => {
  const cluster = {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name: 'alpha', labels: { team: 'a' }, annotations: { note: 'b' } },
    spec: { x: 1 },
  } as KubeObject;

  it('leaves out labels and annotations a template cannot reach, and the whole context of an empty template', () => {
    expect(readableContext('', { Cluster: cluster })).toBeNull();
    for (const template of [
      'name: {{ .Cluster.metadata.name }}',
      'x: {{ .Cluster.spec.x }}',
      '{{ with .Cluster.spec }}{{ .x }}{{ end }}',
      'x: {{ $.Cluster.spec.x | default 2 }}',
    ]) {
      expect(readableContext(template, { Cluster: cluster })?.Cluster, template).toEqual({
        ...cluster,
        metadata: { name: 'alpha' },
      });
    }
  });

  it('keeps what a template names, and everything when it uses an object, its metadata or the context whole', () => {
    expect(readableContext('team: {{ .Cluster.metadata.labels.team }}', { Cluster: cluster })?.Cluster).toEqual({
      ...cluster,
      metadata: { name: 'alpha', labels: { team: 'a' } },
    });
    for (const template of [
      '{{ toYaml .Cluster }}',
      '{{ index .Cluster.metadata "annotations" }}',
      '{{ $m := .Cluster.metadata }}{{ $m.name }}',
      '{{ toYaml . }}',
      '{{ toYaml $ }}',
      '{{ with .InfraCluster }}{{ .spec }}{{ end }}',
    ]) {
      expect(readableContext(template, { Cluster: cluster })?.Cluster, template).toEqual(cluster);
    }
  });
});
