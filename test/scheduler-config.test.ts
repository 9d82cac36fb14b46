import { describe, expect, it } from 'vitest';
import { clusterSelectorOf, handlesRequest, parseSchedulerConfig } from '../src/cluster-requests/scheduler-config.js';
import { InputError } from '../src/core/problem.js';

const VALID = `scheduler:
  scope: Namespaced
  strategy: Simple
  purposeMappings:
    workload:
      tenancyCount: 20
      template:
        metadata:
          namespace: workload-clusters
          labels: {team: platform}
        spec: {profile: cluster-stacks.docker.ferrol-1-30, tenancy: Shared}
    mcp:
      template:
        spec: {profile: cluster-stacks.docker.ferrol-1-30, tenancy: Exclusive}
`;

function problemsOf(text: string): string {
  try {
    parseSchedulerConfig(text, 'scheduler.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return (error as InputError).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('parseSchedulerConfig', () => {
  it('reads openMCP’s format, under `scheduler:` or alone, with openMCP’s defaults', () => {
    const config = parseSchedulerConfig(VALID, 'scheduler.yaml');
    expect(config.scope).toBe('Namespaced');
    expect(config.strategy).toBe('Simple');
    expect([...config.purposeMappings.keys()]).toEqual(['mcp', 'workload']);
    expect(config.purposeMappings.get('workload')).toEqual({
      tenancyCount: 20,
      template: {
        metadata: { namespace: 'workload-clusters', labels: { team: 'platform' }, annotations: {} },
        spec: { profile: 'cluster-stacks.docker.ferrol-1-30', tenancy: 'Shared' },
      },
    });
    const bare = parseSchedulerConfig('purposeMappings: {}\n', 'bare.yaml');
    expect(bare).toMatchObject({ scope: 'Cluster', strategy: 'Balanced' });
  });

  it('digests what the configuration says, not how it is written', () => {
    const config = parseSchedulerConfig(VALID, 'a.yaml');
    const reformatted = parseSchedulerConfig(
      `# same meaning\n${VALID.replace('strategy: Simple', 'strategy: "Simple"')}`,
      'b.yaml',
    );
    expect(reformatted.digest).toBe(config.digest);
    expect(parseSchedulerConfig(VALID.replace('tenancyCount: 20', 'tenancyCount: 21'), 'c.yaml').digest).not.toBe(
      config.digest,
    );
  });

  it('refuses a file that does not parse', () => {
    expect(problemsOf('scheduler:\n  strategy: [Balanced\n')).toMatch(/scheduler\.yaml: is not valid YAML/);
  });

  it('refuses an unknown strategy and scope, naming the valid ones', () => {
    const message = problemsOf(
      VALID.replace('strategy: Simple', 'strategy: LeastLoaded').replace('scope: Namespaced', 'scope: Global'),
    );
    expect(message).toMatch(/strategy: must be one of Balanced, Random, Simple, not "LeastLoaded"/);
    expect(message).toMatch(/scope: must be one of Cluster, Namespaced, not "Global"/);
  });

  it('refuses two mappings for one purpose', () => {
    const twice = `${VALID}    workload:\n      template:\n        spec: {profile: other, tenancy: Shared}\n`;
    expect(problemsOf(twice)).toMatch(
      /key "workload" is given more than once; keep one \(for a purpose: one mapping per purpose\)/,
    );
  });

  it('refuses a missing profile or tenancy, an unknown tenancy, a tenancyCount on an Exclusive template and a name prefix no Cluster can have', () => {
    const message = problemsOf(`purposeMappings:
  a: {template: {spec: {tenancy: Shared}}}
  b: {template: {spec: {profile: p}}}
  c: {template: {spec: {profile: p, tenancy: Dedicated}}}
  d: {tenancyCount: 2, template: {spec: {profile: p, tenancy: Exclusive}}}
  e: {template: {metadata: {generateName: Big_Cluster-}, spec: {profile: p, tenancy: Exclusive}}}
`);
    expect(message).toMatch(/purposeMappings\.a\.template\.spec\.profile: is required/);
    expect(message).toMatch(/purposeMappings\.b\.template\.spec\.tenancy: is required: one of Exclusive, Shared/);
    expect(message).toMatch(
      /purposeMappings\.c\.template\.spec\.tenancy: must be one of Exclusive, Shared, not "Dedicated"/,
    );
    expect(message).toMatch(
      /purposeMappings\.d\.tenancyCount: must be 0 \(or left out\) when the template's tenancy is Exclusive/,
    );
    expect(message).toMatch(
      /purposeMappings\.e\.template\.metadata\.generateName: "Big_Cluster-" is not a valid name prefix/,
    );
  });

  it('refuses unknown fields rather than ignoring them', () => {
    const message = problemsOf(
      `strategy: Balanced\nselectors: {clusters: {matchLabels: {a: b}}, nodes: {}}\npurposeMapings: {}\n`,
    );
    expect(message).toMatch(/selectors\.nodes: is not a field here; known fields are requests, clusters/);
    expect(message).toMatch(
      /purposeMapings: is not a field here; known fields are scope, strategy, purposeMappings, selectors/,
    );
  });
});

// The shape of openmcp-operator's docs/controller/scheduler.md, with every selector it knows.
const OPENMCP = `managedControlPlane: {mcpClusterPurpose: mcp}
scheduler:
  scope: Cluster
  strategy: Balanced
  selectors:
    clusters:
      matchLabels: {openmcp.cloud/scheduler: main}
    requests:
      matchExpressions:
        - {key: openmcp.cloud/scheduler, operator: NotIn, values: [other]}
  purposeMappings:
    mcp:
      selector:
        matchLabels: {size: small}
      template:
        metadata:
          namespace: mcp-clusters
          labels: {openmcp.cloud/scheduler: main, size: small}
        spec: {profile: gcp-workerless, tenancy: Exclusive}
    workload:
      tenancyCount: 20
      selector:
        matchExpressions:
          - {key: drain, operator: DoesNotExist}
      template:
        metadata:
          namespace: workload-clusters
          labels: {openmcp.cloud/scheduler: main}
        spec: {profile: gcp-small, tenancy: Shared}
`;

describe('label selectors (selectors.requests, selectors.clusters, purposeMappings.*.selector)', () => {
  it('reads all three from an openMCP operator configuration, and combines a purpose’s selector with selectors.clusters', () => {
    const config = parseSchedulerConfig(OPENMCP, 'openmcp-config.yaml');
    expect(config.selectors).toEqual({
      clusters: { matchLabels: { 'openmcp.cloud/scheduler': 'main' } },
      requests: { matchExpressions: [{ key: 'openmcp.cloud/scheduler', operator: 'NotIn', values: ['other'] }] },
    });
    expect(config.purposeMappings.get('mcp')!.selector).toEqual({ matchLabels: { size: 'small' } });
    expect(clusterSelectorOf(config, config.purposeMappings.get('workload')!)).toEqual({
      matchLabels: { 'openmcp.cloud/scheduler': 'main' },
      matchExpressions: [{ key: 'drain', operator: 'DoesNotExist' }],
    });
    expect(handlesRequest(config, undefined)).toBe(true);
    expect(handlesRequest(config, { 'openmcp.cloud/scheduler': 'other' })).toBe(false);
  });

  it('keeps the digest of a configuration without selectors, and changes it with them', () => {
    const without = parseSchedulerConfig(VALID, 'a.yaml');
    const nulls = parseSchedulerConfig(
      VALID.replace('  strategy: Simple\n', '  strategy: Simple\n  selectors: {requests: null}\n'),
      'b.yaml',
    );
    expect(nulls.digest).toBe(without.digest);
    const selected = parseSchedulerConfig(
      VALID.replace('  strategy: Simple\n', '  strategy: Simple\n  selectors: {requests: {matchLabels: {team: a}}}\n'),
      'c.yaml',
    );
    expect(selected.digest).not.toBe(without.digest);
  });

  it('refuses, as the operator does, a template whose labels its selectors would not find, and a selector that is not valid', () => {
    const message = problemsOf(
      OPENMCP.replace('labels: {openmcp.cloud/scheduler: main, size: small}', 'labels: {size: large}').replace(
        'operator: DoesNotExist',
        'operator: Missing',
      ),
    );
    expect(message).toMatch(
      /purposeMappings\.mcp\.template\.metadata\.labels: \{"size":"large"\} do not match selectors\.clusters: the scheduler could never find the Clusters it makes/,
    );
    expect(message).toMatch(
      /purposeMappings\.mcp\.template\.metadata\.labels: \{"size":"large"\} do not match purposeMappings\.mcp\.selector/,
    );
    expect(message).toMatch(
      /purposeMappings\.workload\.selector\.matchExpressions\[0\]\.operator: must be one of In, NotIn, Exists, DoesNotExist, found "Missing"/,
    );
    expect(problemsOf('selectors: {requests: "team=a"}\n')).toMatch(/selectors\.requests: must be a label selector/);
  });
});

describe('clusterstack.clusterSpecs (our section beside openMCP’s scheduler:)', () => {
  const WITH_SPECS = `${VALID}clusterstack:
  clusterSpecs:
    workload:
      clusterNetwork: {pods: {cidrBlocks: [10.8.0.0/16]}}
      topology:
        controlPlane: {replicas: 3}
        workers: {machineDeployments: [{class: default-worker, name: md-0, replicas: 2}]}
        variables: [{name: maxPods, value: 150}]
`;

  it('puts a part of a CAPI Cluster spec on the purpose it names, and into the digest', () => {
    const config = parseSchedulerConfig(WITH_SPECS, 'scheduler.yaml');
    expect(config.purposeMappings.get('workload')!.clusterSpec).toEqual({
      clusterNetwork: { pods: { cidrBlocks: ['10.8.0.0/16'] } },
      topology: {
        controlPlane: { replicas: 3 },
        workers: { machineDeployments: [{ class: 'default-worker', name: 'md-0', replicas: 2 }] },
        variables: [{ name: 'maxPods', value: 150 }],
      },
    });
    expect(config.purposeMappings.get('mcp')!.clusterSpec).toBeUndefined();
    expect(config.digest).not.toBe(parseSchedulerConfig(VALID, 'scheduler.yaml').digest);
  });

  it('still reads the operator’s whole config file, other sections left alone', () => {
    expect(() =>
      parseSchedulerConfig(`managedControlPlane: {mcpClusterPurpose: mcp}\n${WITH_SPECS}`, 'scheduler.yaml'),
    ).not.toThrow();
  });

  it('refuses what clusterstack or CAPI set, unknown fields and purposes, and the section inside scheduler:', () => {
    const message = problemsOf(`${VALID}clusterstack:
  clusterSpecs:
    workload:
      controlPlaneEndpoint: {host: x}
      paused: true
      topology: {class: other, version: v1.31.0, rolloutAfter: x, variables: [{value: 1}]}
    gaming:
      clusterNetwork: {}
`);
    expect(message).toContain(
      'clusterstack.clusterSpecs.workload.controlPlaneEndpoint: cannot be set here: Cluster API fills it in',
    );
    expect(message).toContain(
      'clusterstack.clusterSpecs.workload.topology.class: cannot be set here: the profile decides it',
    );
    expect(message).toContain('clusterstack.clusterSpecs.workload.topology.version: cannot be set here');
    expect(message).toContain(
      'clusterstack.clusterSpecs.workload.paused: is not a field clusterstack sets on a generated Cluster',
    );
    expect(message).toContain('clusterstack.clusterSpecs.workload.topology.rolloutAfter: is not a field');
    expect(message).toContain('clusterstack.clusterSpecs.workload.topology.variables: must be a list of {name, value}');
    expect(message).toContain('clusterstack.clusterSpecs.gaming: purpose "gaming" is not in scheduler.purposeMappings');
    const inside = problemsOf(
      VALID.replace('  scope: Namespaced', '  scope: Namespaced\n  clusterstack: {clusterSpecs: {}}'),
    );
    expect(inside).toContain('clusterstack: goes beside the scheduler: section, not inside it');
  });
});
