import { describe, expect, it } from 'vitest';
import { parseSchedulerConfig } from '../src/cluster-requests/scheduler-config.js';
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
      template: { metadata: { namespace: 'workload-clusters', labels: { team: 'platform' }, annotations: {} }, spec: { profile: 'cluster-stacks.docker.ferrol-1-30', tenancy: 'Shared' } },
    });
    const bare = parseSchedulerConfig('purposeMappings: {}\n', 'bare.yaml');
    expect(bare).toMatchObject({ scope: 'Cluster', strategy: 'Balanced' });
  });

  it('digests what the configuration says, not how it is written', () => {
    const config = parseSchedulerConfig(VALID, 'a.yaml');
    const reformatted = parseSchedulerConfig(`# same meaning\n${VALID.replace('strategy: Simple', 'strategy: "Simple"')}`, 'b.yaml');
    expect(reformatted.digest).toBe(config.digest);
    expect(parseSchedulerConfig(VALID.replace('tenancyCount: 20', 'tenancyCount: 21'), 'c.yaml').digest).not.toBe(config.digest);
  });

  it('refuses a file that does not parse', () => {
    expect(problemsOf('scheduler:\n  strategy: [Balanced\n')).toMatch(/scheduler\.yaml: is not valid YAML/);
  });

  it('refuses an unknown strategy and scope, naming the valid ones', () => {
    const message = problemsOf(VALID.replace('strategy: Simple', 'strategy: LeastLoaded').replace('scope: Namespaced', 'scope: Global'));
    expect(message).toMatch(/strategy: must be one of Balanced, Random, Simple, not "LeastLoaded"/);
    expect(message).toMatch(/scope: must be one of Cluster, Namespaced, not "Global"/);
  });

  it('refuses two mappings for one purpose', () => {
    const twice = `${VALID}    workload:\n      template:\n        spec: {profile: other, tenancy: Shared}\n`;
    expect(problemsOf(twice)).toMatch(/key "workload" is given more than once; keep one \(for a purpose: one mapping per purpose\)/);
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
    expect(message).toMatch(/purposeMappings\.c\.template\.spec\.tenancy: must be one of Exclusive, Shared, not "Dedicated"/);
    expect(message).toMatch(/purposeMappings\.d\.tenancyCount: must be 0 \(or left out\) when the template's tenancy is Exclusive/);
    expect(message).toMatch(/purposeMappings\.e\.template\.metadata\.generateName: "Big_Cluster-" is not a valid name prefix/);
  });

  it('refuses selectors (not supported) and unknown fields rather than ignoring them', () => {
    const message = problemsOf(`strategy: Balanced\nselectors: {clusters: {matchLabels: {a: b}}}\npurposeMapings: {}\n`);
    expect(message).toMatch(/selectors: label selectors are not supported/);
    expect(message).toMatch(/purposeMapings: is not a field here; known fields are scope, strategy, purposeMappings, selectors/);
  });
});
