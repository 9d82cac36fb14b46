import { describe, expect, it } from 'vitest';
import type { TreeChanges } from '../src/output/tree-changes.js';
import { mermaidDiagram, renderPullRequestBody } from '../gitops/pull-request-body.js';
import type { RenderSummary } from '../src/output/render-summary.js';

const SUMMARY: RenderSummary = {
  inputDigest: 'sha256:abc',
  notes: [],
  stacks: [
    {
      namespace: 'cs',
      name: 'docker-ferrol-1-30',
      prefix: 'docker-ferrol-1-30',
      channel: 'stable',
      latestRelease: 'docker-ferrol-1-30-v3',
      usableVersions: 'v2, v3',
      releases: [
        { name: 'docker-ferrol-1-30-v2', version: 'v2', status: 'yes', reasons: ['used by Cluster cs/a'] },
        {
          name: 'docker-ferrol-1-30-v3',
          version: 'v3',
          status: 'withheld',
          reasons: ['newest release (autoSubscribe)'],
        },
      ],
    },
  ],
  clusters: [
    {
      namespace: 'cs',
      name: 'a',
      release: 'docker-ferrol-1-30-v2',
      addonVersion: 'v2',
      stages: ['cni'],
      status: 'rendered',
    },
    {
      namespace: 'cs',
      name: 'b"<x>',
      release: 'docker-ferrol-1-30-v2',
      addonVersion: 'v2',
      stages: ['cni'],
      status: 'withheld',
    },
  ],
  withheld: [
    {
      kind: 'release',
      namespace: 'cs',
      name: 'docker-ferrol-1-30-v3',
      reason: 'waiting for the provider',
      previousKept: false,
    },
  ],
};

const CHANGES: TreeChanges = {
  releases: [
    { namespace: 'cs', release: 'docker-ferrol-1-30-v1', change: 'removed' },
    { namespace: 'cs', release: 'docker-ferrol-1-30-v2', change: 'added' },
  ],
  clusters: [
    {
      namespace: 'cs',
      cluster: 'a',
      change: 'updated',
      releaseBefore: 'docker-ferrol-1-30-v1',
      releaseAfter: 'docker-ferrol-1-30-v2',
      addonVersionBefore: 'v1',
      addonVersionAfter: 'v2',
      stages: ['cni'],
    },
  ],
  withheld: SUMMARY.withheld,
  otherFiles: [],
};

describe('renderPullRequestBody', () => {
  it('lists releases appearing and disappearing per ClusterStack, cluster changes and what is withheld', () => {
    const body = renderPullRequestBody(CHANGES, SUMMARY);
    expect(body).toContain('### cs/docker-ferrol-1-30');
    expect(body).toContain('- Releases appearing: `docker-ferrol-1-30-v2`');
    expect(body).toContain('- Releases disappearing (Argo CD or Flux prunes them): `docker-ferrol-1-30-v1`');
    expect(body).toContain('| cs/a | updated | docker-ferrol-1-30-v1 → docker-ferrol-1-30-v2 | v1 → v2 | cni |');
    expect(body).toContain('- release cs/docker-ferrol-1-30-v3: waiting for the provider');
    expect(body).toContain('```mermaid\nflowchart LR');
  });

  it('shows the upgrade order of each Cluster moving to a release with other addons, step by step, naming what the hook waits for', () => {
    const summary: RenderSummary = {
      ...SUMMARY,
      clusters: [
        { ...SUMMARY.clusters[0]!, kubernetesVersion: 'v1.30.4', afterUpgradeStages: ['metrics-server'] },
        SUMMARY.clusters[1]!,
      ],
    };
    const changes: TreeChanges = {
      ...CHANGES,
      clusters: [{ ...CHANGES.clusters[0]!, stages: ['cni', 'metrics-server'] }],
    };
    const body = renderPullRequestBody(changes, summary, undefined, { engine: 'flux' });
    expect(body).toContain('## Upgrade order');
    expect(body).toContain(
      [
        '### cs/a (`docker-ferrol-1-30-v1` → `docker-ferrol-1-30-v2`, cluster addon v1 → v2)',
        '',
        '1. addons v2 published (stages cni, metrics-server)',
        '2. hook BeforeClusterUpgrade waits for Flux Kustomizations cs/a-cni, cs/a-metrics-server Ready at a revision ≥ the commit publishing them, and the BeforeClusterUpgrade CEL conditions',
        '3. control plane upgrades to v1.30.4, then the workers',
        '4. hook AfterClusterUpgrade waits for stages metrics-server (their CEL conditions; Cluster API ≥ 1.12 holds the next upgrade until then)',
      ].join('\n'),
    );
    const argo = renderPullRequestBody(changes, summary, undefined, { engine: 'argocd', argocdNamespace: 'argocd' });
    expect(argo).toMatch(
      /2\. hook BeforeClusterUpgrade waits for Argo CD Applications argocd\/\S+, argocd\/\S+ Synced and Healthy at a revision ≥ the commit publishing them/,
    );
    const sameAddons = renderPullRequestBody(
      { ...CHANGES, clusters: [{ ...CHANGES.clusters[0]!, addonVersionBefore: 'v2' }] },
      SUMMARY,
    );
    expect(sameAddons).not.toContain('## Upgrade order');
  });

  it("says in the upgrade order when the target release's addons are withheld, instead of promising a publish", () => {
    const withheld = {
      kind: 'cluster' as const,
      namespace: 'cs',
      name: 'a',
      reason: 'values: .InfraCluster.spec.network is not set yet',
      previousKept: true,
    };
    const body = renderPullRequestBody({ ...CHANGES, withheld: [withheld] }, SUMMARY);
    expect(body).toContain(
      '1. addons v2 withheld (values: .InfraCluster.spec.network is not set yet): nothing of release docker-ferrol-1-30-v2 is published for this Cluster, and the BeforeClusterUpgrade hook holds the upgrade saying so until they render (or its timeout ends the wait)',
    );
    expect(body).toContain(
      '2. hook BeforeClusterUpgrade waits for them to be published (no GitOps engine wired: their application is not checked)',
    );
    expect(body).toContain('4. hook AfterClusterUpgrade: no stages of its own');
  });

  it('draws stacks, releases and the clusters using them, escaping labels', () => {
    const diagram = mermaidDiagram(SUMMARY);
    expect(diagram).toContain('s0["ClusterStack cs/docker-ferrol-1-30"]');
    expect(diagram).toContain('s0r1("docker-ferrol-1-30-v3 (withheld)")');
    expect(diagram).toContain('s0 --> s0r0');
    expect(diagram).toContain('s0r0 --> s0r0c0');
    expect(diagram).toContain('s0r0c1[/"b#34;#60;x#62; (withheld)"/]');
  });

  it('takes a user template, sandboxed', () => {
    expect(renderPullRequestBody(CHANGES, SUMMARY, '{{#each clusters}}{{cluster}}{{/each}}')).toBe('a');
    expect(renderPullRequestBody(CHANGES, SUMMARY, '{{constructor.name}}{{__proto__}}')).toBe('');
  });
});

