// The plan keys kept releases by their stack's namespace and tag: two stacks in different
// namespaces may name the same tag from different sources, and each renders its own.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseManifests } from '../src/inputs/parse-manifests.js';
import { buildPlan, loadedRelease } from '../src/plan/build-plan.js';
import { createSourceOpener } from '../src/sources/open-release-source.js';
import { checkCrdRules } from './support/crd-rule-check.js';

const TAG = 'docker-ferrol-1-30-v1';
const dirs: string[] = [];

afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

function stack(namespace: string, source: string): string {
  return `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: ${namespace}}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", channel: stable, autoSubscribe: false, noProvider: true, versions: [v1], releaseSource: ${source}}
`;
}

describe('buildPlan', () => {
  it('keeps the same tag from two namespaces apart, each from its own source', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'csk-plan-'));
    dirs.push(root);
    const teamA = path.join(root, 'team-a');
    const teamB = path.join(root, 'team-b');
    await cp(path.resolve('examples/quickstart/releases', TAG), path.join(teamA, TAG), { recursive: true });
    await cp(path.resolve('examples/quickstart/releases', TAG), path.join(teamB, TAG), { recursive: true });
    // Team B's release of the same tag differs (its addon values).
    const values = path.join(teamB, TAG, 'cluster-addon-values.yaml');
    await writeFile(values, `${await readFile(values, 'utf8')}\n# team b\n`);

    const manifests = parseManifests(`${stack('team-a', teamA)}---\n${stack('team-b', teamB)}`, 'stacks.yaml');
    const plan = await buildPlan({
      manifests,
      defaultSource: teamA,
      openSource: createSourceOpener({ cacheDir: path.join(root, 'cache') }),
      workDir: path.join(root, 'work'),
      checkCrdRules,
    });

    expect(plan.problems).toEqual([]);
    const a = loadedRelease(plan, 'team-a', TAG);
    const b = loadedRelease(plan, 'team-b', TAG);
    expect(a?.source.location).toBe(teamA);
    expect(b?.source.location).toBe(teamB);
    expect(a?.content?.digest).toBeDefined();
    expect(b?.content?.digest).toBeDefined();
    expect(a?.content?.digest).not.toBe(b?.content?.digest);
    expect(loadedRelease(plan, 'team-c', TAG)).toBeUndefined();
  });
});

describe('buildPlan: what only the loaded release tells about a Cluster', () => {
  const cluster = (version: string) => `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: alpha, namespace: team-a}
spec:
  topology: {classRef: {name: ${TAG}}, version: ${version}}
`;

  it.each([
    [
      'v1.30.4',
      /is v1\.30\.4 but class docker-ferrol-1-30-v1's release docker-ferrol-1-30-v1 is for Kubernetes v1\.30\.2 \(its metadata\.yaml\); the cluster-stack-operator accepts only that version: set spec\.topology\.version: v1\.30\.2/,
    ],
    ['v1.30.2', undefined],
  ])(
    "checks topology.version %s against the release's Kubernetes version, as the cluster-stack-operator's webhook does, naming file and line",
    async (version, message) => {
      const root = await mkdtemp(path.join(tmpdir(), 'csk-plan-'));
      dirs.push(root);
      const source = path.resolve('examples/quickstart/releases');
      const manifests = parseManifests(`${stack('team-a', source)}---\n${cluster(version)}`, 'fleet.yaml');
      const plan = await buildPlan({
        manifests,
        defaultSource: source,
        openSource: createSourceOpener({ cacheDir: path.join(root, 'cache') }),
        workDir: path.join(root, 'work'),
        checkCrdRules,
      });
      const problems = plan.resolution.clusters[0]!.problems;
      if (message === undefined) expect(problems).toEqual([]);
      else
        expect(problems).toEqual([
          {
            source: 'fleet.yaml:10',
            object: 'Cluster team-a/alpha',
            path: 'spec.topology.version',
            message: expect.stringMatching(message),
          },
        ]);
    },
  );
});
