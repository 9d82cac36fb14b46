import { describe, expect, it } from 'vitest';
import type { Provenance, ProviderRecord } from '../../src/output/provenance.js';
import { compareTrees, summarizeChanges } from '../../src/output/tree-changes.js';
import { readPublishedState } from '../../src/output/published-state.js';
import { renderPullRequestBody } from '../../gitops/pull-request-body.js';

function record(version: string, overrides: Partial<ProviderRecord> = {}): ProviderRecord {
  return {
    dir: 'management/providers/infrastructureprovider-docker',
    kind: 'InfrastructureProvider',
    namespace: 'capd-system',
    name: 'docker',
    version,
    pinned: true,
    contract: 'v1beta1',
    source: 'github:o/r',
    digest: `sha256:${version}`,
    inputDigest: `sha256:${version}`,
    kinds: [],
    files: ['deployment-x.yaml'],
    ...overrides,
  };
}

function tree(providers: ProviderRecord[], content: string): Map<string, string> {
  const provenance: Provenance = {
    generator: 'clusterstack-gitops',
    format: 2,
    inputDigest: 'sha256:x',
    inputs: [],
    releases: [],
    units: [],
    withheld: [],
    valuesFailures: [],
    providers,
  };
  const files = new Map([['provenance.json', JSON.stringify(provenance)]]);
  for (const provider of providers) files.set(`${provider.dir}/deployment-x.yaml`, content);
  return files;
}

/** A tree with those provider records, as the published state reads it. */
const recorded = (providers: ProviderRecord[], content: string) => readPublishedState(tree(providers, content));

describe('provider changes in commit messages and pull request bodies', () => {
  it('reports an upgrade with both versions and the contract', () => {
    const changes = compareTrees(recorded([record('v1.8.0')], 'a'), recorded([record('v1.9.0')], 'b'));
    expect(changes.providers).toEqual([
      {
        kind: 'InfrastructureProvider',
        namespace: 'capd-system',
        name: 'docker',
        change: 'upgraded',
        versionBefore: 'v1.8.0',
        versionAfter: 'v1.9.0',
        contract: 'v1beta1',
      },
    ]);
    const summary = summarizeChanges(changes, 'sha256:x');
    expect(summary.title).toBe('Render cluster stacks: 1 provider changed');
    expect(summary.body).toBe(
      '- InfrastructureProvider capd-system/docker upgraded v1.8.0 -> v1.9.0 (contract v1beta1)',
    );
    const body = renderPullRequestBody(changes, {
      inputDigest: 'sha256:x',
      stacks: [],
      clusters: [],
      withheld: [],
      notes: [],
    });
    expect(body).toContain(
      '## Cluster API providers\n\n- InfrastructureProvider capd-system/docker upgraded v1.8.0 -> v1.9.0 (contract v1beta1)',
    );
  });

  it('reports added, removed and downgraded providers, and nothing for an unchanged one', () => {
    expect(compareTrees(recorded([], ''), recorded([record('v1.8.0')], 'a')).providers?.[0]).toMatchObject({
      change: 'added',
      versionAfter: 'v1.8.0',
    });
    expect(compareTrees(recorded([record('v1.8.0')], 'a'), recorded([], '')).providers?.[0]).toMatchObject({
      change: 'removed',
      versionBefore: 'v1.8.0',
    });
    expect(
      compareTrees(recorded([record('v1.10.0')], 'a'), recorded([record('v1.9.0')], 'b')).providers?.[0],
    ).toMatchObject({
      change: 'downgraded',
    });
    expect(
      compareTrees(recorded([record('v1.8.0')], 'a'), recorded([record('v1.8.0')], 'a')).providers,
    ).toBeUndefined();
  });
});