describe('renderPullRequestBody with addon layers', () => {
  it('shows per cluster each layer: applied, on hold, withheld and why, and what it waits on', () => {
    const summary: RenderSummary = {
      ...SUMMARY,
      layers: [
        {
          namespace: 'cs',
          cluster: 'a',
          layer: 'base',
          version: '1.1.0',
          status: 'on hold',
          after: ['cluster-stack'],
          waitingOn: [],
        },
        {
          namespace: 'cs',
          cluster: 'a',
          layer: 'ingress',
          version: '1.0.0',
          status: 'rendered',
          after: ['base@1.1.0'],
          waitingOn: ['base@1.1.0 (on hold)'],
        },
        {
          namespace: 'cs',
          cluster: 'a',
          layer: 'apps',
          version: '2.0.0',
          status: 'withheld',
          reason: 'base is at 1.1.0, apps needs base@1.2.0',
          after: [],
          waitingOn: [],
        },
      ],
    };
    const withheld = [
      {
        kind: 'layer' as const,
        namespace: 'cs',
        name: 'a',
        layer: 'apps',
        reason: 'base is at 1.1.0, apps needs base@1.2.0',
        previousKept: true,
      },
    ];
    const body = renderPullRequestBody({ ...CHANGES, withheld }, summary);
    expect(body).toContain(
      [
        '## Addon layers',
        '',
        '| Cluster | Layer | Version | Status | After | Why / waiting on |',
        '| --- | --- | --- | --- | --- | --- |',
        '| cs/a | base | 1.1.0 | on hold | cluster-stack | - |',
        '| cs/a | ingress | 1.0.0 | rendered | base@1.1.0 | base@1.1.0 (on hold) |',
        '| cs/a | apps | 2.0.0 | withheld | - | base is at 1.1.0, apps needs base@1.2.0 |',
      ].join('\n'),
    );
    expect(body).toContain('- layer cs/a layer apps: base is at 1.1.0, apps needs base@1.2.0 (previous output kept)');
  });

  it('has no layer section without AddonsLayers', () => {
    expect(renderPullRequestBody(CHANGES, SUMMARY)).not.toContain('Addon layers');
  });
});

describe('renderPullRequestBody with ClusterRequests', () => {
  it('lists the requests not granted, with the reason and the cluster a refused one keeps', () => {
    const summary: RenderSummary = {
      ...SUMMARY,
      clusterRequests: {
        profiles: [],
        requests: [
          {
            namespace: 'team-a',
            name: 'r1',
            purpose: 'platform',
            phase: 'Pending',
            reason: 'PurposeChanged',
            cluster: 'workload-clusters/workload-1a2b3',
            message: 'spec.purpose was "workload" and is now "platform", but a request\'s purpose is immutable',
          },
          {
            namespace: 'team-a',
            name: 'n1',
            purpose: '',
            phase: 'Pending',
            reason: 'MissingPurpose',
            cluster: null,
            message: 'spec.purpose is required',
          },
          {
            namespace: 'team-a',
            name: 'r2',
            purpose: 'workload',
            phase: 'Granted',
            reason: 'Scheduled',
            cluster: 'workload-clusters/workload-1a2b3',
            message: 'scheduled',
          },
        ],
      },
    };
    const body = renderPullRequestBody(CHANGES, summary);
    expect(body).toContain('## ClusterRequests not granted');
    expect(body).toContain(
      '| team-a/r1 | platform | PurposeChanged | workload-clusters/workload-1a2b3 | spec.purpose was "workload" and is now "platform", but a request\'s purpose is immutable |',
    );
    expect(body).toContain('| team-a/n1 | - | MissingPurpose | - | spec.purpose is required |');
    expect(body).not.toContain('team-a/r2');
    expect(renderPullRequestBody(CHANGES, SUMMARY)).not.toContain('ClusterRequests not granted');
  });
});
